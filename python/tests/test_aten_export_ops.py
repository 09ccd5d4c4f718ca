"""Ops torch.export leaves in real models' graphs, against PyTorch's CPU:
_assert_tensor_metadata passes and fails as PyTorch's does for sizes,
strides and dtype, and runs in libporta (not the CPU fallback)."""
import pytest
import torch

import torch_porta
from aten_compare import make

check = torch.ops.aten._assert_tensor_metadata.default


def compare(fn, tensor):
    """fn on the CPU tensor and on its porta copy: both return None, or both
    raise RuntimeError."""
    try:
        expected = fn(tensor)
    except RuntimeError:
        with pytest.raises(RuntimeError):
            fn(tensor.to("porta"))
        return
    assert expected is None
    assert fn(tensor.to("porta")) is None


def test_registered_in_libporta():
    assert "_assert_tensor_metadata" in torch_porta._C.aten_ops()


@pytest.mark.parametrize("kwargs", [
    {},
    dict(size=[2, 3]), dict(size=[3, 2]), dict(size=[2, 3, 1]), dict(size=[]),
    dict(stride=[3, 1]), dict(stride=[1, 2]),
    dict(dtype=torch.float32), dict(dtype=torch.float64), dict(dtype=torch.int64),
    dict(size=[2, 3], stride=[3, 1], dtype=torch.float32),
    dict(size=[2, 3], dtype=torch.bool),
])
def test_matches_pytorch(kwargs):
    torch_porta.reset_metrics()
    compare(lambda a: check(a, **kwargs), make((2, 3)))
    assert torch_porta.metrics()["ops"].get("_assert_tensor_metadata") == 1


def test_views_are_checked_by_their_own_strides():
    compare(lambda a: check(a.mT, size=[3, 2], stride=[1, 3]), make((2, 3)))
    compare(lambda a: check(a.mT, stride=[2, 1]), make((2, 3)))
    compare(lambda a: check(a[:, ::2], size=[2, 2], stride=[4, 2]), make((2, 4)))


@pytest.mark.parametrize("dtype", [torch.bool, torch.int64, torch.float16])
def test_dtypes(dtype):
    compare(lambda a: check(a, dtype=dtype), make((4,), dtype))
    compare(lambda a: check(a, dtype=torch.int32), make((4,), dtype))


def test_scalar():
    compare(lambda a: check(a, size=[], stride=[]), make(()))
    compare(lambda a: check(a, size=[1]), make(()))


def test_messages_name_expected_and_given():
    x = torch.zeros(2, 3, device="porta")
    with pytest.raises(RuntimeError, match=r"sizes mismatch: expected \[3, 2\], got \[2, 3\]"):
        check(x, size=[3, 2])
    with pytest.raises(RuntimeError, match="dtype mismatch: expected Long, got Float"):
        check(x, dtype=torch.int64)


def test_device_recorded_at_export_is_not_checked():
    """An exported graph names the device it was traced on (cpu); running it
    on porta must not fail for that."""
    check(torch.zeros(2, device="porta"), dtype=torch.float32, device=torch.device("cpu"),
          layout=torch.strided)
