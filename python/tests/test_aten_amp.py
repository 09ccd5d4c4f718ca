"""The ops mixed-precision training runs on a device (src/aten/amp/):
_amp_foreach_non_finite_check_and_unscale_ and _amp_update_scale_ against
PyTorch's CPU kernels, in debug and fused eager mode, with
torch.amp.GradScaler("porta") driving a few training steps; and histc on
integer inputs, which CUDA counts and PyTorch's CPU kernel refuses."""
import pytest
import torch
import torch.nn as nn

import torch_porta
from aten_compare import LAYOUTS, make, to_porta


@pytest.fixture(params=["debug", "fused"])
def eager_mode(request):
    torch_porta.set_eager_mode(request.param)
    yield request.param
    torch_porta.set_eager_mode("debug")


def _unscale_both(grads, found_inf, inv_scale):
    """Runs the op on CPU copies and porta copies; returns both outcomes
    (the gradients and found_inf after the call)."""
    outcomes = []
    for convert in (lambda t: t.clone(), lambda t: t.to("porta")):
        g, f, s = [convert(t) for t in grads], convert(found_inf), convert(inv_scale)
        torch._amp_foreach_non_finite_check_and_unscale_(g, f, s)
        outcomes.append(([t.cpu() for t in g], f.cpu()))
    return outcomes


def _assert_same_unscale(grads, found_inf, inv_scale):
    (cpu_grads, cpu_found), (porta_grads, porta_found) = _unscale_both(grads, found_inf, inv_scale)
    torch.testing.assert_close(porta_found, cpu_found)
    for got, expected in zip(porta_grads, cpu_grads, strict=True):
        assert got.dtype == expected.dtype
        torch.testing.assert_close(got, expected, equal_nan=True, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
def test_unscale_every_float_dtype(dtype, eager_mode, no_fallbacks):
    grads = [make((4, 5), dtype, seed=1), make((7,), dtype, seed=2), make((), dtype, seed=3)]
    for inv in (0.5, 1.0, 2.0 ** -16, 3.0):
        _assert_same_unscale(grads, torch.zeros(1), torch.full((1,), inv))
    _assert_same_unscale(grads, torch.ones(1), torch.full((1,), 0.25))  # stays set


@pytest.mark.parametrize("bad", [float("inf"), -float("inf"), float("nan")])
def test_unscale_flags_non_finite_in_any_gradient(bad, eager_mode, no_fallbacks):
    grads = [make((3, 4), seed=1), make((5,), torch.float16, seed=2), make((6,), seed=3)]
    grads[1][2] = bad
    _assert_same_unscale(grads, torch.zeros(1), torch.full((1,), 0.125))
    _assert_same_unscale(grads[2:], torch.zeros(1), torch.full((1,), 0.125))  # clean: stays 0


_VIEWS = {"contiguous": lambda t: t, "transposed": lambda t: t.mT,
          "stepped": lambda t: t[..., ::2], "column block": lambda t: t[:, 2:5]}


@pytest.mark.parametrize("view", list(_VIEWS))
def test_unscale_writes_through_views(view, eager_mode, no_fallbacks):
    """Gradients that are views: the op scales the viewed elements of the
    base and nothing else."""
    base = make((6, 8), seed=4)
    base[1, 3] = float("inf")
    bases = [base.clone(), base.to("porta")]
    founds = [torch.zeros(1), torch.zeros(1, device="porta")]
    for b, found in zip(bases, founds):
        other = torch.ones(3, device=b.device)
        torch._amp_foreach_non_finite_check_and_unscale_(
            [_VIEWS[view](b), other], found, torch.full((1,), 0.5, device=b.device))
    torch.testing.assert_close(founds[1].cpu(), founds[0])
    torch.testing.assert_close(bases[1].cpu(), bases[0], rtol=0, atol=0)


def test_unscale_empty_list_and_empty_gradient(no_fallbacks):
    _assert_same_unscale([], torch.zeros(1), torch.full((1,), 0.5))
    _assert_same_unscale([torch.empty(0, 3)], torch.zeros(1), torch.full((1,), 0.5))


@pytest.mark.parametrize("case", ["int gradient", "found_inf size", "inv_scale size",
                                  "inv_scale float64", "found_inf float64"])
def test_unscale_refuses_what_cpu_refuses(case, no_fallbacks):
    grads, found, inv = [make((3,))], torch.zeros(1), torch.full((1,), 0.5)
    if case == "int gradient":
        grads.append(make((3,), torch.int64))
    elif case == "found_inf size":
        found = torch.zeros(2)
    elif case == "inv_scale size":
        inv = torch.ones(2)
    elif case == "inv_scale float64":
        inv = inv.double()
    else:
        found = found.double()
    with pytest.raises((RuntimeError, NotImplementedError)):
        torch._amp_foreach_non_finite_check_and_unscale_(grads, found, inv)
    porta_grads = to_porta(grads)
    with pytest.raises(RuntimeError):
        torch._amp_foreach_non_finite_check_and_unscale_(porta_grads, to_porta(found),
                                                         to_porta(inv))
    torch.testing.assert_close(porta_grads[0].cpu(), grads[0])  # nothing written


# ---- _amp_update_scale_ ----

_UPDATE_CASES = [
    # (scale, growth_tracker, found_inf, growth_factor, backoff_factor, growth_interval)
    (65536.0, 0, 0.0, 2.0, 0.5, 2000),
    (65536.0, 1998, 0.0, 2.0, 0.5, 2000),
    (65536.0, 1999, 0.0, 2.0, 0.5, 2000),      # interval reached: grows
    (65536.0, 1999, 1.0, 2.0, 0.5, 2000),      # found_inf wins
    (65536.0, 7, float("nan"), 2.0, 0.5, 2000),
    (65536.0, 7, float("inf"), 2.0, 0.5, 2000),
    (3e38, 0, 0.0, 2.0, 0.5, 1),               # growth would overflow: kept
    (3e38, 0, 1.0, 2.0, 0.5, 1),
    (1.0, 6, 0.0, 1.1, 0.3, 7),                # float64 product rounded once
    (0.7, 3, 1.0, 3.0, 0.1, 1),
    (1e-38, 0, 1.0, 2.0, 1e-10, 5),            # backoff into subnormals
    (5.0, 10, 0.0, 2.0, 0.5, 3),               # past the interval: counts on
    (5.0, 0, 0.0, 2.0, 0.5, 0),
    (5.0, 2, 0.0, 2.0, 0.5, -1),
    (5.0, 0, 0.0, 2.0, 0.5, 1),
    (5.0, 0, 2.5, 2.0, 0.5, 1),                # any non-zero found_inf
]


@pytest.mark.parametrize("case", _UPDATE_CASES)
def test_update_scale_matches_cpu(case, eager_mode, no_fallbacks):
    scale, tracker, found, growth, backoff, interval = case
    tensors = (torch.full((1,), scale), torch.full((1,), tracker, dtype=torch.int32),
               torch.full((1,), found))
    cpu = [t.clone() for t in tensors]
    porta = [t.to("porta") for t in tensors]
    returned_cpu = torch._amp_update_scale_(*cpu, growth, backoff, interval)
    returned = torch._amp_update_scale_(*porta, growth, backoff, interval)
    assert returned is porta[0]
    assert returned_cpu is cpu[0]
    torch.testing.assert_close(porta[0].cpu(), cpu[0], rtol=0, atol=0)
    torch.testing.assert_close(porta[1].cpu(), cpu[1], rtol=0, atol=0)
    torch.testing.assert_close(porta[2].cpu(), cpu[2], equal_nan=True)  # only read


def test_update_scale_over_many_steps(eager_mode, no_fallbacks):
    """A run of steps, some with non-finite gradients, as GradScaler makes
    them: the scale and tracker follow the CPU's step by step."""
    flags = torch.Generator().manual_seed(0)
    cpu = [torch.full((1,), 1024.0), torch.zeros(1, dtype=torch.int32)]
    porta = [t.to("porta") for t in cpu]
    for _ in range(40):
        found = torch.full((1,), float(torch.rand(1, generator=flags).item() < 0.2))
        torch._amp_update_scale_(cpu[0], cpu[1], found, 2.0, 0.5, 3)
        torch._amp_update_scale_(porta[0], porta[1], found.to("porta"), 2.0, 0.5, 3)
    torch.testing.assert_close(porta[0].cpu(), cpu[0], rtol=0, atol=0)
    torch.testing.assert_close(porta[1].cpu(), cpu[1], rtol=0, atol=0)


@pytest.mark.parametrize("case", ["tracker int64", "tracker size", "scale float64",
                                  "scale size", "found float64", "found size"])
def test_update_scale_refuses_what_cpu_refuses(case, no_fallbacks):
    scale, tracker, found = torch.full((1,), 4.0), torch.zeros(1, dtype=torch.int32), torch.zeros(1)
    if case == "tracker int64":
        tracker = tracker.long()
    elif case == "tracker size":
        tracker = torch.zeros(2, dtype=torch.int32)
    elif case == "scale float64":
        scale = scale.double()
    elif case == "scale size":
        scale = torch.ones(2)
    elif case == "found float64":
        found = found.double()
    else:
        found = torch.zeros(2)
    with pytest.raises(RuntimeError):
        torch._amp_update_scale_(scale, tracker, found, 2.0, 0.5, 1)
    on_porta = to_porta([scale, tracker, found])
    with pytest.raises(RuntimeError):
        torch._amp_update_scale_(*on_porta, 2.0, 0.5, 1)
    torch.testing.assert_close(on_porta[0].cpu(), scale)  # nothing written


# ---- GradScaler ----

def _train_with_scaler(device, steps, init_scale):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1))
    model = model.to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    scaler = torch.amp.GradScaler(device, init_scale=init_scale, growth_interval=2)
    data = torch.Generator().manual_seed(1)
    scales = []
    for _ in range(steps):
        x = torch.randn(32, 8, generator=data).to(device)
        y = torch.randn(32, 1, generator=data).to(device)
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        scales.append(scaler.get_scale())
    return [p.detach().cpu() for p in model.parameters()], scales


@pytest.mark.parametrize("init_scale", [2.0 ** 10, 2.0 ** 127])  # the second overflows at first
def test_grad_scaler_trains_like_cpu(init_scale, eager_mode):
    cpu_params, cpu_scales = _train_with_scaler("cpu", 6, init_scale)
    porta_params, porta_scales = _train_with_scaler("porta", 6, init_scale)
    assert porta_scales == cpu_scales
    for got, expected in zip(porta_params, cpu_params, strict=True):
        torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-6)


# ---- histc on integers ----

_INT_DTYPES = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64]


def _int_values(shape, dtype, seed):
    low = 0 if dtype == torch.uint8 else -40
    return torch.randint(low, 60, shape, generator=torch.Generator().manual_seed(seed)).to(dtype)


def _histc_like_cuda(x, bins, low, high):
    """CUDA's integer histc from the CPU's float one: integer bounds, counts
    in the input's dtype."""
    return torch.histc(x.double(), bins, int(low), int(high)).to(x.dtype)


@pytest.mark.parametrize("dtype", _INT_DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_histc_integers_like_cuda(dtype, layout, no_fallbacks):
    x = _int_values((6, 10), dtype, 0)
    if layout == "transposed":
        x = x.mT
    elif layout == "stepped":
        x = x[..., ::2]
    for bins, low, high in [(100, 0, 0), (7, 0, 0), (5, -10, 30), (4, 0, 59), (3, 10, 10),
                            (6, 2.7, 40.9), (50, -40, 59)]:
        got = torch.histc(x.to("porta"), bins, low, high)
        expected = _histc_like_cuda(x, bins, low, high)
        assert got.dtype == dtype and got.device.type == "porta"
        torch.testing.assert_close(got.cpu(), expected, rtol=0, atol=0)


def test_histc_integer_edge_cases(no_fallbacks):
    constant = torch.full((5,), 7, dtype=torch.int32)  # min == max: widened by 1
    torch.testing.assert_close(torch.histc(constant.to("porta"), 4).cpu(),
                               _histc_like_cuda(constant, 4, 6, 8), rtol=0, atol=0)
    empty = torch.empty(0, dtype=torch.int64)
    torch.testing.assert_close(torch.histc(empty.to("porta"), 3).cpu(),
                               torch.zeros(3, dtype=torch.int64), rtol=0, atol=0)
    x = _int_values((20,), torch.int32, 1)
    out = torch.empty(0, dtype=torch.int32, device="porta")
    torch.histc(x.to("porta"), 5, -40, 60, out=out)
    torch.testing.assert_close(out.cpu(), _histc_like_cuda(x, 5, -40, 60), rtol=0, atol=0)
    with pytest.raises(RuntimeError, match="max must be larger than min"):
        torch.histc(x.to("porta"), 3, 5, 1)
    with pytest.raises(RuntimeError, match="floating-point or integer"):
        torch.histc(torch.tensor([True, False], device="porta"), 3)


def test_histc_integers_as_moe_routing_calls_it(no_fallbacks):
    """transformers' mixture-of-experts layers count tokens per expert with
    torch.histc(int32 expert ids, bins=experts, min=0, max=experts - 1)."""
    experts = torch.randint(0, 8, (64, 2), generator=torch.Generator().manual_seed(2),
                            dtype=torch.int32)
    got = torch.histc(experts.to("porta"), bins=8, min=0, max=7)
    torch.testing.assert_close(got.cpu(), torch.bincount(experts.flatten().long(),
                                                         minlength=8).to(torch.int32),
                               rtol=0, atol=0)
