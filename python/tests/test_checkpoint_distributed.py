"""torch_porta.checkpoint in a 2-rank DDP job with a ZeroRedundancyOptimizer
(MPI, this file run under mpirun): rank 0 writes the model, each rank its
optimizer shard and generators, one manifest names them all; training
resumed from the checkpoint ends with the parameters of the run that was
never stopped, and a damaged shard of one rank is refused on every rank."""
import os
import sys

import pytest

from test_distributed import _check, _lines, _mpirun, _train

pytestmark = pytest.mark.serial


def test_a_ddp_zero_job_resumes_from_its_per_rank_shards(tmp_path):
    done, _ = _mpirun("zero", arguments=[str(tmp_path / "ckpt")], script=__file__)
    assert done.returncode == 0, done.stdout + done.stderr
    assert _lines(done.stdout, "zero ok") == ["zero ok rank 0 of 2", "zero ok rank 1 of 2"], \
        done.stdout + done.stderr
    assert sorted(name.split("-")[0] for name in os.listdir(tmp_path / "ckpt")) == [
        "manifest.json", "rank0", "rank1", "state"]


def test_a_two_rank_zero_checkpoint_resumes_in_one_process(tmp_path):
    """The ranks' ZeRO shards assemble into a plain Adam's state: the
    resumed single-process run matches one that ran all its steps alone
    (up to the rounding of averaging two half-batch gradients)."""
    import torch

    import torch_porta
    done, _ = _mpirun("zero_save", arguments=[str(tmp_path / "ckpt")], script=__file__)
    assert done.returncode == 0, done.stdout + done.stderr
    data = [(x.to("porta"), y.to("porta")) for x, y in _batches()]
    alone, optimizer = _plain(seed=0)
    _train(alone, optimizer, data)
    resumed, optimizer = _plain(seed=1)
    step = torch_porta.checkpoint.load(tmp_path / "ckpt", model=resumed,
                                       optimizer=optimizer)["step"]
    assert step == 3 and len(optimizer.state) == 4
    _train(resumed, optimizer, data[step:])
    for a, b in zip(alone.parameters(), resumed.parameters()):
        torch.testing.assert_close(b.cpu(), a.cpu(), rtol=1e-4, atol=1e-6)


def test_a_one_process_checkpoint_resumes_on_two_zero_ranks(tmp_path):
    """A plain Adam's checkpoint loads into a ZeroRedundancyOptimizer on 2
    ranks, each taking its partition; the ranks end where one process that
    ran all the steps did (the scenario compares with its checkpoint)."""
    import torch_porta
    data = [(x.to("porta"), y.to("porta")) for x, y in _batches()]
    alone, optimizer = _plain(seed=0)
    _train(alone, optimizer, data)
    torch_porta.checkpoint.save(tmp_path / "alone", model=alone, step=6, rng=False)
    model, optimizer = _plain(seed=0)
    _train(model, optimizer, data[:3])
    torch_porta.checkpoint.save(tmp_path / "ckpt", model=model, optimizer=optimizer, step=3)
    done, _ = _mpirun("zero_resume", arguments=[str(tmp_path)], script=__file__)
    assert done.returncode == 0, done.stdout + done.stderr
    assert _lines(done.stdout, "zero_resume ok") == [
        "zero_resume ok rank 0 of 2", "zero_resume ok rank 1 of 2"], done.stdout + done.stderr


def _zero_resume():
    import torch
    import torch.distributed as dist
    from torch.distributed.optim import ZeroRedundancyOptimizer
    from torch.nn.parallel import DistributedDataParallel

    import torch_porta

    dist.init_process_group("porta")
    rank, size = dist.get_rank(), dist.get_world_size()
    shards = [(x[rank * 4:(rank + 1) * 4].to("porta"), y[rank * 4:(rank + 1) * 4].to("porta"))
              for x, y in _batches()]
    model, _ = _plain(seed=1)
    model = DistributedDataParallel(model)
    optimizer = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.Adam,
                                        lr=0.01)
    step = torch_porta.checkpoint.load(os.path.join(sys.argv[2], "ckpt"), model=model,
                                       optimizer=optimizer)["step"]
    _check(step == 3 and len(optimizer.optim.state) > 0, f"step {step}")
    _train(model, optimizer, shards[step:])
    alone, _ = _plain(seed=2)
    torch_porta.checkpoint.load(os.path.join(sys.argv[2], "alone"), model=alone)
    for a, b in zip(alone.parameters(), model.module.parameters()):
        torch.testing.assert_close(b.cpu(), a.cpu(), rtol=1e-4, atol=1e-6)
    dist.destroy_process_group()
    print(f"zero_resume ok rank {rank} of {size}", flush=True)


def _batches():
    import torch
    generator = torch.Generator().manual_seed(2)
    return [(torch.randn(8, 16, generator=generator), torch.randn(8, 4, generator=generator))
            for _ in range(6)]


def _plain(seed):
    import torch
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Tanh(),
                                torch.nn.Linear(32, 4)).to("porta")
    return model, torch.optim.Adam(model.parameters(), lr=0.01)


def _zero_save():
    """Three steps of the 2-rank ZeRO job, then a checkpoint."""
    import torch
    import torch.distributed as dist
    from torch.distributed.optim import ZeroRedundancyOptimizer
    from torch.nn.parallel import DistributedDataParallel

    import torch_porta

    dist.init_process_group("porta")
    rank = dist.get_rank()
    shards = [(x[rank * 4:(rank + 1) * 4].to("porta"), y[rank * 4:(rank + 1) * 4].to("porta"))
              for x, y in _batches()]
    model, _ = _plain(seed=0)
    model = DistributedDataParallel(model)
    optimizer = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.Adam,
                                        lr=0.01)
    _train(model, optimizer, shards[:3])
    torch_porta.checkpoint.save(sys.argv[2], model=model, optimizer=optimizer, step=3)
    dist.destroy_process_group()


def _zero():
    import torch
    import torch.distributed as dist
    from torch.distributed.optim import ZeroRedundancyOptimizer
    from torch.nn.parallel import DistributedDataParallel

    import torch_porta
    from torch_porta.checkpoint import CheckpointError

    dist.init_process_group("porta")
    rank, size = dist.get_rank(), dist.get_world_size()
    generator = torch.Generator().manual_seed(2)
    data = [(torch.randn(8, 16, generator=generator), torch.randn(8, 4, generator=generator))
            for _ in range(6)]
    shards = [(x[rank * 4:(rank + 1) * 4].to("porta"), y[rank * 4:(rank + 1) * 4].to("porta"))
              for x, y in data]

    def fresh(seed):
        torch.manual_seed(seed)
        model = DistributedDataParallel(torch.nn.Sequential(
            torch.nn.Linear(16, 32), torch.nn.Tanh(), torch.nn.Linear(32, 4)).to("porta"))
        return model, ZeroRedundancyOptimizer(model.parameters(),
                                              optimizer_class=torch.optim.Adam, lr=0.01)

    def parameters(model):
        return torch.cat([p.detach().reshape(-1) for p in model.parameters()]).cpu()

    path = sys.argv[2]
    model, optimizer = fresh(0)
    _train(model, optimizer, shards)
    uninterrupted = parameters(model)

    model, optimizer = fresh(0)
    _train(model, optimizer, shards[:3])
    torch_porta.checkpoint.save(path, model=model, optimizer=optimizer, step=3)
    model, optimizer = fresh(1)
    step = torch_porta.checkpoint.load(path, model=model, optimizer=optimizer)["step"]
    _check(step == 3, f"step {step}")
    _train(model, optimizer, shards[step:])
    resumed = parameters(model)
    _check(torch.equal(uninterrupted, resumed),
           f"resumed differs by {(uninterrupted - resumed).abs().max().item()}")

    dist.barrier()
    if rank == 1:  # one rank's shard is cut short: every rank refuses
        (shard,) = [n for n in os.listdir(path) if n.startswith("rank1-")]
        with open(os.path.join(path, shard), "r+b") as f:
            f.truncate(100)
    dist.barrier()
    before = parameters(model)
    try:
        torch_porta.checkpoint.load(path, model=model, optimizer=optimizer)
        _check(False, "a truncated shard was loaded")
    except CheckpointError as error:
        _check("rank1-of-2" in str(error), str(error))
    _check(torch.equal(parameters(model), before), "the model changed")
    dist.destroy_process_group()
    print(f"zero ok rank {rank} of {size}", flush=True)


if __name__ == "__main__":
    {"zero": _zero, "zero_save": _zero_save, "zero_resume": _zero_resume}[sys.argv[1]]()
