"""Everyday training code runs on porta unchanged and as on the CPU: tied and
shared parameters stay one Parameter through .to("porta"), activation
checkpointing, gradient clipping, foreach and fused optimizers,
channels_last convolutions and deterministic mode."""
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.checkpoint as checkpoint

import torch_porta  # noqa: F401  (registers the device)

DEVICE = "porta"


def _randn(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def _assert_params_close(model, reference, rtol=1e-5, atol=1e-6):
    for (name, p), (_, q) in zip(model.named_parameters(), reference.named_parameters()):
        assert p.device.type == DEVICE, name
        torch.testing.assert_close(p.detach().cpu(), q.detach(), rtol=rtol, atol=atol, msg=name)


# ---- tied and shared parameters ----

class TinyLM(nn.Module):
    """A language model whose output projection is its embedding (GPT-2's tie)."""

    def __init__(self, vocab=11, width=8):
        super().__init__()
        self.wte = nn.Embedding(vocab, width)
        self.block = nn.Sequential(nn.Linear(width, width), nn.Tanh())
        self.lm_head = nn.Linear(width, vocab, bias=False)
        self.lm_head.weight = self.wte.weight

    def forward(self, tokens):
        return self.lm_head(self.block(self.wte(tokens)))


def _train_lm(model, device, steps=4):
    tokens = torch.randint(0, 11, (3, 6), generator=torch.Generator().manual_seed(1))
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.01)
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        logits = model(tokens[:, :-1].to(device))
        loss = F.cross_entropy(logits.reshape(-1, 11), tokens[:, 1:].reshape(-1).to(device))
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def test_tied_weights_stay_one_parameter_after_to_porta():
    model = TinyLM()
    tied = model.wte.weight
    model.to(DEVICE)
    assert model.lm_head.weight is model.wte.weight
    assert model.wte.weight is tied  # .to() moves the data, keeps the Parameter
    assert model.wte.weight.device == torch.device(DEVICE, 0)
    assert len(list(model.parameters())) == len(list(TinyLM().parameters())) == 3


def test_a_model_with_tied_weights_trains_as_on_the_cpu():
    torch.manual_seed(0)
    reference = TinyLM()
    model = TinyLM()
    model.load_state_dict(reference.state_dict())
    model.to(DEVICE)
    losses = _train_lm(model, DEVICE)
    cpu_losses = _train_lm(reference, "cpu")
    assert losses == pytest.approx(cpu_losses, rel=1e-5, abs=1e-6)
    assert model.lm_head.weight is model.wte.weight
    _assert_params_close(model, reference, rtol=1e-4, atol=1e-5)


def test_to_porta_moves_existing_grads_with_their_parameters():
    model = nn.Linear(3, 2)
    model(torch.ones(4, 3)).sum().backward()
    expected = [p.grad.clone() for p in model.parameters()]
    model.to(DEVICE)
    for p, grad in zip(model.parameters(), expected):
        assert p.device.type == DEVICE and p.grad.device.type == DEVICE
        assert torch.equal(p.grad.cpu(), grad)
    model(torch.ones(4, 3, device=DEVICE)).sum().backward()  # accumulates on porta
    for p, grad in zip(model.parameters(), expected):
        assert p.grad.device.type == DEVICE
        assert torch.equal(p.grad.cpu(), 2 * grad)
    model.to("cpu")
    assert all(p.grad.device.type == "cpu" for p in model.parameters())


class SharedEncoders(nn.Module):
    """One Linear used by two branches, and one Parameter held by two modules."""

    def __init__(self):
        super().__init__()
        shared = nn.Linear(4, 4)
        self.left = nn.Sequential(shared, nn.ReLU())
        self.right = nn.Sequential(shared, nn.Sigmoid())
        self.scale_a = nn.Module()
        self.scale_b = nn.Module()
        self.scale_a.weight = nn.Parameter(torch.full((4,), 0.5))
        self.scale_b.weight = self.scale_a.weight

    def forward(self, x):
        return self.left(x) * self.scale_a.weight + self.right(x) * self.scale_b.weight


def test_shared_modules_and_parameters_stay_shared_and_train_as_on_the_cpu():
    torch.manual_seed(0)
    reference = SharedEncoders()
    model = SharedEncoders()
    model.load_state_dict(reference.state_dict())
    model.to(DEVICE)
    assert model.left[0] is model.right[0]
    assert model.scale_a.weight is model.scale_b.weight
    assert len(list(model.parameters())) == len(list(reference.parameters())) == 3
    for net, device in ((model, DEVICE), (reference, "cpu")):
        generator = torch.Generator().manual_seed(1)
        optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
        for _ in range(3):
            x = torch.randn(5, 4, generator=generator)
            optimizer.zero_grad()
            net(x.to(device)).square().mean().backward()
            optimizer.step()
    _assert_params_close(model, reference)


# ---- activation checkpointing ----

class CheckpointedNet(nn.Module):
    def __init__(self, use_reentrant, dropout=0.0):
        super().__init__()
        self.use_reentrant = use_reentrant
        self.first = nn.Sequential(nn.Linear(6, 16), nn.GELU(), nn.Dropout(dropout))
        self.second = nn.Sequential(nn.Linear(16, 16), nn.Tanh())
        self.head = nn.Linear(16, 2)

    def forward(self, x):
        x = checkpoint.checkpoint(self.first, x, use_reentrant=self.use_reentrant)
        x = checkpoint.checkpoint(self.second, x, use_reentrant=self.use_reentrant)
        return self.head(x)


@pytest.mark.parametrize("use_reentrant", [False, True])
def test_checkpointed_grads_match_the_cpu(use_reentrant):
    torch.manual_seed(0)
    reference = CheckpointedNet(use_reentrant)
    model = CheckpointedNet(use_reentrant)
    model.load_state_dict(reference.state_dict())
    model.to(DEVICE)
    x = _randn(7, 6, seed=1)
    # with use_reentrant=True an input needs grad for the segments to backprop
    F.mse_loss(model(x.to(DEVICE).requires_grad_()), torch.ones(7, 2, device=DEVICE)).backward()
    F.mse_loss(reference(x.clone().requires_grad_()), torch.ones(7, 2)).backward()
    for (name, p), (_, q) in zip(model.named_parameters(), reference.named_parameters()):
        assert p.grad.device.type == DEVICE, name
        torch.testing.assert_close(p.grad.cpu(), q.grad, rtol=1e-5, atol=1e-6, msg=name)


@pytest.mark.parametrize("use_reentrant", [False, True])
def test_checkpoint_replays_porta_dropout_masks(use_reentrant):
    """The recomputation restores porta's RNG state: grads equal those of the
    same forward without checkpointing."""
    torch.manual_seed(0)
    model = CheckpointedNet(use_reentrant, dropout=0.5).to(DEVICE)

    def plain(x):
        return model.head(model.second(model.first(x)))

    x = _randn(7, 6, seed=1).to(DEVICE).requires_grad_()
    grads = []
    for forward in (model, plain):
        torch.porta.manual_seed(5)
        model.zero_grad()
        forward(x).square().sum().backward()
        grads.append([p.grad.cpu().clone() for p in model.parameters()])
    for got, expected in zip(*grads):
        torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-6)


# ---- gradient clipping and optimizers ----

def _model_with_grads(device):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(5, 9), nn.ReLU(), nn.Linear(9, 4)).to(device)
    F.mse_loss(model(_randn(6, 5, seed=1).to(device)) * 10,
               _randn(6, 4, seed=2).to(device)).backward()
    return model


@pytest.mark.parametrize("foreach", [False, True])
@pytest.mark.parametrize("norm_type", [2.0, float("inf")])
def test_clip_grad_norm_matches_the_cpu(foreach, norm_type):
    model, reference = _model_with_grads(DEVICE), _model_with_grads("cpu")
    total = torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5, norm_type=norm_type,
                                           foreach=foreach)
    expected = torch.nn.utils.clip_grad_norm_(reference.parameters(), 0.5,
                                              norm_type=norm_type, foreach=foreach)
    assert total.device.type == DEVICE
    torch.testing.assert_close(total.cpu(), expected, rtol=1e-5, atol=1e-6)
    for p, q in zip(model.parameters(), reference.parameters()):
        torch.testing.assert_close(p.grad.cpu(), q.grad, rtol=1e-5, atol=1e-6)


_OPTIMIZERS = {
    "Adam": lambda params, **kw: torch.optim.Adam(params, lr=0.01, **kw),
    "AdamW": lambda params, **kw: torch.optim.AdamW(params, lr=0.01, weight_decay=0.1, **kw),
    "SGD": lambda params, **kw: torch.optim.SGD(params, lr=0.05, momentum=0.9,
                                                 weight_decay=0.01, **kw),
}


def _optimize(device, make_optimizer, implementation, enabled=True, steps=4):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(5, 9), nn.ReLU(), nn.Linear(9, 4)).to(device)
    optimizer = make_optimizer(model.parameters(), **{implementation: enabled})
    generator = torch.Generator().manual_seed(1)
    for _ in range(steps):
        x, y = torch.randn(6, 5, generator=generator), torch.randn(6, 4, generator=generator)
        optimizer.zero_grad()
        F.mse_loss(model(x.to(device)), y.to(device)).backward()
        optimizer.step()
    return model, optimizer


@pytest.mark.parametrize("implementation", ["foreach", "fused"])
@pytest.mark.parametrize("name", sorted(_OPTIMIZERS))
def test_foreach_and_fused_optimizers_match_the_cpu(name, implementation):
    model, optimizer = _optimize(DEVICE, _OPTIMIZERS[name], implementation)
    reference, cpu_optimizer = _optimize("cpu", _OPTIMIZERS[name], "foreach", enabled=False)
    _assert_params_close(model, reference, rtol=1e-5, atol=1e-6)
    for p, q in zip(model.parameters(), reference.parameters()):
        assert optimizer.state[p].keys() == cpu_optimizer.state[q].keys()
        for key, expected in cpu_optimizer.state[q].items():
            got = optimizer.state[p][key]
            # the step count stays on the CPU but for fused kernels, which read it on the device
            on = "cpu" if key == "step" and implementation == "foreach" else DEVICE
            assert got.device.type == on, key
            torch.testing.assert_close(got.cpu(), expected, rtol=1e-5, atol=1e-6, msg=key)


# ---- memory formats and deterministic mode ----

def test_channels_last_conv_forward_and_backward_match_the_cpu():
    torch.manual_seed(0)
    reference = nn.Sequential(nn.Conv2d(3, 6, 3, padding=1), nn.BatchNorm2d(6), nn.ReLU(),
                              nn.Conv2d(6, 4, 3, stride=2))
    model = nn.Sequential(nn.Conv2d(3, 6, 3, padding=1), nn.BatchNorm2d(6), nn.ReLU(),
                          nn.Conv2d(6, 4, 3, stride=2))
    model.load_state_dict(reference.state_dict())
    reference.to(memory_format=torch.channels_last)
    model.to(DEVICE, memory_format=torch.channels_last)
    assert model[0].weight.is_contiguous(memory_format=torch.channels_last)
    cpu_x = _randn(2, 3, 9, 9, seed=1).to(memory_format=torch.channels_last).requires_grad_()
    x = cpu_x.detach().to(DEVICE).requires_grad_()
    assert x.is_contiguous(memory_format=torch.channels_last)
    out, expected = model(x), reference(cpu_x)
    assert out.is_contiguous(memory_format=torch.channels_last) == \
        expected.is_contiguous(memory_format=torch.channels_last)
    torch.testing.assert_close(out.cpu(), expected, rtol=1e-5, atol=1e-5)
    out.square().sum().backward()
    expected.square().sum().backward()
    torch.testing.assert_close(x.grad.cpu(), cpu_x.grad, rtol=1e-4, atol=1e-4)
    for (name, p), (_, q) in zip(model.named_parameters(), reference.named_parameters()):
        torch.testing.assert_close(p.grad.cpu(), q.grad, rtol=1e-4, atol=1e-4, msg=name)


@pytest.fixture
def deterministic():
    was = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    yield
    torch.use_deterministic_algorithms(was)


def _deterministic_step(device):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Embedding(10, 6), nn.Flatten(), nn.Linear(18, 3)).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    tokens = torch.tensor([[1, 2, 2], [3, 1, 9], [2, 2, 2], [0, 5, 1]])
    target = torch.tensor([0, 2, 1, 1])
    loss = F.cross_entropy(model(tokens.to(device)), target.to(device))
    loss.backward()  # embedding backward: index_add / scatter-add of repeated tokens
    optimizer.step()
    scatter = torch.zeros(4, device=device).index_add_(0, torch.tensor([0, 1, 1, 3],
                                                                       device=device),
                                                       torch.ones(4, device=device))
    return loss.item(), [p.detach().cpu() for p in model.parameters()], scatter.cpu()


def test_a_training_step_under_deterministic_algorithms_is_repeatable(deterministic):
    first = _deterministic_step(DEVICE)
    second = _deterministic_step(DEVICE)
    cpu = _deterministic_step("cpu")
    assert first[0] == second[0]
    for a, b in zip(first[1], second[1]):
        assert torch.equal(a, b)  # bit for bit
    assert first[0] == pytest.approx(cpu[0], rel=1e-5)
    for got, expected in zip(first[1], cpu[1]):
        torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-6)
    assert torch.equal(first[2], cpu[2])
