"""complex64 and complex128 on porta against PyTorch's CPU: copies both
ways, casts, the pair views (view_as_real, view_as_complex, real, imag),
the lazy conjugate bit, save/load, and the error for what porta does not
compute on complex tensors."""
import io
import warnings

import pytest
import torch

from conftest import assert_matches

COMPLEX = [torch.complex64, torch.complex128]


def _complex(dtype, *shape, seed=0):
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, dtype=dtype, generator=generator)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_copies_both_ways_keep_the_values(dtype):
    cpu = _complex(dtype, 3, 5)
    porta = cpu.to("porta")
    assert porta.dtype == dtype
    assert torch.equal(porta.cpu(), cpu)
    assert torch.equal(porta.t().cpu(), cpu.t())           # strided read
    assert torch.equal(porta.t().contiguous().cpu(), cpu.t().contiguous())
    target = torch.zeros(5, 3, dtype=dtype, device="porta")
    target.copy_(cpu.t())                                   # strided write
    assert torch.equal(target.cpu(), cpu.t())


@pytest.mark.parametrize("dtype", COMPLEX)
def test_casts_as_pytorch(dtype):
    cpu = _complex(dtype, 4, 3)
    porta = cpu.to("porta")
    other = torch.complex128 if dtype == torch.complex64 else torch.complex64
    assert_matches(porta.to(other), cpu.to(other))
    real = torch.randn(4, 3, dtype=torch.float64)
    assert_matches(real.to("porta").to(dtype), real.to(dtype))  # imaginary part 0
    with warnings.catch_warnings():  # "discards the imaginary part", once a process
        warnings.simplefilter("ignore", UserWarning)
        assert_matches(porta.to(torch.float32), cpu.to(torch.float32))


@pytest.mark.parametrize("dtype", COMPLEX)
def test_factories_and_fills(dtype):
    assert_matches(torch.zeros(2, 3, dtype=dtype, device="porta"), torch.zeros(2, 3, dtype=dtype))
    assert_matches(torch.ones(2, 3, dtype=dtype, device="porta"), torch.ones(2, 3, dtype=dtype))
    assert_matches(torch.full((2,), 2.5, dtype=dtype, device="porta"),
                   torch.full((2,), 2.5, dtype=dtype))
    cpu = _complex(dtype, 2, 3)
    assert_matches(torch.cat([cpu.to("porta"), cpu.to("porta")], 1), torch.cat([cpu, cpu], 1))


@pytest.mark.parametrize("dtype", COMPLEX)
def test_pair_views_share_memory(dtype):
    cpu = _complex(dtype, 3, 4)
    porta = cpu.to("porta")
    pairs = torch.view_as_real(porta)
    assert pairs.dtype == torch.view_as_real(cpu).dtype
    assert pairs.stride() == torch.view_as_real(cpu).stride()
    assert torch.equal(pairs.cpu(), torch.view_as_real(cpu))
    pairs[0, 0, 1] = 9.0  # a view: writes reach the complex tensor
    assert porta[0, 0].cpu().imag.item() == 9.0
    back = torch.view_as_complex(pairs)
    assert back.data_ptr() == porta.data_ptr()
    assert torch.equal(porta.real.cpu(), porta.cpu().real)
    assert torch.equal(porta.imag.cpu(), porta.cpu().imag)
    with pytest.raises(RuntimeError, match="last dimension of size 2"):
        torch.view_as_complex(torch.zeros(3, 3, device="porta"))


@pytest.mark.parametrize("dtype", COMPLEX)
def test_lazy_conjugate_resolves_as_on_the_cpu(dtype):
    cpu = _complex(dtype, 3, 4)
    porta = cpu.to("porta")
    conj = porta.conj()
    assert conj.is_conj()
    assert torch.equal(conj.cpu(), cpu.conj())
    resolved = conj.resolve_conj()
    assert not resolved.is_conj()
    assert torch.equal(resolved.cpu(), cpu.conj().resolve_conj())
    assert torch.equal(conj.clone().cpu(), cpu.conj().clone())
    assert torch.equal(conj.imag.cpu(), cpu.conj().imag)  # a negative view
    assert torch.equal(conj.t().contiguous().cpu(), cpu.conj().t().contiguous())
    with pytest.raises(RuntimeError, match="unresolved conjugated"):
        torch.view_as_real(conj)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_save_and_load(dtype):
    cpu = _complex(dtype, 2, 3)
    buffer = io.BytesIO()
    torch.save(cpu.to("porta"), buffer)
    buffer.seek(0)
    loaded = torch.load(buffer, map_location="cpu")
    assert torch.equal(loaded, cpu)


def test_unimplemented_op_names_the_dtype(monkeypatch):
    monkeypatch.setenv("PORTA_FALLBACK", "error")
    porta = _complex(torch.complex64, 4).to("porta")
    with pytest.raises(Exception, match="not implemented for complex64 on porta"):
        torch.tan(porta)


_OPS = {
    "add": lambda x, y: x + y,
    "sub_alpha": lambda x, y: torch.sub(x, y, alpha=2),
    "mul": lambda x, y: x * y,
    "div": lambda x, y: x / y,
    "mul_number": lambda x, y: x * 2.5,
    "add_real": lambda x, y: x + y.real,          # promotes the real operand
    "add_broadcast": lambda x, y: x + y[0],
    "neg": lambda x, y: -x,
    "abs": lambda x, y: x.abs(),
    "angle": lambda x, y: x.angle(),
    "sgn": lambda x, y: x.sgn(),
    "exp": lambda x, y: x.exp(),
    "log": lambda x, y: x.log(),
    "conj_physical": lambda x, y: torch.conj_physical(x),
    "sin": lambda x, y: torch.sin(x),
    "cos": lambda x, y: torch.cos(x),
    "tanh": lambda x, y: torch.tanh(x),
    "sqrt": lambda x, y: torch.sqrt(x),
    "sqrt_negative_real": lambda x, y: torch.sqrt(torch.complex(-x.real.abs(), torch.zeros_like(x.imag))),
    "reciprocal": lambda x, y: torch.reciprocal(x),
    "conj_times": lambda x, y: x.conj() * y,      # the lazy bit resolved first
    "eq": lambda x, y: x == y,
    "ne": lambda x, y: x != x,
    "sum": lambda x, y: x.sum(),
    "sum_dim": lambda x, y: x.sum(-1),
    "mean_keepdim": lambda x, y: x.mean(0, keepdim=True),
    "mm": lambda x, y: x @ y.t(),
    "bmm": lambda x, y: torch.bmm(x[None], y.t()[None]),
    "complex": lambda x, y: torch.complex(x.real, y.imag),
    "polar": lambda x, y: torch.polar(x.abs(), y.angle()),
}


@pytest.mark.parametrize("name", sorted(_OPS))
@pytest.mark.parametrize("dtype", COMPLEX)
def test_op_matches_cpu(name, dtype, no_fallbacks):
    a, b = _complex(dtype, 3, 4, seed=1), _complex(dtype, 3, 4, seed=2)
    expected = _OPS[name](a, b)
    got = _OPS[name](a.to("porta"), b.to("porta"))
    assert_matches(got, expected, atol=1e-5)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_reductions_of_a_complex_number(dtype, no_fallbacks):
    """A rank-0 complex tensor's pair view has one dim, the pair's own: a sum
    or mean over "every dim" must not reduce the pair."""
    z = torch.tensor(1.5 - 2j, dtype=dtype)
    for reduce in (torch.sum, torch.mean, lambda t: t.sum(0, keepdim=True),
                   lambda t: t.mean(dim=[-1])):
        assert_matches(reduce(z.to("porta")), reduce(z), atol=0)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_abs_does_not_overflow_and_equals_the_cpus(dtype, no_fallbacks):
    """|z| as std::abs: parts whose squares overflow give a finite result,
    and ordinary ones the CPU's value exactly (a norm's gradient compares
    |z| with its maximum)."""
    part = torch.float32 if dtype == torch.complex64 else torch.float64
    big = torch.finfo(part).max / 4
    z = torch.complex(torch.tensor([big, 3.0, 0.0, float("inf")], dtype=part),
                      torch.tensor([big, -4.0, 0.0, float("nan")], dtype=part))
    assert_matches(z.to("porta").abs(), z.abs(), atol=0)
    if dtype == torch.complex64:
        w = _complex(dtype, 64, seed=5)
        assert torch.equal(w.to("porta").abs().cpu(), w.abs())


@pytest.mark.parametrize("dtype", COMPLEX)
def test_in_place_ops(dtype, no_fallbacks):
    a, b = _complex(dtype, 3, 4, seed=3), _complex(dtype, 3, 4, seed=4)
    porta = a.to("porta")
    porta.mul_(b.to("porta")).add_(b.to("porta")).neg_()
    assert_matches(porta, -(a * b + b), atol=1e-5)
    with pytest.raises(RuntimeError, match="can't be cast"):
        torch.zeros(3, 4, device="porta").add_(porta)


def test_rotary_embedding_as_llama_applies_it(no_fallbacks):
    """Meta's reference Llama: x viewed as complex pairs times polar
    frequencies, viewed back as real."""
    def rotate(x, angles):
        freqs = torch.polar(torch.ones_like(angles), angles)
        pairs = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
        return torch.view_as_real(pairs * freqs).flatten(-2)

    x = torch.randn(2, 5, 8)
    angles = torch.outer(torch.arange(5.0), torch.rand(4))
    assert_matches(rotate(x.to("porta"), angles.to("porta")), rotate(x, angles), atol=1e-5)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_backward_of_a_complex_function(dtype):
    a, b = _complex(dtype, 3, 4, seed=5), _complex(dtype, 4, 2, seed=6)

    def loss(x, y):
        return ((x @ y) * (x @ y).conj()).real.sum() + x.abs().sum() + (x / (1 + x.abs())).angle().sum()

    cpu_a, cpu_b = a.clone().requires_grad_(), b.clone().requires_grad_()
    porta_a = a.to("porta").requires_grad_()
    porta_b = b.to("porta").requires_grad_()
    loss(cpu_a, cpu_b).backward()
    loss(porta_a, porta_b).backward()
    torch.testing.assert_close(porta_a.grad.cpu(), cpu_a.grad, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(porta_b.grad.cpu(), cpu_b.grad, atol=1e-4, rtol=1e-4)


def test_item_is_a_python_complex():
    assert torch.tensor(1.5 - 2j).to("porta").item() == 1.5 - 2j


def test_unimplemented_op_falls_back_by_default(monkeypatch):
    monkeypatch.delenv("PORTA_FALLBACK", raising=False)
    cpu = _complex(torch.complex64, 4)
    with pytest.warns(UserWarning, match="running it on the CPU"):
        got = torch.tan(cpu.to("porta"))
    assert_matches(got, torch.tan(cpu))


# The new elementary functions' gradients, through PyTorch's formulas (which
# call the functions themselves on porta tensors).
_GRADIENT_OPS = {
    "sin": torch.sin,
    "cos": torch.cos,
    "tanh": torch.tanh,
    "sqrt": torch.sqrt,
    "reciprocal": torch.reciprocal,
    "div": lambda x: x / (x.conj() + 2),
}


@pytest.mark.parametrize("name", sorted(_GRADIENT_OPS))
@pytest.mark.parametrize("dtype", COMPLEX)
def test_elementary_gradients(name, dtype, no_fallbacks):
    cpu = _complex(dtype, 3, 4, seed=7)
    weights = _complex(dtype, 3, 4, seed=8)
    fn = _GRADIENT_OPS[name]
    cpu_x, porta_x = cpu.clone().requires_grad_(), cpu.to("porta").requires_grad_()
    (fn(cpu_x) * weights).real.sum().backward()
    (fn(porta_x) * weights.to("porta")).real.sum().backward()
    torch.testing.assert_close(porta_x.grad.cpu(), cpu_x.grad, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_in_place_elementary_functions(dtype, no_fallbacks):
    cpu = _complex(dtype, 3, 4, seed=9)
    porta = cpu.to("porta")
    porta.sin_().sqrt_().reciprocal_().tanh_().cos_()
    assert_matches(porta, cpu.sin().sqrt().reciprocal().tanh().cos(), atol=1e-5)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_division_of_large_magnitudes_does_not_overflow(dtype, no_fallbacks):
    """|c + di|^2 overflows for components near the dtype's largest value;
    Smith's scaling divides without forming it."""
    big = torch.finfo(dtype.to_real()).max / 4
    a = torch.tensor([big + big * 1j, 1 + 1j, big * 1j, 3 + 0j], dtype=dtype)
    b = torch.tensor([big - big * 1j, big + big * 1j, 2 * big + 0j, -big * 1j], dtype=dtype)
    assert_matches(a.to("porta") / b.to("porta"), a / b)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_cast_to_bool_counts_the_imaginary_part(dtype, no_fallbacks):
    cpu = torch.tensor([0j, 1j, 2 + 0j, 0.5 - 0.5j, float("nan") * 1j], dtype=dtype)
    assert torch.equal(cpu.to("porta").to(torch.bool).cpu(), cpu.to(torch.bool))


@pytest.mark.parametrize("dtype", COMPLEX)
def test_fused_mode_gives_the_eager_results(dtype):
    """Fused eager mode: products with numbers (a zero-dim complex operand
    broadcast against the other's components), in-place ops on views and the
    irfft gradient that scales a slice in place, as on the CPU."""
    import torch_porta
    cpu = _complex(dtype, 3, 6, seed=5)
    grad = torch.randn(3, 10, dtype=cpu.real.dtype)
    torch_porta.set_eager_mode("fused")
    try:
        porta = cpu.to("porta")
        assert_matches(porta * 2, cpu * 2, atol=1e-6)
        sliced, expected = porta.clone(), cpu.clone()
        sliced[..., 1:4].mul_(2)
        expected[..., 1:4].mul_(2)
        assert_matches(sliced, expected, atol=1e-6)
        leaf_cpu, leaf = cpu.clone().requires_grad_(), porta.clone().requires_grad_()
        torch.fft.irfft(leaf_cpu, n=10).backward(grad)
        torch.fft.irfft(leaf, n=10).backward(grad.to("porta"))
        assert_matches(leaf.grad, leaf_cpu.grad, atol=1e-5)
    finally:
        torch_porta.set_eager_mode("debug")
