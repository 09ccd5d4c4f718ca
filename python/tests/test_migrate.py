"""torch_porta.migrate: a model and its optimizer trained a few steps on
porta:0 move to porta:1 (the OpenCL device) in place, and the next step's
loss is the one the run that did not move gets; tied weights stay tied,
and the way back works too."""
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import torch_porta
from test_checkpoint import DemoWithDropout, TiedModel

two_devices = pytest.mark.skipif(torch.porta.device_count() < 2,
                                 reason="needs two porta devices (e.g. PoCL: pocl-opencl-icd)")


def _demo_step(model, optimizer, device, generator):
    images = torch.rand(16, 1, 8, 8, generator=generator).to(device)
    labels = torch.randint(0, 10, (16,), generator=generator).to(device)
    loss = F.cross_entropy(model(images), labels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss.item()


def _tied_step(model, optimizer, device, generator):
    tokens = torch.randint(0, 11, (4, 5), generator=generator).to(device)
    loss = model(tokens).logsumexp(-1).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss.item()


def _steps_with_and_without_moving(make_model, step, route):
    """Three steps on route[0], then one on each later device of `route`,
    migrating between them; and the same steps staying on route[0]."""
    results = []
    for moving in (False, True):
        torch.manual_seed(0)
        torch_porta.manual_seed_all(0)
        model = make_model().to(route[0])
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
        parameters = list(model.parameters())
        generator = torch.Generator().manual_seed(1)
        losses = [step(model, optimizer, route[0], generator) for _ in range(3)]
        for device in route[1:]:
            if moving:
                assert torch_porta.migrate(model, optimizer, to=device) is model
            where = device if moving else route[0]
            assert all(p.device == torch.device(where) for p in model.parameters())
            assert list(model.parameters()) == parameters  # the same objects
            losses.append(step(model, optimizer, where, generator))
        results.append((losses, model))
    return results


@two_devices
@pytest.mark.parametrize("make_model,step", [(DemoWithDropout, _demo_step),
                                             (TiedModel, _tied_step)])
def test_the_next_step_after_migrating_matches_not_migrating(make_model, step):
    (stayed, _), (moved, model) = _steps_with_and_without_moving(
        make_model, step, ["porta:0", "porta:1", "porta:0"])
    assert moved[:3] == stayed[:3]
    torch.testing.assert_close(moved[3:], stayed[3:], rtol=1e-5, atol=1e-6)
    if isinstance(model, TiedModel):
        assert model.head.weight is model.embed.weight


@two_devices
def test_migrate_moves_gradients_buffers_optimizer_state_and_the_generator():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4)).to("porta:0")
    optimizer = torch.optim.Adam(model.parameters())
    model(torch.randn(8, 4, device="porta:0")).sum().backward()
    optimizer.step()
    torch_porta.manual_seed(7)
    expected = torch_porta.get_rng_state("porta:0")
    torch_porta.migrate(model, optimizer, to="porta:1")
    weight = model[0].weight
    assert weight.grad.device == torch.device("porta:1")
    assert model[1].running_mean.device == torch.device("porta:1")
    assert optimizer.state[weight]["exp_avg"].device == torch.device("porta:1")
    assert optimizer.state[weight]["step"].device == torch.device("cpu")
    assert torch.equal(torch_porta.get_rng_state("porta:1"), expected)


def test_migrate_to_pytorchs_cpu_and_back_keeps_every_object():
    model = nn.Linear(3, 2).to("porta:0")
    optimizer = torch.optim.Adam(model.parameters())
    weight = model.weight
    for device in ("cpu", "porta:0"):
        model(torch.ones(1, 3, device=weight.device)).sum().backward()
        optimizer.step()
        torch_porta.migrate(model, optimizer, to=device)
        assert model.weight is weight and weight.device == torch.device(device)
        assert weight.grad.device == weight.device
        assert optimizer.state[weight]["exp_avg"].device == weight.device


def test_migrate_refuses_a_model_spread_over_devices():
    model = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2).to("porta:0"))
    with pytest.raises(ValueError, match="expected the model and optimizer on one device"):
        torch_porta.migrate(model, to="porta:1")
