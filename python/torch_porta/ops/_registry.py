"""Registering Python kernels for the PrivateUse1 ("porta") dispatch key."""
import torch


def register(*overloads):
    """Registers the decorated function as the porta kernel of each aten
    overload named, e.g. @register("add.Tensor", "add.out")."""
    def decorate(kernel):
        for overload in overloads:
            torch.library.impl(f"aten::{overload}", "PrivateUse1")(kernel)
        return kernel
    return decorate
