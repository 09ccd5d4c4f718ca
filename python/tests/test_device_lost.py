"""PORTA_FAULTS' device_lost rule: from the given count of allocations and
launches on one device, every use of that device fails with an error
marked as device loss (torch.AcceleratorError from aten ops,
torch_porta.DeviceLostError from torch_porta's own calls, both recognised
by torch_porta.is_device_lost), other devices go on, and clearing the rules
brings the device back. docs/faults.md."""
import pytest
import torch

import torch_porta


@pytest.fixture
def faults():
    yield
    torch_porta.set_faults(None)


def _lost_device():
    return torch.porta.device_count() - 1  # porta:1 (OpenCL) where there is one


def test_the_device_fails_from_the_given_event_on(faults):
    index = _lost_device()
    device = f"porta:{index}"
    x = torch.arange(4.0, device=device)
    torch_porta.set_faults(f"device_lost:porta:{index}@3")
    torch.empty(4, device=device), torch.empty(4, device=device)  # allocations 1 and 2
    for _ in range(3):
        with pytest.raises(torch.AcceleratorError, match=f"porta:{index}: device lost") as lost:
            x * 2
        assert torch_porta.is_device_lost(lost.value)
        assert f"device_lost:porta:{index}@3" in str(lost.value)
    if index > 0:  # the other devices go on
        assert torch.equal((torch.arange(4.0, device="porta:0") * 3).cpu(), torch.arange(4.0) * 3)
    torch_porta.set_faults(None)
    assert torch.equal((x * 2).cpu(), torch.arange(4.0) * 2)


def test_a_training_step_on_a_lost_device_raises_device_loss(faults):
    index = _lost_device()
    model = torch.nn.Linear(3, 2).to(f"porta:{index}")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    inputs = torch.ones(4, 3, device=f"porta:{index}")
    torch_porta.set_faults(f"device_lost:porta:{index}@40")
    with pytest.raises(RuntimeError) as lost:
        for _ in range(100):
            model(inputs).sum().backward()
            optimizer.step()
    assert torch_porta.is_device_lost(lost.value)
    assert not torch_porta.is_device_lost(RuntimeError("shape mismatch"))


@pytest.mark.skipif(torch.porta.device_count() < 2,
                    reason="needs two porta devices (e.g. PoCL: pocl-opencl-icd)")
def test_torch_porta_calls_raise_device_lost_error(faults):
    torch_porta.set_faults("device_lost:porta:1@1")
    with pytest.raises(torch_porta.DeviceLostError, match="clFinish"):
        torch_porta.synchronize("porta:1")
    torch_porta.synchronize("porta:0")
    assert issubclass(torch_porta.DeviceLostError, torch.AcceleratorError)


def test_a_malformed_device_lost_rule_raises(faults):
    with pytest.raises(RuntimeError, match="device_lost:porta:D@N"):
        torch_porta.set_faults("device_lost:porta:1")
