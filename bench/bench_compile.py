"""Training steps compiled: porta beside PyTorch eager and Inductor, in one run.

A training step (forward, loss, backward, AdamW step) of bench_torch.py's
CNN and small transformer, from the same initial weights and data, under:

    eager       PyTorch eager on the CPU (the reference)
    inductor    torch.compile(model) on the CPU (Inductor, the default backend)
    porta.comp  torch.compile(model, backend="porta"), model and data on porta;
                the loss and the optimizer step, outside the compiled model,
                run in fused eager mode
    porta.fused porta's fused eager mode (set_eager_mode("fused")), no compile
    porta.eager porta's plain eager mode
    pjrt.comp   as porta.comp, on the first PJRT device (XLA's CPU plugin here):
                each trace is one StableHLO module per kernel that XLA compiles
    pjrt.fused  as porta.fused, on that PJRT device
(the pjrt variants run where a PJRT device is listed, or not at all with
--no-pjrt)

Warm-up steps come first (the compilers run there; their time is reported
apart), then the variants take turns, round by round, each running the same
number of steps per round, so the machine's noise falls on all alike. The
result is the ratio of median step times: against eager and against Inductor
(below 1.0 is faster). Milliseconds are shown for scale only. The losses of
the warm-up steps, run from the same start, must agree with eager's; the
compiler's counters over the timed steps show whether anything was compiled
again after warm-up.

    .venv/bin/python bench/bench_compile.py [--rounds N] [--only cnn|transformer]
                                            [--threads N] [--cold]

--cold starts porta's and Inductor's on-disk compile caches empty, so the
warm-up shows what a first run on a new machine pays.
"""
import argparse
import os
import statistics
import tempfile
import time

import torch

# Imported in main(), once porta's thread count is in the environment:
torch_porta = bench_torch = None

WARMUP_STEPS = 5
MIN_SECONDS_PER_TURN = 0.2  # a variant's steps in one round take at least this on eager
# The warm-up steps' losses, from the same start: float32 sums in another
# order drift a little over a few AdamW steps, nothing more. (Over hundreds of
# steps on one batch the drift grows past any useful tolerance, so the timed
# steps' losses are not compared.)
LOSS_RTOL = 1e-3


def models():
    """name -> (title, model class, batch, loss): bench_torch.py's models,
    data and losses."""
    return {
        "cnn": ("CNN (batch 64, 1x16x16)", bench_torch.SmallCNN, bench_torch.cnn_batch,
                torch.nn.functional.cross_entropy),
        "transformer": ("transformer (8x64 tokens, 2 layers, width 128)",
                        bench_torch.SmallTransformer, bench_torch.transformer_batch,
                        bench_torch.transformer_loss),
    }


VARIANTS = ("eager", "inductor", "porta.comp", "porta.fused", "porta.eager")
PJRT_VARIANTS = ("pjrt.comp", "pjrt.fused")
# The compiler's counters that tell what a step did and whether it compiled.
COUNTERS = ("flushes", "graphs_compiled", "graph_cache_hits", "kernels_compiled",
            "kernel_memory_hits", "kernel_disk_hits", "kernels_run", "prims_fused",
            "prims_alone", "compile_seconds")


def synchronize():
    for index in range(torch.porta.device_count()):
        torch.porta.synchronize(index)


def pjrt_device():
    """porta:N of the first PJRT device, or None."""
    for index in range(torch.porta.device_count()):
        if torch.porta.get_device_properties(index).backend == "pjrt":
            return f"porta:{index}"
    return None


def porta_counters():
    """The compiler's counters and the graphs torch.compile gave porta."""
    snapshot = torch_porta.metrics()
    counters = {name: snapshot[name] for name in COUNTERS}
    counters["dynamo_graphs"] = sum(snapshot["compiles"].values())
    return counters


def difference(after, before):
    return {name: after[name] - before[name] for name in after}


class Variant:
    """One way of running the training step, with its own model copy."""

    def __init__(self, name, model_class, batch, loss_fn):
        self.name = name
        on_porta = name.startswith(("porta", "pjrt"))
        device = pjrt_device() if name.startswith("pjrt") else "porta" if on_porta else "cpu"
        torch.manual_seed(0)  # the same initial weights for every variant
        model = model_class().to(device)
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
        self.inputs, self.targets = (t.to(device) for t in batch())
        if name == "inductor":
            model = torch.compile(model)
        elif name in ("porta.comp", "pjrt.comp"):
            model = torch.compile(model, backend="porta")
        self.model, self.loss_fn = model, loss_fn
        self.mode = "fused" if name.endswith((".fused", ".comp")) else "debug"
        self.on_porta = on_porta
        self.losses = []  # of the warm-up steps
        self.samples = []  # seconds per step, one per round
        self.warmup_seconds = []
        self.warmup_counters = self.timed_counters = None
        self.error = None

    def step(self):
        self.optimizer.zero_grad()
        loss = self.loss_fn(self.model(self.inputs), self.targets)
        loss.backward()
        self.optimizer.step()
        return loss

    def run(self, steps):
        """Seconds per step over `steps` steps, and the last step's loss.
        The eager mode is set around the steps, outside the timer; the timer
        stops when porta has finished what the steps issued."""
        if self.on_porta:
            torch_porta.set_eager_mode(self.mode)
        try:
            synchronize()
            start = time.perf_counter()
            for _ in range(steps):
                loss = self.step()
            synchronize()
            seconds = (time.perf_counter() - start) / steps
        finally:
            if self.on_porta:
                torch_porta.set_eager_mode("debug")
        return seconds, loss

    def warm_up(self):
        before = porta_counters()
        for _ in range(WARMUP_STEPS):
            seconds, loss = self.run(1)
            self.warmup_seconds.append(seconds)
            self.losses.append(loss.item())
        self.warmup_counters = difference(porta_counters(), before)
        self.timed_counters = difference(before, before)  # zeros

    def timed_turn(self, steps):
        before = porta_counters()
        seconds, _ = self.run(steps)
        after = porta_counters()
        self.samples.append(seconds)
        for name, value in difference(after, before).items():
            self.timed_counters[name] += value


def attempt(variant, action, *args):
    """Runs one action of a variant; a failure drops the variant (and says
    why) instead of ending the benchmark."""
    if variant.error is not None:
        return
    try:
        action(*args)
    except Exception as error:  # noqa: BLE001 (reported, the rest continue)
        variant.error = f"{type(error).__name__}: {str(error).splitlines()[0][:120]}"
        try:
            torch_porta.set_eager_mode("debug")
        except Exception:  # noqa: BLE001 (the mode is set even when its flush fails)
            pass


def loss_deviation(losses, reference):
    """The largest relative difference of the warm-up steps' losses from
    the reference's."""
    return max(abs(loss - ref) / abs(ref) for loss, ref in zip(losses, reference))


def benchmark(key, rounds, busy, names):
    title, model_class, batch, loss_fn = models()[key]
    print(f"\n== {title}: training step (forward, loss, backward, AdamW) ==", flush=True)
    variants = [Variant(name, model_class, batch, loss_fn) for name in names]
    for variant in variants:
        attempt(variant, variant.warm_up)
    eager = variants[0]
    if eager.error is not None:
        print(f"eager failed, nothing to compare with: {eager.error}")
        return
    # Steps per turn from eager's step time; every variant takes as many.
    steps = max(2, round(MIN_SECONDS_PER_TURN / statistics.median(eager.warmup_seconds[1:])))
    for _ in range(rounds):
        for variant in variants:
            attempt(variant, variant.timed_turn, steps)
    report(variants, rounds, steps, busy)


def report(variants, rounds, steps, busy):
    median = {v.name: statistics.median(v.samples) for v in variants if v.error is None}
    eager, inductor = median["eager"], median.get("inductor")
    reference = variants[0].losses
    print(f"{WARMUP_STEPS} warm-up steps (losses checked against eager's), then {rounds} "
          f"rounds of {steps} timed steps per variant")
    print("ratio = variant / reference, median step times (below 1.0 is faster)")
    print(f"{'variant':12} {'ms/step':>8} {'/ eager':>8} {'/ inductor':>10} "
          f"{'warm-up s':>9} {'1st step s':>10} {'loss step 1':>12} "
          f"{f'loss step {WARMUP_STEPS}':>12} {'max rel diff':>12}")
    for v in variants:
        if v.error is not None:
            print(f"{v.name:12} failed: {v.error}")
            continue
        ms = median[v.name] * 1e3
        versus_inductor = f"{median[v.name] / inductor:10.2f}" if inductor else f"{'-':>10}"
        deviation = loss_deviation(v.losses, reference)
        verdict = "ok" if deviation <= LOSS_RTOL else "MISMATCH"
        print(f"{v.name:12} {ms:8.2f} {median[v.name] / eager:8.2f} {versus_inductor} "
              f"{sum(v.warmup_seconds):9.2f} {v.warmup_seconds[0]:10.2f} "
              f"{v.losses[0]:12.6f} {v.losses[-1]:12.6f} {deviation:12.1e} {verdict}")
    if "porta.comp" in median and inductor:
        ratio = median["porta.comp"] / inductor
        verdict = "meets" if ratio <= 1.0 else "misses"
        caveat = "; the machine was busy, so this says little" if busy else ""
        print(f"porta compiled / Inductor = {ratio:.2f} ({verdict} the goal of 1.00 or "
              f"below{caveat})")
    if "pjrt.comp" in median and inductor:
        print(f"pjrt compiled / Inductor = {median['pjrt.comp'] / inductor:.2f}, "
              f"/ porta compiled on the CPU = {median['pjrt.comp'] / median['porta.comp']:.2f}"
              if "porta.comp" in median else "")
    for v in variants:
        if v.name.endswith((".comp", ".fused")) and v.error is None:
            print_counters(v, rounds * steps)


def print_counters(variant, timed_steps):
    warm, timed = variant.warmup_counters, variant.timed_counters
    per_step = {name: value / timed_steps for name, value in timed.items()}
    print(f"{variant.name} compiler, warm-up: {warm['dynamo_graphs']} torch.compile graphs, "
          f"{warm['graphs_compiled']} schedules built, {warm['kernels_compiled']} kernels "
          f"compiled + {warm['kernel_disk_hits']} from disk "
          f"({warm['compile_seconds']:.2f} s compiling)")
    print(f"{variant.name} compiler, {timed_steps} timed steps: "
          f"{timed['dynamo_graphs']} torch.compile graphs, {timed['graphs_compiled']} schedules "
          f"built, {timed['kernels_compiled']} kernels compiled, "
          f"{timed['graph_cache_hits']} schedule cache hits; per step "
          f"{per_step['flushes']:.1f} flushes "
          f"({per_step['graph_cache_hits'] + per_step['graphs_compiled']:.1f} traces run), "
          f"{per_step['kernels_run']:.1f} fused kernels "
          f"({per_step['prims_fused']:.1f} ops in them) + {per_step['prims_alone']:.1f} ops "
          f"run alone")


def warn_if_busy(own_load):
    """PyTorch's OpenMP threads wait for each other at every parallel
    region; when other processes hold the cores, those waits dominate and
    eager times become meaningless. Says so when the load average exceeds
    what this benchmark itself puts on the machine (own_load) by a core."""
    load = os.getloadavg()[0]
    cores = len(os.sched_getaffinity(0))
    busy = load > own_load + 1.0
    if busy:
        print(f"warning: the machine is busy (load {load:.1f} on {cores} cores): "
              f"times, PyTorch's above all, are unreliable")
    return busy


def main():
    global torch_porta, bench_torch
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7,
                        help="timed turns of each variant (default 7)")
    parser.add_argument("--only", choices=("cnn", "transformer"), help="run one model only")
    parser.add_argument("--threads", type=int, default=2,
                        help="threads of PyTorch and of porta (default 2)")
    parser.add_argument("--cold", action="store_true",
                        help="start the on-disk compile caches empty")
    parser.add_argument("--no-pjrt", action="store_true",
                        help="leave out the variants on a PJRT device")
    args = parser.parse_args()
    if args.cold:
        cold = tempfile.TemporaryDirectory(prefix="bench_compile_")
        os.environ["PORTA_CACHE_DIR"] = os.path.join(cold.name, "porta")
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(cold.name, "inductor")
    torch.set_num_threads(args.threads)
    os.environ["PORTA_NUM_THREADS"] = str(args.threads)  # read when porta starts its pool
    import torch_porta
    import bench_torch  # same directory as this script
    print(f"torch {torch.__version__}: {torch.get_num_threads()} CPU threads, porta "
          f"{args.threads} threads; median of {args.rounds} rounds; compile caches "
          f"{'empty at start' if args.cold else 'as left by earlier runs'}")
    busy = warn_if_busy(0)
    names = VARIANTS
    if not args.no_pjrt and pjrt_device():
        names += PJRT_VARIANTS
        print(f"PJRT variants on {pjrt_device()} "
              f"({torch.porta.get_device_properties(pjrt_device()).name})")
    for key in ("cnn", "transformer"):
        if args.only in (None, key):
            benchmark(key, args.rounds, busy, names)
    warn_if_busy(args.threads)  # the last minute's average includes this run


if __name__ == "__main__":
    main()
