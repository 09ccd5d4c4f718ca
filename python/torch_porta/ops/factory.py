"""New tensors and in-place fills."""
import torch

from .. import _C, _dtypes, _tensors
from ._registry import register


def _dtype_code(dtype):
    return _dtypes.to_porta(torch.get_default_dtype() if dtype is None else dtype)


def _checked_index(device):
    index = _tensors.device_index(device)
    count = _C.device_count()
    if not 0 <= index < count:
        raise RuntimeError(f"porta:{index} does not exist: {count} porta device(s)")
    return index


@register("empty.memory_format")
def empty(size, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    return _tensors.wrap(_C.empty(_checked_index(device), _dtype_code(dtype), tuple(size)))


@register("empty_strided")
def empty_strided(size, stride, dtype=None, layout=None, device=None, pin_memory=None):
    return _tensors.wrap(_C.empty_strided(_checked_index(device), _dtype_code(dtype),
                                          tuple(size), tuple(stride)))


@register("fill_.Scalar")
def fill_(self, value):
    _C.fill(_tensors.unwrap(self), float(value))
    return self


@register("zero_")
def zero_(self):
    _C.fill(_tensors.unwrap(self), 0.0)
    return self


@register("resize_")
def resize_(self, size, memory_format=None):
    """Contiguous `size`; the old elements stay in row-major order, as in
    PyTorch, and any new ones are uninitialized."""
    old = _tensors.unwrap(self)
    size = tuple(size)
    if size == tuple(self.shape) and self.is_contiguous():
        return self
    new = _C.empty(old.device_index, old.dtype, size)
    kept = min(self.numel(), new_numel := _numel(size))
    if kept:
        old_flat = _C.reshape(old, (self.numel(),))
        new_flat = _C.reshape(new, (new_numel,))
        _C.copy(_C.slice(old_flat, 0, 0, kept, 1), _C.slice(new_flat, 0, 0, kept, 1))
    _tensors.rebind(self, new)
    return self


def _numel(sizes):
    count = 1
    for size in sizes:
        count *= size
    return count
