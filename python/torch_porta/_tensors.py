"""How a torch tensor on "porta" maps to libporta tensors.

A porta torch tensor is made by torch._C._acc.create_empty_tensor (a
PrivateUse1 TensorImpl whose storage holds no data) and given its strides,
storage offset and storage through the Meta kernel of set_, which rewrites
only metadata. The storage's Python object holds a porta tensor on the
storage's porta buffer as `_porta`; views are torch tensors on the same
storage, exactly as on CPU. PyTorch keeps the storage's Python object (and
so the buffer) alive as long as any tensor uses the storage, including
shallow copies made in C++ (detach, nn.Parameter).

A kernel reads a tensor as a porta view built from the torch tensor's own
sizes, strides and storage offset, so the strides PyTorch shows are by
construction the strides porta computes with.
"""
import torch

from . import _C
from . import _dtypes

_SET_METADATA = torch.ops.aten.set_.source_Storage_storage_offset
_META_KEYS = torch._C.DispatchKeySet(torch._C.DispatchKey.Meta)
_CPU_KEYS = torch._C.DispatchKeySet(torch._C.DispatchKey.CPU)


def _empty_on(index, dtype):
    """An empty torch tensor on porta:index. PyTorch's helper for devices
    registered from Python only makes index 0; other indices come through
    DLPack (csrc/device_tensor.c)."""
    if index == 0:
        return torch._C._acc.create_empty_tensor((0,), _dtypes.to_torch(dtype))
    return torch.utils.dlpack.from_dlpack(_C.empty_capsule(index, dtype, 0))


def _on_storage(payload, storage):
    tensor = _empty_on(payload.device_index, payload.dtype)
    # DLPack storages (porta:N, N > 0) are not resizable, which Meta's set_
    # insists on; CPU's set_ only checks that the storage is large enough.
    # Both rewrite metadata only.
    _SET_METADATA.redispatch(_metadata_keys(payload.device_index), tensor, storage,
                             payload.offset, payload.sizes, payload.strides)
    return tensor


def _metadata_keys(index):
    return _META_KEYS if index == 0 else _CPU_KEYS


def _new_storage(payload):
    index = payload.device_index
    if index == 0:
        storage = torch._C._acc.create_empty_tensor((0,), torch.uint8).untyped_storage()
    else:
        # sized as the buffer: DLPack storages cannot grow as set_ would ask
        capsule = _C.empty_capsule(index, _dtypes.to_porta(torch.uint8), payload.buffer_bytes)
        storage = torch.utils.dlpack.from_dlpack(capsule).untyped_storage()
    storage._porta = payload
    return storage


def wrap(payload):
    """A torch tensor for a payload on a buffer of its own."""
    return _on_storage(payload, _new_storage(payload))


def wrap_view(base, payload):
    """A torch tensor for a payload libporta computed from base: a view on
    base's storage when it shares base's buffer, else a tensor of its own
    (porta_reshape copies layouts it cannot view)."""
    storage = base.untyped_storage()
    if payload.buffer_id != storage._porta.buffer_id:
        return wrap(payload)
    return _on_storage(payload, storage)


def rebind(tensor, payload):
    """Points an existing porta tensor at a payload on a new buffer (resize)."""
    _SET_METADATA.redispatch(_metadata_keys(payload.device_index), tensor,
                             _new_storage(payload), payload.offset, payload.sizes,
                             payload.strides)


def restride(tensor, sizes, strides, offset):
    """Gives an existing porta tensor new geometry on its own storage."""
    _SET_METADATA.redispatch(_metadata_keys(tensor.device.index or 0), tensor,
                             tensor.untyped_storage(), offset, sizes, strides)


def is_porta(tensor):
    return isinstance(tensor, torch.Tensor) and tensor.device.type == "porta"


def unwrap(tensor):
    """The porta view a porta torch tensor stands for: a view of its
    storage's buffer with the torch tensor's own sizes, strides, offset and
    dtype (python/csrc/kernel.c reads kernel arguments the same way)."""
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
