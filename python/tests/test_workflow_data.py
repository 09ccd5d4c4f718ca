"""Input pipelines as on CUDA: a DataLoader pins its batches for porta,
pinned CPU tensors go to porta with non_blocking=True, and
tensor.pin_memory() / is_pinned() work on CPU tensors."""
import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

import torch_porta  # noqa: F401  (registers the device)

DEVICE = "porta"


def _dataset():
    generator = torch.Generator().manual_seed(0)
    return TensorDataset(torch.randn(10, 3, generator=generator),
                         torch.randint(0, 4, (10,), generator=generator))


def test_pin_memory_pins_a_cpu_tensor():
    x = torch.arange(12.0).reshape(3, 4)
    assert not x.is_pinned()
    pinned = x.pin_memory()
    assert pinned.device.type == "cpu" and pinned.is_pinned()
    assert torch.equal(pinned, x)
    assert pinned.pin_memory() is pinned  # already pinned: no copy
    assert not x.is_pinned()  # the source is left as it was


def test_tensors_created_pinned_are_pinned():
    x = torch.empty(5, pin_memory=True)
    assert x.device.type == "cpu" and x.is_pinned()


# torch 2.13 deprecates naming the device (it pins for the current
# accelerator) but code written for earlier versions still names it.
@pytest.mark.filterwarnings("ignore:pin_memory_device is deprecated")
def test_a_dataloader_pins_its_batches_for_porta():
    dataset = _dataset()
    loader = DataLoader(dataset, batch_size=4, pin_memory=True, pin_memory_device=DEVICE)
    seen = 0
    for features, labels in loader:
        assert features.device.type == "cpu" and features.is_pinned()
        assert labels.is_pinned()
        on_device = features.to(DEVICE, non_blocking=True)
        label_on_device = labels.to(DEVICE, non_blocking=True)
        assert on_device.device == torch.device(DEVICE, 0)
        torch.porta.synchronize()
        assert torch.equal(on_device.cpu(), dataset.tensors[0][seen:seen + len(features)])
        assert torch.equal(label_on_device.cpu(), dataset.tensors[1][seen:seen + len(labels)])
        seen += len(features)
    assert seen == 10


def test_a_dataloader_with_pin_memory_pins_for_the_current_accelerator():
    loader = DataLoader(_dataset(), batch_size=5, pin_memory=True)
    features, labels = next(iter(loader))
    assert features.is_pinned() and labels.is_pinned()


def test_non_blocking_copies_both_ways_keep_values():
    source = torch.randn(64, 33, generator=torch.Generator().manual_seed(1)).pin_memory()
    on_device = source.to(DEVICE, non_blocking=True)
    doubled = on_device * 2
    back = doubled.to("cpu", non_blocking=True)
    torch.porta.synchronize()
    assert back.device.type == "cpu"
    assert torch.equal(back, source * 2)
    assert torch.equal(on_device.cpu(), source)
