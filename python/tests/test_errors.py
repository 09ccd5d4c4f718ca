"""Bad input raises the exceptions PyTorch raises, with porta's message."""
import pytest
import torch

import torch_porta


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
    with pytest.raises(TypeError, match="complex32"):
        torch.empty(2, dtype=torch.complex32, device="porta")


def test_matmul_shape_error():
    with pytest.raises(RuntimeError):
        torch.ones(2, 3, device="porta") @ torch.ones(2, 3, device="porta")


@pytest.fixture
def eager_mode(request):
    torch_porta.set_eager_mode(request.param)
    yield request.param
    torch_porta.set_eager_mode("debug")


# Mixing a porta tensor with CPU tensors: what CUDA accepts (CPU index
# tensors in advanced indexing, zero-dim CPU tensors standing for numbers)
# works; the rest raises CUDA's error naming both devices. PyTorch's meta
# device, a device that is not the CPU and runs here, accepts and refuses
# these same calls.
MIXED_ACCEPTED = {
    "index": lambda x: x[torch.tensor([0, 2])],
    "boolean mask": lambda x: x[torch.tensor([True, False, True])],
    "index_put_": lambda x: x.index_put_((torch.tensor([1]),), torch.tensor(5.0)),
    "setitem": lambda x: x.__setitem__(torch.tensor([0, 1]), 7.0) or x,
    "zero-dim operand": lambda x: x * torch.tensor(3.0),
}
MIXED_REFUSED = {
    "cat": lambda x: torch.cat([x, torch.ones(3)]),
    "cat, cpu first": lambda x: torch.cat([torch.ones(3), x]),
    "stack": lambda x: torch.stack([x, torch.ones(3)]),
    "binary": lambda x: x + torch.ones(3),
}


@pytest.mark.parametrize("eager_mode", ["debug", "fused"], indirect=True)
@pytest.mark.parametrize("name", MIXED_ACCEPTED)
def test_cpu_indices_and_scalars_work_as_on_cuda(name, eager_mode):
    op = MIXED_ACCEPTED[name]
    op(torch.ones(3, device="meta"))
    expected = op(torch.arange(3.0))
    got = op(torch.arange(3.0, device="porta"))
    assert got.device.type == "porta"
    torch.testing.assert_close(got.cpu(), expected)


@pytest.mark.parametrize("name", MIXED_REFUSED)
def test_other_cpu_tensors_raise_cudas_device_error(name):
    op = MIXED_REFUSED[name]
    with pytest.raises(RuntimeError):
        op(torch.ones(3, device="meta"))
    first, second = ("cpu", "porta:0") if "cpu first" in name else ("porta:0", "cpu")
    with pytest.raises(RuntimeError, match=f"Expected all tensors to be on the same device, "
                                           f"but found at least two devices, {first} and "
                                           f"{second}!"):
        op(torch.ones(3, device="porta"))


# torch.empty(10**12) asks for 4 TB: more than any device here has. It
# raises at the call in every mode, as CUDA's allocator does.
@pytest.mark.parametrize("eager_mode", ["debug", "strict", "fused"], indirect=True)
def test_an_allocation_larger_than_the_device_is_cudas_out_of_memory_error(eager_mode):
    with pytest.raises(torch.OutOfMemoryError,
                       match=r"cannot allocate 4000000000000 bytes on porta:0 \(\w+\): "
                             r"the device has \d+ bytes of memory"):
        torch.empty(10**12, device="porta")
    assert issubclass(torch.OutOfMemoryError, RuntimeError)
    x = torch.ones(4, device="porta")
    with pytest.raises(torch.OutOfMemoryError, match="4000000000000 bytes"):
        x.resize_(10**12)  # the one factory in Python glue (kernels/factory.py)
    assert (x + 1).sum().item() == 8.0
