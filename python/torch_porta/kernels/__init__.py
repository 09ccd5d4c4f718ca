"""The porta kernels, one module per op family. Importing registers them."""
from . import copy, factory, inplace_views, meta  # noqa: F401
