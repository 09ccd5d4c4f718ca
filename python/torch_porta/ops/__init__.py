"""The porta kernels, one module per op family. Importing registers them."""
from . import copy, elementwise, factory, linalg, loss, reduce  # noqa: F401
