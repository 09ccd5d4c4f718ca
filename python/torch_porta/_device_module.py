"""torch.porta: the device module PyTorch looks up for the "porta" device,
with torch.cuda's API (devices, streams and events, random generators,
memory statistics, AMP dtypes). The device guard, hooks and allocator
behind it are native (python/native/)."""
import collections
import contextlib
import os

import torch

from . import _C, _modes

# ---- devices ----


def is_available():
    return _C.device_count() > 0


def is_initialized():
    return True


# torch.utils.checkpoint (and others) save and restore the device's RNG
# state only when the device module says it is initialized, as torch.cuda's.
_initialized = True


def _lazy_init():
    """Nothing to initialize lazily: libporta finds its devices at load."""


def _is_in_bad_fork():
    return False


def device_count():
    return _C.device_count()


def current_device():
    """The index of this thread's current porta device (0 unless set)."""
    return _C.current_device()


def _index(device):
    if device is None:
        return current_device()
    if isinstance(device, int):
        return device
    device = torch.device(device)
    if device.type != "porta":
        raise ValueError(f"Expected a porta device, but got: {device}")
    return current_device() if device.index is None else device.index


def set_device(device):
    """Makes `device` this thread's current porta device: tensors made on
    "porta" without an index land there."""
    index = _index(device)
    if index >= 0:
        _C.set_device(index)


class device:
    """Context manager that makes `device` the current porta device."""

    def __init__(self, device):
        self.index = -1 if device is None else _index(device)
        self.previous = -1

    def __enter__(self):
        self.previous = current_device()
        if self.index >= 0:
            _C.set_device(self.index)

    def __exit__(self, *exc):
        _C.set_device(self.previous)
        return False


class device_of(device):
    """Context manager that makes the device of tensor `obj` current."""

    def __init__(self, obj):
        super().__init__(obj.get_device() if obj.device.type == "porta" else None)


def get_device_name(device=None):
    return _C.device_name(_index(device))


_DeviceProperties = collections.namedtuple(
    "_DeviceProperties", "name backend total_memory multi_processor_count capabilities")


def get_device_properties(device=None):
    """name (as get_device_name gives it), backend ("cpu", "opencl", ...), total_memory (bytes),
    multi_processor_count (threads or compute units), capabilities
    (porta.h's PORTA_CAP_* bits)."""
    index = _index(device)
    _, backend, memory, units, capabilities = _C.device_properties(index)
    return _DeviceProperties(get_device_name(index), backend, memory, units, capabilities)


def synchronize(device=None):
    _modes.sync_point("synchronize")
    _C.synchronize(_index(device))


def get_amp_supported_dtype():
    """The lower-precision dtypes torch.autocast("porta", dtype=...) takes."""
    return [torch.float16, torch.bfloat16]


def is_bf16_supported(including_emulation=True):
    return True


# ---- streams and events ----
# libporta runs ops in issue order (fused mode at the next sync point), so
# a stream orders nothing PyTorch does not already order: streams and
# events behave as on CUDA, and synchronizing either waits for the device.


class Stream(torch.Stream):
    """A porta stream: torch.porta.Stream(device=None, priority=0)."""

    def __new__(cls, device=None, priority=0, **kwargs):
        if "stream_id" in kwargs:
            return super().__new__(cls, **kwargs)
        index = _index(device)
        return super().__new__(cls, device=torch.device("porta", index), priority=priority)


def Event(enable_timing=False, blocking=False, interprocess=False):
    """A porta event (a torch.Event on "porta"), as torch.cuda.Event."""
    return torch.Event(device="porta", enable_timing=enable_timing, blocking=blocking,
                       interprocess=interprocess)


def current_stream(device=None):
    index = _index(device)
    return torch.accelerator.current_stream(torch.device("porta", index))


def default_stream(device=None):
    stream = current_stream(device)
    return torch.Stream(stream_id=0, device_index=stream.device_index,
                        device_type=stream.device_type)


def set_stream(stream):
    if stream is not None:
        torch.accelerator.set_stream(stream)


@contextlib.contextmanager
def stream(stream):
    """Context manager that makes `stream` current (None: no change)."""
    if stream is None:
        yield
        return
    previous = current_stream(stream.device_index)
    torch.accelerator.set_stream(stream)
    try:
        yield
    finally:
        torch.accelerator.set_stream(previous)


# ---- memory ----


def memory_allocated(device=None):
    """Bytes held by the storages of porta tensors on `device`."""
    return _C.memory_stats(_index(device))[0]


def max_memory_allocated(device=None):
    """The most bytes the device's storages held since start or the last
    reset_peak_memory_stats."""
    return _C.memory_stats(_index(device))[1]


def memory_reserved(device=None):
    """Bytes libporta holds on all its devices: tensors' storages, and the
    intermediates of ops running now (libporta keeps no cache of freed
    memory, so nothing more is reserved)."""
    return _C.memory_allocated()


def max_memory_reserved(device=None):
    return _C.memory_peak()


def reset_peak_memory_stats(device=None):
    _C.reset_peak_memory(_index(device))
    _C.memory_reset_peak()


def reset_max_memory_allocated(device=None):
    reset_peak_memory_stats(device)


def empty_cache():
    """Nothing to give back: libporta frees a buffer when its last user goes."""


def memory_stats(device=None):
    allocated, peak = _C.memory_stats(_index(device))
    return {"allocated_bytes.all.current": allocated, "allocated_bytes.all.peak": peak,
            "reserved_bytes.all.current": memory_reserved(device),
            "reserved_bytes.all.peak": max_memory_reserved(device)}


def memory_summary(device=None, abbreviated=False):
    index = _index(device)
    stats = memory_stats(index)
    lines = [f"porta:{index} memory summary ({get_device_name(index)})"]
    lines += [f"  {name:<32} {value:>16,d} bytes" for name, value in stats.items()]
    return "\n".join(lines)


# ---- random number generators, with torch.cuda's conventions ----
# Each porta device has one default generator, a Philox (seed, offset) pair
# kept by libporta. torch.manual_seed and torch.seed call manual_seed_all and
# seed_all here (torch.random._seed_custom_device).

_UINT64 = (1 << 64) - 1


# porta:i's default torch.Generator, as torch.cuda.default_generators.
default_generators = tuple(_C.default_generator(i) for i in range(_C.device_count()))


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
