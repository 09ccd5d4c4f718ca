"""Random aten ops on porta: determinism under manual_seed, distribution
moments, shapes/dtypes/strides like CPU's, in-place aliasing, errors like
CPU's, and the rejection of non-porta generators."""
import pytest
import torch

import torch_porta  # noqa: F401

FLOATS = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
INTS = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64]
N = 20000


def draws(make):
    """make(device) twice under the same seed on porta: equal, and with the
    same dtype/shape/strides as on CPU."""
    torch.manual_seed(3)
    first = make("porta")
    torch.manual_seed(3)
    second = make("porta")
    want = make("cpu")
    assert first.device.type == "porta"
    assert (first.dtype, first.shape, first.stride()) == (want.dtype, want.shape, want.stride())
    assert torch.equal(first.cpu(), second.cpu())
    return first.cpu()


def test_seed_makes_draws_repeat_and_draws_advance():
    torch.manual_seed(0)
    a, b = torch.rand(8, device="porta").cpu(), torch.rand(8, device="porta").cpu()
    assert not torch.equal(a, b)
    torch.porta.manual_seed(0)
    assert torch.equal(torch.rand(8, device="porta").cpu(), a)
    state = torch.porta.get_rng_state()
    c = torch.randn(5, device="porta").cpu()
    torch.porta.set_rng_state(state)
    assert torch.equal(torch.randn(5, device="porta").cpu(), c)


@pytest.mark.parametrize("dtype", FLOATS)
def test_rand_and_randn(dtype):
    u = draws(lambda d: torch.rand(N, dtype=dtype, device=d)).double()
    assert 0 <= u.min() and u.max() < 1 and abs(u.mean() - 0.5) < 0.02
    z = draws(lambda d: torch.randn(N, dtype=dtype, device=d)).double()
    assert abs(z.mean()) < 0.05 and abs(z.std() - 1) < 0.05


@pytest.mark.parametrize("shape", [(), (0,), (3, 4), (2, 0, 5)])
def test_shapes(shape):
    draws(lambda d: torch.rand(shape, device=d))
    draws(lambda d: torch.randn(shape, dtype=torch.float64, device=d))
    draws(lambda d: torch.randint(0, 5, shape, device=d))


def test_like_variants_keep_layout():
    base = lambda d: torch.empty(3, 4, device=d).t()  # noqa: E731
    draws(lambda d: torch.rand_like(base(d)))
    draws(lambda d: torch.randn_like(base(d), dtype=torch.float64))
    draws(lambda d: torch.randint_like(base(d), 3, 9))


def test_uniform_normal_in_place_on_views():
    base = torch.zeros(6, 8, device="porta")
    view = base[::2, 1::3]
    assert view.uniform_(2, 3) is view
    values = base.cpu()
    assert ((values[::2, 1::3] >= 2) & (values[::2, 1::3] < 3)).all()
    values[::2, 1::3] = 0
    assert not values.any()
    x = torch.empty(N, device="porta").normal_(5, 2).cpu().double()
    assert abs(x.mean() - 5) < 0.1 and abs(x.std() - 2) < 0.1


@pytest.mark.parametrize("dtype", INTS + [torch.float32, torch.float64])
def test_randint_range(dtype):
    low, high = (3, 10) if dtype != torch.uint8 else (200, 256)
    x = draws(lambda d: torch.randint(low, high, (N,), dtype=dtype, device=d)).double()
    assert x.min() == low and x.max() == high - 1
    assert abs(x.mean() - (low + high - 1) / 2) < 0.1


def test_random_default_ranges():
    x = torch.empty(N, dtype=torch.uint8, device="porta").random_().cpu()
    assert x.min() == 0 and x.max() == 255
    b = torch.empty(N, dtype=torch.bool, device="porta").random_().cpu()
    assert 0.45 < b.float().mean() < 0.55
    f = torch.empty(N, device="porta").random_().cpu()
    assert f.min() >= 0 and f.max() <= 2**24 and torch.equal(f, f.floor())
    t = torch.empty(N, dtype=torch.int16, device="porta").random_(-4, None).cpu()
    assert t.min() >= -4 and t.max() > 1000


def test_exponential():
    x = draws(lambda d: torch.empty(N, device=d).exponential_(2.0)).double()
    assert x.min() >= 0 and abs(x.mean() - 0.5) < 0.02


@pytest.mark.parametrize("dtype", [torch.bool, torch.int32, torch.float16, torch.float32])
def test_bernoulli(dtype):
    x = draws(lambda d: torch.empty(N, dtype=dtype, device=d).bernoulli_(0.3)).double()
    assert set(x.unique().tolist()) <= {0, 1} and abs(x.mean() - 0.3) < 0.02
    p = torch.tensor([0.0, 1.0, 0.5])
    y = draws(lambda d: torch.empty(N, 3, dtype=dtype, device=d).bernoulli_(p.to(d))).double()
    assert y[:, 0].sum() == 0 and y[:, 1].sum() == N and abs(y[:, 2].mean() - 0.5) < 0.02
    z = draws(lambda d: torch.bernoulli(torch.full((N,), 0.7, dtype=torch.float32, device=d)))
    assert abs(z.double().mean() - 0.7) < 0.02
    w = draws(lambda d: torch.bernoulli(torch.zeros(N, dtype=torch.float64, device=d), 0.25))
    assert abs(w.mean() - 0.25) < 0.02


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.uint8, torch.float32])
def test_randperm(dtype):
    n = 200
    x = draws(lambda d: torch.randperm(n, dtype=dtype, device=d))
    assert sorted(x.long().tolist()) == list(range(n)) and x.long().tolist() != list(range(n))
    assert draws(lambda d: torch.randperm(0, device=d)).numel() == 0
    out = torch.empty(n, dtype=dtype, device="porta")
    assert torch.randperm(n, out=out) is out
    assert sorted(out.cpu().long().tolist()) == list(range(n))


def test_dropout_draws_from_the_generator():
    torch.manual_seed(1)
    a = torch.nn.functional.dropout(torch.ones(64, device="porta"), 0.5).cpu()
    torch.manual_seed(1)
    b = torch.nn.functional.dropout(torch.ones(64, device="porta"), 0.5).cpu()
    assert torch.equal(a, b) and set(a.unique().tolist()) <= {0.0, 2.0}


@pytest.mark.parametrize("call", [
    lambda d: torch.empty(3, dtype=torch.int64, device=d).uniform_(),
    lambda d: torch.empty(3, device=d).uniform_(1, 0),
    lambda d: torch.empty(3, dtype=torch.int64, device=d).normal_(),
    lambda d: torch.empty(3, device=d).normal_(0, -1),
    lambda d: torch.empty(3, device=d).exponential_(0),
    lambda d: torch.empty(3, dtype=torch.int64, device=d).exponential_(),
    lambda d: torch.empty(3, device=d).bernoulli_(2),
    lambda d: torch.randint(5, 3, (2,), device=d),
    lambda d: torch.randint(0, 300, (2,), dtype=torch.uint8, device=d),
    lambda d: torch.randint(0, 5, (2,), dtype=torch.bool, device=d),
    lambda d: torch.empty(3, dtype=torch.int8, device=d).random_(-200, 0),
    lambda d: torch.randperm(257, dtype=torch.uint8, device=d),
    lambda d: torch.randperm(3000, dtype=torch.float16, device=d),
    lambda d: torch.randperm(3, dtype=torch.bool, device=d),
])
def test_errors_like_cpu(call):
    # CPU raises NotImplementedError (a RuntimeError) for a dtype a kernel
    # lacks; porta's status codes give RuntimeError.
    with pytest.raises(RuntimeError) as cpu:
        call("cpu")
    with pytest.raises(RuntimeError) as porta:
        call("porta")
    # the first words of CPU's message, before any value-specific detail
    assert str(cpu.value).split(",")[0][:30] == str(porta.value).split(",")[0][:30]


def test_cpu_generator_is_rejected():
    generator = torch.Generator().manual_seed(0)
    with pytest.raises(RuntimeError, match="Expected a 'porta' device type for generator"):
        torch.rand(3, device="porta", generator=generator)
    with pytest.raises(RuntimeError, match="Expected a 'porta' device type for generator"):
        torch.empty(3, device="porta").normal_(generator=generator)


def test_normal_with_tensor_mean_or_std():
    mean = lambda d: torch.full((N, 1), 3.0, device=d)  # noqa: E731
    std = lambda d: torch.tensor([0.5, 2.0], dtype=torch.float64, device=d)  # noqa: E731
    x = draws(lambda d: torch.normal(mean(d), 2.0)).double()
    assert abs(x.mean() - 3) < 0.1 and abs(x.std() - 2) < 0.1
    y = draws(lambda d: torch.normal(1.0, std(d).expand(N, 2)))
    assert y.dtype == torch.float64 and abs(y[:, 1].std() - 2) < 0.1
    z = draws(lambda d: torch.normal(mean(d), std(d)))
    assert z.shape == (N, 2) and abs(z[:, 0].mean() - 3) < 0.05
    with pytest.raises(RuntimeError, match="normal expects std >= 0.0"):
        torch.normal(mean("porta"), -1.0)
    with pytest.raises(RuntimeError, match="not implemented for 'Long'"):
        torch.normal(torch.zeros(3, dtype=torch.int64, device="porta"), 1.0)
