"""Aten ops without a porta kernel run through PyTorch's CPU kernels, visibly.

The ops used here (lcm and gcd, integer-only; the weight-norm kernel
PyTorch's CUDA path uses) have no porta kernel; _needs_fallback fails, naming
the op, once one becomes native, so the tests are moved to another op rather
than skipped.
"""
import warnings

import pytest
import torch

import torch_porta
from torch_porta import _fallback
from torch_porta.kernels._registry import NATIVE


def _needs_fallback(*names):
    native = [name for name in names if name in NATIVE]
    assert not native, f"{native} became native: pick another op for this test"


@pytest.fixture(autouse=True)
def fresh(monkeypatch):
    monkeypatch.delenv("PORTA_FALLBACK", raising=False)
    _fallback._warned.clear()
    torch_porta.reset_metrics()


def test_out_of_place_matches_cpu_and_warns_once():
    _needs_fallback("lcm.out")
    x, y = torch.randint(1, 50, (3, 5)), torch.randint(1, 50, (3, 5))
    with pytest.warns(UserWarning, match=r"^aten::lcm\.out is not implemented "
                                         r"on porta; running it on the CPU$"):
        result = torch.lcm(x.to("porta"), y.to("porta"))
    assert result.device.type == "porta"
    assert torch.equal(result.cpu(), torch.lcm(x, y))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        torch.lcm(x.to("porta"), y.to("porta"))
    assert torch_porta.metrics()["fallbacks"]["lcm.out"] == 2


def test_in_place_writes_through_a_view_into_the_base():
    _needs_fallback("lcm_", "lcm.out")
    base = torch.randint(1, 50, (4, 6))
    porta = base.to("porta")
    with pytest.warns(UserWarning):
        porta[:, ::2].lcm_(torch.full((4, 3), 6, device="porta"))
    base[:, ::2].lcm_(torch.full((4, 3), 6))
    assert torch.equal(porta.cpu(), base)


def test_out_of_the_right_shape_and_an_empty_out_resized():
    _needs_fallback("gcd.out")
    x, y = torch.randint(1, 50, (2, 3)), torch.randint(1, 50, (2, 3))
    out = torch.empty(2, 3, dtype=torch.int64, device="porta")
    with pytest.warns(UserWarning):
        returned = torch.gcd(x.to("porta"), y.to("porta"), out=out)
    assert returned is out
    assert torch.equal(out.cpu(), torch.gcd(x, y))
    empty = torch.empty(0, dtype=torch.int64, device="porta")
    torch.gcd(x.to("porta"), y.to("porta"), out=empty)
    assert empty.shape == (2, 3)
    assert torch.equal(empty.cpu(), torch.gcd(x, y))


def test_mixed_operands_promote_as_on_cpu():
    _needs_fallback("gcd.out")
    x = torch.arange(1, 5, dtype=torch.int16)
    y = torch.tensor([6, 4, 9, 8], dtype=torch.int32)
    scalar = torch.tensor(6)  # a 0-dim operand does not raise the dtype
    with pytest.warns(UserWarning):
        result = torch.gcd(x.to("porta"), y.to("porta"))
        by_scalar = torch.gcd(x.to("porta"), scalar.to("porta"))
    for got, expected in ((result, torch.gcd(x, y)), (by_scalar, torch.gcd(x, scalar))):
        assert got.dtype == expected.dtype
        assert torch.equal(got.cpu(), expected)


def test_backward_through_a_fallback_op():
    _needs_fallback("_weight_norm_interface", "_weight_norm_interface_backward")
    v, g = torch.randn(3, 4, dtype=torch.float64), torch.randn(3, 1, dtype=torch.float64)
    porta = [t.to("porta").requires_grad_() for t in (v, g)]
    cpu = [t.clone().requires_grad_() for t in (v, g)]
    with pytest.warns(UserWarning):
        torch._weight_norm_interface(*porta, 0)[0].sum().backward()
    torch._weight_norm_interface(*cpu, 0)[0].sum().backward()
    assert torch_porta.metrics()["fallbacks"] == {"_weight_norm_interface": 1,
                                                  "_weight_norm_interface_backward": 1}
    for p, c in zip(porta, cpu):
        assert p.grad.device.type == "porta"
        torch.testing.assert_close(p.grad.cpu(), c.grad)


def test_batch_norm_running_stats_are_written_back():
    torch.manual_seed(0)
    x = torch.randn(4, 3, 5, 5)
    cpu = torch.nn.BatchNorm2d(3)
    porta = torch.nn.BatchNorm2d(3).to("porta")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.testing.assert_close(porta(x.to("porta")).cpu(), cpu(x))
    torch.testing.assert_close(porta.running_mean.cpu(), cpu.running_mean)
    torch.testing.assert_close(porta.running_var.cpu(), cpu.running_var)


def test_factory_with_a_porta_device_makes_porta_tensors():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = torch.arange(2, 11, 3, device="porta")
    assert result.device.type == "porta"
    assert torch.equal(result.cpu(), torch.arange(2, 11, 3))


def test_error_mode_raises_naming_the_op(monkeypatch):
    _needs_fallback("lcm.out")
    monkeypatch.setenv("PORTA_FALLBACK", "error")
    ones = torch.ones(2, dtype=torch.int64, device="porta")
    with pytest.raises(NotImplementedError, match=r"aten::lcm\.out is not "
                                                  r"implemented on porta \(PORTA_FALLBACK"):
        torch.lcm(ones, ones)
    assert torch_porta.metrics()["fallbacks"] == {}


def test_views_never_fall_back():
    _needs_fallback("_nested_view_from_buffer")
    with pytest.raises(NotImplementedError,
                       match=r"aten::_nested_view_from_buffer .*returns a view"):
        torch.ops.aten._nested_view_from_buffer(torch.ones(6, device="porta"),
                                                torch.tensor([[2, 3]]), torch.tensor([[3, 1]]),
                                                torch.tensor([0]))


def test_cpu_tensors_with_dimensions_are_refused_as_on_cuda():
    _needs_fallback("lcm.out")
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        torch.lcm(torch.ones(3, dtype=torch.int64, device="porta"),
                  torch.ones(3, dtype=torch.int64))


def test_cpu_errors_reach_the_caller_unchanged():
    _needs_fallback("lcm.out")
    with pytest.raises(RuntimeError, match="must match the size"):
        torch.lcm(torch.ones(3, dtype=torch.int64, device="porta"),
                  torch.ones(4, dtype=torch.int64, device="porta"))
