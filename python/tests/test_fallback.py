"""Aten ops without a porta kernel run through PyTorch's CPU kernels, visibly.

The ops used here (special functions, nextafter) are ones porta is not
expected to implement soon; each test skips if one becomes native.
"""
import warnings

import pytest
import torch

import torch_porta
from torch_porta import _fallback
from torch_porta.kernels._registry import NATIVE


def _needs_fallback(*names):
    native = [name for name in names if name in NATIVE]
    if native:
        pytest.skip(f"{native} became native: pick another op for this test")


@pytest.fixture(autouse=True)
def fresh(monkeypatch):
    monkeypatch.delenv("PORTA_FALLBACK", raising=False)
    _fallback._warned.clear()
    torch_porta.reset_metrics()


def test_out_of_place_matches_cpu_and_warns_once():
    _needs_fallback("special_bessel_j0.out")
    x = torch.randn(3, 5)
    with pytest.warns(UserWarning, match=r"^aten::special_bessel_j0\.out is not implemented "
                                         r"on porta; running it on the CPU$"):
        result = torch.special.bessel_j0(x.to("porta"))
    assert result.device.type == "porta"
    torch.testing.assert_close(result.cpu(), torch.special.bessel_j0(x))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        torch.special.bessel_j0(x.to("porta"))
    assert torch_porta.metrics()["fallbacks"]["special_bessel_j0.out"] == 2


def test_in_place_writes_through_a_view_into_the_base():
    _needs_fallback("nextafter_", "nextafter.out")
    base = torch.randn(4, 6)
    porta = base.to("porta")
    with pytest.warns(UserWarning):
        porta[:, ::2].nextafter_(torch.full((4, 3), 10.0, device="porta"))
    base[:, ::2].nextafter_(torch.full((4, 3), 10.0))
    assert torch.equal(porta.cpu(), base)


def test_out_of_the_right_shape_and_an_empty_out_resized():
    _needs_fallback("special_erfcx.out")
    x = torch.randn(2, 3)
    out = torch.empty(2, 3, device="porta")
    with pytest.warns(UserWarning):
        returned = torch.special.erfcx(x.to("porta"), out=out)
    assert returned is out
    torch.testing.assert_close(out.cpu(), torch.special.erfcx(x))
    empty = torch.empty(0, device="porta")
    torch.special.erfcx(x.to("porta"), out=empty)
    assert empty.shape == (2, 3)
    torch.testing.assert_close(empty.cpu(), torch.special.erfcx(x))


def test_number_operands_promote_as_on_cpu():
    _needs_fallback("special_zeta.out")
    x = torch.arange(1, 5, dtype=torch.int32)
    with pytest.warns(UserWarning):
        result = torch.special.zeta(x.to("porta"), 2.0)
    expected = torch.special.zeta(x, 2.0)
    assert result.dtype == expected.dtype
    torch.testing.assert_close(result.cpu(), expected)


def test_backward_through_a_fallback_op():
    _needs_fallback("special_erfcx.out")
    x = torch.randn(7, dtype=torch.float64)
    porta = x.to("porta").requires_grad_()
    cpu = x.clone().requires_grad_()
    with pytest.warns(UserWarning):
        torch.special.erfcx(porta).sum().backward()
    torch.special.erfcx(cpu).sum().backward()
    assert porta.grad.device.type == "porta"
    torch.testing.assert_close(porta.grad.cpu(), cpu.grad)


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
    _needs_fallback("special_bessel_j0.out")
    monkeypatch.setenv("PORTA_FALLBACK", "error")
    with pytest.raises(NotImplementedError, match=r"aten::special_bessel_j0\.out is not "
                                                  r"implemented on porta \(PORTA_FALLBACK"):
        torch.special.bessel_j0(torch.ones(2, device="porta"))
    assert torch_porta.metrics()["fallbacks"] == {}


def test_views_never_fall_back():
    _needs_fallback("unfold")
    with pytest.raises(NotImplementedError, match=r"aten::unfold .*returns a view"):
        torch.ones(6, device="porta").unfold(0, 2, 1)


def test_cpu_tensors_with_dimensions_are_refused_as_on_cuda():
    _needs_fallback("special_zeta.out")
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        torch.special.zeta(torch.ones(3, device="porta"), torch.ones(3))


def test_cpu_errors_reach_the_caller_unchanged():
    _needs_fallback("special_zeta.out")
    with pytest.raises(RuntimeError, match="must match the size"):
        torch.special.zeta(torch.ones(3, device="porta"), torch.ones(4, device="porta"))
