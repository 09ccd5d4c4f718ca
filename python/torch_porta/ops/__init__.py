"""The porta kernels, one module per op family. Importing registers them."""
from . import copy, factory  # noqa: F401
