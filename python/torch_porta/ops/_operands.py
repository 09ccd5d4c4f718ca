"""Turning kernel arguments into libporta operands."""
import torch

from .. import _C, _dtypes, _tensors


def _scalar_value(operand):
    """A Python number for a Python scalar or a zero-dim CPU tensor, which
    PyTorch passes for numbers written in an expression (x * 2)."""
    if isinstance(operand, torch.Tensor):
        return operand.item()
    return operand


def _kind(payload):
    return _dtypes.ZERO_DIM if len(payload.sizes) == 0 else _dtypes.TENSOR


def scalar_for(value, like):
    """A zero-dim payload on like's device holding `value` in the dtype
    torch.result_type gives for (like, value)."""
    code = _C.result_type([(like.dtype, _kind(like)),
                           (_dtypes.scalar_code(value), _dtypes.SCALAR)])
    return _C.full(like.device_index, code, (), float(value))


def payloads(*operands):
    """Payloads for operands that are porta tensors, CPU zero-dim tensors or
    Python numbers; at least one must be a porta tensor. Numbers take part in
    type promotion as Python scalars do."""
    _tensors.check_same_device(*operands)
    like = next(_tensors.unwrap(o) for o in operands if _tensors.is_porta(o))
    return [_tensors.unwrap(o) if _tensors.is_porta(o) else scalar_for(_scalar_value(o), like)
            for o in operands]


def axes_of(dim):
    """libporta's axis list for an aten dim argument (None or []: all)."""
    if dim is None:
        return ()
    if isinstance(dim, int):
        return (dim,)
    return tuple(dim)
