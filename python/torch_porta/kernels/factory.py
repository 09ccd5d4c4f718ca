"""Resizing in place: the one factory kernel that needs Python, since it
rebinds the torch tensor to a new porta buffer. The factories themselves
(empty, empty_strided, full, fill_, zero_, arange, ...) are libporta's aten
ops (src/aten/factory/)."""
from .. import _C, _tensors
from ._registry import register


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
