"""Choosing a device from measurements: torch_porta.select_device and the
device string "porta:auto".

Measurements are kept in $PORTA_CACHE_DIR/select/measurements.json (the
kernel cache's directory: else $XDG_CACHE_HOME/porta, else ~/.cache/porta),
keyed by device (backend, name and Porta's version, since a new Porta or a
new driver build changes speed) and by workload. A device without a record
for the standard workload is measured once, in this process, and the result
is stored; `python -m torch_porta.compare` stores its runs too, under the
script's name, so select_device(workload=...) can choose from them.
"""
import json
import os
import tempfile
import time

import torch

OBJECTIVES = ("throughput", "latency", "cost", "energy")
STANDARD_WORKLOAD = "standard: MLP 256-512-10 forward, batch 64"


def _store_path():
    root = os.environ.get("PORTA_CACHE_DIR")
    if not root:
        xdg = os.environ.get("XDG_CACHE_HOME")
        root = os.path.join(xdg, "porta") if xdg else os.path.expanduser("~/.cache/porta")
    return os.path.join(root, "select", "measurements.json")


def _load():
    try:
        with open(_store_path()) as f:
            data = json.load(f)
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _save(data):
    path = _store_path()
    os.makedirs(os.path.dirname(path), exist_ok=True)
    # Whole file or none, as the kernel cache writes: processes share it.
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".measurements.")
    with os.fdopen(fd, "w") as f:
        json.dump(data, f, indent=1, sort_keys=True)
    os.replace(tmp, path)


def _device_key(backend, name):
    from . import _C
    return f"{backend}|{name}|porta {_C.porta_version}"


def record_comparison(results_json):
    """Stores each device's figures from a comparison (docs/compare.md JSON)
    under its workload."""
    report = json.loads(results_json)
    data = _load()
    for d in report["devices"]:
        if d.get("error") or not d.get("samples_per_second"):
            continue
        entry = data.setdefault(_device_key(d["backend"], d.get("name", "")), {})
        entry[report["workload"]] = _figures(d)
    _save(data)


def _figures(d):
    energy = d.get("energy") or {}
    per_step = energy.get("joules_per_step")
    return {"samples_per_second": d["samples_per_second"],
            "latency_p50_ms": d["latency_ms"]["p50"],
            "joules_per_sample": per_step / d["samples_per_step"] if per_step is not None else None,
            "energy_unavailable": energy.get("unavailable"),
            "measured_at": time.time()}


def _measure_standard(index, steps=10, warmup=3):
    """The standard workload on porta:index, as comparison JSON for one device."""
    from . import _C, synchronize
    device = torch.device("porta", index)
    generator = torch.Generator().manual_seed(0)
    weights = [torch.randn(256, 512, generator=generator).to(device),
               torch.randn(512, 10, generator=generator).to(device)]
    x = torch.randn(64, 256, generator=generator).to(device)
    seconds, start_energy = [], None
    for step in range(warmup + steps):
        if step == warmup:
            start_energy = _C.energy_sample(index)
        begin = time.perf_counter()
        (x @ weights[0]).relu() @ weights[1]
        synchronize(index)
        if step >= warmup:
            seconds.append(time.perf_counter() - begin)
    end_energy = _C.energy_sample(index)
    backend, name = _C.compare_device_info(index)
    if end_energy["source"] is None:
        energy = {"joules": None, "unavailable": end_energy["reason"]}
    else:
        energy = {"joules": _C.energy_joules(start_energy, end_energy),
                  "source": end_energy["source"], "note": end_energy["note"]}
    return {"device": f"porta:{index}", "backend": backend, "name": name,
            "step_seconds": seconds, "samples_per_step": 64, "energy": energy}


def _records(workload, measure):
    """Figures per device index for `workload`, measuring what is missing
    when it is the standard workload."""
    from . import _C, device_count
    data, changed, found = _load(), False, {}
    for index in range(device_count()):
        backend, name = _C.compare_device_info(index)
        key = _device_key(backend, name)
        figures = data.get(key, {}).get(workload)
        if figures is None and measure and workload == STANDARD_WORKLOAD:
            report = json.dumps({"format": "porta-compare", "version": 1, "workload": workload,
                                 "devices": [_measure_standard(index)]})
            derived = json.loads(_C.compare_render(report, None, "json"))["devices"][0]
            figures = _figures(derived)
            data.setdefault(key, {})[workload] = figures
            changed = True
        if figures is not None:
            found[index] = dict(figures, backend=backend, name=name)
    if changed:
        _save(data)
    return found


def _costs(found, prices):
    """Cost per million samples per device index under the price file."""
    from . import _C
    devices = [{"device": f"porta:{i}", "backend": f["backend"], "name": f["name"],
                "step_seconds": [1.0 / f["samples_per_second"]], "samples_per_step": 1}
               for i, f in found.items()]
    report = json.dumps({"format": "porta-compare", "version": 1, "workload": "",
                         "devices": devices})
    with open(prices) as f:
        priced = json.loads(_C.compare_render(report, f.read(), "json"))
    return {int(d["device"].split(":")[1]): d["cost"]["per_million_samples"]
            for d in priced["devices"]}


def select_device(objective="throughput", *, workload=None, prices=None, measure=True):
    """The porta device best for `objective` by recorded measurements:
    "throughput" (most samples/s), "latency" (lowest median step time),
    "cost" (least cost per million samples; needs a price file: `prices`
    or $PORTA_PRICES) or "energy" (fewest joules per sample; only devices
    with a real energy reading take part). `workload` picks the records of
    a `python -m torch_porta.compare` run (its script name and arguments);
    by default the standard workload, measured once per device and stored."""
    if objective not in OBJECTIVES:
        raise ValueError(f"select_device: objective must be one of {', '.join(OBJECTIVES)}, "
                         f"not {objective!r}")
    found = _records(workload or STANDARD_WORKLOAD, measure)
    if not found:
        raise RuntimeError(f"select_device: no measurements for workload {workload!r}; run "
                           "python -m torch_porta.compare on it first")
    if objective == "throughput":
        score = {i: -f["samples_per_second"] for i, f in found.items()}
    elif objective == "latency":
        score = {i: f["latency_p50_ms"] for i, f in found.items()}
    elif objective == "energy":
        score = {i: f["joules_per_sample"] for i, f in found.items()
                 if f["joules_per_sample"] is not None}
        if not score:
            reasons = "; ".join(f"porta:{i}: {f['energy_unavailable']}" for i, f in found.items())
            raise RuntimeError(f"select_device: no device has an energy reading here ({reasons})")
    else:
        prices = prices or os.environ.get("PORTA_PRICES")
        if not prices:
            raise ValueError("select_device: objective 'cost' needs a price file "
                             "(prices=... or $PORTA_PRICES; see docs/compare.md)")
        score = {i: c for i, c in _costs(found, prices).items() if c is not None}
        if not score:
            raise RuntimeError(f"select_device: no device has a price in {prices}")
    best = min(score, key=lambda i: (score[i], i))
    return torch.device("porta", best)


def resolve_device(spec, objective=None):
    """torch.device(spec), where "porta:auto" (PyTorch's own parser rejects
    it) is the device select_device(objective) picks; "porta:auto:OBJECTIVE"
    names the objective in the string."""
    if isinstance(spec, str) and spec.startswith("porta:auto"):
        rest = spec[len("porta:auto"):]
        if rest and not rest.startswith(":"):
            raise ValueError("resolve_device: expected porta:auto or porta:auto:OBJECTIVE, "
                             f"got {spec!r}")
        return select_device(rest[1:] or objective or "throughput")
    return torch.device(spec)
