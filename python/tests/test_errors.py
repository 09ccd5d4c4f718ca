"""Bad input raises the exceptions PyTorch raises, with porta's message."""
import pytest
import torch


def test_mixing_devices_names_both():
    a = torch.ones(2, 3, device="porta")
    with pytest.raises(RuntimeError, match="porta:0 and cpu"):
        a + torch.ones(2, 3)
    with pytest.raises(RuntimeError, match="same device"):
        torch.mm(a, torch.ones(3, 2))


def test_shape_mismatch_is_runtime_error():
    with pytest.raises(RuntimeError, match=r"\[2,3\].*\[4,3\]|\[4,3\].*\[2,3\]|shape"):
        torch.ones(2, 3, device="porta") + torch.ones(4, 3, device="porta")


def test_axis_out_of_range_is_index_error():
    with pytest.raises(IndexError):
        torch.ones(2, 3, device="porta").sum(5)
    with pytest.raises(IndexError):
        torch.ones(2, 3, device="porta")[5]


def test_view_of_incompatible_layout_raises():
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        torch.ones(2, 3, device="porta").t().view(6)


def test_missing_device_index():
    with pytest.raises(RuntimeError, match="porta:3"):
        torch.empty(2, device="porta:3")


def test_unsupported_dtype_is_type_error():
    with pytest.raises(TypeError, match="complex64"):
        torch.empty(2, dtype=torch.complex64, device="porta")


def test_matmul_shape_error():
    with pytest.raises(RuntimeError):
        torch.ones(2, 3, device="porta") @ torch.ones(2, 3, device="porta")
