"""Soak test: training and `porta run` for minutes with random faults injected
(PORTA_FAULTS, docs/faults.md), checking that every failure is a clean error,
that the next step works, and that memory and open files stay flat.

Round after round, until the time is up:

  1. This process trains examples/train_digits_cnn.py's CNN on porta:0 for a
     few steps, in plain and in fused eager mode by turns, with each device
     allocation, kernel build, driver call and file write failing at --rate.
     A failed step must raise an error naming the fault; the model then
     restarts from its last good weights. Then, with no faults, one step
     must succeed.
  2. The AddressSanitizer build's `porta` runs the CNN (exported) on each
     device with faults at --cli-rate: it must exit 0 with the right output,
     or 1 with the fault's error and no output file; any sanitizer report
     (a leak included) fails the soak. Every few rounds its kernel cache
     starts empty, so kernels are built (and their builds fail) again.
  3. Every --demo-every rounds the AddressSanitizer build's C demo
     (train_digits, an MLP trained with libporta's C API) runs with faults
     at --demo-rate likewise.

This process's resident memory (VmRSS), the bytes libporta holds and the
open file descriptors (/proc/self/fd) are sampled after each round, the
children's peak memory after each run; the figures are printed at the end.
The soak fails when a failure was not clean, when libporta's bytes or the
descriptors grew, or when the memory of the last rounds exceeds that of
the first rounds (after warm-up) by more than --rss-slack MiB. This process
is not instrumented (its extension is the release build): its memory,
libporta's bytes and its descriptors are what is checked there. In fused
mode each failure cuts a trace short, and the rest of the step is a new
trace whose schedule and kernels are built and kept (the schedule cache is
bounded; a loaded kernel stays): the printed counts show how many.

    make asan && .venv/bin/python bench/soak.py [--minutes 10]

Not part of `make test` (it runs for minutes)."""
import argparse
import copy
import importlib.util
import os
import pathlib
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import torch
import torch.nn.functional as F

import torch_porta

ROOT = pathlib.Path(__file__).resolve().parents[1]
CLEAN = re.compile(r"fault injected by the rule|No space left on device")
KINDS = ("alloc", "build", "driver", "write")


def load_example():
    spec = importlib.util.spec_from_file_location(
        "train_digits_cnn", ROOT / "examples" / "train_digits_cnn.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def rules(rate, seed):
    return ",".join(f"{kind}:p{rate:g}" for kind in KINDS) + f",seed:{seed}"


def rss_kib():
    with open("/proc/self/status") as f:
        return int(re.search(r"^VmRSS:\s+(\d+) kB", f.read(), re.M).group(1))


def open_fds():
    return len(os.listdir("/proc/self/fd"))


def peak_kib(pid):
    """The process's peak resident memory so far (VmHWM: since its exec, unlike
    the rusage of a child forked from this large process), or None."""
    try:
        with open(f"/proc/{pid}/status") as f:
            return int(re.search(r"^VmHWM:\s+(\d+) kB", f.read(), re.M).group(1))
    except (OSError, AttributeError):
        return None


def run_child(command, env, timeout):
    """(exit status, output, peak RSS in KiB, read while it ran) of a child."""
    with tempfile.TemporaryFile() as out:
        child = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env)
        deadline, peak = time.monotonic() + timeout, 0
        while child.poll() is None:
            peak = max(peak, peak_kib(child.pid) or 0)
            if time.monotonic() > deadline:
                child.kill()
                child.wait()
                break
            time.sleep(0.02)
        out.seek(0)
        return child.returncode, out.read().decode(errors="replace"), peak


class Soak:
    def __init__(self, args):
        self.args = args
        self.failures = []
        self.counts = {"steps": 0, "failed steps": 0, "cli runs": 0, "cli faults": 0,
                       "demo runs": 0, "demo faults": 0}
        self.rss, self.fds, self.held, self.demo_peaks = [], [], [], []
        self.cli_peaks = {}  # by device, runs with a warm kernel cache
        self.work = pathlib.Path(tempfile.mkdtemp(prefix="porta-soak-"))
        os.environ["PORTA_CACHE_DIR"] = str(self.work / "cache")
        example = load_example()
        (self.images, self.labels), _ = example.load_data()
        torch.manual_seed(0)
        self.good = example.DigitsCNN()  # the last good weights, on the CPU
        self.restart()
        self.export()
        asan = ROOT / args.asan_build
        self.cli, self.demo = asan / "porta", asan / "train_digits"
        for program in (self.cli, self.demo):
            if not os.access(program, os.X_OK):
                sys.exit(f"soak: {program} is missing: run `make asan` first")
        self.digits = ROOT / args.build / "digits.csv"
        if not self.digits.exists():
            sys.exit(f"soak: {self.digits} is missing: run `make setup` first")
        listed = subprocess.run([str(self.cli), "devices"], capture_output=True, text=True,
                                env=self.child_env(None)).stdout
        self.devices = re.findall(r"^(porta:\d+)\s+(?:cpu|opencl)\s", listed, re.M)

    def restart(self):
        self.model = copy.deepcopy(self.good).to("porta")
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=3e-3)

    def export(self):
        x = self.images[:16]
        self.input = self.work / "in.safetensors"
        from safetensors.torch import save_file
        save_file({"0": x.contiguous()}, self.input)
        self.model_path = self.work / "cnn.porta"
        model = copy.deepcopy(self.good).eval()
        torch_porta.export(model, (x,), self.model_path)
        with torch.no_grad():
            self.expected = model(x)

    def child_env(self, faults, cache=None):
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
        env["ASAN_OPTIONS"] = "detect_leaks=1:exitcode=86"
        env["LSAN_OPTIONS"] = f"suppressions={ROOT / 'tests' / 'lsan.supp'}"
        env["PORTA_CACHE_DIR"] = str(cache or self.work / "cli-cache")
        env.pop("PORTA_FAULTS", None)
        if faults:
            env["PORTA_FAULTS"] = faults
        return env

    # ---- 1. training in this process ----

    def step(self, index):
        batch = torch.arange(index * 64, index * 64 + 64) % len(self.labels)
        x, y = self.images[batch].to("porta"), self.labels[batch].to("porta")
        loss = F.cross_entropy(self.model(x), y)
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        return loss.item()

    def train_round(self, round_index):
        mode = "fused" if round_index % 2 else "debug"
        torch_porta.set_eager_mode(mode)
        try:
            torch_porta.set_faults(rules(self.args.rate, self.args.seed + round_index))
            for s in range(self.args.steps):
                self.counts["steps"] += 1
                try:
                    self.step(round_index * self.args.steps + s)
                except (RuntimeError, MemoryError) as error:
                    self.counts["failed steps"] += 1
                    if not CLEAN.search(str(error)):
                        self.failures.append(f"round {round_index} ({mode}): {error!r}")
                    torch_porta.set_faults(None)
                    torch_porta.synchronize()
                    self.restart()
                    torch_porta.set_faults(rules(self.args.rate, self.args.seed + round_index))
            torch_porta.set_faults(None)
            torch_porta.synchronize()
            loss = self.step(round_index)
            if loss != loss:
                self.failures.append(f"round {round_index} ({mode}): loss NaN after the faults")
            self.good.load_state_dict({k: v.cpu() for k, v in self.model.state_dict().items()})
        except Exception as error:  # the step after the faults must work
            self.failures.append(f"round {round_index} ({mode}), without faults: {error!r}")
            torch_porta.set_faults(None)
            self.restart()
        finally:
            torch_porta.set_faults(None)
            torch_porta.set_eager_mode("debug")

    # ---- 2. and 3. the AddressSanitizer build ----

    def cli_round(self, round_index):
        device = self.devices[round_index % len(self.devices)]
        cache = None
        if round_index % self.args.cold_every == 0:
            cache = self.work / f"cold-{round_index}"
        out_dir = self.work / "out"
        shutil.rmtree(out_dir, ignore_errors=True)
        out_dir.mkdir()
        output = out_dir / "y.safetensors"
        faults = rules(self.args.cli_rate, self.args.seed + round_index)
        command = [str(self.cli), "run", str(self.model_path), "--input", str(self.input),
                   "--output", str(output), "--device", device]
        rc, text, peak = run_child(command, self.child_env(faults, cache), 300)
        if cache:
            shutil.rmtree(cache, ignore_errors=True)
        self.counts["cli runs"] += 1
        if not cache:
            self.cli_peaks.setdefault(device, []).append(peak)
        where = f"round {round_index}: porta run on {device} ({faults})"
        if rc == 1 and CLEAN.search(text):
            self.counts["cli faults"] += 1
            if any(out_dir.iterdir()):
                self.failures.append(f"{where}: failed but left {sorted(out_dir.iterdir())}")
        elif rc == 0:
            from safetensors.torch import load_file
            got = list(load_file(output).values())[0]
            if not torch.allclose(got, self.expected, atol=1e-4, rtol=1e-4):
                self.failures.append(f"{where}: wrong output")
        else:
            self.failures.append(f"{where}: exit status {rc}:\n{text[-3000:]}")

    def demo_round(self, round_index):
        faults = rules(self.args.demo_rate, self.args.seed + round_index)
        rc, text, peak = run_child([str(self.demo), str(self.digits)],
                                   self.child_env(faults), 600)
        self.counts["demo runs"] += 1
        self.demo_peaks.append(peak)
        if rc == 1 and CLEAN.search(text):
            self.counts["demo faults"] += 1
        elif rc != 0:
            self.failures.append(f"round {round_index}: train_digits ({faults}): exit status "
                                 f"{rc}:\n{text[-3000:]}")

    # ---- the loop and the verdict ----

    def run(self):
        start = time.monotonic()
        end = start + 60 * self.args.minutes
        next_report = start + 60
        round_index = 0
        while time.monotonic() < end:
            self.train_round(round_index)
            self.cli_round(round_index)
            if round_index % self.args.demo_every == 0:
                self.demo_round(round_index)
            self.rss.append(rss_kib())
            self.fds.append(open_fds())
            self.held.append(torch_porta.memory_allocated())
            round_index += 1
            if time.monotonic() >= next_report:
                next_report += 60
                print(f"{(time.monotonic() - start) / 60:5.1f} min: round {round_index}, "
                      f"RSS {self.rss[-1] / 1024:.1f} MiB, {self.fds[-1]} fds, {self.counts}, "
                      f"{len(self.failures)} failures", flush=True)
        shutil.rmtree(self.work, ignore_errors=True)
        return self.verdict(time.monotonic() - start, round_index)

    def verdict(self, seconds, rounds):
        def mib(kib):
            return f"{kib / 1024:.1f} MiB"

        def spread(values):
            return (f"first {mib(values[0])}, min {mib(min(values))}, max {mib(max(values))}, "
                    f"last {mib(values[-1])}") if values else "none"

        warm = min(self.args.warmup, max(len(self.rss) - 1, 0))
        window = max(1, min(10, (len(self.rss) - warm) // 2))
        early = statistics.median(self.rss[warm:warm + window]) if self.rss else 0
        late = statistics.median(self.rss[-window:]) if self.rss else 0
        print(f"soak: {seconds / 60:.1f} min, {rounds} rounds, faults at {self.args.rate:g} "
              f"(training), {self.args.cli_rate:g} (porta run) and {self.args.demo_rate:g} "
              f"(train_digits) per event")
        print(f"soak: {self.counts}")
        print(f"soak: training process RSS: {spread(self.rss)}; median of rounds "
              f"{warm + 1}-{warm + window} {mib(early)}, of the last {window} {mib(late)}")
        print(f"soak: training process libporta bytes held after each round: first "
              f"{self.held[0] if self.held else '-'}, max {max(self.held, default='-')}, "
              f"last {self.held[-1] if self.held else '-'}")
        stats = torch_porta._C.compiler_stats()
        print(f"soak: training process schedules built {stats['graphs_compiled']}, kernels "
              f"built {stats['kernels_compiled']} (a failure cuts a trace short: the rest is "
              f"a new trace, scheduled and built once, then cached)")
        print(f"soak: training process open fds: first {self.fds[0] if self.fds else '-'}, "
              f"min {min(self.fds, default='-')}, max {max(self.fds, default='-')}, "
              f"last {self.fds[-1] if self.fds else '-'}")
        for device, peaks in self.cli_peaks.items():
            print(f"soak: porta run (ASan) on {device}, warm kernel cache, peak RSS per run: "
                  f"{spread(peaks)}")
        print(f"soak: train_digits (ASan) peak RSS per run: {spread(self.demo_peaks)}")
        if self.held and self.held[-1] > self.held[warm]:
            self.failures.append(f"libporta held {self.held[warm]} bytes after round {warm + 1}, "
                                 f"{self.held[-1]} at the end")
        if self.fds and self.fds[-1] > self.fds[warm]:
            self.failures.append(f"open fds grew from {self.fds[warm]} to {self.fds[-1]}")
        if late - early > 1024 * self.args.rss_slack:
            self.failures.append(f"RSS grew from {mib(early)} to {mib(late)} "
                                 f"(more than {self.args.rss_slack} MiB)")
        for failure in self.failures[:20]:
            print(f"soak: FAILED: {failure}")
        print("soak: " + ("FAILED" if self.failures else "clean"))
        return 1 if self.failures else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=10)
    parser.add_argument("--rate", type=float, default=0.0001,
                        help="probability of each fault in the training process")
    parser.add_argument("--cli-rate", type=float, default=0.002,
                        help="probability of each fault in the AddressSanitizer runs")
    parser.add_argument("--demo-rate", type=float, default=0.00002,
                        help="probability of each fault in the AddressSanitizer C demo")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--steps", type=int, default=10, help="training steps per round")
    parser.add_argument("--cold-every", type=int, default=4,
                        help="every Nth `porta run` starts with an empty kernel cache")
    parser.add_argument("--demo-every", type=int, default=10,
                        help="train_digits runs every Nth round")
    parser.add_argument("--warmup", type=int, default=15,
                        help="rounds before the memory baseline is taken")
    parser.add_argument("--rss-slack", type=float, default=32,
                        help="MiB the training process may grow from the baseline")
    parser.add_argument("--build", default="build")
    parser.add_argument("--asan-build", default="build-asan")
    args = parser.parse_args()
    return Soak(args).run()


if __name__ == "__main__":
    sys.exit(main())
