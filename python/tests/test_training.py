"""A tiny MLP trains on porta exactly as on the CPU."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def _train(device, steps=5):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1)).to(device)
    x, y = torch.randn(16, 4), torch.randn(16, 1)
    optimizer = torch.optim.SGD(model.parameters(), 0.1)
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = F.mse_loss(model(x.to(device)), y.to(device))
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses, [p.detach().cpu() for p in model.parameters()]


def test_mlp_losses_and_weights_match_cpu():
    cpu_losses, cpu_params = _train("cpu")
    porta_losses, porta_params = _train("porta")
    assert max(abs(a - b) for a, b in zip(cpu_losses, porta_losses)) < 1e-5
    for got, expected in zip(porta_params, cpu_params):
        torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)


def test_parameters_and_grads_live_on_porta():
    model = nn.Linear(3, 2).to("porta")
    model(torch.ones(5, 3, device="porta")).sum().backward()
    assert all(p.device.type == "porta" and p.grad.device.type == "porta"
               for p in model.parameters())
    torch.testing.assert_close(model.bias.grad.cpu(), torch.full((2,), 5.0))
