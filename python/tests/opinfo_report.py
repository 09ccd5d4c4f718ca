"""The OpInfo test's report: every outcome to a JSON file with a summary
line, and with PORTA_OPINFO_UPDATE=1 the expected list rewritten from it
(see test_opinfo.py for the settings). The list gives each OpInfo that
does not pass its outcome and the reason.

Under pytest-xdist each worker runs a share of the OpInfos in a process of
its own: a worker appends each outcome to a part file beside the report as
the test ends (so it is on disk before the controller hears of the test),
and the controller, which runs no test, merges the parts into the one
report when the session ends (conftest.py), so the report and the list
always cover every OpInfo that ran."""
import json
import os
import pathlib

import core_aten
from opinfo_support import DTYPES

ROOT = pathlib.Path(__file__).resolve().parents[2]
MODE = os.environ.get("PORTA_TEST_MODE", "eager")
if MODE not in ("eager", "fused", "compile"):
    raise ValueError(f"PORTA_TEST_MODE must be eager, fused or compile, got {MODE!r}")
DTYPE_NAME = os.environ.get("PORTA_OPINFO_DTYPE", "float32")
if DTYPE_NAME not in DTYPES:
    raise ValueError(f"PORTA_OPINFO_DTYPE must be one of {', '.join(DTYPES)}, got {DTYPE_NAME!r}")
DTYPE = DTYPES[DTYPE_NAME]
# float32's files keep their names; each other dtype has its own list and report
_SUFFIX = "" if DTYPE_NAME == "float32" else f"_{DTYPE_NAME}"
EXPECTED_PATH = pathlib.Path(__file__).with_name(f"opinfo_expected{_SUFFIX}.json")
_REPORT_NAME = f"opinfo_report{_SUFFIX}.json" if MODE == "eager" else \
    f"opinfo_report_{MODE}{_SUFFIX}.json"
REPORT_PATH = pathlib.Path(os.environ.get("PORTA_OPINFO_REPORT",
                                          ROOT / "build" / _REPORT_NAME))
UPDATE = os.environ.get("PORTA_OPINFO_UPDATE") == "1" and MODE == "eager"
# {OpInfo: {"status": ..., "reason": ...}} for every OpInfo that does not pass
EXPECTED_ENTRIES = json.loads(EXPECTED_PATH.read_text()) if EXPECTED_PATH.exists() else {}
EXPECTED = {key: entry["status"] for key, entry in EXPECTED_ENTRIES.items()}
STATUSES = ("pass", "fail", "fallback", "unsupported", "random", "skip")


def _part_paths():
    return sorted(REPORT_PATH.parent.glob(f"{REPORT_PATH.stem}.part-*.jsonl"))


def append_to_part(key, outcome, worker):
    """One outcome of a worker, a line of its part file."""
    REPORT_PATH.parent.mkdir(parents=True, exist_ok=True)
    part = REPORT_PATH.with_name(f"{REPORT_PATH.stem}.part-{worker}.jsonl")
    with part.open("a") as f:
        f.write(json.dumps([key, outcome]) + "\n")


def remove_parts():
    """Parts an earlier run left (with more workers, say) must not be merged."""
    for part in _part_paths():
        part.unlink()


def take_parts():
    """The workers' outcomes merged, the parts removed; None when there were none."""
    parts = _part_paths()
    if not parts:
        return None
    outcomes = {}
    for part in parts:
        outcomes.update(json.loads(line) for line in part.read_text().splitlines())
        part.unlink()
    return outcomes


def _reason(outcome):
    if outcome.get("reason"):
        return outcome["reason"]
    return f"ops run on the CPU: {', '.join(outcome.get('fallbacks', []))}"


def write(outcomes):
    """Writes the report (and the list when updating); returns the summary line."""
    counts = {s: 0 for s in STATUSES}
    for outcome in outcomes.values():
        counts[outcome["status"]] = counts.get(outcome["status"], 0) + 1
    summary = ", ".join(f"{counts[s]} {s}" for s in STATUSES)
    REPORT_PATH.parent.mkdir(parents=True, exist_ok=True)
    core = core_aten.coverage()
    REPORT_PATH.write_text(json.dumps({"summary": {s: n for s, n in counts.items() if n},
                                       "core_aten": core, "opinfos": outcomes},
                                      indent=1, sort_keys=True))
    if UPDATE:
        expected = {k: v for k, v in EXPECTED_ENTRIES.items() if k not in outcomes}
        expected.update({k: {"status": o["status"], "reason": _reason(o)}
                         for k, o in outcomes.items() if o["status"] not in ("pass", "skip")})
        EXPECTED_PATH.write_text(json.dumps(expected, indent=1, sort_keys=True) + "\n")
    return (f"opinfo ({MODE}, {DTYPE_NAME}): {summary}; Core ATen: {core['native']} of "
            f"{core['total']} with porta kernels, "
            f"{len(core['decomposed'])} decomposed by PyTorch on every "
            f"device, {len(core['missing'])} missing (report: {REPORT_PATH})")
