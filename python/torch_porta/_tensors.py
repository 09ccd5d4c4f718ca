"""How a torch tensor on "porta" maps to libporta tensors.

A porta torch tensor is a PrivateUse1 tensor made by the native backend
(python/native/): its storage holds one reference to a porta buffer, and
its sizes, strides, storage offset and dtype are the porta view's. Views
are torch tensors on the same storage, exactly as on CPU. A payload is a
_C.Tensor, libporta's own handle on a porta tensor.
"""
import torch

from . import _C


def wrap(payload):
    """A torch tensor for a payload, on a storage of its own."""
    return _C.wrap(payload)


def wrap_view(base, payload):
    """A torch tensor for a payload libporta computed from base: a view on
    base's storage when it shares base's buffer, else a tensor of its own
    (porta_reshape copies layouts it cannot view)."""
    return _C.wrap_view(base, payload)


def rebind(tensor, payload):
    """Points an existing porta tensor at a payload (resize)."""
    _C.rebind(tensor, payload)


def restride(tensor, sizes, strides, offset):
    """Gives an existing porta tensor new geometry on its own storage."""
    _C.restride(tensor, sizes, strides, offset)


def is_porta(tensor):
    return isinstance(tensor, torch.Tensor) and tensor.device.type == "porta"


def unwrap(tensor):
    """The porta view a porta torch tensor stands for: a view of its
    storage's buffer with the torch tensor's own sizes, strides, offset and
    dtype (python/native/kernels.cpp reads kernel arguments the same way)."""
    return _C.view_of(tensor)


def _devices_error(tensors):
    names = []
    for tensor in tensors:
        if isinstance(tensor, torch.Tensor) and str(tensor.device) not in names:
            names.append(str(tensor.device))
    return RuntimeError("Expected all tensors to be on the same device, but found at "
                        f"least two devices, {names[0]} and {names[1]}!")


def check_same_device(*tensors):
    """Raises like CUDA when porta tensors meet tensors of another device.
    Zero-dim CPU tensors pass: PyTorch lets them join any device's op."""
    for tensor in tensors:
        if (isinstance(tensor, torch.Tensor) and not is_porta(tensor)
                and not (tensor.device.type == "cpu" and tensor.dim() == 0)):
            raise _devices_error(tensors)


def device_index(device):
    """N of a requested porta:N (None: the current device, 0)."""
    if device is None:
        return 0
    index = torch.device(device).index
    return 0 if index is None else index
