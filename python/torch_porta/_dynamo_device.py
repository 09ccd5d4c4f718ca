"""Dynamo's DeviceInterface for "porta": what torch._dynamo and its
compilers ask of a device by its type string (how many there are, which is
current, a device context, synchronize, its properties). Dynamo asks for it
when it runs compiler collectives over a porta process group, and Inductor
reads the properties of every available device before it starts its compile
workers. libporta has no current device (porta:0 is the default) and no
streams or events in PyTorch's sense, so the device context only checks the
index and Stream/Event keep DeviceInterface's error."""
import dataclasses

from torch._dynamo.device_interface import DeviceInterface, register_interface_for_device

from . import _device_module


@dataclasses.dataclass
class PortaDeviceProperties:
    name: str


def _checked_index(device):
    index = _device_module._index(device)
    count = _device_module.device_count()
    if not 0 <= index < count:
        raise ValueError(f"porta device index: expected 0 to {count - 1} "
                         f"({count} porta device(s)), got {index}")
    return index


class PortaInterface(DeviceInterface):
    class device:
        """Runs the body on a porta device: there is no current device to
        switch, so it checks that the device exists."""

        def __init__(self, device):
            self.index = _checked_index(device)

        def __enter__(self):
            return self

        def __exit__(self, *exc_info):
            return False

    class Worker:
        @staticmethod
        def set_device(device):
            _checked_index(device)

        @staticmethod
        def current_device():
            return _device_module.current_device()

        @staticmethod
        def get_device_properties(device=None):
            return PortaDeviceProperties(_device_module.get_device_name(_checked_index(device)))

    current_device = staticmethod(_device_module.current_device)
    device_count = staticmethod(_device_module.device_count)
    is_available = staticmethod(_device_module.is_available)
    synchronize = staticmethod(_device_module.synchronize)

    @staticmethod
    def set_device(device):
        _checked_index(device)

    @staticmethod
    def exchange_device(device):
        _checked_index(device)
        return _device_module.current_device()

    maybe_exchange_device = exchange_device

    @staticmethod
    def get_compute_capability(device=None):
        return ""

    @staticmethod
    def is_bf16_supported(including_emulation=False):
        return True


def register():
    register_interface_for_device("porta", PortaInterface)
