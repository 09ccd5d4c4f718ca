"""Tensors cross between CPU and porta unchanged, in any layout and dtype."""
import pytest
import torch

import torch_porta

DTYPES = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
          torch.float16, torch.bfloat16, torch.float32, torch.float64]


@pytest.mark.parametrize("dtype", DTYPES)
def test_round_trip_keeps_values_and_dtype(dtype):
    cpu = (torch.arange(-6, 6).reshape(3, 4) % 5).to(dtype)
    porta = cpu.to("porta")
    assert porta.device == torch.device("porta:0")
    assert porta.dtype == dtype and porta.stride() == (4, 1)
    assert torch.equal(porta.cpu(), cpu)


def test_strided_sources_and_destinations():
    cpu = torch.arange(24.0).reshape(4, 6)
    assert torch.equal(cpu.t().to("porta").cpu(), cpu.t())
    porta = cpu.to("porta")
    out = torch.zeros(6, 4).t()  # a transposed CPU destination
    out.copy_(porta)
    assert torch.equal(out, cpu)
    target = torch.zeros(4, 6, device="porta")
    target[:, ::2].copy_(cpu[:, ::2])
    assert torch.equal(target.cpu()[:, ::2], cpu[:, ::2])
    assert torch.equal(target.cpu()[:, 1::2], torch.zeros(4, 3))


def test_copy_between_porta_tensors_casts():
    a = torch.tensor([1.5, -2.5, 3.0], device="porta")
    b = torch.empty(3, dtype=torch.int32, device="porta")
    b.copy_(a)
    assert torch.equal(b.cpu(), torch.tensor([1, -2, 3], dtype=torch.int32))
    expected = torch.tensor([1.5, -2.5, 3.0], dtype=torch.float64)
    assert torch.equal(a.to(torch.float64).cpu(), expected)


def test_to_cpu_with_dtype_change():
    a = torch.tensor([1.25, 2.5], device="porta")
    assert torch.equal(a.to("cpu", torch.float16), torch.tensor([1.25, 2.5], dtype=torch.float16))


def test_item_tolist_numpy_and_print():
    a = torch.tensor([[1.0, 2.0], [3.0, 4.0]], device="porta")
    assert a[1, 0].item() == 3.0
    assert torch.tensor(7, device="porta").item() == 7
    assert a.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert a.cpu().numpy().sum() == 10.0
    text = repr(a)
    assert "device='porta:0'" in text and "3., 4." in text
    with pytest.raises(RuntimeError, match="cannot be converted to Scalar"):
        a.item()


def test_factories():
    assert torch.equal(torch.ones(2, 3, device="porta").cpu(), torch.ones(2, 3))
    assert torch.equal(torch.zeros_like(torch.ones(2, device="porta")).cpu(), torch.zeros(2))
    assert torch.equal(torch.full((2,), 3, device="porta").cpu(), torch.full((2,), 3))
    e = torch.empty_strided((2, 3), (1, 2), device="porta")
    assert e.stride() == (1, 2)


def test_device_module():
    assert torch_porta.is_available() and torch.porta.is_available()
    # the CPU backend, plus any OpenCL device (PoCL in CI)
    assert torch_porta.device_count() == torch.porta.device_count() >= 1
    assert torch_porta.current_device() == 0
    assert isinstance(torch_porta.get_device_name(0), str)
    torch_porta.synchronize()
    before = torch_porta.memory_allocated()
    kept = torch.empty(1024, device="porta")
    assert torch_porta.memory_allocated() >= before + 4096
    assert torch_porta.max_memory_allocated() >= torch_porta.memory_allocated()
    del kept
    assert torch_porta.memory_allocated() == before


def test_non_blocking_copies_between_devices_are_synchronous():
    x = torch.arange(6.0).reshape(2, 3)
    on_porta = x.to("porta", non_blocking=True)
    assert on_porta.device.type == "porta"
    assert torch.equal(on_porta.to("cpu", non_blocking=True), x)
    assert torch.equal(on_porta.cpu().to(torch.float64), x.double())
