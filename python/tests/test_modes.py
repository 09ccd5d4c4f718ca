"""Eager modes: "debug" raises at the op, "strict" defers libporta's
failures to the next sync point, like an asynchronous device queue."""
import pytest
import torch

import torch_porta
from torch_porta import _modes


@pytest.fixture(autouse=True)
def restore_mode():
    yield
    _modes._pending.clear()
    torch_porta.set_eager_mode("debug")


def _failing_add():
    """aten::add.Tensor's porta kernel as libporta would run it if the op
    failed on the device: the Meta kernel accepts the call, the device
    raises."""
    def kernel(*args, **kwargs):
        raise IndexError("porta: index 7 is out of range for size 3")
    return _modes.issued("add.Tensor", torch.ops.aten.add.Tensor, kernel)


def test_debug_is_the_default_and_modes_are_checked():
    assert torch_porta.get_eager_mode() == "debug"
    torch_porta.set_eager_mode("strict")
    assert torch_porta.get_eager_mode() == "strict"
    with pytest.raises(ValueError, match="eager mode must be one of"):
        torch_porta.set_eager_mode("fast")


def test_debug_raises_at_the_op():
    a = torch.ones(2, 3, device="porta")
    with pytest.raises(IndexError, match="out of range"):
        _failing_add()(a, a)


def test_strict_defers_the_error_to_the_next_sync_naming_op_and_line():
    torch_porta.set_eager_mode("strict")
    a = torch.ones(2, 3, device="porta")
    result = _failing_add()(a, a)  # the issuing line
    assert result.shape == (2, 3) and result.device.type == "porta"
    assert _modes.is_poisoned(result) and not _modes.is_poisoned(a)
    later = result * 2  # ops after the failure still run
    with pytest.raises(IndexError) as caught:
        later.sum().item()
    message = str(caught.value)
    assert "out of range" in message and "aten::add.Tensor" in message
    assert "test_modes.py" in message and "the issuing line" in message
    assert "surfaced at item" in message
    later.sum().item()  # the error is reported once


@pytest.mark.parametrize("sync", [lambda t: t.cpu(), lambda t: print(t),
                                  lambda t: torch_porta.synchronize()])
def test_every_sync_point_surfaces_it(sync, capsys):
    torch_porta.set_eager_mode("strict")
    a = torch.ones(3, device="porta")
    result = _failing_add()(a, a)
    with pytest.raises(IndexError, match="porta strict mode"):
        sync(result)
    # nothing of PyTorch's state is left behind by the error (printing runs
    # under a guard that disables functorch while it formats)
    x = torch.randn(4, 3, 2)
    nested = torch.func.vmap(torch.func.vmap(torch.dot), in_dims=(1, 1))(x, x)
    torch.testing.assert_close(nested, (x * x).sum(2).T)


def test_strict_raises_at_the_call_what_pytorch_checks_itself():
    # Shapes are checked on the host, as CUDA does: no result could exist,
    # so the op's own error is raised where it was issued.
    torch_porta.set_eager_mode("strict")
    with pytest.raises(IndexError, match="out of range"):
        _failing_add()(torch.ones(2, device="porta"), torch.ones(3, device="porta"))
    assert not _modes._pending


def test_strict_in_place_failure_poisons_the_written_tensor():
    torch_porta.set_eager_mode("strict")
    kernel = _modes.issued("add_.Tensor", torch.ops.aten.add_.Tensor,
                           lambda *a, **k: (_ for _ in ()).throw(RuntimeError("device fault")))
    a = torch.ones(3, device="porta")
    assert kernel(a, a) is a and _modes.is_poisoned(a)
    with pytest.raises(RuntimeError, match="device fault"):
        a.cpu()


def test_strict_gives_the_same_results_when_nothing_fails():
    torch_porta.set_eager_mode("strict")
    x = torch.randn(4, 5)
    porta = x.to("porta")
    torch.testing.assert_close((porta * 3 + porta).cpu(), x * 3 + x)


def test_leaving_strict_is_a_sync_point():
    torch_porta.set_eager_mode("strict")
    a = torch.ones(3, device="porta")
    _failing_add()(a, a)
    with pytest.raises(IndexError):
        torch_porta.set_eager_mode("debug")
