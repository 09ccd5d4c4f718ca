"""Each op on porta against PyTorch's CPU result."""
import pytest
import torch

from conftest import assert_matches


def _pair(*shape, dtype=torch.float32, generator=None):
    cpu = torch.randn(*shape, generator=generator).to(dtype)
    return cpu, cpu.to("porta")


BINARY = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b, "add_alpha": lambda a, b: torch.add(a, b, alpha=0.5),
    "sub_alpha": lambda a, b: torch.sub(a, b, alpha=3),
}


@pytest.mark.parametrize("name", BINARY)
def test_binary_with_broadcast(name, rng):
    a_cpu, a = _pair(3, 4, generator=rng)
    b_cpu, b = _pair(4, generator=rng)
    assert_matches(BINARY[name](a, b), BINARY[name](a_cpu, b_cpu))


@pytest.mark.parametrize("scalar", [2, 0.5, -3])
@pytest.mark.parametrize("dtype", [torch.float32, torch.int32, torch.float64])
def test_scalar_operands_promote_like_torch(scalar, dtype, rng):
    a_cpu, a = _pair(2, 3, dtype=dtype, generator=rng)
    for op in (lambda x: x + scalar, lambda x: x * scalar, lambda x: x - scalar,
               lambda x: x / 4, lambda x: torch.add(x, scalar)):
        assert_matches(op(a), op(a_cpu))


def test_bool_scalar(rng):
    a_cpu, a = _pair(2, 3, generator=rng)
    assert_matches(a + True, a_cpu + True)
    assert_matches(a * False, a_cpu * False)


def test_zero_dim_cpu_tensor_operand(rng):
    a_cpu, a = _pair(3, generator=rng)
    two = torch.tensor(2.0)
    assert_matches(a * two, a_cpu * two)


def test_inplace_ops(rng):
    a_cpu, a = _pair(3, 4, generator=rng)
    b_cpu, b = _pair(3, 4, generator=rng)
    a.add_(b, alpha=-0.1)
    a_cpu.add_(b_cpu, alpha=-0.1)
    a.mul_(3)
    a_cpu.mul_(3)
    assert_matches(a, a_cpu)


@pytest.mark.parametrize("op", [torch.neg, torch.exp, torch.relu])
def test_unary(op, rng):
    a_cpu, a = _pair(5, 3, generator=rng)
    assert_matches(op(a), op(a_cpu))
    assert_matches(op(a.t()), op(a_cpu.t()))


@pytest.mark.parametrize("call", [
    lambda t: t.sum(), lambda t: t.sum(0), lambda t: t.sum((0, 2), keepdim=True),
    lambda t: t.sum(-1, dtype=torch.float64), lambda t: t.mean(), lambda t: t.mean(1),
    lambda t: t.mean((0, 1), keepdim=True)])
def test_reductions(call, rng):
    a_cpu, a = _pair(3, 4, 5, generator=rng)
    assert_matches(call(a), call(a_cpu), atol=1e-5)


def test_integer_sum_gives_int64():
    a = torch.arange(6, dtype=torch.int32)
    assert_matches(a.to("porta").sum(), a.sum())


def test_matmuls(rng):
    a_cpu, a = _pair(5, 3, generator=rng)
    b_cpu, b = _pair(3, 4, generator=rng)
    bias_cpu, bias = _pair(4, generator=rng)
    assert_matches(a @ b, a_cpu @ b_cpu, atol=1e-5)
    assert_matches(torch.mm(b.t(), a.t()), torch.mm(b_cpu.t(), a_cpu.t()), atol=1e-5)
    assert_matches(torch.addmm(bias, a, b), torch.addmm(bias_cpu, a_cpu, b_cpu), atol=1e-5)
    assert_matches(torch.addmm(bias, a, b, beta=0.5, alpha=2),
                   torch.addmm(bias_cpu, a_cpu, b_cpu, beta=0.5, alpha=2), atol=1e-5)
    x_cpu, x = _pair(2, 5, 3, generator=rng)
    y_cpu, y = _pair(2, 3, 4, generator=rng)
    assert_matches(torch.bmm(x, y), torch.bmm(x_cpu, y_cpu), atol=1e-5)


def test_mse_loss_reductions(rng):
    a_cpu, a = _pair(4, 3, generator=rng)
    b_cpu, b = _pair(4, 3, generator=rng)
    for reduction in ("mean", "sum", "none"):
        assert_matches(torch.nn.functional.mse_loss(a, b, reduction=reduction),
                       torch.nn.functional.mse_loss(a_cpu, b_cpu, reduction=reduction),
                       atol=1e-5)
