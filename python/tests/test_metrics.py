"""torch_porta.metrics(): native ops, fallbacks, bytes moved, sync points."""
import warnings

import pytest
import torch

import torch_porta


@pytest.fixture(autouse=True)
def fresh():
    torch_porta.reset_metrics()


def test_native_ops_are_counted_by_overload_name():
    a = torch.ones(4, device="porta")
    torch_porta.reset_metrics()
    a + a
    a + a
    a * 2
    ops = torch_porta.metrics()["ops"]
    assert ops["add.Tensor"] == 2
    assert ops["mul.Tensor"] == 1
    assert torch_porta.metrics()["fallbacks"] == {}


def test_fallbacks_are_counted_and_their_copies_are_not_ops():
    a = torch.ones(4, dtype=torch.int32, device="porta")  # lcm: no porta kernel
    torch_porta.reset_metrics()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.lcm(a, a)
    m = torch_porta.metrics()
    assert m["fallbacks"] == {"lcm.out": 1}
    assert "copy_" not in m["ops"]
    assert m["syncs"] == {"fallback": 1}
    # a is copied to the CPU once though passed twice
    assert m["bytes_to_host"] == 16 and m["bytes_to_device"] == 16


def test_bytes_moved_each_way():
    x = torch.ones(10, dtype=torch.float64)
    porta = x.to("porta")
    porta.cpu()
    porta[:4].to(torch.float32).cpu()
    m = torch_porta.metrics()
    assert m["bytes_to_device"] == 80
    assert m["bytes_to_host"] == 80 + 16


def test_copies_within_porta_move_no_bytes():
    a = torch.ones(8, device="porta")
    torch_porta.reset_metrics()
    torch.empty(8, device="porta").copy_(a)
    m = torch_porta.metrics()
    assert m["bytes_to_device"] == m["bytes_to_host"] == 0


def test_sync_points(capsys):
    a = torch.ones(3, device="porta")
    a.sum().item()
    a.cpu()
    print(a)
    torch_porta.synchronize()
    assert torch_porta.metrics()["syncs"] == {"item": 1, "to_host": 2, "synchronize": 1}


def test_reset():
    torch.ones(3, device="porta").cpu()
    torch_porta.reset_metrics()
    metrics = torch_porta.metrics()
    assert {key: metrics.pop(key)
            for key in ("ops", "fallbacks", "syncs", "compiles", "placements")} == \
        {"ops": {}, "fallbacks": {}, "syncs": {}, "compiles": {}, "placements": []}
    assert all(value == 0 for value in metrics.values()), metrics  # byte and compiler counters
