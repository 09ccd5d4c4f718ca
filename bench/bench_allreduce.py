"""all_reduce bus bandwidth, 1 MB to 256 MB of float32, porta against a plain
MPI_Allreduce of the same library in the same run, then DDP's scaling
efficiency:

    mpirun -np 2 python bench/bench_allreduce.py [--max-mb 256] [--rounds 5]

Columns: porta_dist on a porta tensor through torch.distributed (the path
DDP takes), the same through libporta's binding directly, and Open MPI's
blocking MPI_Allreduce (called through ctypes on the libmpi that porta
loaded), each as bus bandwidth (bytes x 2(n-1)/n per second, as NCCL's
tests count it) with porta's as a fraction of MPI's. Medians over rounds;
rank 0 prints.

DDP (weak scaling: the same batch per rank), rounds alternating between: a
training step of an MLP on one process alone (rank 0, while the others
wait), the same step under DistributedDataParallel with asynchronous
collectives (a bucket's all_reduce runs on libporta's communication thread
while backward goes on), the same forced synchronous (PORTA_DIST_SYNC=1),
and under no_sync (no all_reduce: what sharing the machine costs apart from
communication). Scaling efficiency = alone / DDP step time (1.0 perfect);
overlap gain = synchronous / asynchronous step time.

    mpirun -np 2 python bench/bench_allreduce.py --ddp-only [--ddp-rounds 5]
"""
import argparse
import contextlib
import ctypes
import os
import statistics
import time

os.environ.setdefault("PORTA_NUM_THREADS", "1")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import torch_porta  # noqa: E402,F401
import torch_porta.distributed  # noqa: E402,F401
from torch.nn.parallel import DistributedDataParallel  # noqa: E402
from torch_porta import _C, _tensors  # noqa: E402

MPI_IN_PLACE = ctypes.c_void_p(1)


class PlainMPI:
    """MPI_Allreduce(MPI_IN_PLACE, ..., MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD)."""

    def __init__(self):
        library = ctypes.CDLL(os.environ.get("PORTA_MPI_LIBRARY", "libmpi.so.40"),
                              mode=ctypes.RTLD_GLOBAL)

        def handle(name):
            return ctypes.c_void_p(ctypes.addressof(ctypes.c_char.in_dll(library, name)))

        self.float, self.sum = handle("ompi_mpi_float"), handle("ompi_mpi_op_sum")
        self.world = handle("ompi_mpi_comm_world")
        self.allreduce = library.MPI_Allreduce
        self.allreduce.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int,
                                   ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
        self.barrier = library.MPI_Barrier
        self.barrier.argtypes = [ctypes.c_void_p]

    def run(self, tensor):
        code = self.allreduce(MPI_IN_PLACE, ctypes.c_void_p(tensor.data_ptr()),
                              tensor.numel(), self.float, self.sum, self.world)
        if code != 0:
            raise RuntimeError(f"MPI_Allreduce returned {code}")


def seconds_per_call(runs, repeats, rounds):
    """For each run, the median over rounds of the mean time of `repeats`
    calls, taken after a barrier so every rank starts together (rank 0's
    clock). Rounds alternate between the runs, so a busy moment of the
    machine falls on all of them alike."""
    for run in runs:
        run()  # warm-up: connections, buffers
    times = [[] for _ in runs]
    for _ in range(rounds):
        for run, kept in zip(runs, times):
            _C.dist_barrier()
            start = time.perf_counter()
            for _ in range(repeats):
                run()
            kept.append((time.perf_counter() - start) / repeats)
    return [statistics.median(kept) for kept in times]


def step_seconds(model, inputs, targets, steps, communicate=True, together=True):
    """Mean seconds of a training step (SGD, MSE) over `steps` steps, after
    a barrier when every rank runs it (`together`); `communicate` False runs
    DDP's steps under no_sync (no all_reduce)."""
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-4)
    if together:
        _C.dist_barrier()
    start = time.perf_counter()
    for _ in range(steps):
        optimizer.zero_grad()
        with contextlib.nullcontext() if communicate else model.no_sync():
            torch.nn.functional.mse_loss(model(inputs), targets).backward()
        optimizer.step()
    next(model.parameters()).sum().item()  # wait for the last step to finish
    return (time.perf_counter() - start) / steps


def ddp_scaling(rank, size, batch, layers, bucket_mb, steps, rounds):
    """Weak scaling and overlap, in one run. Each round measures, in turn:
    one process alone (rank 0, the others wait in a barrier), DDP with its
    collectives asynchronous (backward goes on while a bucket is reduced),
    the same DDP forced synchronous (PORTA_DIST_SYNC=1: each bucket's
    all_reduce blocks backward), and DDP under no_sync (no communication).
    Medians over rounds; the ratios are of medians of the same run."""
    width = 1024

    def make_model():
        torch.manual_seed(0)
        blocks = []
        for _ in range(layers):
            blocks += [torch.nn.Linear(width, width), torch.nn.ReLU()]
        return torch.nn.Sequential(*blocks, torch.nn.Linear(width, 10)).to("porta")

    inputs = torch.randn(batch, width).to("porta")
    targets = torch.randn(batch, 10).to("porta")
    alone_model = make_model() if rank == 0 else None
    ddp = DistributedDataParallel(make_model(), bucket_cap_mb=bucket_mb)
    kinds = ("alone", "overlapped", "synchronous", "no_sync")
    times = {kind: [] for kind in kinds}
    for round_ in range(rounds + 1):  # the first round warms up
        for kind in kinds:
            if kind == "alone":
                seconds = step_seconds(alone_model, inputs, targets, steps,
                                       together=False) if rank == 0 else 0.0
                _C.dist_barrier()
            else:
                os.environ["PORTA_DIST_SYNC"] = "1" if kind == "synchronous" else "0"
                seconds = step_seconds(ddp, inputs, targets, steps,
                                       communicate=kind != "no_sync")
                os.environ["PORTA_DIST_SYNC"] = "0"
            if round_:
                times[kind].append(seconds)
    median = {kind: statistics.median(kept) for kind, kept in times.items()}
    if rank == 0:
        parameters = sum(p.numel() for p in ddp.module.parameters())
        buckets = len(ddp.reducer._get_zeros_like_grad_buckets())
        print(f"\nDDP, MLP of {layers} x {width} ({parameters / 1e6:.1f}M parameters, "
              f"{parameters * 4 / 2**20:.0f} MB of gradients in {buckets} buckets of <= "
              f"{bucket_mb} MB), batch {batch} per rank, {steps} steps x {rounds} rounds, "
              f"medians in ms/step:")
        for kind in kinds:
            print(f"  {kind:>12}: {median[kind] * 1e3:7.1f}   (rounds: "
                  f"{', '.join(f'{t * 1e3:.1f}' for t in times[kind])})")
        print(f"  scaling efficiency at {size} ranks (alone / overlapped): "
              f"{median['alone'] / median['overlapped']:.2f}; synchronous: "
              f"{median['alone'] / median['synchronous']:.2f}")
        print(f"  overlap gain (synchronous / overlapped step time): "
              f"{median['synchronous'] / median['overlapped']:.2f}")
        print(f"  communication left exposed (overlapped - no_sync): "
              f"{(median['overlapped'] - median['no_sync']) * 1e3:.1f} ms; synchronous: "
              f"{(median['synchronous'] - median['no_sync']) * 1e3:.1f} ms", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--max-mb", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--ddp-only", action="store_true", help="skip the bandwidth table")
    parser.add_argument("--ddp-batch", type=int, default=32)
    parser.add_argument("--ddp-layers", type=int, default=6)
    parser.add_argument("--ddp-bucket-mb", type=float, default=4.0)
    parser.add_argument("--ddp-steps", type=int, default=8)
    parser.add_argument("--ddp-rounds", type=int, default=5)
    args = parser.parse_args()

    dist.init_process_group("porta")
    rank, size = dist.get_rank(), dist.get_world_size()
    plain = PlainMPI()
    bus = 2 * (size - 1) / size
    if rank == 0:
        print(f"{size} ranks, float32 sum, bus bandwidth in GB/s (median of {args.rounds} "
              f"rounds)")
        print(f"{'size':>8} {'torch.dist':>11} {'porta_dist':>11} {'MPI':>8} "
              f"{'torch/MPI':>10} {'porta/MPI':>10}")
    megabytes = 1
    while megabytes <= args.max_mb and not args.ddp_only:
        count = megabytes * 2**20 // 4
        porta = torch.zeros(count, device="porta")
        view = _tensors.unwrap(porta)
        host = torch.zeros(count)
        repeats = max(1, 64 // megabytes)
        results = seconds_per_call([lambda: dist.all_reduce(porta),
                                    lambda: _C.dist_all_reduce(view, 0),
                                    lambda: plain.run(host)], repeats, args.rounds)
        if rank == 0:
            rates = [count * 4 * bus / t / 1e9 for t in results]
            print(f"{megabytes:>6}MB {rates[0]:>11.2f} {rates[1]:>11.2f} {rates[2]:>8.2f} "
                  f"{rates[0] / rates[2]:>10.2f} {rates[1] / rates[2]:>10.2f}", flush=True)
        del porta, view, host
        megabytes *= 2
    ddp_scaling(rank, size, args.ddp_batch, args.ddp_layers, args.ddp_bucket_mb,
                args.ddp_steps, args.ddp_rounds)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
