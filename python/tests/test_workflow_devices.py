"""Training on a second porta device as on cuda:1: backward on porta:1, a
model split across porta:0 and porta:1 with backward crossing them, the
current device (set_device, the device context) deciding where "porta"
tensors go, and copies between devices."""
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import torch_porta  # noqa: F401  (registers the device)

DEVICE = "porta"
# porta:1 is usually an OpenCL device, whose float32 math may differ from
# the CPU's in the last bits: the tolerances of test_devices.py.

pytestmark = pytest.mark.skipif(torch.porta.device_count() < 2,
                                reason="needs two porta devices "
                                       "(PORTA_VISIBLE_DEVICES=cpu,opencl with PoCL)")


@pytest.fixture(autouse=True)
def current_device_restored():
    """A test that changes the current device gives it back as it found it."""
    before = torch.porta.current_device()
    yield
    if torch.porta.current_device() != before:
        torch.porta.set_device(before)


def _mlp():
    return nn.Sequential(nn.Linear(6, 12), nn.ReLU(), nn.Linear(12, 3))


def _train(model, placements, steps=3):
    """SGD on fixed batches; placements[i] is the device of model[i]'s input."""
    generator = torch.Generator().manual_seed(1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for _ in range(steps):
        x, y = torch.randn(10, 6, generator=generator), torch.randn(10, 3, generator=generator)
        optimizer.zero_grad()
        out = x
        for layer, device in zip(model, placements):
            out = layer(out.to(device))
        loss = F.mse_loss(out, y.to(out.device))
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def test_a_model_trains_on_the_second_device_as_on_the_cpu():
    torch.manual_seed(0)
    reference = _mlp()
    model = _mlp()
    model.load_state_dict(reference.state_dict())
    model.to(f"{DEVICE}:1")
    losses = _train(model, [f"{DEVICE}:1"] * 3)
    cpu_losses = _train(reference, ["cpu"] * 3)
    assert losses == pytest.approx(cpu_losses, rel=1e-4, abs=1e-5)
    for p, q in zip(model.parameters(), reference.parameters()):
        assert p.device == torch.device(DEVICE, 1)
        assert p.grad.device == torch.device(DEVICE, 1)
        torch.testing.assert_close(p.detach().cpu(), q.detach(), rtol=1e-4, atol=1e-5)


def test_backward_crosses_a_model_split_across_two_devices():
    torch.manual_seed(0)
    reference = _mlp()
    model = _mlp()
    model.load_state_dict(reference.state_dict())
    model[0].to(f"{DEVICE}:0")
    model[2].to(f"{DEVICE}:1")
    placements = [f"{DEVICE}:0", f"{DEVICE}:0", f"{DEVICE}:1"]
    losses = _train(model, placements)
    cpu_losses = _train(reference, ["cpu"] * 3)
    assert losses == pytest.approx(cpu_losses, rel=1e-4, abs=1e-5)
    for layer, index in ((model[0], 0), (model[2], 1)):
        for p in layer.parameters():
            assert p.device == torch.device(DEVICE, index)
            assert p.grad.device == torch.device(DEVICE, index)
    for p, q in zip(model.parameters(), reference.parameters()):
        torch.testing.assert_close(p.detach().cpu(), q.detach(), rtol=1e-4, atol=1e-5)


def test_the_gradient_of_a_copy_between_devices_goes_back_to_the_source():
    source = torch.arange(4.0, device=f"{DEVICE}:0", requires_grad=True)
    (source.to(f"{DEVICE}:1") * torch.tensor([1.0, 2.0, 3.0, 4.0], device=f"{DEVICE}:1")
     ).sum().backward()
    assert source.grad.device == torch.device(DEVICE, 0)
    assert torch.equal(source.grad.cpu(), torch.tensor([1.0, 2.0, 3.0, 4.0]))


def test_set_device_decides_where_porta_tensors_go():
    assert torch.porta.current_device() == 0
    torch.porta.set_device(1)
    assert torch.porta.current_device() == 1
    assert torch.empty(2, device=DEVICE).device == torch.device(DEVICE, 1)
    assert torch.ones(2).to(DEVICE).device == torch.device(DEVICE, 1)
    assert torch.empty(2, device=f"{DEVICE}:0").device == torch.device(DEVICE, 0)
    torch.porta.set_device(f"{DEVICE}:0")
    assert torch.porta.current_device() == 0
    assert torch.empty(2, device=DEVICE).device == torch.device(DEVICE, 0)


@pytest.mark.parametrize("which", [1, f"{DEVICE}:1", torch.device(DEVICE, 1)], ids=repr)
def test_the_device_context_sets_and_restores_the_current_device(which):
    with torch.porta.device(which):
        assert torch.porta.current_device() == 1
        x = torch.empty(2, device=DEVICE)
        assert x.device == torch.device(DEVICE, 1)
    assert torch.porta.current_device() == 0
    assert torch.empty(2, device=DEVICE).device == torch.device(DEVICE, 0)


def test_ops_run_on_their_tensors_device_whatever_the_current_one():
    x = torch.arange(6.0, device=f"{DEVICE}:1")
    with torch.porta.device(0):
        y = x * 2 + 1
    assert y.device == torch.device(DEVICE, 1)
    assert torch.equal(y.cpu(), torch.arange(6.0) * 2 + 1)


def test_to_the_second_device_copies():
    source = torch.arange(6.0).reshape(2, 3).to(f"{DEVICE}:0")
    copy = source.to(f"{DEVICE}:1")
    assert copy.device == torch.device(DEVICE, 1)
    copy.add_(10)  # the copy is its own memory
    assert torch.equal(source.cpu(), torch.arange(6.0).reshape(2, 3))
    assert torch.equal(copy.cpu(), torch.arange(6.0).reshape(2, 3) + 10)
    assert source.to(f"{DEVICE}:0") is source  # already there: no copy, as on CUDA
    assert copy.to(f"{DEVICE}:1", dtype=torch.float64).dtype == torch.float64
