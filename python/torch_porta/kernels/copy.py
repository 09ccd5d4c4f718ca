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


def _physical(tensor):
    """The tensor's memory as it is, without PyTorch's lazy conjugate and
    negative bits (a view that clears them)."""
    if tensor.is_conj():
        tensor = tensor.conj()
    if tensor.is_neg():
        tensor = tensor._neg_view()
    return tensor


def _apply_math_bits(self, src):
    """After copying src's memory into self's as it is: what makes self's
    value src's where their lazy conjugate or negative bits differ."""
    conj = src.is_conj() != self.is_conj() and self.is_complex()
    neg = src.is_neg() != self.is_neg()
    if not (conj or neg):
        return
    physical = _physical(self)
    if conj:
        torch.view_as_real(physical).select(-1, 1).neg_()
    if neg:
        (torch.view_as_real(physical) if self.is_complex() else physical).neg_()


def _porta_to_host(src, dst):
    if src.is_conj() or src.is_neg():
        src = src.resolve_conj().resolve_neg()  # on porta, by copy_ below
    if dst.is_conj() or dst.is_neg():
        staged = torch.empty(dst.shape, dtype=dst.dtype)
        _porta_to_host(src, staged)
        dst.copy_(staged)  # the CPU's copy_ resolves dst's bits
        return
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
        _apply_math_bits(self, src)
    elif _tensors.is_porta(self):
        src = src.resolve_conj().resolve_neg()  # on the CPU
        _host_to_porta(src, self)
        _apply_math_bits(self, src)
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
