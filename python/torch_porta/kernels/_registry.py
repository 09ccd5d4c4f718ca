"""Registering Python kernels for the PrivateUse1 ("porta") dispatch key.

Most kernels are libporta's aten ops, registered natively. The kernels
registered here are glue that only Python does today (copies to and from
other devices, resizing); an op is never in both.
"""
import torch

from .. import _modes
from . import _aten

NATIVE = _aten.NATIVE


def register(*overloads):
    """Registers the decorated function as the porta kernel of each aten
    overload named, e.g. @register("add.out")."""
    def decorate(kernel):
        for overload in overloads:
            if overload in NATIVE:
                raise RuntimeError(f"aten::{overload} is implemented in libporta; "
                                   "remove its Python kernel")
            op = _aten._overload(overload)
            torch.library.impl(f"aten::{overload}", "PrivateUse1")(
                _modes.issued(overload, op, kernel))
        return kernel
    return decorate
