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

DDP scaling (weak: the same batch per rank): a training step of an MLP on
one process alone (rank 0, while the others wait) against the same step
under DistributedDataParallel on every rank; efficiency = alone / DDP step
time, 1.0 being perfect. The same DDP step under no_sync (no all_reduce)
tells what sharing the machine costs apart from communication.
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


def step_seconds(model, batch, steps, communicate=True):
    """Median seconds of a training step (SGD, MSE), after two warm-up steps;
    `communicate` False runs DDP's steps under no_sync (no all_reduce)."""
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    inputs = torch.randn(batch, 1024).to("porta")
    targets = torch.randn(batch, 10).to("porta")
    times = []
    for step in range(steps + 2):
        start = time.perf_counter()
        optimizer.zero_grad()
        with contextlib.nullcontext() if communicate else model.no_sync():
            torch.nn.functional.mse_loss(model(inputs), targets).backward()
        optimizer.step()
        next(model.parameters()).sum().item()  # wait for the step to finish
        if step >= 2:
            times.append(time.perf_counter() - start)
    return statistics.median(times)


def ddp_scaling(rank, size, batch=64, steps=15):
    def make_model():
        torch.manual_seed(0)
        return torch.nn.Sequential(torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
                                   torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
                                   torch.nn.Linear(1024, 10)).to("porta")

    alone = step_seconds(make_model(), batch, steps) if rank == 0 else 0.0
    _C.dist_barrier()
    model = make_model()
    ddp = DistributedDataParallel(model)
    together = step_seconds(ddp, batch, steps)
    computing = step_seconds(ddp, batch, steps, communicate=False)
    if rank == 0:
        parameters = sum(p.numel() for p in model.parameters())
        print(f"DDP, MLP of {parameters / 1e6:.1f}M parameters, batch {batch} per rank: "
              f"1 process {alone * 1e3:.1f} ms/step, {size} ranks {together * 1e3:.1f} ms/step "
              f"-> scaling efficiency {alone / together:.2f} "
              f"({size * batch / together:.0f} vs {batch / alone:.0f} samples/s); "
              f"{size} ranks without all_reduce (no_sync) {computing * 1e3:.1f} ms/step",
              flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--max-mb", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=5)
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
    while megabytes <= args.max_mb:
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
    ddp_scaling(rank, size)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
