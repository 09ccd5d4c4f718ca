"""In-place view ops: squeeze_, unsqueeze_, transpose_, t_, swapdims_ and
the others are PyTorch's own composites over as_strided_, which rewrites the
torch tensor's metadata in place; it is the one kernel porta needs for them.
"""
from .. import _C, _tensors
from ._registry import register


@register("as_strided_")
def as_strided_(self, size, stride, storage_offset=None):
    offset = self.storage_offset() if storage_offset is None else storage_offset
    # libporta checks that the new view lies inside the buffer. Tensors
    # traced by torch.compile (fake tensors) have no porta buffer to check.
    porta = getattr(self.untyped_storage(), "_porta", None)
    if porta is not None:
        _C.as_strided(porta, tuple(size), tuple(stride), offset)
    _tensors.restride(self, tuple(size), tuple(stride), offset)
    return self
