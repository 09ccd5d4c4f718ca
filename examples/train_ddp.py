"""Data-parallel training on "porta" with PyTorch's own distributed APIs:

    mpirun -np 2 python examples/train_ddp.py [--zero]

Each process trains the same MLP on its share of the UCI digits
(DistributedSampler), DistributedDataParallel all-reduces the gradients in
buckets through the "porta" backend (MPI underneath), and at the end the
ranks check that their parameters are bitwise identical, and rank 0 checks
them against one process trained on the same global batches. With --zero,
the optimizer is Adam sharded across the ranks (ZeRO-1: PyTorch's
ZeroRedundancyOptimizer, each rank holding the state of its own share of
the parameters).
"""
import argparse
import os
import sys
import time

# The ranks share this machine's cores: one thread each unless told otherwise.
os.environ.setdefault("PORTA_NUM_THREADS", "1")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402
from torch.distributed.optim import ZeroRedundancyOptimizer  # noqa: E402
from torch.nn.parallel import DistributedDataParallel  # noqa: E402
from torch.utils.data import DistributedSampler, TensorDataset  # noqa: E402

import torch_porta  # noqa: F401  (the "porta" device)
import torch_porta.distributed  # noqa: F401  (the "porta" backend)

EPOCHS = 2
BATCH = 32  # per rank
DEVICE = "porta"


def make_model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(),
                         nn.Linear(64, 10)).to(DEVICE)


def load_dataset():
    digits = load_digits()
    images = torch.tensor(digits.data, dtype=torch.float32) / 16.0
    return TensorDataset(images, torch.tensor(digits.target, dtype=torch.int64))


def batches(dataset, sampler, epoch):
    """This rank's batches of one epoch, in the sampler's order."""
    sampler.set_epoch(epoch)
    order = list(sampler)
    for start in range(0, len(order) - BATCH + 1, BATCH):
        images, labels = dataset[order[start:start + BATCH]]
        yield images.to(DEVICE), labels.to(DEVICE)


def make_optimizer(parameters, zero):
    if zero:
        return ZeroRedundancyOptimizer(parameters, optimizer_class=torch.optim.Adam, lr=0.003)
    return torch.optim.SGD(parameters, lr=0.1, momentum=0.9)


def single_process_optimizer(parameters, zero):
    return torch.optim.Adam(parameters, lr=0.003) if zero else make_optimizer(parameters, False)


def train(model, optimizer, steps):
    loss = None
    for images, labels in steps:
        optimizer.zero_grad()
        loss = F.cross_entropy(model(images), labels)
        loss.backward()
        optimizer.step()
    return loss


def flat_parameters(model):
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--zero", action="store_true",
                        help="Adam with its state sharded across the ranks (ZeRO-1)")
    zero = parser.parse_args().zero
    dist.init_process_group("porta")
    rank, size = dist.get_rank(), dist.get_world_size()
    dataset = load_dataset()
    samplers = [DistributedSampler(dataset, num_replicas=size, rank=r, seed=0)
                for r in range(size)]

    model = DistributedDataParallel(make_model())
    optimizer = make_optimizer(model.parameters(), zero)
    start = time.perf_counter()
    for epoch in range(EPOCHS):
        loss = train(model, optimizer, batches(dataset, samplers[rank], epoch))
        if rank == 0:
            print(f"epoch {epoch}: loss {loss.item():.4f}", flush=True)
    seconds = time.perf_counter() - start

    mine = flat_parameters(model.module)
    everyone = torch.empty(size * mine.numel(), device=DEVICE)
    dist.all_gather_single(everyone, mine)
    copies = everyone.cpu().reshape(size, -1)
    identical = all(torch.equal(copies[0], copies[r]) for r in range(size))

    failed = torch.zeros(1, device=DEVICE)
    if rank == 0:
        # One process over the same global batches: every rank's i-th batch.
        reference = make_model()
        reference_optimizer = single_process_optimizer(reference.parameters(), zero)
        for epoch in range(EPOCHS):
            per_rank = [list(batches(dataset, sampler, epoch)) for sampler in samplers]
            train(reference, reference_optimizer, [(torch.cat([b[i][0] for b in per_rank]),
                               torch.cat([b[i][1] for b in per_rank]))
                              for i in range(len(per_rank[0]))])
        want = flat_parameters(reference).cpu()
        difference = (copies[0] - want).abs().max().item()
        close = torch.allclose(copies[0], want, rtol=1e-4, atol=1e-5)
        print(f"{size} ranks, {EPOCHS} epochs{' (ZeRO-1 Adam)' if zero else ''} in "
              f"{seconds:.2f} s; parameters identical on "
              f"every rank: {identical}; max difference from one process over the global "
              f"batch: {difference:.3g} ({'within' if close else 'OUTSIDE'} fp32 tolerance)")
        failed += 0 if identical and close else 1
    dist.all_reduce(failed)
    dist.destroy_process_group()
    return 0 if failed.item() == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
