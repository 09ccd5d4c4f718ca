"""Reductions: sum and mean over dims."""
from .. import _C, _dtypes, _tensors
from ._operands import axes_of, scalar_for
from ._registry import register

SUM = _C.REDUCE["sum"]
DIV = _C.BINARY["div"]


def _input(self, dtype):
    # PyTorch casts the input to `dtype` before reducing.
    payload = _tensors.unwrap(self)
    code = None if dtype is None else _dtypes.to_porta(dtype)
    return payload if code in (None, payload.dtype) else _C.cast(payload, code)


@register("sum.dim_IntList")
def sum_dim(self, dim, keepdim=False, dtype=None):
    return _tensors.wrap(_C.reduce(SUM, _input(self, dtype), axes_of(dim), keepdim))


@register("mean.dim")
def mean_dim(self, dim, keepdim=False, dtype=None):
    x = _input(self, dtype)
    if not _dtypes.to_torch(x.dtype).is_floating_point:
        raise RuntimeError(
            "mean(): could not infer output dtype. Input dtype must be either a floating "
            f"point or complex dtype. Got: {_dtypes.to_torch(x.dtype)}")
    total = _C.reduce(SUM, x, axes_of(dim), keepdim)
    count = 1
    for size in _reduced_sizes(x.sizes, axes_of(dim)):
        count *= size
    return _tensors.wrap(_C.binary(DIV, total, scalar_for(float(count), total)))


def _reduced_sizes(sizes, axes):
    rank = len(sizes)
    return sizes if not axes else [sizes[a % rank] for a in axes]
