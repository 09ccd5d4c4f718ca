"""Mixed precision on porta as on CUDA: torch.autocast("porta") follows
CUDA's cast policy (matmul-like ops in the lower dtype, softmax, norms and
losses in float32) and torch.amp.GradScaler("porta") scales, unscales, skips
steps with inf gradients and backs off exactly as a CPU GradScaler does."""
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import torch_porta  # noqa: F401  (registers the device)

DEVICE = "porta"
LOWER_DTYPES = [torch.bfloat16, torch.float16]

# One rounding to the lower dtype apart (porta computes in float32 and
# rounds once; the CPU's kernels may round partial sums).
LOWER_TOLERANCE = {torch.bfloat16: dict(rtol=2e-2, atol=2e-2),
                   torch.float16: dict(rtol=2e-3, atol=2e-3)}


def _randn(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def test_autocast_is_available_and_its_default_dtype_is_float16():
    assert torch.amp.autocast_mode.is_autocast_available(DEVICE)
    assert torch.get_autocast_dtype(DEVICE) == torch.float16  # as CUDA's
    assert not torch.is_autocast_enabled(DEVICE)
    with torch.autocast(DEVICE, dtype=torch.bfloat16):
        assert torch.is_autocast_enabled(DEVICE)
        assert torch.get_autocast_dtype(DEVICE) == torch.bfloat16
        assert not torch.is_autocast_enabled("cpu")  # each device type has its own state
    assert not torch.is_autocast_enabled(DEVICE)
    assert torch.get_autocast_dtype(DEVICE) == torch.float16


@pytest.mark.parametrize("dtype", LOWER_DTYPES, ids=str)
def test_matmul_linear_and_conv_run_in_the_lower_dtype(dtype):
    cpu_inputs = dict(a=_randn(6, 8, seed=1), b=_randn(8, 5, seed=2),
                      weight=_randn(5, 8, seed=3), bias=_randn(5, seed=4),
                      image=_randn(2, 3, 7, 7, seed=5), kernel=_randn(4, 3, 3, 3, seed=6))
    porta_inputs = {name: t.to(DEVICE) for name, t in cpu_inputs.items()}
    cases = {
        "matmul": lambda t: t["a"] @ t["b"],
        "mm": lambda t: torch.mm(t["a"], t["b"]),
        "linear": lambda t: F.linear(t["a"], t["weight"], t["bias"]),
        "addmm": lambda t: torch.addmm(t["bias"], t["a"], t["b"]),
        "conv2d": lambda t: F.conv2d(t["image"], t["kernel"], padding=1),
    }
    for name, op in cases.items():
        with torch.autocast("cpu", dtype=dtype):
            expected = op(cpu_inputs)
        with torch.autocast(DEVICE, dtype=dtype):
            got = op(porta_inputs)
        assert got.device.type == DEVICE, name
        assert got.dtype == dtype, name
        assert expected.dtype == dtype, name
        torch.testing.assert_close(got.cpu(), expected, **LOWER_TOLERANCE[dtype], msg=name)


@pytest.mark.parametrize("dtype", LOWER_DTYPES, ids=str)
def test_softmax_norms_and_losses_run_in_float32(dtype):
    # Inputs in the lower dtype: CUDA's policy casts them up to float32.
    x = _randn(4, 10, seed=1).to(dtype)
    target = _randn(4, 10, seed=2).to(dtype)
    norm_weight, norm_bias = _randn(10, seed=3), _randn(10, seed=4)
    cases = {
        "softmax": lambda x, t: torch.softmax(x, 1),
        "log_softmax": lambda x, t: F.log_softmax(x, 1),
        "layer_norm": lambda x, t: F.layer_norm(x, (10,), norm_weight.to(x.device),
                                                norm_bias.to(x.device)),
        "mse_loss": lambda x, t: F.mse_loss(x, t),
    }
    for name, op in cases.items():
        # The float32 op on the float32 copies of the inputs: what the policy computes.
        expected = op(x.float(), target.float())
        with torch.autocast(DEVICE, dtype=dtype):
            got = op(x.to(DEVICE), target.to(DEVICE))
        assert got.device.type == DEVICE, name
        assert got.dtype == torch.float32, name
        torch.testing.assert_close(got.cpu(), expected, rtol=1e-5, atol=1e-5, msg=name)


@pytest.mark.parametrize("dtype", LOWER_DTYPES, ids=str)
def test_a_model_under_autocast_matches_cpu_autocast(dtype):
    torch.manual_seed(0)
    reference = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.Flatten(),
                              nn.Linear(4 * 6 * 6, 10), nn.LayerNorm(10))
    model = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.Flatten(),
                          nn.Linear(4 * 6 * 6, 10), nn.LayerNorm(10))
    model.load_state_dict(reference.state_dict())
    model.to(DEVICE)
    x, labels = _randn(5, 3, 6, 6, seed=1), torch.tensor([1, 0, 3, 9, 2])
    with torch.autocast("cpu", dtype=dtype):
        expected_logits = reference[:4](x)
        expected_loss = F.cross_entropy(reference[4](expected_logits), labels)
    with torch.autocast(DEVICE, dtype=dtype):
        logits = model[:4](x.to(DEVICE))
        normalized = model[4](logits)
        loss = F.cross_entropy(normalized, labels.to(DEVICE))
    assert logits.dtype == dtype
    assert normalized.dtype == torch.float32 and loss.dtype == torch.float32
    torch.testing.assert_close(logits.cpu(), expected_logits, **LOWER_TOLERANCE[dtype])
    torch.testing.assert_close(loss.cpu(), expected_loss.float(), rtol=2e-2, atol=2e-2)
    loss.backward()
    expected_loss.backward()
    for p, q in zip(model.parameters(), reference.parameters()):
        assert p.grad.dtype == torch.float32 and p.grad.device.type == DEVICE
        torch.testing.assert_close(p.grad.cpu(), q.grad, rtol=5e-2, atol=5e-2)


def _scaler_run(device, steps, inf_at=None):
    """A GradScaler loop (scale, backward, unscale_, clip, step, update) with
    float16 autocast; returns the scales seen after each update, whether
    each step was skipped, the grads after unscale_ of the first step and
    the final parameters."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 2)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    scaler = torch.amp.GradScaler(device, init_scale=2.0 ** 10, growth_interval=2)
    generator = torch.Generator().manual_seed(1)
    scales, first_grads, skipped = [], None, []
    for step in range(steps):
        x, y = torch.randn(8, 6, generator=generator), torch.randn(8, 2, generator=generator)
        optimizer.zero_grad()
        with torch.autocast(device, dtype=torch.float16):
            loss = F.mse_loss(model(x.to(device)), y.to(device))
        scaled = scaler.scale(loss)  # the scale lives on the loss's device
        assert scaled.device == loss.device and scaled.dtype == torch.float32
        scaled.backward()
        if step == inf_at:
            with torch.no_grad():
                model[0].weight.grad[0, 0] = float("inf")
        scaler.unscale_(optimizer)
        if first_grads is None:
            first_grads = [p.grad.detach().cpu().clone() for p in model.parameters()]
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        before = [p.detach().cpu().clone() for p in model.parameters()]
        scaler.step(optimizer)
        scaler.update()
        skipped.append(all(torch.equal(b, p.detach().cpu())
                           for b, p in zip(before, model.parameters())))
        scales.append(scaler.get_scale())
    return scales, skipped, first_grads, [p.detach().cpu() for p in model.parameters()]


def test_grad_scaler_training_matches_a_cpu_grad_scaler():
    scales, skipped, grads, params = _scaler_run(DEVICE, 5)
    cpu_scales, cpu_skipped, cpu_grads, cpu_params = _scaler_run("cpu", 5)
    assert scales == cpu_scales == [2.0 ** 10, 2.0 ** 11, 2.0 ** 11, 2.0 ** 12, 2.0 ** 12]
    assert skipped == cpu_skipped == [False] * 5
    for got, expected in zip(grads, cpu_grads):  # unscale_ divided by the scale
        torch.testing.assert_close(got, expected, rtol=1e-2, atol=1e-3)
    for got, expected in zip(params, cpu_params):
        torch.testing.assert_close(got, expected, rtol=1e-2, atol=1e-3)


def test_grad_scaler_skips_a_step_with_an_inf_grad_and_backs_off():
    scales, skipped, _, params = _scaler_run(DEVICE, 4, inf_at=1)
    cpu_scales, cpu_skipped, _, cpu_params = _scaler_run("cpu", 4, inf_at=1)
    # step 1 is skipped and halves the scale; the growth count starts again
    assert skipped == cpu_skipped == [False, True, False, False]
    assert scales == cpu_scales == [2.0 ** 10, 2.0 ** 9, 2.0 ** 9, 2.0 ** 10]
    for got, expected in zip(params, cpu_params):
        assert torch.isfinite(got).all()
        torch.testing.assert_close(got, expected, rtol=1e-2, atol=1e-3)
