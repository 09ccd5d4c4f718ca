"""The porta kernels, one module per op family. Importing registers them."""
from . import copy, factory, linalg, reduce  # noqa: F401
