"""torch_porta.profile writes a Chrome trace event file: checked here against
the format (fields and types per phase, begin/end pairs matched and nested
per thread row, complete events nested likewise, a named track per device)
for a small model's forward and backward, eager and fused, across two
devices when an OpenCL device is there, and the checker itself is shown to
reject broken traces."""
import json
import os
import stat
import warnings

import pytest
import torch

import torch_porta

# The traces are clock readings of every kernel and copy, checked for
# nesting: taken where no neighbouring test competes for the cores.
pytestmark = pytest.mark.serial

PHASES = {"X", "B", "E", "i", "I", "M", "C"}
CATEGORIES = {"kernel", "compile", "copy", "sync", "fallback"}


def check_chrome_trace(doc):
    """The ways `doc` (a parsed trace) breaks the trace event format: a
    list of messages, empty when it conforms."""
    problems = []
    events = doc.get("traceEvents") if isinstance(doc, dict) else doc
    if not isinstance(events, list):
        return ["no traceEvents array"]
    named = {}
    used = set()
    spans = {}  # (pid, tid) -> [(ts, end, name)]
    open_begins = {}  # (pid, tid) -> stack of (ts, name)
    for i, e in enumerate(events):
        where = f"event {i}"
        if not isinstance(e, dict):
            problems.append(f"{where}: not an object")
            continue
        ph = e.get("ph")
        if ph not in PHASES:
            problems.append(f"{where}: ph {ph!r} is not one of {sorted(PHASES)}")
            continue
        if not isinstance(e.get("name"), str):
            problems.append(f"{where}: name is not a string")
        for key in ("pid", "tid"):
            if type(e.get(key)) is not int:
                problems.append(f"{where}: {key} is not an integer")
        if problems and problems[-1].startswith(where):
            continue
        track = (e["pid"], e["tid"])
        if ph == "M":
            if e["name"] == "process_name":
                label = e.get("args", {}).get("name")
                if not isinstance(label, str) or not label:
                    problems.append(f"{where}: process_name without args.name")
                else:
                    named[e["pid"]] = label
            continue
        ts = e.get("ts")
        if type(ts) not in (int, float) or ts < 0:
            problems.append(f"{where}: ts is not a number >= 0")
            continue
        used.add(e["pid"])
        if ph == "X":
            dur = e.get("dur")
            if type(dur) not in (int, float) or dur < 0:
                problems.append(f"{where}: an X event needs dur >= 0")
                continue
            spans.setdefault(track, []).append((ts, ts + dur, e["name"]))
        elif ph == "B":
            open_begins.setdefault(track, []).append((ts, e["name"]))
        elif ph == "E":
            stack = open_begins.get(track)
            if not stack:
                problems.append(f"{where}: E without a B on pid {track[0]} tid {track[1]}")
                continue
            begin, name = stack.pop()
            if ts < begin:
                problems.append(f"{where}: E before its B")
            if e["name"] and e["name"] != name:
                problems.append(f"{where}: E {e['name']!r} closes B {name!r}: not nested")
            spans.setdefault(track, []).append((begin, ts, name))
    for track, stack in open_begins.items():
        for _, name in stack:
            problems.append(f"B {name!r} on pid {track[0]} tid {track[1]} never ends")
    # One row's events nest like calls: each one starts after and ends before
    # the one around it, or starts after it ended.
    for track, row in spans.items():
        row.sort(key=lambda s: (s[0], -s[1]))
        stack = []
        for ts, end, name in row:
            while stack and stack[-1][1] <= ts:
                stack.pop()
            if stack and end > stack[-1][1] + 1e-6:
                problems.append(f"pid {track[0]} tid {track[1]}: {name!r} overlaps "
                                f"{stack[-1][2]!r} without nesting in it")
            stack.append((ts, end, name))
    for pid in sorted(used - set(named)):
        problems.append(f"pid {pid} has events but no process_name")
    return problems


def load(path):
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    problems = check_chrome_trace(doc)
    assert not problems, "the trace does not conform:\n" + "\n".join(problems[:20])
    return doc


def events_of(doc, cat=None, pid=None):
    return [e for e in doc["traceEvents"] if e["ph"] != "M"
            and (cat is None or e["cat"] == cat) and (pid is None or e["pid"] == pid)]


def track_names(doc):
    return {e["pid"]: e["args"]["name"] for e in doc["traceEvents"]
            if e["ph"] == "M" and e["name"] == "process_name"}


def pid_of(index):
    """The profiler puts porta:N on pid N + 1 (the host on pid 0)."""
    return index + 1


def train_step(model, x, y):
    model.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    return loss.item()


def small_model(device):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(12, 16), torch.nn.GELU(),
                                torch.nn.LayerNorm(16), torch.nn.Linear(16, 4)).to(device)
    x = torch.randn(8, 12).to(device)
    y = torch.arange(8).remainder(4).to(device)
    return model, x, y


# ---- the checker can fail ----

GOOD = {"traceEvents": [
    {"name": "process_name", "ph": "M", "pid": 1, "tid": 0, "args": {"name": "porta:0 cpu"}},
    {"name": "a", "cat": "kernel", "ph": "X", "ts": 1.0, "dur": 5.0, "pid": 1, "tid": 1},
    {"name": "b", "cat": "kernel", "ph": "X", "ts": 2.0, "dur": 1.0, "pid": 1, "tid": 1},
    {"name": "c", "ph": "B", "ts": 10, "pid": 1, "tid": 2},
    {"name": "d", "ph": "B", "ts": 11, "pid": 1, "tid": 2},
    {"name": "d", "ph": "E", "ts": 12, "pid": 1, "tid": 2},
    {"name": "c", "ph": "E", "ts": 13, "pid": 1, "tid": 2},
]}


def broken(change):
    doc = json.loads(json.dumps(GOOD))
    change(doc["traceEvents"])
    return doc


@pytest.mark.parametrize("change, message", [
    (lambda ev: ev[1].pop("name"), "name is not a string"),
    (lambda ev: ev[1].update(ph="Z"), "ph 'Z'"),
    (lambda ev: ev[1].update(ts="1"), "ts is not a number"),
    (lambda ev: ev[1].update(pid=1.5), "pid is not an integer"),
    (lambda ev: ev[1].update(tid="main"), "tid is not an integer"),
    (lambda ev: ev[1].pop("dur"), "dur >= 0"),
    (lambda ev: ev[2].update(dur=-1.0), "dur >= 0"),
    (lambda ev: ev[2].update(dur=10.0), "without nesting"),
    (lambda ev: ev.pop(6), "never ends"),
    (lambda ev: ev.pop(3), "E without a B"),
    (lambda ev: ev.__setitem__(slice(5, 7), [ev[6], ev[5]]), "not nested"),
    (lambda ev: ev.pop(0), "no process_name"),
    (lambda ev: ev[0]["args"].pop("name"), "process_name without args.name"),
])
def test_checker_rejects_a_broken_trace(change, message):
    assert check_chrome_trace(GOOD) == []
    problems = check_chrome_trace(broken(change))
    assert any(message in p for p in problems), problems


def test_checker_rejects_a_file_without_events():
    assert check_chrome_trace({"events": []}) == ["no traceEvents array"]


# ---- what the profiler writes ----

def test_eager_forward_and_backward(tmp_path):
    model, x, y = small_model("porta")
    path = tmp_path / "trace.json"
    with torch_porta.profile(path):
        train_step(model, x, y)
        torch_porta.synchronize()
    doc = load(path)
    kernels = events_of(doc, "kernel", pid_of(0))
    assert len(kernels) >= 10, f"{len(kernels)} kernel events for a training step"
    names = {e["name"] for e in kernels}
    assert any("matmul" in n for n in names), sorted(names)
    assert events_of(doc, "sync", pid_of(0)), "no synchronize event"
    assert track_names(doc)[pid_of(0)].startswith("porta:0 ")
    # backward's kernels are issued from autograd's device thread: a row of
    # its own beside the forward's
    assert len({e["tid"] for e in kernels}) >= 2


def test_fused_mode_records_fused_kernels_and_flushes(tmp_path):
    model, x, y = small_model("porta")
    path = tmp_path / "fused.json"
    previous = torch_porta.get_eager_mode()
    torch_porta.set_eager_mode("fused")
    try:
        with torch_porta.profile(path):
            for _ in range(2):
                train_step(model, x, y)
    finally:
        torch_porta.set_eager_mode(previous)
    doc = load(path)
    fused = [e for e in events_of(doc, "kernel", pid_of(0))
             if e["args"].get("detail") in ("fused kernel", "matmul with its epilogue")]
    assert fused, "no fused kernel in the trace"
    flushes = [e for e in events_of(doc, "sync") if e["name"] == "flush"]
    assert flushes and all(e["args"]["detail"].endswith("primitives") for e in flushes)
    # every fused kernel ran inside a flush on its row
    for k in fused:
        assert any(f["pid"] == k["pid"] and f["tid"] == k["tid"] and f["ts"] <= k["ts"]
                   and k["ts"] + k["dur"] <= f["ts"] + f["dur"] + 1e-3 for f in flushes), k


def test_compiles_are_events(tmp_path, monkeypatch):
    monkeypatch.setenv("PORTA_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "compile.json"
    previous = torch_porta.get_eager_mode()
    torch_porta.set_eager_mode("fused")
    try:
        with torch_porta.profile(path):
            # a kernel this process has not built: an unusual chain of ops
            x = torch.linspace(0, 1, 257, device="porta").reshape(1, 257)
            ((x * 3.25).atan().expm1() - 0.125).abs().sqrt().cpu()
    finally:
        torch_porta.set_eager_mode(previous)
    doc = load(path)
    compiles = events_of(doc, "compile", pid_of(0))
    fused = [e for e in compiles if "fused elementwise" in e["name"]]
    assert fused, compiles
    assert fused[0]["args"]["detail"] in ("compiled", "loaded from the disk cache")
    # an OpenCL or CUDA device's own build happens inside the preparation of
    # a fused kernel or inside an eager kernel
    outer = fused + events_of(doc, "kernel", pid_of(0))
    for inner in compiles:
        if inner["name"] in ("OpenCL program build", "NVRTC compile"):
            assert any(o["tid"] == inner["tid"] and o["ts"] <= inner["ts"] and
                       inner["ts"] + inner["dur"] <= o["ts"] + o["dur"] + 1e-3
                       for o in outer), inner


def test_start_stop_and_export_like_torch_profiler(tmp_path):
    prof = torch_porta.profile()
    prof.start()
    (torch.ones(4, 4, device="porta") @ torch.ones(4, 4, device="porta")).cpu()
    prof.stop()
    path = tmp_path / "exported.json"
    prof.export_chrome_trace(str(path))
    doc = load(path)
    assert any("matmul" in e["name"] for e in events_of(doc, "kernel"))
    with pytest.raises(RuntimeError, match="stop\\(\\) without start\\(\\)"):
        prof.stop()
    with torch_porta.profile(tmp_path / "a.json"):
        with pytest.raises(RuntimeError, match="running"):
            torch_porta.profile(tmp_path / "b.json").start()
    assert not (tmp_path / "b.json").exists()


def test_export_follows_links_and_refuses_fifos(tmp_path):
    # The exported trace is written as libporta writes user-named files: a
    # link's target replaced (the link kept), a FIFO refused, not blocked on.
    prof = torch_porta.profile()
    prof.start()
    (torch.ones(3, device="porta") + 1).cpu()
    prof.stop()
    target = tmp_path / "target.json"
    target.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    prof.export_chrome_trace(str(link))
    assert link.is_symlink() and load(target)["traceEvents"]
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    with pytest.raises(RuntimeError, match="expected a regular file"):
        prof.export_chrome_trace(str(fifo))
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_unwritable_path_raises_and_stops(tmp_path):
    prof = torch_porta.profile(tmp_path / "missing-dir" / "trace.json")
    prof.start()
    torch.ones(3, device="porta").sum().item()
    with pytest.raises(RuntimeError, match="missing-dir"):
        prof.stop()
    with torch_porta.profile(tmp_path / "ok.json"):  # stopped: a new one starts
        pass
    load(tmp_path / "ok.json")


# integer-only ops without a porta kernel
FALLBACK_CANDIDATES = [("lcm", lambda x: torch.lcm(x, x)), ("gcd", lambda x: torch.gcd(x, x))]


def test_ops_run_by_pytorchs_cpu_are_host_events(tmp_path):
    x = torch.randint(1, 9, (16,), device="porta")
    path = tmp_path / "fallback.json"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with torch_porta.profile(path):
            for _, fn in FALLBACK_CANDIDATES:
                fn(x).cpu()
    doc = load(path)
    fallbacks = events_of(doc, "fallback", pid=0)
    ran = {e["name"] for e in fallbacks}
    assert ran, ("none of the candidate ops runs through PyTorch's CPU any more: "
                 "pick ops that still do")
    assert all(n.startswith("aten::") for n in ran)
    assert track_names(doc)[0] == "host"
    # the fallback's copies to and from the device are inside it
    assert events_of(doc, "kernel", pid_of(0)) or events_of(doc, "copy", pid_of(0))


@pytest.mark.skipif(torch.porta.device_count() < 2,
                    reason="needs two porta devices (e.g. PoCL: pocl-opencl-icd)")
def test_two_devices_each_have_a_named_track(tmp_path):
    model, x, y = small_model("porta:0")
    path = tmp_path / "two.json"
    with torch_porta.profile(path):
        train_step(model, x, y)  # backward runs on porta:0 only (see test_devices.py)
        with torch.no_grad():
            other = model.to("porta:1")
            out = other(x.to("porta:1"))
            out.to("porta:0").sum().item()
        torch_porta.synchronize(1)
    doc = load(path)
    names = track_names(doc)
    for index in (0, 1):
        assert names[pid_of(index)].startswith(f"porta:{index} "), names
        mine = events_of(doc, pid=pid_of(index))
        assert any(e["cat"] in ("kernel", "copy", "sync") for e in mine), f"nothing on porta:{index}"
    copies = events_of(doc, "copy")
    assert any(e["args"].get("detail") == "porta:0 -> porta:1" for e in copies)
    assert any(e["args"].get("detail") == "porta:1 -> porta:0" for e in copies)
    assert all(e["args"]["bytes"] > 0 for e in copies)
    assert events_of(doc, "kernel", pid_of(1)), "no kernel on porta:1"
