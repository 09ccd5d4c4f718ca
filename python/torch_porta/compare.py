"""Runs one training script on each porta device and compares them:
throughput, latency per step, peak memory, energy per step where the
platform has a real counter, and cost from a price file.

    python -m torch_porta.compare [--devices all|LIST] [--prices FILE]
        [--json FILE] [--html FILE] [--steps N] [--warmup N]
        [--samples-per-step N] script.py [script args]

Compare's options come before the script; everything after it is the
script's own. The script runs unchanged, once per device, in a process of
its own whose PORTA_VISIBLE_DEVICES makes that device "porta" (porta:0).
Steps are the optimizer's: a global step hook times the interval between
consecutive optimizer steps after the warm-up steps (the device is
synchronized first, so queued work is counted), and the process ends after
the measured steps. Samples per step come from --samples-per-step, else
from the leading dimension of the first tensor the first module called in
each step receives. Energy comes from libporta's readers (RAPL, NVML);
where there is none, the report says why. The report itself is libporta's
(docs/compare.md): the same JSON, table and HTML as `porta compare`.
"""
import argparse
import json
import os
import subprocess
import sys
import time

RESULT_ENV = "PORTA_COMPARE_RESULT"


# ---- the child: one device, the script unchanged ----------------------------

class _StepMeter:
    def __init__(self, result_path, warmup, steps, samples_per_step):
        self.result_path, self.warmup, self.steps = result_path, warmup, steps
        self.fixed_samples = samples_per_step
        self.batch_sizes = []        # per measured step, from the model's input
        self.step_seconds = []
        self.step_count = 0
        self.last = None
        self.pending_batch = None
        self.energy_start = None
        self.written = False

    def forward_pre_hook(self, module, args):
        if self.pending_batch is None:
            for arg in args:
                if hasattr(arg, "shape") and len(arg.shape) > 0:
                    self.pending_batch = int(arg.shape[0])
                    break

    def step_hook(self, optimizer, args, kwargs):
        import torch_porta
        torch_porta.synchronize()
        now = time.perf_counter()
        self.step_count += 1
        if self.step_count > self.warmup:
            self.step_seconds.append(now - self.last)
            self.batch_sizes.append(self.pending_batch)
        if self.step_count == self.warmup:
            torch_porta.reset_peak_memory_stats()
            self.energy_start = torch_porta._C.energy_sample(0)
        self.last = now
        self.pending_batch = None
        if len(self.step_seconds) >= self.steps:
            self.write()
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(0)  # the rest of the script is not measured

    def write(self, note=None):
        if self.written:
            return
        self.written = True
        import torch_porta
        backend, name = torch_porta._C.compare_device_info(0)
        samples = self.fixed_samples
        if samples is None:
            known = [b for b in self.batch_sizes if b]
            samples = sum(known) / len(known) if known else 1.0
        record = {"backend": backend, "name": name, "step_seconds": self.step_seconds,
                  "samples_per_step": samples,
                  "peak_memory_bytes": int(torch_porta.max_memory_allocated()),
                  "energy": {"joules": None, "unavailable": "no step was measured"}}
        end = torch_porta._C.energy_sample(0)
        if end["source"] is None:
            record["energy"] = {"joules": None, "unavailable": end["reason"]}
        elif self.energy_start is not None:
            joules = torch_porta._C.energy_joules(self.energy_start, end)
            record["energy"] = {"joules": joules, "source": end["source"], "note": end["note"]}
        if not self.step_seconds:
            record["error"] = note or (
                f"the script made {self.step_count} optimizer steps, fewer than the "
                f"{self.warmup} warm-up steps plus one measured step")
        with open(self.result_path, "w") as f:
            json.dump(record, f)


def _child(options, script, script_args):
    import runpy

    from torch.nn.modules.module import register_module_forward_pre_hook
    from torch.optim.optimizer import register_optimizer_step_post_hook

    import torch_porta  # noqa: F401  (the device must exist before the script runs)

    meter = _StepMeter(options.child, options.warmup, options.steps, options.samples_per_step)
    register_optimizer_step_post_hook(meter.step_hook)
    register_module_forward_pre_hook(meter.forward_pre_hook)
    sys.argv = [script] + script_args
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as stop:
        if stop.code not in (None, 0):
            meter.write(f"the script exited with {stop.code} before enough steps")
            raise
    meter.write()


# ---- the parent: one child per device, then the report ----------------------

def _device_entries(spec):
    """PORTA_VISIBLE_DEVICES values, one per device to compare, with labels."""
    if spec == "all":
        visible = os.environ.get("PORTA_VISIBLE_DEVICES")
        if visible:
            entries = [e.strip() for e in visible.split(",") if e.strip()]
        else:
            import torch_porta
            entries = [str(i) for i in range(torch_porta.device_count())]
    else:
        entries = [e.strip() for e in spec.split(",") if e.strip()]
    if not entries:
        raise SystemExit(f"compare: --devices {spec!r} names no device")
    return [(e, f"porta:{e}" if e.isdigit() else e) for e in entries]


def _progress_wanted():
    """A line per device on a terminal, none when stderr is redirected;
    PORTA_PROGRESS=0/1 decides as it does for libporta's progress line."""
    setting = os.environ.get("PORTA_PROGRESS")
    return setting == "1" if setting in ("0", "1") else sys.stderr.isatty()


def run_comparison(script, script_args=(), devices="all", steps=20, warmup=3,
                   samples_per_step=None, timeout=600, workdir=None):
    """Runs `script` once per device and returns the comparison's JSON text
    (docs/compare.md) without prices; compare_report renders it."""
    import tempfile
    records = []
    entries = _device_entries(devices)
    for number, (entry, label) in enumerate(entries, 1):
        with tempfile.TemporaryDirectory(prefix="porta-compare-") as tmp:
            result = os.path.join(tmp, "result.json")
            command = [sys.executable, "-m", "torch_porta.compare", "--child", result,
                       "--steps", str(steps), "--warmup", str(warmup)]
            if samples_per_step is not None:
                command += ["--samples-per-step", str(samples_per_step)]
            command += [script] + list(script_args)
            env = dict(os.environ, PORTA_VISIBLE_DEVICES=entry)
            if _progress_wanted():
                print(f"compare: {label} ({number}/{len(entries)}) ...", file=sys.stderr,
                      flush=True)
            try:
                done = subprocess.run(command, env=env, cwd=workdir, capture_output=True,
                                      text=True, timeout=timeout)
                failure = None if done.returncode == 0 else (
                    f"exit status {done.returncode}: "
                    f"{(done.stderr.strip().splitlines() or [''])[-1][:200]}")
            except subprocess.TimeoutExpired:
                failure = f"no result within {timeout} s"
            record = {}
            if os.path.exists(result):
                with open(result) as f:
                    record = json.load(f)
            if failure and not record.get("error"):
                record["error"] = failure
            record.setdefault("backend", "unknown")
            record["device"] = label
            records.append(record)
    workload = " ".join([os.path.basename(script)] + list(script_args))
    return json.dumps({"format": "porta-compare", "version": 1, "workload": workload,
                       "devices": records})


def compare_report(results_json, kind="table", prices=None):
    """The comparison as "json", "table" or "html", priced by the price file
    at `prices` (docs/compare.md) when given."""
    from . import _C
    prices_text = None
    if prices is not None:
        with open(prices) as f:
            prices_text = f.read()
    return _C.compare_render(results_json, prices_text, kind)


def _parser():
    parser = argparse.ArgumentParser(
        prog="python -m torch_porta.compare",
        description="Run a training script on each porta device and compare them.")
    parser.add_argument("--devices", default="all",
                        help="all, or a list of PORTA_VISIBLE_DEVICES entries: 0,1 or cpu,opencl")
    parser.add_argument("--prices", help="price file (docs/compare.md)")
    parser.add_argument("--json", help="write the comparison as JSON here")
    parser.add_argument("--html", help="write the HTML report here")
    parser.add_argument("--steps", type=int, default=20, help="measured optimizer steps")
    parser.add_argument("--warmup", type=int, default=3,
                        help="optimizer steps not measured (at least 1)")
    parser.add_argument("--samples-per-step", type=float,
                        help="samples per step (default: the batch the model sees)")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per device")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("script")
    parser.add_argument("script_args", nargs=argparse.REMAINDER)
    return parser


def main(argv=None):
    options = _parser().parse_args(argv)
    # A step's time is the interval since the previous step: the first
    # step has none, so at least one step is warm-up.
    if options.steps < 1 or options.warmup < 1:
        raise SystemExit("compare: --steps and --warmup must be at least 1")
    if options.child:
        return _child(options, options.script, options.script_args)
    results = run_comparison(options.script, options.script_args, options.devices,
                             options.steps, options.warmup, options.samples_per_step,
                             options.timeout)
    priced = compare_report(results, "json", options.prices)
    from . import _C, _select
    _select.record_comparison(priced)
    print(compare_report(priced, "table"))
    if options.json:
        _C.write_file(options.json, priced)
    if options.html:
        _C.write_file(options.html, compare_report(priced, "html"))
    return 0 if all(not d.get("error") for d in json.loads(priced)["devices"]) else 1


if __name__ == "__main__":
    sys.exit(main())
