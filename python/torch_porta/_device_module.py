"""torch.porta: the device module PyTorch looks up for the "porta" device,
with the hooks and device guard its Python PrivateUse1 path requires."""
import os

import torch

from . import _C, _modes


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
    _modes.sync_point("synchronize")
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


# ---- random number generators, with torch.cuda's conventions ----
# Each porta device has one default generator, a Philox (seed, offset) pair
# kept by libporta. torch.manual_seed and torch.seed call manual_seed_all and
# seed_all here (torch.random._seed_custom_device).

_UINT64 = (1 << 64) - 1


def manual_seed(seed, device=None):
    """Seeds the generator of `device` (default: the current device)."""
    _C.manual_seed(_index(device), int(seed) & _UINT64)


def manual_seed_all(seed):
    for index in range(device_count()):
        _C.manual_seed(index, int(seed) & _UINT64)


def _random_seed():
    # What torch uses for a non-deterministic seed: 64 bits from the OS.
    return int.from_bytes(os.urandom(8), "little")


def seed(device=None):
    """Seeds the generator of `device` with a random number."""
    manual_seed(_random_seed(), device)


def seed_all():
    manual_seed_all(_random_seed())


def initial_seed(device=None):
    """The seed the generator of `device` was last seeded with."""
    return _C.get_rng_state(_index(device))[0]


def get_rng_state(device="porta"):
    """The generator state as a CPU uint8 tensor: seed then offset, 8 bytes
    each, little-endian (the layout torch.cuda.get_rng_state uses)."""
    seed_value, offset = _C.get_rng_state(_index(device))
    data = seed_value.to_bytes(8, "little") + offset.to_bytes(8, "little")
    return torch.frombuffer(bytearray(data), dtype=torch.uint8)


def set_rng_state(new_state, device="porta"):
    if not isinstance(new_state, torch.Tensor) or new_state.dtype != torch.uint8 \
            or new_state.numel() != 16:
        raise RuntimeError("set_rng_state: expected a uint8 tensor of 16 bytes "
                           "(seed, offset), as get_rng_state returns")
    data = bytes(new_state.cpu().contiguous().tolist())
    _C.set_rng_state(_index(device), int.from_bytes(data[:8], "little"),
                     int.from_bytes(data[8:], "little"))


def get_rng_state_all():
    return [get_rng_state(index) for index in range(device_count())]


def set_rng_state_all(new_states):
    for index, state in enumerate(new_states):
        set_rng_state(state, index)


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
