"""torch_porta.select_device and "porta:auto": choices from recorded
measurements, measured once per device and reused from the cache."""
import json
import os

import pytest
import torch

import torch_porta
from torch_porta import _select


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("PORTA_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("PORTA_PRICES", raising=False)
    return tmp_path / "select" / "measurements.json"


def _devices():
    return [torch_porta._C.compare_device_info(i) for i in range(torch_porta.device_count())]


def test_measured_once_then_reused(store):
    chosen = torch_porta.select_device("throughput")
    assert chosen.type == "porta" and 0 <= chosen.index < torch_porta.device_count()
    data = json.loads(store.read_text())
    records = [data[_select._device_key(b, n)][_select.STANDARD_WORKLOAD] for b, n in _devices()]
    assert all(r["samples_per_second"] > 0 and r["latency_p50_ms"] > 0 for r in records)
    best = max(range(len(records)), key=lambda i: records[i]["samples_per_second"])
    assert chosen.index == best
    stamp = store.stat().st_mtime_ns
    assert torch_porta.select_device("latency").index == min(
        range(len(records)), key=lambda i: records[i]["latency_p50_ms"])
    assert store.stat().st_mtime_ns == stamp          # nothing measured again


def _fake_records(store, figures):
    data = {}
    for (backend, name), f in zip(_devices(), figures):
        data[_select._device_key(backend, name)] = {_select.STANDARD_WORKLOAD: dict(
            f, energy_unavailable=None if f.get("joules_per_sample") else "no counter")}
    store.parent.mkdir(parents=True, exist_ok=True)
    store.write_text(json.dumps(data))


def test_each_objective_picks_from_records(store, tmp_path):
    if torch_porta.device_count() < 2:
        pytest.skip("needs two porta devices (the CPU and PoCL)")
    count = torch_porta.device_count()
    # Device 0: fast and power-hungry; device 1: slow, low latency, frugal.
    figures = [{"samples_per_second": 1000.0, "latency_p50_ms": 9.0, "joules_per_sample": 0.5},
               {"samples_per_second": 100.0, "latency_p50_ms": 1.0, "joules_per_sample": 0.1}]
    figures += [{"samples_per_second": 1.0, "latency_p50_ms": 99.0, "joules_per_sample": None}] \
        * (count - 2)
    _fake_records(store, figures)
    assert torch_porta.select_device("throughput") == torch.device("porta", 0)
    assert torch_porta.select_device("latency") == torch.device("porta", 1)
    assert torch_porta.select_device("energy") == torch.device("porta", 1)
    backend0 = _devices()[0][0]
    prices = tmp_path / "prices.json"
    # Device 0 at 20/hour: 5.6 per million samples; the rest at 1/hour: 2.8.
    prices.write_text(json.dumps({"currency": "EUR", "prices": [
        {"match": {"device": "porta:0"}, "per_hour": 20.0}, {"per_hour": 1.0}]}))
    assert torch_porta.select_device("cost", prices=str(prices)) == torch.device("porta", 1)
    prices.write_text(json.dumps({"currency": "EUR", "prices": [
        {"match": {"backend": backend0}, "per_hour": 1.0}]}))
    assert torch_porta.select_device("cost", prices=str(prices)) == torch.device("porta", 0)
    assert torch_porta.resolve_device("porta:auto") == torch.device("porta", 0)
    assert torch_porta.resolve_device("porta:auto:latency") == torch.device("porta", 1)
    assert torch_porta.resolve_device("porta:1") == torch.device("porta", 1)


def test_errors_name_what_is_missing(store):
    with pytest.raises(RuntimeError, match="objective must be one of throughput, latency, cost"):
        torch_porta.select_device("speed")
    with pytest.raises(RuntimeError, match="needs a price file"):
        torch_porta.select_device("cost")
    with pytest.raises(RuntimeError, match="no measurements for workload 'never run'"):
        torch_porta.select_device(workload="never run")
    with pytest.raises(ValueError, match="porta:auto or porta:auto:OBJECTIVE"):
        torch_porta.resolve_device("porta:autox")
    _fake_records(store, [{"samples_per_second": 1.0, "latency_p50_ms": 1.0,
                           "joules_per_sample": None}] * torch_porta.device_count())
    with pytest.raises(RuntimeError, match="no device has an energy reading here .*no counter"):
        torch_porta.select_device("energy")


def test_pytorch_itself_rejects_porta_auto():
    """PyTorch's device-string parser (C++) takes only an index after the
    colon, so "porta:auto" works through torch_porta.resolve_device, not in
    torch.device or Module.to. This test fails if PyTorch starts to accept
    it, so the documentation can change."""
    with pytest.raises(RuntimeError, match="Invalid device string"):
        torch.device("porta:auto")
    with pytest.raises(RuntimeError, match="Invalid device string"):
        torch.nn.Linear(2, 2).to("porta:auto")
    model = torch.nn.Linear(2, 2).to(torch_porta.resolve_device("porta:auto"))
    assert model.weight.device.type == "porta"


def test_comparison_runs_are_recorded(store):
    backend, name = _devices()[0]
    results = json.dumps({"format": "porta-compare", "version": 1, "workload": "train.py --x",
                          "devices": [{"device": "porta:0", "backend": backend, "name": name,
                                       "step_seconds": [0.25, 0.25], "samples_per_step": 32}]})
    _select.record_comparison(torch_porta._C.compare_render(results, None, "json"))
    assert torch_porta.select_device(workload="train.py --x") == torch.device("porta", 0)
    data = json.loads(store.read_text())
    assert data[_select._device_key(backend, name)]["train.py --x"]["samples_per_second"] == 128
