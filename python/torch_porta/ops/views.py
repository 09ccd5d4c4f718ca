"""Views: new torch tensors whose payloads share the input's porta buffer.

Every view goes through a libporta movement op (or, for as_strided, a view
that libporta bounds-checks), so porta and PyTorch agree on strides.
"""
from .. import _C, _tensors
from ._registry import register


def _normalized(dim, rank):
    # aten passes dims as the user wrote them; PyTorch raises IndexError.
    bound = max(rank, 1)
    if not -bound <= dim < bound:
        raise IndexError(f"Dimension out of range (expected to be in range of "
                         f"[{-bound}, {bound - 1}], but got {dim})")
    return dim % bound


def _infer_sizes(size, numel):
    # One -1 in a view's size stands for what the other sizes leave.
    size = list(size)
    if -1 in size:
        known = 1
        for s in size:
            if s != -1:
                known *= s
        size[size.index(-1)] = numel // known if known else 0
    return tuple(size)


def _numel(sizes):
    count = 1
    for s in sizes:
        count *= s
    return count


@register("view", "_unsafe_view")
def view(self, size):
    payload = _tensors.unwrap(self)
    result = _C.reshape(payload, _infer_sizes(size, _numel(payload.sizes)))
    # porta_reshape copies a layout it cannot view; a view must not.
    if result.buffer_id != payload.buffer_id and _numel(payload.sizes) > 0:
        raise RuntimeError("view size is not compatible with input tensor's size and stride "
                           "(at least one dimension spans across two contiguous subspaces). "
                           "Use .reshape(...) instead.")
    return _tensors.wrap_view(self, result)


@register("_reshape_alias")
def _reshape_alias(self, size, stride):
    payload = _tensors.unwrap(self)
    result = _C.as_strided(payload, tuple(size), tuple(stride), payload.offset)
    return _tensors.wrap_view(self, result)


@register("as_strided")
def as_strided(self, size, stride, storage_offset=None):
    payload = _tensors.unwrap(self)
    offset = payload.offset if storage_offset is None else storage_offset
    return _tensors.wrap_view(self, _C.as_strided(payload, tuple(size), tuple(stride), offset))


@register("expand")
def expand(self, size, implicit=False):
    return _tensors.wrap_view(self, _C.expand(_tensors.unwrap(self), tuple(size)))


@register("permute")
def permute(self, dims):
    return _tensors.wrap_view(self, _C.permute(_tensors.unwrap(self), tuple(dims)))


@register("transpose.int")
def transpose(self, dim0, dim1):
    rank = self.dim()
    order = list(range(rank))
    if rank == 0:
        _normalized(dim0, rank), _normalized(dim1, rank)
        return _tensors.wrap_view(self, _C.permute(_tensors.unwrap(self), ()))
    a, b = _normalized(dim0, rank), _normalized(dim1, rank)
    order[a], order[b] = order[b], order[a]
    return _tensors.wrap_view(self, _C.permute(_tensors.unwrap(self), tuple(order)))


@register("t")
def t(self):
    if self.dim() > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {self.dim()}D")
    return transpose(self, 0, -1) if self.dim() == 2 else self.alias()


@register("slice.Tensor")
def slice_(self, dim=0, start=None, end=None, step=1):
    rank = self.dim()
    axis = _normalized(dim, rank)
    size = self.shape[axis]
    start = 0 if start is None else start
    end = size if end is None else end
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    return _tensors.wrap_view(self, _C.slice(_tensors.unwrap(self), axis, start, end, step))


@register("select.int")
def select(self, dim, index):
    rank = self.dim()
    if rank == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    axis = _normalized(dim, rank)
    size = self.shape[axis]
    if not -size <= index < size:
        raise IndexError(f"select(): index {index} out of range for tensor of size "
                         f"{tuple(self.shape)} at dimension {dim}")
    index %= size
    picked = _C.slice(_tensors.unwrap(self), axis, index, index + 1, 1)
    kept = tuple(s for i, s in enumerate(picked.sizes) if i != axis)
    return _tensors.wrap_view(self, _C.reshape(picked, kept))


@register("unsqueeze")
def unsqueeze(self, dim):
    rank = self.dim()
    axis = _normalized(dim, rank + 1)
    sizes = list(self.shape)
    sizes.insert(axis, 1)
    return _tensors.wrap_view(self, _C.reshape(_tensors.unwrap(self), tuple(sizes)))


@register("squeeze", "squeeze.dim", "squeeze.dims")
def squeeze(self, dim=None):
    rank = self.dim()
    if dim is None:
        axes = range(rank)
    else:
        axes = [_normalized(d, rank) for d in ((dim,) if isinstance(dim, int) else dim)]
    sizes = tuple(s for i, s in enumerate(self.shape) if not (i in axes and s == 1))
    return _tensors.wrap_view(self, _C.reshape(_tensors.unwrap(self), sizes))
