"""Tensor behaviour users see directly: print(t) shows the CPU's text with
the device added, a copy to porta takes the memory format asked for, and
torch.histc takes integer tensors as on CUDA."""
import pytest
import torch

import torch_porta  # noqa: F401  (registers the device)

DEVICE = "porta"


def _with_device(cpu_text, device=f"{DEVICE}:0"):
    """The CPU's text with the device suffix where PyTorch puts it: right
    after the values, before size (of empty tensors), dtype, requires_grad
    or grad_fn."""
    ends = [cpu_text.find(s)
            for s in (", size=", ", dtype=", ", requires_grad=", ", grad_fn=")]
    end = min([e for e in ends if e >= 0], default=len(cpu_text) - 1)
    return f"{cpu_text[:end]}, device='{device}'{cpu_text[end:]}"


_PRINTED = {
    "vector": lambda: torch.tensor([1.0, -2.5, 3.25]),
    "matrix": lambda: torch.arange(12.0).reshape(3, 4) / 7,
    "summarized": lambda: torch.arange(2000.0).reshape(40, 50),
    "scientific": lambda: torch.tensor([1e-8, 1.0, 1e8, -3e-5]),
    "non_finite": lambda: torch.tensor([float("nan"), float("inf"), -float("inf"), 0.5]),
    "scalar": lambda: torch.tensor(3.5),
    "float64": lambda: torch.tensor([0.1, 0.2], dtype=torch.float64),
    "bfloat16": lambda: torch.tensor([1.5, 2.0, -0.25], dtype=torch.bfloat16),
    "float16": lambda: torch.tensor([1.5, 2.0], dtype=torch.float16),
    "int32": lambda: torch.tensor([[1, -20], [300, 4]], dtype=torch.int32),
    "int64": lambda: torch.tensor([7, 8, 9]),
    "bool": lambda: torch.tensor([True, False]),
    "empty": lambda: torch.empty(0, 3),
}


@pytest.mark.parametrize("name", sorted(_PRINTED))
def test_printed_text_is_the_cpus_with_the_device(name):
    cpu = _PRINTED[name]()
    porta = cpu.to(DEVICE)
    assert str(porta) == _with_device(str(cpu))
    assert repr(porta) == str(porta)


def test_printed_autograd_tensors_show_requires_grad_and_grad_fn():
    cpu = torch.tensor([1.0, 2.0], requires_grad=True)
    porta = cpu.detach().to(DEVICE).requires_grad_()
    assert str(porta) == _with_device(str(cpu))
    assert str(porta * 2) == _with_device(str(cpu * 2))
    assert str(porta.sum()) == _with_device(str(cpu.sum()))


@pytest.mark.parametrize("memory_format", [torch.channels_last, torch.contiguous_format,
                                           torch.preserve_format], ids=str)
@pytest.mark.parametrize("source_format", [torch.contiguous_format, torch.channels_last], ids=str)
def test_a_copy_to_porta_takes_the_memory_format_asked_for(source_format, memory_format):
    cpu = torch.arange(2 * 3 * 4 * 5.0).reshape(2, 3, 4, 5).contiguous(memory_format=source_format)
    expected = cpu.to(torch.float64, memory_format=memory_format)  # a copy on the CPU
    porta = cpu.to(DEVICE, torch.float64, memory_format=memory_format)
    assert porta.stride() == expected.stride()
    assert torch.equal(porta.cpu(), expected)
    back = porta.to("cpu", memory_format=memory_format)
    assert back.stride() == expected.stride()


@pytest.mark.parametrize("bins, low, high", [(5, 0, 0), (4, -10, 10), (7, 3, 30)])
def test_histc_counts_an_int32_tensor(bins, low, high):
    values = torch.tensor([-12, -10, -3, 0, 0, 1, 5, 9, 10, 10, 11, 25, 40], dtype=torch.int32)
    got = torch.histc(values.to(DEVICE), bins=bins, min=low, max=high)
    # the CPU kernel takes floating point only: it counts the same values as float
    expected = torch.histc(values.float(), bins=bins, min=low, max=high)
    assert got.device.type == DEVICE
    assert got.dtype == torch.int32  # the input's dtype, as CUDA's histc returns
    assert torch.equal(got.cpu(), expected.to(torch.int32))
