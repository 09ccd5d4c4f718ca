"""Checkpoints of data-parallel training as safetensors files.

save_checkpoint(path, model, optimizer, step) writes, on rank 0, the
model's state dict and the optimizer's (tensors as safetensors entries,
everything else as JSON in the file's metadata); with a
ZeroRedundancyOptimizer each rank also writes the state of its own shard to
PATH.rankR-of-N (the shards are never gathered in one process).
load_checkpoint(path, model, optimizer) restores both on every rank and
returns the step, so training resumes exactly where it stopped: every value
is stored bit for bit. Files are written under a temporary name and renamed
into place, so a crash never leaves half a checkpoint.
"""
import json
import os

import torch
import torch.distributed as dist

FORMAT = "porta-checkpoint-1"


def _is_zero(optimizer):
    from torch.distributed.optim import ZeroRedundancyOptimizer
    return isinstance(optimizer, ZeroRedundancyOptimizer)


def _shard_path(path, rank, size):
    return f"{path}.rank{rank}-of-{size}"


def _flatten_optimizer(state_dict, tensors):
    """Tensors of an optimizer state dict into `tensors` (CPU copies); the
    rest as a JSON-ready structure naming them."""
    state = {}
    for index, values in state_dict["state"].items():
        entry = {}
        for key, value in values.items():
            if isinstance(value, torch.Tensor):
                name = f"optimizer.state.{index}.{key}"
                tensors[name] = value.detach().to("cpu").contiguous()
                entry[key] = {"tensor": name}
            else:
                entry[key] = {"value": value}
        state[str(index)] = entry
    return {"state": state, "param_groups": state_dict["param_groups"]}


def _unflatten_optimizer(layout, tensors):
    state = {}
    for index, entry in layout["state"].items():
        state[int(index)] = {key: tensors[item["tensor"]] if "tensor" in item else item["value"]
                             for key, item in entry.items()}
    return {"state": state, "param_groups": layout["param_groups"]}


def _write(path, tensors, metadata):
    from safetensors.torch import save_file
    temporary = f"{path}.tmp{os.getpid()}"
    save_file(tensors, temporary, metadata=metadata)
    os.replace(temporary, path)


def _read(path):
    from safetensors import safe_open
    with safe_open(path, framework="pt") as handle:
        metadata = handle.metadata() or {}
        if metadata.get("format") != FORMAT:
            raise ValueError(f"{path}: not a porta checkpoint (format "
                             f"{metadata.get('format')!r}, expected {FORMAT!r})")
        tensors = {name: handle.get_tensor(name) for name in handle.keys()}
    return tensors, metadata


def _module(model):
    return model.module if hasattr(model, "module") else model


def save_checkpoint(path, model, optimizer=None, step=0):
    """Collective: every rank calls it. Returns once the files are in place."""
    rank = dist.get_rank() if dist.is_initialized() else 0
    size = dist.get_world_size() if dist.is_initialized() else 1
    zero = optimizer is not None and _is_zero(optimizer)
    if zero:
        tensors = {}
        layout = _flatten_optimizer(optimizer.optim.state_dict(), tensors)
        _write(_shard_path(path, rank, size), tensors,
               {"format": FORMAT, "optimizer": json.dumps(layout), "rank": str(rank)})
    if rank == 0:
        tensors = {f"model.{name}": value.detach().to("cpu").contiguous()
                   for name, value in _module(model).state_dict().items()}
        metadata = {"format": FORMAT, "step": str(step), "world_size": str(size),
                    "zero": "1" if zero else "0"}
        if optimizer is not None and not zero:
            metadata["optimizer"] = json.dumps(_flatten_optimizer(optimizer.state_dict(),
                                                                  tensors))
        _write(path, tensors, metadata)
    if dist.is_initialized():
        dist.barrier()


def load_checkpoint(path, model, optimizer=None):
    """Restores model (and optimizer) on every rank; returns the saved step."""
    tensors, metadata = _read(path)
    size = dist.get_world_size() if dist.is_initialized() else 1
    rank = dist.get_rank() if dist.is_initialized() else 0
    prefix = "model."
    _module(model).load_state_dict({name[len(prefix):]: value for name, value in tensors.items()
                                    if name.startswith(prefix)})
    if optimizer is not None:
        if metadata.get("zero") == "1":
            if not _is_zero(optimizer):
                raise ValueError(f"{path} holds ZeRO optimizer shards; load it into a "
                                 f"ZeroRedundancyOptimizer")
            if int(metadata["world_size"]) != size:
                raise ValueError(f"{path} was saved by {metadata['world_size']} ranks; its "
                                 f"optimizer shards need the same number, given {size}")
            shard, shard_metadata = _read(_shard_path(path, rank, size))
            optimizer.optim.load_state_dict(
                _unflatten_optimizer(json.loads(shard_metadata["optimizer"]), shard))
        elif "optimizer" in metadata:
            optimizer.load_state_dict(
                _unflatten_optimizer(json.loads(metadata["optimizer"]), tensors))
        else:
            raise ValueError(f"{path} holds no optimizer state")
    return int(metadata.get("step", 0))
