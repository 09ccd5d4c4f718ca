"""The aten ops libporta implements, and reading their schemas.

Every op of libporta's aten table is registered for the PrivateUse1 key by
the native backend (python/native/kernels.cpp) when torch_porta._C loads;
the Python glue kernels (this package) and the CPU fallback use the helpers
here to read schemas the same way.
"""
import torch

from .. import _C

NATIVE = frozenset(_C.aten_ops())


def _overload(name):
    packet, _, overload = name.partition(".")
    return getattr(getattr(torch.ops.aten, packet), overload or "default")


def _return_plan(schema):
    """Per return: ("input", i) when it aliases and writes input i (in-place,
    out=), ("view", i) when it is a view of input i, ("new", None) else."""
    alias_of = {}
    for index, argument in enumerate(schema.arguments):
        if argument.alias_info is not None:
            for alias in argument.alias_info.before_set:
                alias_of[alias] = index
    plan = []
    for returned in schema.returns:
        info = returned.alias_info
        if info is None or not info.before_set:
            plan.append(("new", None))
            continue
        source = alias_of[next(iter(info.before_set))]
        plan.append(("input" if info.is_write else "view", source))
    return plan
