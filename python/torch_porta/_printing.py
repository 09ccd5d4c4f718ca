"""print(t) for porta tensors: the digits are formatted from a CPU copy.

PyTorch formats a tensor with dozens of ops (masked_select, isfinite, abs,
...) run on the tensor's own device; it copies to the CPU first only for a
fixed list of device types. Porta joins that list by formatting the values
of a CPU copy; the rest of the text (device='porta:0', dtype, grad_fn) still
comes from the porta tensor.
"""
import torch._tensor_str as tensor_str

_format_values = tensor_str._tensor_str


def _format_values_on_cpu(self, indent):
    if self.device.type == "porta":
        self = self.cpu()
    return _format_values(self, indent)


def install():
    tensor_str._tensor_str = _format_values_on_cpu
