"""A PJRT device's costs beside porta's CPU backend and PyTorch's CPU, in one run.

1. Eager per-op cost: a 1-element add and a 64x64 add, plain eager mode, on
   the first PJRT device (XLA's CPU plugin here), on porta's CPU backend
   (porta:0) and on PyTorch's CPU; alternating rounds, medians, ratios
   against PyTorch's CPU.
2. Compiles over a training loop: 100 steps of bench_torch.py's CNN
   (AdamW) under torch.compile(backend="porta") on the PJRT device, from an
   empty module cache: the modules compiled (StableHLO modules XLA built),
   found in memory or on disk, the seconds spent compiling, per step, and
   the hit rate; then the same loop again in a new process sharing the
   disk cache (what a restarted job pays).

    .venv/bin/python bench/bench_pjrt.py [--rounds N] [--steps N]

Training-step ratios against Inductor and porta's CPU compiler are
bench_compile.py's (its pjrt.comp and pjrt.fused variants).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch

import torch_porta

COUNTERS = ("graphs_compiled", "graph_cache_hits", "kernels_compiled", "kernel_memory_hits",
            "kernel_disk_hits", "compile_seconds")


def pjrt_device():
    for index in range(torch.porta.device_count()):
        if torch.porta.get_device_properties(index).backend == "pjrt":
            return f"porta:{index}"
    sys.exit("bench_pjrt: no PJRT device (make setup installs XLA's CPU plugin; "
             "`porta devices` says why a plugin is unusable)")


def synchronize():
    for index in range(torch.porta.device_count()):
        torch.porta.synchronize(index)


def seconds_per_call(fn, calls):
    synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    synchronize()
    return (time.perf_counter() - start) / calls


def per_op_cost(rounds, pjrt):
    print(f"\n== eager per-op cost (plain eager mode), median of {rounds} rounds ==")
    print(f"{'op':18} {'pjrt us':>9} {'porta:0 us':>10} {'cpu us':>8} "
          f"{'pjrt/cpu':>9} {'pjrt/porta:0':>12}")
    for shape in ((1,), (64, 64)):
        fns = {}
        for name, device in (("pjrt", pjrt), ("porta:0", "porta:0"), ("cpu", "cpu")):
            a = torch.ones(shape, device=device)
            b = torch.ones(shape, device=device)
            fns[name] = lambda a=a, b=b: torch.add(a, b)
        for fn in fns.values():
            fn(), fn()
        calls = 300
        samples = {name: [] for name in fns}
        for _ in range(rounds):
            for name, fn in fns.items():
                samples[name].append(seconds_per_call(fn, calls))
        us = {name: statistics.median(times) * 1e6 for name, times in samples.items()}
        label = "add " + "x".join(map(str, shape))
        print(f"{label:18} {us['pjrt']:9.1f} {us['porta:0']:10.1f} {us['cpu']:8.1f} "
              f"{us['pjrt'] / us['cpu']:9.2f} {us['pjrt'] / us['porta:0']:12.2f}", flush=True)


def training_loop(steps, pjrt):
    """Runs in a child process: `steps` compiled CNN steps on the PJRT
    device; prints the counters' totals after step 1 and after the last as
    JSON."""
    import bench_torch  # same directory as this script
    torch.manual_seed(0)
    model = bench_torch.SmallCNN().to(pjrt)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    inputs, targets = (t.to(pjrt) for t in bench_torch.cnn_batch())
    compiled = torch.compile(model, backend="porta")
    torch_porta.set_eager_mode("fused")
    snapshots, times = [], []
    for step in range(steps):
        start = time.perf_counter()
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(compiled(inputs), targets)
        loss.backward()
        optimizer.step()
        loss_value = loss.item()
        times.append(time.perf_counter() - start)
        if step in (0, steps - 1):
            metrics = torch_porta.metrics()
            snapshots.append({name: metrics[name] for name in COUNTERS})
    print(json.dumps({"first": snapshots[0], "last": snapshots[-1], "loss": loss_value,
                      "first_step_s": times[0],
                      "median_step_s": statistics.median(times[1:])}))


def run_loop(steps, pjrt, cache_dir):
    env = dict(os.environ, PORTA_CACHE_DIR=cache_dir)
    done = subprocess.run([sys.executable, __file__, "--loop", str(steps), "--device", pjrt],
                          capture_output=True, text=True, env=env, timeout=3600)
    if done.returncode != 0:
        sys.exit(f"bench_pjrt: the training loop failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def compile_figures(steps, pjrt):
    print(f"\n== compiles over {steps} torch.compile'd CNN training steps on {pjrt} ==")
    print(f"{'run':24} {'modules built':>13} {'memory hits':>11} {'disk hits':>9} "
          f"{'hit rate':>8} {'compile s':>9} {'after step 1':>12} {'1st step s':>10} "
          f"{'step ms':>8}")
    with tempfile.TemporaryDirectory(prefix="bench_pjrt_") as cache:
        for run in ("empty disk cache", "restart, same cache"):
            r = run_loop(steps, pjrt, cache)
            last, first = r["last"], r["first"]
            built = last["kernels_compiled"]
            hits = last["kernel_memory_hits"] + last["kernel_disk_hits"]
            rate = hits / max(1, built + hits)
            print(f"{run:24} {built:13d} {last['kernel_memory_hits']:11d} "
                  f"{last['kernel_disk_hits']:9d} {rate:8.3f} {last['compile_seconds']:9.2f} "
                  f"{first['kernels_compiled']:12d} {r['first_step_s']:10.2f} "
                  f"{r['median_step_s'] * 1e3:8.2f}", flush=True)
    print("(modules built after step 1 = built in the first step; the rest of the loop "
          "reuses them)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--loop", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--device", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.loop:
        training_loop(args.loop, args.device)
        return
    pjrt = pjrt_device()
    print(f"torch {torch.__version__}; PJRT device {pjrt} "
          f"({torch.porta.get_device_properties(pjrt).name})")
    per_op_cost(args.rounds, pjrt)
    compile_figures(args.steps, pjrt)


if __name__ == "__main__":
    main()
