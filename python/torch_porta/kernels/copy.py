"""Copies within porta and between porta and the CPU, and reading scalars."""
import torch

from .. import _C, _dtypes, _metrics, _modes, _tensors
from ._registry import register


def _host_to_porta(src, dst):
    # A contiguous CPU source in its own dtype; libporta casts and lays it
    # out into dst, whatever dst's strides.
    src = src.contiguous()
    _C.write_host(_tensors.unwrap(dst), src.data_ptr(), _dtypes.to_porta(src.dtype),
                  tuple(src.shape))


def _porta_to_host(src, dst):
    payload = _tensors.unwrap(src)
    if payload.dtype != _dtypes.to_porta(dst.dtype):
        payload = _C.cast(payload, _dtypes.to_porta(dst.dtype))
    if dst.is_contiguous() and tuple(dst.shape) == payload.sizes:
        _C.read_host(payload, dst.data_ptr(), dst.numel() * dst.element_size())
        return
    staged = torch.empty(payload.sizes, dtype=dst.dtype)
    _C.read_host(payload, staged.data_ptr(), staged.numel() * staged.element_size())
    dst.copy_(staged)  # dst is a CPU tensor: placing data in its own layout


@register("copy_")
def copy_(self, src, non_blocking=False):
    _metrics.count_copy(self, src)
    if _tensors.is_porta(self) and _tensors.is_porta(src):
        _C.copy(_tensors.unwrap(src), _tensors.unwrap(self))
    elif _tensors.is_porta(self):
        _host_to_porta(src, self)
    else:
        _modes.sync_point("to_host")
        _porta_to_host(src, self)
    return self


@register("_copy_from")
def _copy_from(self, dst, non_blocking=False):
    return copy_(dst, self, non_blocking)


@register("_copy_from_and_resize")
def _copy_from_and_resize(self, dst):
    if tuple(dst.shape) != tuple(self.shape):
        if _tensors.is_porta(dst):
            payload = _tensors.unwrap(dst)
            _tensors.rebind(dst, _C.empty(payload.device_index, payload.dtype,
                                          tuple(self.shape)))
        else:
            dst.resize_(self.shape)
    return copy_(dst, self)


@register("_local_scalar_dense")
def _local_scalar_dense(self):
    _modes.sync_point("item")
    return _C.item(_tensors.unwrap(self))
