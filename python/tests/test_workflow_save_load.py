"""torch.save / torch.load with porta tensors, as on CUDA: tensors, views that
share a storage, state dicts and whole modules round-trip, and map_location
moves them between porta devices and the CPU."""
import io

import pytest
import torch
import torch.nn as nn

import torch_porta  # noqa: F401  (registers the device)

DEVICE = "porta"


def needs_two_devices(test):
    return pytest.mark.skipif(torch.porta.device_count() < 2,
                              reason="needs two porta devices "
                                     "(PORTA_VISIBLE_DEVICES=cpu,opencl with PoCL)")(test)


class TwoLayerNet(nn.Module):
    """At module level so that torch.save of a whole module can pickle it."""

    def __init__(self):
        super().__init__()
        self.hidden = nn.Linear(5, 7)
        self.norm = nn.BatchNorm1d(7)  # buffers (running stats) travel too
        self.out = nn.Linear(7, 3)

    def forward(self, x):
        return self.out(torch.relu(self.norm(self.hidden(x))))


def _round_trip(obj, **load_args):
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    buffer.seek(0)
    return torch.load(buffer, **load_args)


def _cpu_tensor(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def test_a_tensor_loads_back_on_its_device_with_its_values():
    cpu = _cpu_tensor(3, 4)
    loaded = _round_trip(cpu.to(DEVICE))  # the default: weights_only=True
    assert loaded.device == torch.device(DEVICE, 0)
    assert loaded.dtype == torch.float32 and loaded.shape == (3, 4)
    torch.testing.assert_close(loaded.cpu(), cpu, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.int64, torch.bool],
                         ids=str)
def test_tensors_of_other_dtypes_round_trip_exactly(dtype):
    cpu = (_cpu_tensor(9) * 4).to(dtype)
    loaded = _round_trip(cpu.to(DEVICE))
    assert loaded.device == torch.device(DEVICE, 0) and loaded.dtype == dtype
    assert torch.equal(loaded.cpu(), cpu)


def test_a_view_keeps_its_offset_and_strides():
    base = _cpu_tensor(4, 6)
    view = base.to(DEVICE)[1:, ::2].t()
    loaded = _round_trip(view)
    assert loaded.stride() == view.stride()
    assert loaded.storage_offset() == view.storage_offset()
    torch.testing.assert_close(loaded.cpu(), base[1:, ::2].t(), rtol=0, atol=0)


def test_two_views_saved_together_load_sharing_one_storage():
    base = _cpu_tensor(4, 6).to(DEVICE)
    loaded = _round_trip({"rows": base[1:3], "transposed": base.t()})
    rows, transposed = loaded["rows"], loaded["transposed"]
    assert rows.untyped_storage().data_ptr() == transposed.untyped_storage().data_ptr()
    assert rows.untyped_storage().nbytes() == 4 * 6 * 4  # the whole base, saved once
    rows.fill_(0.0)  # a write through one view shows through the other
    assert torch.equal(transposed.t()[1:3].cpu(), torch.zeros(2, 6))
    assert torch.equal(transposed.t()[0].cpu(), base[0].cpu())


def test_a_state_dict_round_trips_and_loads_into_a_model():
    torch.manual_seed(0)
    reference = TwoLayerNet()
    model = TwoLayerNet()
    model.load_state_dict(reference.state_dict())
    model.to(DEVICE)
    loaded = _round_trip(model.state_dict())
    assert list(loaded) == list(reference.state_dict())
    for name, value in reference.state_dict().items():
        assert loaded[name].device == torch.device(DEVICE, 0), name
        assert torch.equal(loaded[name].cpu(), value), name
    fresh = TwoLayerNet().to(DEVICE)
    fresh.load_state_dict(loaded)
    x = _cpu_tensor(8, 5, seed=1)
    reference.eval()
    fresh.eval()
    torch.testing.assert_close(fresh(x.to(DEVICE)).cpu(), reference(x), rtol=1e-5, atol=1e-6)


def test_a_whole_module_round_trips():
    torch.manual_seed(0)
    reference = TwoLayerNet().eval()
    model = TwoLayerNet().eval()
    model.load_state_dict(reference.state_dict())
    model.to(DEVICE)
    loaded = _round_trip(model, weights_only=False)
    assert isinstance(loaded, TwoLayerNet)
    assert all(t.device == torch.device(DEVICE, 0)
               for t in list(loaded.parameters()) + list(loaded.buffers()))
    x = _cpu_tensor(8, 5, seed=1)
    torch.testing.assert_close(loaded(x.to(DEVICE)).cpu(), reference(x), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("map_location", ["cpu", torch.device("cpu")], ids=repr)
def test_map_location_cpu_loads_porta_tensors_on_the_cpu(map_location):
    cpu = _cpu_tensor(5)
    loaded = _round_trip({"x": cpu.to(DEVICE)}, map_location=map_location)
    assert loaded["x"].device == torch.device("cpu")
    assert torch.equal(loaded["x"], cpu)


@pytest.mark.parametrize("map_location", [DEVICE, f"{DEVICE}:0", torch.device(DEVICE, 0)],
                         ids=repr)
def test_map_location_porta_loads_a_cpu_checkpoint_on_porta(map_location):
    cpu = _cpu_tensor(5)
    loaded = _round_trip({"x": cpu}, map_location=map_location)
    assert loaded["x"].device == torch.device(DEVICE, 0)
    assert torch.equal(loaded["x"].cpu(), cpu)


def test_a_cpu_checkpoint_loads_into_a_model_on_porta():
    torch.manual_seed(0)
    reference = TwoLayerNet().eval()
    checkpoint = _round_trip(reference.state_dict(), map_location=DEVICE)
    model = TwoLayerNet().eval().to(DEVICE)
    model.load_state_dict(checkpoint)
    x = _cpu_tensor(8, 5, seed=1)
    torch.testing.assert_close(model(x.to(DEVICE)).cpu(), reference(x), rtol=1e-5, atol=1e-6)
    # and load_state_dict copies a CPU state dict onto the model's device
    model = TwoLayerNet().eval().to(DEVICE)
    model.load_state_dict(reference.state_dict())
    assert model.out.weight.device == torch.device(DEVICE, 0)
    torch.testing.assert_close(model(x.to(DEVICE)).cpu(), reference(x), rtol=1e-5, atol=1e-6)


def test_map_location_callable_sees_the_saved_location():
    cpu = _cpu_tensor(5)
    seen = []

    def to_cpu(storage, location):
        seen.append(location)
        return storage

    loaded = _round_trip({"x": cpu.to(DEVICE)}, map_location=to_cpu)
    assert seen == [f"{DEVICE}:0"]
    assert loaded["x"].device == torch.device("cpu")
    assert torch.equal(loaded["x"], cpu)


def test_map_location_callable_can_move_storages_to_porta():
    cpu = _cpu_tensor(5)
    loaded = _round_trip({"x": cpu},
                         map_location=lambda storage, location: storage.to(device=DEVICE))
    assert loaded["x"].device == torch.device(DEVICE, 0)
    assert torch.equal(loaded["x"].cpu(), cpu)


def test_map_location_dict_renames_devices():
    cpu = _cpu_tensor(5)
    loaded = _round_trip({"x": cpu.to(DEVICE)}, map_location={f"{DEVICE}:0": "cpu"})
    assert loaded["x"].device == torch.device("cpu")
    assert torch.equal(loaded["x"], cpu)


@needs_two_devices
@pytest.mark.parametrize("map_location", [f"{DEVICE}:1", torch.device(DEVICE, 1)], ids=repr)
def test_map_location_second_device(map_location):
    cpu = _cpu_tensor(5)
    for saved in (cpu, cpu.to(DEVICE)):
        loaded = _round_trip({"x": saved}, map_location=map_location)
        assert loaded["x"].device == torch.device(DEVICE, 1)
        assert torch.equal(loaded["x"].cpu(), cpu)


@needs_two_devices
def test_a_tensor_saved_on_the_second_device_loads_back_there():
    cpu = _cpu_tensor(5)
    loaded = _round_trip(cpu.to(f"{DEVICE}:1"))
    assert loaded.device == torch.device(DEVICE, 1)
    assert torch.equal(loaded.cpu(), cpu)
    loaded = _round_trip(cpu.to(f"{DEVICE}:1"), map_location={f"{DEVICE}:1": f"{DEVICE}:0"})
    assert loaded.device == torch.device(DEVICE, 0)
