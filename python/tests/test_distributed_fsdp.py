"""FSDP2 (torch.distributed.fsdp.fully_shard) and DTensor on "porta"
devices across MPI ranks: each test runs this file under `mpirun -np 2`
with a scenario name (test_distributed.py's launcher); the ranks compare
their results with one process running the same model on the same data,
and print one line each that the test reads back.

Run a scenario by hand: mpirun -np 2 python python/tests/test_distributed_fsdp.py fsdp 0
"""
import sys

import pytest
import torch

import torch_porta
from test_distributed import _check, _lines, _mpirun

# MPI ranks need the cores to themselves (test_distributed.py's convention).
pytestmark = pytest.mark.serial


@pytest.mark.parametrize("device", [
    0, pytest.param(1, marks=pytest.mark.skipif(
        torch.porta.device_count() < 2,
        reason="needs a second porta device (PORTA_VISIBLE_DEVICES=cpu,opencl with PoCL)"))])
def test_fsdp2_training_matches_one_process(device):
    done, _ = _mpirun("fsdp", arguments=[str(device)], script=__file__)
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(_lines(done.stdout, "fsdp ok")) == 2, done.stdout + done.stderr


def test_fsdp2_mixed_precision_cpu_offload_meta_init_and_checkpoints(tmp_path):
    done, _ = _mpirun("fsdp_policies", arguments=[str(tmp_path / "checkpoint")],
                      script=__file__)
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(_lines(done.stdout, "fsdp policies ok")) == 2, done.stdout + done.stderr
    # torch.distributed.checkpoint wrote each rank's shards to a file of its own.
    assert sorted(p.name for p in (tmp_path / "checkpoint").glob("*.distcp")) == [
        "__0_0.distcp", "__1_0.distcp"]


def test_dtensor_ops_and_tensor_parallel_training_match_one_process():
    done, _ = _mpirun("dtensor", script=__file__)
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(_lines(done.stdout, "dtensor ok")) == 2, done.stdout + done.stderr


# ---------------------------------------------------------------- the ranks

# Losses and parameters of a sharded run equal one process's up to float
# rounding: the sharded run sums gradients in another order.
RTOL, ATOL = 1e-5, 1e-6


def _batches(steps, shapes, seed=1):
    generator = torch.Generator().manual_seed(seed)
    return [tuple(torch.randn(*shape, generator=generator) for shape in shapes)
            for _ in range(steps)]


def _train(model, optimizer, batches, average=None):
    """The loss of each step; average(loss) makes the ranks' losses over
    their shards of the batch the loss of the whole batch."""
    losses = []
    for inputs, targets in batches:
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(inputs), targets)
        loss.backward()
        optimizer.step()
        losses.append(average(loss.detach()) if average else loss.item())
    return losses


def _check_close(got, want, what):
    got, want = torch.as_tensor(got), torch.as_tensor(want)
    _check(torch.allclose(got, want, rtol=RTOL, atol=ATOL),
           f"{what}: max difference {(got - want).abs().max().item():.3g}\n{got}\n{want}")


def _count_calls(group, names, counts):
    """Counts the group's calls of each method named (as the DDP scenario
    does): FSDP2 must reach the porta backend's collectives."""
    for name in names:
        method = getattr(group, name)

        def counting(*args, _method=method, _name=name, **kwargs):
            counts[_name] = counts.get(_name, 0) + 1
            return _method(*args, **kwargs)
        setattr(group, name, counting)


def _fsdp():
    import torch.distributed as dist
    import torch_porta.distributed  # noqa: F401  (registers the backend)
    from torch.distributed.fsdp import fully_shard
    from torch.distributed.tensor import DTensor, Shard

    # The device of every rank: porta:0 (the CPU), or porta:1 (OpenCL),
    # named to init_process_group as FSDP2 scripts for CUDA do.
    device = torch.device("porta", int(sys.argv[2]))
    torch.porta.set_device(device)
    dist.init_process_group("porta", device_id=device)
    rank, size = dist.get_rank(), dist.get_world_size()
    counts = {}
    _count_calls(dist.distributed_c10d._get_default_group(),
                 ("all_gather_single", "reduce_scatter_single"), counts)

    def average(loss):
        dist.all_reduce(loss, op=dist.ReduceOp.AVG)
        return loss.item()

    def run(make_model, shard, shapes, steps, compared=lambda name, value: value):
        """Trains the model sharded by shard() on each rank's half of every
        batch, and one copy of it on the whole batches in this process;
        compared(name, value) is the part of a parameter the two must agree on."""
        batches = _batches(steps, shapes)
        local = shapes[0][0] // size
        shards = [tuple(t[rank * local:(rank + 1) * local].to(device) for t in batch)
                  for batch in batches]
        model = make_model().to(device)
        inner = shard(model)
        for parameter in model.parameters():
            _check(isinstance(parameter, DTensor) and parameter.placements == (Shard(0),),
                   f"fully_shard left a parameter {type(parameter).__name__} "
                   f"{getattr(parameter, 'placements', '')}")
            _check(parameter.to_local().device == device,
                   f"a shard is on {parameter.to_local().device}")
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
        losses = _train(model, optimizer, shards[:1], average)
        # An inner module reshards after its forward: FSDP2 frees the
        # gathered parameters by resizing their porta storage to 0.
        gathered = inner._get_fsdp_state()._fsdp_param_group.fsdp_params[0]._unsharded_param
        _check(gathered.untyped_storage().size() == 0,
               f"gathered parameters kept {gathered.untyped_storage().size()} bytes")
        losses += _train(model, optimizer, shards[1:], average)
        trained = {name: p.full_tensor().detach().cpu() for name, p in model.named_parameters()}

        reference = make_model()
        want = _train(reference, torch.optim.AdamW(reference.parameters(), lr=1e-2), batches)
        _check_close(losses, want, f"{type(model).__name__} losses")
        for name, value in reference.named_parameters():
            _check_close(compared(name, trained[name]), compared(name, value.detach()),
                         f"{type(model).__name__} {name}")
        return losses[-1]

    def mlp():
        torch.manual_seed(0)
        return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(),
                                   torch.nn.Linear(32, 32), torch.nn.GELU(),
                                   torch.nn.Linear(32, 4))

    def shard_layers(model):
        for layer in model:
            if isinstance(layer, torch.nn.Linear):
                fully_shard(layer)
        fully_shard(model)
        return model[0]

    def block():
        torch.manual_seed(0)
        return torch.nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True)

    def without_key_bias(name, value):
        """Attention is blind to the key projection's bias: its gradient is
        rounding noise, different in each run, that AdamW scales up to steps
        of the learning rate's size."""
        if name != "self_attn.in_proj_bias":
            return value
        width = value.numel() // 3
        return torch.cat([value[:width], value[2 * width:]])

    def shard_block(model):
        fully_shard(model.linear1)
        fully_shard(model)
        return model.linear1

    torch_porta.reset_metrics()
    mlp_loss = run(mlp, shard_layers, [(8, 16), (8, 4)], steps=4)
    block_loss = run(block, shard_block, [(4, 5, 16), (4, 5, 16)], steps=3,
                     compared=without_key_bias)
    fallbacks = torch_porta.metrics()["fallbacks"]
    _check(fallbacks == {}, f"ops fell back to the CPU: {fallbacks}")
    _check(counts.get("all_gather_single", 0) > 0 and counts.get("reduce_scatter_single", 0) > 0,
           f"FSDP2's collectives did not reach the porta backend: {counts}")
    dist.destroy_process_group()
    print(f"fsdp ok rank {rank}: MLP last loss {mlp_loss:.6f}, transformer block last loss "
          f"{block_loss:.6f}, {counts['all_gather_single']} all-gathers, "
          f"{counts['reduce_scatter_single']} reduce-scatters", flush=True)


def _fsdp_policies():
    import torch.distributed as dist
    import torch_porta.distributed  # noqa: F401  (registers the backend)
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import (
        StateDictOptions, get_model_state_dict, get_state_dict, set_model_state_dict,
        set_state_dict)
    from torch.distributed.fsdp import CPUOffloadPolicy, MixedPrecisionPolicy, fully_shard

    dist.init_process_group("porta")
    rank, size = dist.get_rank(), dist.get_world_size()
    torch_porta.reset_metrics()

    def mlp():
        torch.manual_seed(0)
        return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(),
                                   torch.nn.Linear(32, 4))

    def average(loss):
        dist.all_reduce(loss, op=dist.ReduceOp.AVG)
        return loss.item()

    batches = _batches(3, [(8, 16), (8, 4)])
    local = 8 // size
    shards = [(x[rank * local:(rank + 1) * local], y[rank * local:(rank + 1) * local])
              for x, y in batches]
    on_porta = [(x.to("porta"), y.to("porta")) for x, y in shards]
    reference = mlp()
    want = _train(reference, torch.optim.AdamW(reference.parameters(), lr=1e-2), batches)

    # Computing in bfloat16 (gradients reduced in float32): bfloat16's
    # rounding apart, the same training.
    model = mlp().to("porta")
    policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    fully_shard(model[0], mp_policy=policy)
    fully_shard(model, mp_policy=policy)
    bfloat16 = _train(lambda x: model(x).float(),
                      torch.optim.AdamW(model.parameters(), lr=1e-2), on_porta, average)
    bfloat16_gap = max(abs(a - b) / b for a, b in zip(bfloat16, want))
    _check(bfloat16_gap < 2e-2, f"bfloat16 losses {bfloat16}, float32 {want}")

    # Parameters and optimizer state kept on the CPU, computed on porta.
    model = mlp().to("porta")
    fully_shard(model, offload_policy=CPUOffloadPolicy(pin_memory=False))
    _check(next(model.parameters()).to_local().device.type == "cpu",
           "CPU offload left the shards on porta")
    offloaded = _train(lambda x: model(x.to("porta")).cpu(),
                       torch.optim.AdamW(model.parameters(), lr=1e-2), shards, average)
    _check_close(offloaded, want, "CPU-offloaded losses")

    # The whole model gathered into one state dict on rank 0, and loaded
    # back into a sharded model from rank 0.
    model = mlp().to("porta")
    fully_shard(model)
    _train(model, torch.optim.AdamW(model.parameters(), lr=1e-2), on_porta, average)
    full = get_model_state_dict(model, options=StateDictOptions(full_state_dict=True,
                                                                cpu_offload=True))
    if rank == 0:
        for name, value in reference.state_dict().items():
            _check_close(full[name], value, f"gathered {name}")
    else:
        _check(full == {}, f"rank {rank} got a full state dict: {list(full)}")
    loaded = mlp().to("porta")
    fully_shard(loaded)
    set_model_state_dict(loaded, full, options=StateDictOptions(full_state_dict=True,
                                                                broadcast_from_rank0=True))
    for name, value in reference.state_dict().items():
        _check_close(loaded.state_dict()[name].full_tensor().cpu(), value, f"loaded {name}")

    # Built on the meta device, sharded, then given porta memory and
    # initialized shard by shard (DTensor's random ops on porta).
    with torch.device("meta"):
        model = mlp()
    fully_shard(model)
    model.to_empty(device="porta")
    for layer in (model[0], model[2]):
        layer.reset_parameters()
    for name, parameter in model.named_parameters():
        shard = parameter.to_local()
        _check(shard.device.type == "porta" and bool(torch.isfinite(shard).all())
               and bool(shard.ne(0).any()), f"meta-initialized {name}: {shard}")
    model(on_porta[0][0]).sum().backward()
    _check(all(p.grad is not None for p in model.parameters()), "no gradients after meta init")

    # A sharded checkpoint of model and optimizer (torch.distributed.checkpoint:
    # each rank writes its shards), loaded into a model trained otherwise.
    trained = mlp().to("porta")
    fully_shard(trained)
    optimizer = torch.optim.AdamW(trained.parameters(), lr=1e-2)
    _train(trained, optimizer, on_porta[:2], average)
    model_state, optimizer_state = get_state_dict(trained, optimizer)
    dcp.save({"model": model_state, "optimizer": optimizer_state}, checkpoint_id=sys.argv[2])
    restored = mlp().to("porta")
    fully_shard(restored)
    restored_optimizer = torch.optim.AdamW(restored.parameters(), lr=1e-2)
    _train(restored, restored_optimizer, on_porta[2:], average)
    model_state, optimizer_state = get_state_dict(restored, restored_optimizer)
    state = {"model": model_state, "optimizer": optimizer_state}
    dcp.load(state, checkpoint_id=sys.argv[2])
    set_state_dict(restored, restored_optimizer, model_state_dict=state["model"],
                   optim_state_dict=state["optimizer"])
    # Both go on for two steps (the second's loss shows the optimizer's
    # restored state): the restored run must follow the saved one.
    after = [_train(m, o, on_porta[2:] + on_porta[:1], average)
             for m, o in ((trained, optimizer), (restored, restored_optimizer))]
    _check(after[0] == after[1], f"the restored run's losses {after[1]}, the saved run's "
                                 f"{after[0]}")

    fallbacks = torch_porta.metrics()["fallbacks"]
    _check(fallbacks == {}, f"ops fell back to the CPU: {fallbacks}")
    dist.destroy_process_group()
    print(f"fsdp policies ok rank {rank}: bfloat16 losses within {bfloat16_gap:.2%} of "
          f"float32", flush=True)


def _dtensor():
    import torch.distributed as dist
    import torch_porta.distributed  # noqa: F401  (registers the backend)
    from torch.distributed.device_mesh import init_device_mesh
    import torch.distributed.tensor as dtensor
    from torch.distributed.tensor import Partial, Replicate, Shard, distribute_tensor
    from torch.distributed.tensor.parallel import (
        ColwiseParallel, RowwiseParallel, parallelize_module)

    mesh = init_device_mesh("porta", (2,))
    rank = dist.get_rank()
    group = mesh.get_group()
    _check(group._get_backend(torch.device("porta", 0)) is group, "the group is not its backend")
    try:
        group._get_backend(torch.device("meta"))
        _check(False, "the porta group gave a backend for meta tensors")
    except RuntimeError as error:
        _check("porta and CPU tensors" in str(error), str(error))
    torch_porta.reset_metrics()

    a, b = _batches(1, [(8, 6), (6, 5)], seed=0)[0]
    rows = distribute_tensor(a.to("porta"), mesh, [Shard(0)])
    _check(rows.to_local().shape == (4, 6) and rows.to_local().device.type == "porta",
           f"Shard(0) gave this rank {rows.to_local().shape} on {rows.to_local().device}")
    _check(torch.equal(rows.to_local().cpu(), a[rank * 4:(rank + 1) * 4]),
           "Shard(0) gave this rank other rows")
    replicated = distribute_tensor(b.to("porta"), mesh, [Replicate()])
    result = (rows @ replicated).relu() * 2 + 1
    _check(result.placements == (Shard(0),), f"row-sharded matmul gave {result.placements}")
    _check_close(result.full_tensor().cpu(), (a @ b).relu() * 2 + 1, "sharded matmul")
    # Columns of a times rows of b: each rank holds a partial sum.
    inner = distribute_tensor(a.to("porta"), mesh, [Shard(1)]) @ \
        distribute_tensor(b.to("porta"), mesh, [Shard(0)])
    _check(inner.placements == (Partial(),), f"inner-dimension matmul gave {inner.placements}")
    _check_close(inner.full_tensor().cpu(), a @ b, "partial sums reduced")
    _check_close(rows.sum().full_tensor().cpu(), a.sum(), "sum of a sharded tensor")
    _check_close(rows.redistribute(mesh, [Replicate()]).to_local().cpu(), a,
                 "Shard(0) redistributed to Replicate")

    # DTensor's random ops on porta: each shard draws its own numbers, and
    # every rank draws the same replicated ones.
    torch.manual_seed(5)
    drawn = dtensor.randn(8, 4, device_mesh=mesh, placements=[Shard(0)]).full_tensor().cpu()
    _check(not torch.equal(drawn[:4], drawn[4:]), "both shards drew the same numbers")
    replica = dtensor.randn(4, device_mesh=mesh, placements=[Replicate()])
    _check_close(replica.redistribute(mesh, [Shard(0)]).full_tensor().cpu(),
                 replica.to_local().cpu(), "replicated random numbers")

    # Tensor parallelism: the first layer's outputs split by column, the
    # second's inputs by row; every rank sees the whole batch.
    def mlp():
        torch.manual_seed(0)
        return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(),
                                   torch.nn.Linear(32, 4))

    batches = _batches(4, [(8, 16), (8, 4)])
    model = parallelize_module(mlp().to("porta"), mesh,
                               {"0": ColwiseParallel(), "2": RowwiseParallel()})
    _check(model[0].weight.to_local().shape == (16, 16),
           f"column-parallel weight shard {model[0].weight.to_local().shape}")
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    losses = _train(model, optimizer, [(x.to("porta"), y.to("porta")) for x, y in batches])
    trained = torch.cat([p.full_tensor().reshape(-1) for p in model.parameters()]).cpu()
    reference = mlp()
    want = _train(reference, torch.optim.AdamW(reference.parameters(), lr=1e-2), batches)
    _check_close(losses, want, "tensor-parallel losses")
    _check_close(trained, torch.cat([p.detach().reshape(-1) for p in reference.parameters()]),
                 "tensor-parallel parameters")
    fallbacks = torch_porta.metrics()["fallbacks"]
    _check(fallbacks == {}, f"ops fell back to the CPU: {fallbacks}")
    dist.destroy_process_group()
    print(f"dtensor ok rank {rank}: tensor-parallel last loss {losses[-1]:.6f}", flush=True)


if __name__ == "__main__":
    {"fsdp": _fsdp, "fsdp_policies": _fsdp_policies, "dtensor": _dtensor}[sys.argv[1]]()
