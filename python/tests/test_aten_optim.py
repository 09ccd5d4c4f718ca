"""The fused optimizer steps (src/aten/optim/): torch.optim.Adam, AdamW and
SGD with fused=True run _fused_adam_, _fused_adamw_ and _fused_sgd_ on
porta; a few steps of each, with their options, against the same optimizer
on PyTorch's CPU (whose fused kernels compute the same formulas), in debug
and fused eager mode, with a GradScaler's grad_scale and found_inf too."""
import pytest
import torch

import torch_porta
from aten_compare import make, to_porta


@pytest.fixture(params=["debug", "fused"])
def eager_mode(request):
    torch_porta.set_eager_mode(request.param)
    yield request.param
    torch_porta.set_eager_mode("debug")


_SHAPES = [(5, 7), (11,), ()]


def _run_steps(device, optimizer_class, options, dtype, fused=True, steps=4):
    """Parameters after `steps` steps of the optimizer on `device`, with
    gradients drawn the same way on every device."""
    params = [make(shape, dtype, seed=i).to(device).requires_grad_() for i, shape in
              enumerate(_SHAPES)]
    optimizer = optimizer_class(params, fused=fused, **options)
    for step in range(steps):
        for i, p in enumerate(params):
            p.grad = make(p.shape, dtype, seed=100 * step + i).to(device)
        optimizer.step()
    return [p.detach().cpu() for p in params], optimizer


def _tolerance(dtype):
    return {torch.float16: dict(rtol=2e-3, atol=2e-3), torch.bfloat16: dict(rtol=2e-2, atol=2e-2),
            torch.float32: dict(rtol=1e-5, atol=1e-6),
            torch.float64: dict(rtol=1e-12, atol=1e-12)}[dtype]


def _assert_same_steps(optimizer_class, options, dtype=torch.float32, cpu_fused=True):
    """The optimizer's steps on porta against the CPU's fused ones, or with
    cpu_fused False its unfused ones (which round half-precision
    intermediates differently: a wider tolerance)."""
    expected, cpu_optimizer = _run_steps("cpu", optimizer_class, options, dtype, cpu_fused)
    got, porta_optimizer = _run_steps("porta", optimizer_class, options, dtype)
    tolerance = _tolerance(dtype) if cpu_fused else dict(rtol=5e-2, atol=5e-2)
    for g, e in zip(got, expected, strict=True):
        assert g.dtype == e.dtype
        torch.testing.assert_close(g, e, **tolerance)
    for cpu_state, porta_state in zip(cpu_optimizer.state.values(),
                                      porta_optimizer.state.values(), strict=True):
        for key, value in cpu_state.items():
            torch.testing.assert_close(porta_state[key].cpu(), value, **tolerance)


_ADAM_OPTIONS = [
    {},
    {"lr": 0.01, "betas": (0.8, 0.95), "eps": 1e-6},
    {"weight_decay": 0.1},
    {"amsgrad": True},
    {"maximize": True, "weight_decay": 0.05},
    {"lr": torch.tensor(0.002)},
]


@pytest.mark.parametrize("options", _ADAM_OPTIONS, ids=str)
@pytest.mark.parametrize("optimizer_class", [torch.optim.Adam, torch.optim.AdamW])
def test_fused_adam_and_adamw_match_cpu(optimizer_class, options, eager_mode, no_fallbacks):
    _assert_same_steps(optimizer_class, options)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64])
@pytest.mark.parametrize("optimizer_class", [torch.optim.Adam, torch.optim.AdamW])
def test_fused_adam_other_dtypes(optimizer_class, dtype, no_fallbacks):
    _assert_same_steps(optimizer_class, {"weight_decay": 0.01, "amsgrad": True}, dtype)


_SGD_OPTIONS = [
    {"lr": 0.1},
    {"lr": 0.1, "momentum": 0.9},
    {"lr": 0.05, "momentum": 0.9, "dampening": 0.3, "weight_decay": 0.01},
    {"lr": 0.05, "momentum": 0.8, "nesterov": True},
    {"lr": 0.05, "momentum": 0.5, "maximize": True},
    {"lr": torch.tensor(0.1), "momentum": 0.9},
]


@pytest.mark.parametrize("options", _SGD_OPTIONS, ids=str)
def test_fused_sgd_matches_cpu(options, eager_mode, no_fallbacks):
    _assert_same_steps(torch.optim.SGD, options)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64])
def test_fused_sgd_other_dtypes(dtype, no_fallbacks):
    # The CPU's fused SGD leaves the vectorized part of a half-precision
    # parameter unchanged on the first step with momentum (torch 2.13): the
    # reference for half types is the CPU's unfused SGD, the same formula.
    half = dtype in (torch.float16, torch.bfloat16)
    _assert_same_steps(torch.optim.SGD, {"lr": 0.1, "momentum": 0.9}, dtype, cpu_fused=not half)


@pytest.mark.parametrize("op", ["adam", "adamw", "sgd"])
@pytest.mark.parametrize("found", [0.0, 1.0])
def test_fused_steps_unscale_and_skip(op, found, eager_mode, no_fallbacks):
    """With grad_scale the gradients are divided by it (and stored so);
    with found_inf set nothing changes."""
    outcomes = []
    for device in ("cpu", "porta"):
        params = [make(s, seed=i).to(device) for i, s in enumerate(_SHAPES)]
        grads = [make(s, seed=10 + i).to(device) for i, s in enumerate(_SHAPES)]
        extra = dict(grad_scale=torch.full((), 8.0, device=device),
                     found_inf=torch.full((), found, device=device))
        if op == "sgd":
            buffers = [torch.zeros_like(p) for p in params]
            torch._fused_sgd_(params, grads, buffers, weight_decay=0.0, momentum=0.9, lr=0.1,
                              dampening=0.0, nesterov=False, maximize=False,
                              is_first_step=True, **extra)
            state = buffers
        else:
            fn = torch._fused_adam_ if op == "adam" else torch._fused_adamw_
            state = [torch.zeros_like(p) for p in params] + [torch.zeros_like(p) for p in params]
            steps = [torch.ones((), device=device) for _ in params]
            fn(params, grads, state[:3], state[3:], [], steps, lr=0.01, beta1=0.9, beta2=0.99,
               weight_decay=0.01, eps=1e-8, amsgrad=False, maximize=False, **extra)
        outcomes.append([t.cpu() for t in params + grads + state])
    for got, expected in zip(*reversed(outcomes), strict=True):
        torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-6)


def test_fused_refuses_mismatched_lists(no_fallbacks):
    params = to_porta([make((3,)), make((4,))])
    grads = to_porta([make((3,))])
    with pytest.raises(RuntimeError, match="grads holds 1 tensors, expected 2"):
        torch._fused_sgd_(params, grads, [], weight_decay=0.0, momentum=0.0, lr=0.1,
                          dampening=0.0, nesterov=False, maximize=False, is_first_step=False)
    wrong_shape = to_porta([make((3,)), make((5,))])
    with pytest.raises(RuntimeError, match="grads\\[1\\] must have the shape of parameter 1"):
        torch._fused_sgd_(params, wrong_shape, [], weight_decay=0.0, momentum=0.0, lr=0.1,
                          dampening=0.0, nesterov=False, maximize=False, is_first_step=False)


def _train_scaled(device, init_scale):
    """A few steps of a small model under GradScaler with fused AdamW, which
    hands the scaler's grad_scale and found_inf to the fused step."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(),
                                torch.nn.Linear(16, 1)).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.01, fused=True)
    scaler = torch.amp.GradScaler(device, init_scale=init_scale, growth_interval=2)
    data = torch.Generator().manual_seed(1)
    scales = []
    for _ in range(5):
        x, y = torch.randn(32, 8, generator=data), torch.randn(32, 1, generator=data)
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x.to(device)), y.to(device))
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        scales.append(scaler.get_scale())
    return [p.detach().cpu() for p in model.parameters()], scales


@pytest.mark.parametrize("init_scale", [2.0 ** 10, 2.0 ** 127])  # the second overflows at first
def test_grad_scaler_with_fused_adamw_trains_like_cpu(init_scale, eager_mode):
    expected, expected_scales = _train_scaled("cpu", init_scale)
    got, scales = _train_scaled("porta", init_scale)
    assert scales == expected_scales
    for g, e in zip(got, expected, strict=True):
        torch.testing.assert_close(g, e, rtol=1e-5, atol=1e-6)
