"""Matrix products on porta against PyTorch's CPU: mm, bmm, mv, dot,
addmm, baddbmm, addmv, and nn.Linear through them."""
import pytest
import torch

from aten_compare import ALL_DTYPES, LAYOUTS, compare, compare_grad, make

NUMERIC_DTYPES = [d for d in ALL_DTYPES if d != torch.bool]


def _tolerances(dtype):
    # Products of k terms: float16 sums round more than one op's default.
    return {"atol": 1e-2, "rtol": 1e-2} if dtype in (torch.float16, torch.bfloat16) else {}


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_products(layout, dtype):
    tol = _tolerances(dtype)
    a, b = make((3, 4), dtype, layout, seed=1), make((4, 5), dtype, layout, seed=2)
    compare(torch.mm, a, b, **tol)
    compare(torch.bmm, make((2, 3, 4), dtype, layout, 1), make((2, 4, 5), dtype, layout, 2),
            **tol)
    compare(torch.mv, a, make((4,), dtype, layout, 3), **tol)
    compare(torch.dot, make((6,), dtype, layout, 4), make((6,), dtype, layout, 5), **tol)


@pytest.mark.parametrize("shapes", [((0, 3), (3, 4)), ((2, 0), (0, 4)), ((2, 3), (3, 0))])
def test_empty_products(shapes):
    compare(torch.mm, make(shapes[0]), make(shapes[1]))
    compare(torch.addmm, make((shapes[1][1],)), make(shapes[0]), make(shapes[1]))


@pytest.mark.parametrize("dtype", NUMERIC_DTYPES)
@pytest.mark.parametrize("bias_shape", [(3, 5), (5,), (1, 5), (3, 1), ()])
@pytest.mark.parametrize("beta,alpha", [(1, 1), (0.5, 2), (0, 1), (2, 0)])
def test_addmm(bias_shape, beta, alpha, dtype):
    if not dtype.is_floating_point:
        beta, alpha = int(beta * 2), int(alpha)
    tol = _tolerances(dtype)
    bias, a, b = make(bias_shape, dtype, seed=1), make((3, 4), dtype, seed=2), make((4, 5), dtype)
    compare(lambda s, x, y: torch.addmm(s, x, y, beta=beta, alpha=alpha), bias, a, b, **tol)
    compare(lambda s, x, y: torch.baddbmm(s, x.expand(2, 3, 4), y.expand(2, 4, 5), beta=beta,
                                          alpha=alpha), bias, a, b, **tol)
    compare(lambda s, x, y: torch.addmv(s[..., 0] if s.dim() else s, x, y[:, 0], beta=beta,
                                        alpha=alpha), bias.mT if bias.dim() == 2 else bias,
            a, b, **tol)


def test_beta_zero_ignores_nan_in_self():
    compare(lambda s, x, y: torch.addmm(s, x, y, beta=0), torch.full((3, 5), float("nan")),
            make((3, 4)), make((4, 5)))


@pytest.mark.parametrize("fn,shapes", [
    (torch.mm, [(2, 3), (4, 5)]), (torch.mm, [(2,), (2, 2)]), (torch.mm, [(2, 2), (2,)]),
    (torch.bmm, [(2, 2, 3), (3, 3, 2)]), (torch.bmm, [(2, 2), (2, 2, 2)]),
    (torch.mv, [(3, 2), (3,)]), (torch.mv, [(3,), (3,)]), (torch.dot, [(3,), (4,)]),
    (torch.dot, [(3, 1), (3,)]), (torch.addmm, [(2, 2, 3), (2, 2), (2, 3)]),
    (torch.addmm, [(4,), (2, 2), (2, 3)])])
def test_shape_errors(fn, shapes):
    compare(fn, *(make(s) for s in shapes))


def test_dtype_errors():
    compare(torch.mm, make((2, 3)), make((3, 2), torch.float64))
    compare(torch.dot, make((3,)), make((3,), torch.float64))
    compare(torch.addmm, make((2,), torch.float64), make((2, 2)), make((2, 2)))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_gradients(layout):
    a, b = make((3, 4), layout=layout, seed=1), make((4, 5), layout=layout, seed=2)
    compare_grad(torch.mm, a, b)
    compare_grad(lambda s, x, y: torch.addmm(s, x, y, beta=0.5, alpha=2), make((5,)), a, b)
    compare_grad(torch.bmm, make((2, 3, 4), layout=layout), make((2, 4, 5), layout=layout))
    compare_grad(torch.mv, a, make((4,)))
    compare_grad(torch.dot, make((4,)), make((4,), seed=5))


@pytest.mark.parametrize("input_shape", [(3, 4), (2, 3, 4), (4,)])
@pytest.mark.parametrize("bias", [True, False])
def test_linear_forward_and_backward(input_shape, bias):
    torch.manual_seed(0)
    layer = torch.nn.Linear(4, 5, bias=bias)
    compare_grad(lambda x, w, *b: torch.nn.functional.linear(x, w, *b), make(input_shape),
                 layer.weight.detach(), *([layer.bias.detach()] if bias else []))


def test_out_variants():
    a, b = make((3, 4)), make((4, 5))
    compare(lambda x, y: torch.mm(x, y, out=torch.empty(3, 5, device=x.device)), a, b)
    compare(lambda x, y: torch.bmm(x[None], y[None], out=torch.empty(1, 3, 5, device=x.device)),
            a, b)
    compare(lambda s, x, y: torch.addmm(s, x, y, alpha=2, out=torch.empty(3, 5, device=x.device)),
            make((5,)), a, b)
    out = torch.empty(3, 5, device="porta")
    assert torch.mm(a.to("porta"), b.to("porta"), out=out) is out


def test_out_tensors_of_another_shape_are_resized():
    a, b = make((2, 3)), make((3, 4), seed=1)
    for device in ("cpu", "porta"):
        out = torch.empty(0, device=device)
        torch.mm(a.to(device), b.to(device), out=out)
        summed = torch.empty(0, device=device)
        torch.sum(a.to(device), 1, out=summed)
        assert out.shape == (2, 4) and summed.shape == (2,)
        torch.testing.assert_close(out.cpu(), a @ b)
        torch.testing.assert_close(summed.cpu(), a.sum(1))
