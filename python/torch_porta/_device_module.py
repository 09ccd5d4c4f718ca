"""torch.porta: the device module PyTorch looks up for the "porta" device,
with the hooks and device guard its Python PrivateUse1 path requires."""
import torch

from . import _C


def is_available():
    return _C.device_count() > 0


def is_initialized():
    return True


def device_count():
    return _C.device_count()


def current_device():
    # libporta has no notion of a current device; porta:0 is the default.
    return 0


def _index(device):
    if device is None:
        return current_device()
    if isinstance(device, int):
        return device
    index = torch.device(device).index
    return current_device() if index is None else index


def get_device_name(device=None):
    return _C.device_name(_index(device))


def synchronize(device=None):
    _C.synchronize(_index(device))


def memory_allocated(device=None):
    """Bytes libporta holds now (all porta devices together)."""
    return _C.memory_allocated()


def max_memory_allocated(device=None):
    """The most bytes libporta has held since start or the last reset."""
    return _C.memory_peak()


def reset_peak_memory_stats(device=None):
    _C.memory_reset_peak()


def _is_in_bad_fork():
    return False


def manual_seed_all(seed):
    # Random ops are not on porta yet; torch.manual_seed calls this.
    pass


class Hooks(torch._C._acc.PrivateUse1Hooks):
    def is_available(self):
        return is_available()

    def has_primary_context(self, device_index):
        return True

    def is_built(self):
        return True


class DeviceGuard(torch._C._acc.DeviceGuard):
    def type_(self):
        return torch._C._autograd.DeviceType.PrivateUse1
