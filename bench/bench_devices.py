"""The demo's CNN on every porta device beside PyTorch's CPU, in one run.

examples/train_digits_cnn.py's model, on one batch of 64 UCI digits (8x8,
scikit-learn's bundled copy), from the same initial weights everywhere:

    train    a training step: forward, cross entropy, backward, SGD step
    forward  inference: forward and cross entropy under no_grad, eval mode

on these variants:

    porta:N eager   porta:N op by op (eager mode "debug"), N = 0 (the CPU
                    backend, the reference), 1 (OpenCL: PoCL here), ...
    porta:N fused   porta:N in fused eager mode (set_eager_mode("fused"))
    cpu             PyTorch's own CPU kernels (a second reference)

Warm-up steps come first: kernels are built there (porta's own C and
OpenCL kernels and fused kernels), and the seconds spent building are
reported apart. Then the variants take turns, round by round, so the
machine's noise falls on all alike; each turn runs enough steps to take
about TURN_SECONDS, after a pause that lets the previous turn's idle
threads stop spinning. The result is the ratio of median step times to porta:0
eager's (below 1.0 is faster) and, per device, eager / fused (above 1.0:
fused is faster). Milliseconds are shown for scale only. Kernel builds that
still happen in a timed turn are subtracted from it and counted. The
losses of the warm-up steps must agree with PyTorch CPU's. A variant that
fails is reported with its error; the others go on. Training on porta:N,
N > 0, runs in a process of its own (see train_on_other_devices).

    .venv/bin/python bench/bench_devices.py [--rounds N] [--threads N] [--cold]
                                            [--only train|forward]

--cold starts porta's on-disk kernel cache empty, so the warm-up shows what
a first run on a new machine pays.
"""
import argparse
import copy
import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch
import torch.nn.functional as F

# Imported in main(), once porta's thread count is in the environment:
torch_porta = DigitsCNN = None

BATCH = 64
LEARNING_RATE = 0.1
WARMUP_STEPS = 4
TURN_SECONDS = 0.15
# Idle worker threads (PyTorch's OpenMP, PoCL's, porta's pool) spin for a
# while after their last task and would steal cycles from the next turn.
PAUSE_SECONDS = 0.2
MAX_STEPS_PER_TURN = 40  # a warm-up step that ran unusually fast must not make a turn long
# float32 sums in another order drift a little over a few SGD steps.
LOSS_RTOL = 1e-3
REFERENCE = "porta:0 eager"


def digits_batch():
    """The first BATCH digits after the demo's shuffle: images (B, 1, 8, 8)
    in [0, 1] and labels."""
    from sklearn.datasets import load_digits
    digits = load_digits()
    images = torch.tensor(digits.images, dtype=torch.float32).unsqueeze(1) / 16.0
    labels = torch.tensor(digits.target, dtype=torch.int64)
    order = torch.randperm(len(labels), generator=torch.Generator().manual_seed(0))[:BATCH]
    return images[order], labels[order]


def compile_counters():
    """Seconds spent building kernels, kernels built, kernels loaded from
    the disk cache (porta's fused kernels and OpenCL programs alike)."""
    metrics = torch_porta.metrics()
    return metrics["compile_seconds"], metrics["kernels_compiled"], metrics["kernel_disk_hits"]


class Variant:
    """One device and mode, with its own copy of the model and optimizer."""

    def __init__(self, device, mode, workload, model, batch):
        self.device, self.mode, self.workload = device, mode, workload
        self.name = "cpu" if device == "cpu" else f"{device} {mode}"
        self.on_porta = device.startswith("porta")
        self.model = copy.deepcopy(model).to(device)
        self.model.train(workload == "train")
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=LEARNING_RATE)
        self.inputs, self.targets = (t.to(device) for t in batch)
        self.losses, self.warmup_seconds, self.samples = [], [], []
        self.warmup_compile = (0.0, 0, 0)  # seconds building, kernels built, loaded
        self.timed_kernels = 0
        self.steps = 1  # per turn, set after warm-up
        self.error = None

    def step(self):
        if self.workload == "train":
            self.optimizer.zero_grad()
            loss = F.cross_entropy(self.model(self.inputs), self.targets)
            loss.backward()
            self.optimizer.step()
            return loss
        with torch.no_grad():
            loss = F.cross_entropy(self.model(self.inputs), self.targets)
        # A sync point ends each inference, as reading its result would; in
        # fused mode it runs the step's trace (a training step's ends at
        # optimizer.step()), so every step is one trace, not a turn's steps.
        self.synchronize()
        return loss

    def synchronize(self):
        if self.on_porta:
            torch.porta.synchronize(self.device)

    def run(self, steps):
        """Seconds per step over `steps` steps, less the kernel builds among
        them, until porta has finished them; the kernels built; the last
        loss. The eager mode is set around the steps, outside the timer."""
        if self.on_porta:
            torch_porta.set_eager_mode(self.mode)
        try:
            self.synchronize()
            compile_before = compile_counters()
            start = time.perf_counter()
            for _ in range(steps):
                loss = self.step()
            self.synchronize()
            seconds = time.perf_counter() - start
            compile_after = compile_counters()
        finally:
            if self.on_porta:
                torch_porta.set_eager_mode("debug")
        built_seconds, built, loaded = (a - b for a, b in zip(compile_after, compile_before))
        return (seconds - built_seconds) / steps, (built_seconds, built, loaded), loss

    def warm_up(self):
        totals = [0.0, 0, 0]
        for _ in range(WARMUP_STEPS):
            seconds, compiled, loss = self.run(1)
            self.warmup_seconds.append(seconds + compiled[0])
            totals = [a + b for a, b in zip(totals, compiled)]
            self.losses.append(loss.item())
        self.warmup_compile = tuple(totals)
        step = statistics.median(self.warmup_seconds[1:])
        self.steps = min(MAX_STEPS_PER_TURN, max(1, round(TURN_SECONDS / max(step, 1e-6))))

    def timed_turn(self):
        time.sleep(PAUSE_SECONDS)
        seconds, (_, built, _), _ = self.run(self.steps)
        self.samples.append(seconds)
        self.timed_kernels += built


def attempt(variant, action):
    """Runs one action of a variant; a failure drops the variant and keeps
    its error (the exception's type and first line) instead of ending the
    benchmark."""
    if variant.error is not None:
        return
    try:
        action()
    except Exception as error:  # noqa: BLE001 (reported, the rest continue)
        lines = str(error).strip().splitlines() or [""]
        variant.error = f"{type(error).__name__}: {lines[0]}"
        try:
            torch_porta.set_eager_mode("debug")
        except Exception:  # noqa: BLE001 (the mode is set even when its flush fails)
            pass


def variants_for(workload, model, batch):
    devices = [f"porta:{i}" for i in range(torch_porta.device_count())]
    if workload == "train":  # backward only on porta:0: the others train in their own process
        devices = devices[:1]
    variants = [Variant(d, mode, workload, model, batch)
                for d in devices for mode in ("debug", "fused")]
    return variants + [Variant("cpu", "eager", workload, model, batch)]


def label(variant):
    return variant.name.replace(" debug", " eager")


def benchmark(workload, rounds, model, batch):
    what = {"train": "training step (forward, cross entropy, backward, SGD)",
            "forward": "inference (forward, cross entropy; no_grad, eval mode)"}[workload]
    print(f"\n== {what}, batch {BATCH} of 1x8x8 ==", flush=True)
    variants = variants_for(workload, model, batch)
    for variant in variants:
        attempt(variant, variant.warm_up)
    for _ in range(rounds):
        for variant in variants:
            attempt(variant, variant.timed_turn)
    return report(variants, rounds)


def report(variants, rounds):
    """Prints the table; returns the median step times by variant name."""
    medians = {label(v): statistics.median(v.samples) for v in variants if v.error is None}
    reference = medians.get(REFERENCE)
    cpu = next((v for v in variants if v.name == "cpu" and v.error is None), None)
    print(f"{WARMUP_STEPS} warm-up steps, then {rounds} rounds of timed turns of `steps` "
          f"steps; ratio = median step time / {REFERENCE}'s (below 1.00 is faster)")
    print("warm-up s includes build s, the seconds of building the `built` kernels (`disk`: "
          "loaded from the disk cache); timed built: kernels built in timed turns (their "
          "seconds subtracted); max rel diff: warm-up losses vs PyTorch CPU's")
    print(f"{'variant':14} {'ms/step':>8} {'steps':>5} {'ratio':>6} {'eager/fused':>11} "
          f"{'warm-up s':>9} {'build s':>7} {'built':>5} {'disk':>4} {'timed built':>11} "
          f"{'loss 1':>9} {'max rel diff':>12}")
    for v in variants:
        name = label(v)
        if v.error is not None:
            print(f"{name:14} failed: {v.error}")
            continue
        ratio = f"{medians[name] / reference:6.2f}" if reference else f"{'-':>6}"
        speedup = "-"
        if v.mode == "fused":
            eager = medians.get(name.replace(" fused", " eager"))
            speedup = f"{eager / medians[name]:.2f}" if eager else "-"
        if cpu is None:
            check = "-"
        else:
            deviation = max(abs(a - b) / abs(b) for a, b in zip(v.losses, cpu.losses))
            check = f"{deviation:.1e}" + ("" if deviation <= LOSS_RTOL else " MISMATCH")
        built_seconds, built, loaded = v.warmup_compile
        print(f"{name:14} {medians[name] * 1e3:8.2f} {v.steps:5d} {ratio} {speedup:>11} "
              f"{sum(v.warmup_seconds):9.2f} {built_seconds:7.2f} {built:5d} {loaded:4d} "
              f"{v.timed_kernels:11d} {v.losses[0]:9.5f} {check:>12}")
    if reference is None:
        print(f"no ratios: {REFERENCE} did not run")
    return medians


def train_on_other_devices(args, medians):
    """PyTorch's autograd engine runs backward on porta:0 only (its Python
    device guard counts one device), so porta:N trains in a process of its
    own where PORTA_VISIBLE_DEVICES makes it porta:0. PyTorch's CPU, timed
    in both processes, bridges them: porta:N / porta:0 = (porta:N / cpu) /
    (porta:0 / cpu)."""
    if "porta:0 eager" not in medians or "cpu" not in medians:
        return
    bridge = medians["porta:0 eager"] / medians["cpu"]
    for index in range(1, torch_porta.device_count()):
        print(f"\n== training step on porta:{index} ({torch_porta.get_device_name(index)}), "
              f"in its own process ==", flush=True)
        env = dict(os.environ, PORTA_VISIBLE_DEVICES=str(index))
        subprocess.run([sys.executable, os.path.abspath(__file__), "--only", "train",
                        "--rounds", str(args.rounds), "--threads", str(args.threads),
                        "--bridge", repr(bridge), "--as-device", str(index)], env=env, check=False)


def print_bridged(medians, bridge, index):
    for mode in ("eager", "fused"):
        mine = medians.get(f"porta:0 {mode}")
        if mine and "cpu" in medians:
            print(f"porta:{index} {mode} / porta:0 eager of the main process, through PyTorch "
                  f"CPU: {mine / medians['cpu'] / bridge:.2f}")


def warn_if_busy(own_load):
    """Says so when the load average exceeds what this benchmark itself
    puts on the machine (own_load) by a core: other work then skews the
    times, PyTorch's (whose threads wait for each other) most."""
    load = os.getloadavg()[0]
    if load > own_load + 1.0:
        print(f"warning: the machine is busy (load {load:.1f} on "
              f"{len(os.sched_getaffinity(0))} cores): the times are unreliable")


def main():
    global torch_porta, DigitsCNN
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7,
                        help="timed turns of each variant (default 7)")
    parser.add_argument("--threads", type=int, default=2,
                        help="threads of PyTorch, of porta's CPU backend and of PoCL's CPU "
                             "device (default 2)")
    parser.add_argument("--only", choices=("train", "forward"), help="run one workload only")
    parser.add_argument("--cold", action="store_true",
                        help="start porta's on-disk kernel cache empty")
    parser.add_argument("--bridge", type=float, help=argparse.SUPPRESS)  # train_on_other_devices
    parser.add_argument("--as-device", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.cold:
        cold = tempfile.TemporaryDirectory(prefix="bench_devices_")
        os.environ["PORTA_CACHE_DIR"] = cold.name
    torch.set_num_threads(args.threads)
    os.environ["PORTA_NUM_THREADS"] = str(args.threads)  # read when porta starts its pool
    # PoCL's CPU device, unless told otherwise: as many threads as the others
    # (the variable's name before PoCL 4, and since).
    for pocl_threads in ("POCL_MAX_PTHREAD_COUNT", "POCL_CPU_MAX_CU_COUNT"):
        os.environ.setdefault(pocl_threads, str(args.threads))
    import torch_porta
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                    "examples"))
    from train_digits_cnn import DigitsCNN
    print(f"torch {torch.__version__}, {torch.get_num_threads()} CPU threads, porta "
          f"{args.threads} threads; median of {args.rounds} rounds; kernel cache "
          f"{'empty at start' if args.cold else 'as left by earlier runs'}")
    for index in range(torch_porta.device_count()):
        print(f"porta:{index}: {torch_porta.get_device_name(index)}")
    warn_if_busy(0)
    torch.manual_seed(0)
    model, batch = DigitsCNN(), digits_batch()
    for workload in ("train", "forward"):
        if args.only in (None, workload):
            medians = benchmark(workload, args.rounds, model, batch)
            if workload == "train" and args.bridge is not None:
                print_bridged(medians, args.bridge, args.as_device)
            elif workload == "train":
                train_on_other_devices(args, medians)
    warn_if_busy(args.threads)  # the last minute's average includes this run


if __name__ == "__main__":
    main()
