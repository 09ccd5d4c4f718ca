"""Choosing a device from measurements: torch_porta.select_device and the
device string "porta:auto". The choice and the measurement store are
libporta's (src/report/select.c): records in
$PORTA_CACHE_DIR/select/measurements.json (else $XDG_CACHE_HOME/porta, else
~/.cache/porta), keyed by backend, device name and Porta's version, then by
workload; a device without a record for the standard workload is measured
once and the record reused; `python -m torch_porta.compare` stores its runs
under the script's name."""
import os

import torch

from . import _C

OBJECTIVES = ("throughput", "latency", "cost", "energy")
STANDARD_WORKLOAD = _C.select_standard_workload()


def _device_key(backend, name):
    return f"{backend}|{name}|porta {_C.porta_version}"


def record_comparison(results_json):
    """Stores each device's figures from a comparison (docs/compare.md JSON)
    under its workload."""
    _C.select_record(results_json)


def select_device(objective="throughput", *, workload=None, prices=None, measure=True):
    """The porta device best for `objective` by recorded measurements:
    "throughput" (most samples/s), "latency" (lowest median step time),
    "cost" (least cost per million samples; needs a price file: `prices`
    or $PORTA_PRICES) or "energy" (fewest joules per sample; only devices
    with a real energy reading take part). `workload` picks the records of
    a `python -m torch_porta.compare` run (its script name and arguments);
    by default the standard workload, measured once per device and stored."""
    prices = prices or os.environ.get("PORTA_PRICES") or None
    return torch.device("porta", _C.select_device(objective, workload, prices, measure))


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
