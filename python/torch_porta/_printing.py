"""print(t) for porta tensors: the digits are formatted from a CPU copy.

PyTorch formats a tensor with dozens of ops (masked_select, isfinite, abs,
...) run on the tensor's own device; it copies to the CPU first only for a
fixed list of device types. Porta joins that list by formatting the values
of a CPU copy; the rest of the text (device='porta:0', dtype, grad_fn) still
comes from the porta tensor.
"""
import torch._tensor_str as tensor_str

from . import _modes

_format_values = tensor_str._tensor_str
_to_text = tensor_str._str


def _format_values_on_cpu(self, indent):
    if self.device.type == "porta":
        self = self.cpu()
    return _format_values(self, indent)


def _to_text_after_pending_errors(self, *, tensor_contents=None):
    # PyTorch's _str disables functorch with a guard held in a local
    # variable: an error raised inside it (a failure deferred in strict mode,
    # or found running the fused trace) would keep that frame, and so
    # functorch disabled, alive as long as anyone holds the traceback. Such
    # errors surface here, before _str starts.
    if self.device.type == "porta":
        _modes.surface_pending("to_host")
    return _to_text(self, tensor_contents=tensor_contents)


def install():
    tensor_str._tensor_str = _format_values_on_cpu
    tensor_str._str = _to_text_after_pending_errors
