"""Dtypes CUDA accepts and the CPU refuses: libraries reach them through
`device.type != "cpu"` branches, so porta takes the union. The expected
values come from the CPU in a wider dtype: avg_pool3d and multi_margin_loss
on float16 and bfloat16. (abs, softsign and trace of bools, which CUDA takes
too, stay refused: the elementwise and trace tests hold them to the CPU's
refusal.)"""
import pytest
import torch
import torch.nn.functional as F

import torch_porta  # noqa: F401  (registers the device)

DEVICE = "porta"


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_avg_pool3d_of_half_types(dtype):
    x = torch.randn(2, 3, 4, 4, 6, generator=torch.Generator().manual_seed(4))
    got = F.avg_pool3d(x.to(dtype).to(DEVICE), 2, stride=(1, 2, 2))
    expected = F.avg_pool3d(x.to(dtype).float(), 2, stride=(1, 2, 2)).to(dtype)
    assert got.dtype == dtype
    torch.testing.assert_close(got.cpu(), expected)


# ---- multi_margin_loss ----

def _margin_case(shape, target_shape, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(*shape, generator=g, dtype=torch.float64)
    return x, torch.randint(0, shape[-1], target_shape, generator=g), \
        torch.rand(shape[-1], generator=g, dtype=torch.float64)


@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("shape, target_shape", [((5, 4), (5,)), ((4,), ())])
@pytest.mark.parametrize("weighted", [False, True])
def test_multi_margin_loss_matches_the_cpu(p, reduction, shape, target_shape, weighted):
    x, target, weight = _margin_case(shape, target_shape, seed=5)
    weight = weight if weighted else None
    x.requires_grad_()
    expected = F.multi_margin_loss(x, target, p=p, margin=0.7, weight=weight, reduction=reduction)
    xp = x.detach().to(DEVICE).requires_grad_()
    got = F.multi_margin_loss(xp, target.to(DEVICE), p=p, margin=0.7,
                              weight=None if weight is None else weight.to(DEVICE),
                              reduction=reduction)
    assert got.shape == expected.shape
    torch.testing.assert_close(got.cpu(), expected.detach())
    grad = torch.randn(expected.shape, generator=torch.Generator().manual_seed(6),
                       dtype=torch.float64)
    torch.testing.assert_close(torch.autograd.grad(got, xp, grad.to(DEVICE))[0].cpu(),
                               torch.autograd.grad(expected, x, grad)[0])


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_multi_margin_loss_of_half_types(dtype):
    x, target, weight = _margin_case((6, 5), (6,), seed=7)
    x = x.to(dtype)
    wide = x.float().requires_grad_()
    expected = F.multi_margin_loss(wide, target, p=2, weight=weight.float())
    xp = x.to(DEVICE).requires_grad_()
    got = F.multi_margin_loss(xp, target.to(DEVICE), p=2, weight=weight.to(dtype).to(DEVICE))
    assert got.dtype == dtype
    torch.testing.assert_close(got.cpu(), expected.detach().to(dtype), rtol=2e-2, atol=2e-2)
    got.backward()
    expected.backward()
    assert xp.grad.dtype == dtype
    torch.testing.assert_close(xp.grad.cpu(), wide.grad.to(dtype), rtol=2e-2, atol=2e-2)


def test_multi_margin_loss_refuses_other_p_and_bad_targets():
    x, target, _ = _margin_case((3, 4), (3,), seed=8)
    x, target = x.to(DEVICE), target.to(DEVICE)
    with pytest.raises(RuntimeError, match="only p == 1 and p == 2"):
        torch.ops.aten.multi_margin_loss(x, target, 3, 1.0, None, 1)
    with pytest.raises(RuntimeError, match="inconsistent target size"):
        F.multi_margin_loss(x, target[:2])
