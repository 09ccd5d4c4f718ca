"""Device-neutral training checkpoints (docs/checkpoint.md).

    torch_porta.checkpoint.save("run.ckpt", model=model, optimizer=optimizer,
                                scheduler=scheduler, step=step, data=sampler)
    state = torch_porta.checkpoint.load("run.ckpt", model=model, optimizer=optimizer,
                                        scheduler=scheduler, data=sampler)
    step = state["step"]

A checkpoint is a directory: manifest.json (everything that is not a
tensor, as JSON, with a SHA-256 of each data file and of each tensor in it)
and one safetensors file of tensors, named by its content. No pickle: a
checkpoint holds data only, and any device loads it. Saving writes the new
data file and then replaces the manifest (each under a temporary name,
synced, renamed over), so until the new checkpoint is complete the old
manifest and the data it names are untouched; data no manifest names is
removed afterwards. Loading checks everything (the manifest's own hash,
each file's size and hash, each tensor's hash, names and shapes against the
model and optimizer) before it assigns anything, so a damaged checkpoint is
refused, naming the file and the tensor, and leaves the model as it was.
"""
import os
import random
import sys

import torch

from . import _device_module
from ._checkpoint_files import (FORMAT, CheckpointError, Tensors, decode, encode, read_data,
                                read_manifest, sync_directory, tensor_names, write_data,
                                write_manifest)
from ._data_position import ResumableSampler
from ._migrate import migrate

RNG_SOURCES = ("torch", "porta", "python", "numpy")
DEFAULT_RNG = ("torch", "porta", "python")

__all__ = ["save", "load", "CheckpointError", "ResumableSampler"]


# ---- what is saved ----


def _model_state(model, tensors):
    """The state dict's keys in order, each naming its tensor entry; a
    tied key names the entry of the first key that shares its tensor."""
    return {key: tensors.add(f"model.{key}", value)
            for key, value in model.state_dict(keep_vars=True).items()}


def _rng_state(sources, tensors, prefix="rng"):
    state = {}
    if "torch" in sources:
        state["torch"] = {"__tensor__": tensors.add(f"{prefix}.torch", torch.get_rng_state())}
    if "porta" in sources:
        state["porta"] = [{"__tensor__": tensors.add(f"{prefix}.porta.{index}",
                                                     _device_module.get_rng_state(index))}
                          for index in range(_device_module.device_count())]
    if "python" in sources:
        version, internal, gauss = random.getstate()
        state["python"] = {"version": version, "gauss": gauss,
                           "state": {"__tensor__": tensors.add(
                               f"{prefix}.python", torch.tensor(internal, dtype=torch.int64))}}
    if "numpy" in sources:
        import numpy
        kind, keys, position, has_gauss, gauss = numpy.random.get_state()
        state["numpy"] = {"kind": kind, "position": int(position), "has_gauss": int(has_gauss),
                          "gauss": float(gauss),
                          "keys": {"__tensor__": tensors.add(
                              f"{prefix}.numpy", torch.from_numpy(keys.astype("int64")))}}
    return state


def _restore_rng(state, tensors, device_map):
    if "torch" in state:
        torch.set_rng_state(decode(state["torch"], tensors))
    # each device's own state, then the moved model's device's state onto
    # its new device (which wins over that device's own)
    saved = state.get("porta", [])
    for index in sorted(range(len(saved)), key=lambda i: i in device_map):
        target = device_map.get(index, index)
        if target < _device_module.device_count():
            _device_module.set_rng_state(decode(saved[index], tensors), target)
    if "python" in state:
        python = state["python"]
        internal = tuple(decode(python["state"], tensors).tolist())
        random.setstate((python["version"], internal, python["gauss"]))
    if "numpy" in state:
        import numpy
        numpy_state = state["numpy"]
        keys = decode(numpy_state["keys"], tensors).numpy().astype("uint32")
        numpy.random.set_state((numpy_state["kind"], keys, numpy_state["position"],
                                numpy_state["has_gauss"], numpy_state["gauss"]))


def _data_state(data):
    """A DataLoader's sampler's, a sampler's, or any object's with
    state_dict(); a dict is saved as it is."""
    if isinstance(data, dict):
        return data
    if isinstance(data, torch.utils.data.DataLoader):
        data = data.sampler
    if not hasattr(data, "state_dict"):
        raise TypeError(f"checkpoint: data: expected a DataLoader whose sampler has "
                        f"state_dict() (torch_porta.checkpoint.ResumableSampler), such a "
                        f"sampler, or a dict, got {type(data).__name__}")
    return data.state_dict()


def _data_target(data):
    if isinstance(data, torch.utils.data.DataLoader):
        data = data.sampler
    if not hasattr(data, "load_state_dict"):
        raise TypeError(f"checkpoint: data: expected a DataLoader whose sampler has "
                        f"load_state_dict() or such a sampler, got {type(data).__name__}")
    return data


def _device_of(model):
    for tensor in list(model.parameters()) + list(model.buffers()):
        return tensor.device
    return None


def _world():
    import torch.distributed as dist
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def _is_zero(optimizer):
    """A ZeroRedundancyOptimizer's module is imported if there is one:
    importing it just to ask costs time and warnings."""
    zero = sys.modules.get("torch.distributed.optim")
    return zero is not None and isinstance(optimizer, zero.ZeroRedundancyOptimizer)


def _module(model):
    """The model inside DistributedDataParallel, whose keys have no
    "module." prefix, so a checkpoint loads with or without it."""
    return model.module if isinstance(model, torch.nn.parallel.DistributedDataParallel) \
        else model


def _rank_shard(path, rank, size, optimizer, sources):
    """What differs between the ranks of a distributed job (each rank's
    generators; its ZeroRedundancyOptimizer shard) in a file of its own;
    the records of every rank's file, gathered on each."""
    import torch.distributed as dist
    tensors = Tensors()
    # names of their own: a rank that reassembles ZeRO state reads them all
    shard = {"rng": _rng_state(sources, tensors, f"rank{rank}.rng")}
    if optimizer is not None and _is_zero(optimizer):
        # the local optimizer numbers its parameters from 0; the global
        # number of each (its place in the ZeRO optimizer's groups) lets a
        # job with another number of ranks, or none, take the state back
        number = {id(p): i for i, p in enumerate(
            p for group in optimizer.param_groups for p in group["params"])}
        shard["optimizer"] = encode(optimizer.optim.state_dict(), tensors,
                                    f"rank{rank}.optimizer")
        shard["parameters"] = [number[id(p)] for group in optimizer.optim.param_groups
                               for p in group["params"]]
    name, record = write_data(path, f"rank{rank}-of-{size}", tensors)
    sync_directory(path)
    records = [None] * size
    dist.all_gather_object(records, {"file": name, "record": record, "shard": shard})
    return records


def save(path, model=None, optimizer=None, scheduler=None, scaler=None, step=0, extra=None,
         rng=True, data=None):
    """Writes a checkpoint directory at `path` (created, or replaced
    atomically). `rng`: True saves the PyTorch CPU, porta and Python
    generators; False none; or a collection of "torch", "porta", "python",
    "numpy". `data`: the data position (see _data_state). `extra`: any
    JSON-ready value (tensors allowed). Returns `path`.

    In a torch.distributed job every rank calls it: rank 0 writes the model
    and what the ranks share; each rank writes its generators and, with a
    ZeroRedundancyOptimizer, its optimizer shard."""
    if rng is True:
        rng = DEFAULT_RNG
    sources = set(rng or ())
    unknown = sources - set(RNG_SOURCES)
    if unknown:
        raise ValueError(f"checkpoint.save: rng: expected True, False or some of "
                         f"{', '.join(RNG_SOURCES)}, got {sorted(unknown)}")
    if not isinstance(step, int):
        raise TypeError(f"checkpoint.save: step: expected an int, got {type(step).__name__}")
    rank, size = _world()
    model = _module(model) if model is not None else None
    if os.path.exists(path) and not os.path.isdir(path):
        raise NotADirectoryError(f"checkpoint.save: {path}: expected a checkpoint directory or "
                                 f"a new name, got a file (left as it is)")
    os.makedirs(path, exist_ok=True)
    shards = _rank_shard(path, rank, size, optimizer, sources) if size > 1 else None
    if rank == 0:
        _save_shared(path, model, optimizer, scheduler, scaler, step, extra, sources, data,
                     shards)
    if size > 1:
        import torch.distributed as dist
        dist.barrier()
    return path


def _save_shared(path, model, optimizer, scheduler, scaler, step, extra, sources, data,
                 shards):
    tensors = Tensors()
    manifest = {"format": FORMAT, "step": step}
    if model is not None:
        manifest["model"] = _model_state(model, tensors)
        device = _device_of(model)
        manifest["device"] = str(device) if device is not None else None
    if optimizer is not None and not _is_zero(optimizer):
        manifest["optimizer"] = encode(optimizer.state_dict(), tensors, "optimizer")
    if scheduler is not None:
        manifest["scheduler"] = encode(scheduler.state_dict(), tensors, "scheduler")
    if scaler is not None:
        manifest["scaler"] = encode(scaler.state_dict(), tensors, "scaler")
    if extra is not None:
        manifest["extra"] = encode(extra, tensors, "extra")
    if data is not None:
        manifest["data"] = encode(_data_state(data), tensors, "data")
    if shards is None:
        manifest["rng"] = _rng_state(sources, tensors)
    else:
        manifest["ranks"] = [dict(entry["shard"], file=entry["file"]) for entry in shards]

    previous = set(os.listdir(path))
    # The data first, then the manifest that names it: each is written
    # under a temporary name, synced and renamed over (porta_file_write),
    # and the directory synced, so a crash at any point leaves the last
    # complete checkpoint readable.
    data_name, record = write_data(path, "state", tensors)
    manifest["files"] = {data_name: record}
    for entry in shards or ():
        manifest["files"][entry["file"]] = entry["record"]
    sync_directory(path)
    write_manifest(path, manifest)
    sync_directory(path)
    for stale in previous - set(manifest["files"]):
        if stale.startswith(("state-", "rank")) and stale.endswith(".safetensors"):
            os.unlink(os.path.join(path, stale))


# ---- loading: check everything, then assign ----


def _check_model(path, model, entries, tensors):
    current = model.state_dict(keep_vars=True)
    missing = [key for key in current if key not in entries]
    unexpected = [key for key in entries if key not in current]
    if missing or unexpected:
        raise CheckpointError(f"{path}: the model's state does not match the checkpoint's: "
                              f"missing {missing}, unexpected {unexpected}")
    for key, value in current.items():
        saved = tensors[entries[key]]
        if saved.shape != value.shape or saved.dtype != value.dtype:
            raise CheckpointError(f"{path}: tensor {entries[key]!r}: the checkpoint holds "
                                  f"{saved.dtype} {list(saved.shape)}, the model's {key} is "
                                  f"{value.dtype} {list(value.shape)}")


def _check_optimizer(path, optimizer, state):
    groups, saved_groups = optimizer.param_groups, state["param_groups"]
    if len(groups) != len(saved_groups) or any(
            len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
        raise CheckpointError(
            f"{path}: the optimizer's parameter groups hold "
            f"{[len(g['params']) for g in groups]} parameters, the checkpoint's "
            f"{[len(s['params']) for s in saved_groups]}")
    parameters = [p for g in groups for p in g["params"]]
    ids = [i for s in saved_groups for i in s["params"]]
    by_id = dict(zip(ids, parameters))
    for index, values in state["state"].items():
        parameter = by_id.get(index)
        for key, value in values.items():
            if isinstance(value, torch.Tensor) and value.dim() and parameter is not None \
                    and value.shape != parameter.shape:
                raise CheckpointError(f"{path}: optimizer state {key} of parameter {index}: "
                                      f"{list(value.shape)} in the checkpoint, the parameter "
                                      f"is {list(parameter.shape)}")


def _assign_model(model, entries, tensors):
    """Copies in place (each tensor keeps its device and identity); keys
    saved as one tensor are tied again if the model's are not."""
    current = model.state_dict(keep_vars=True)
    first_key = {}
    with torch.no_grad():
        for key, name in entries.items():
            if name in first_key:
                _tie(model, key, current[first_key[name]], current[key])
                continue
            first_key[name] = key
            current[key].copy_(tensors[name])


def _tie(model, key, canonical, value):
    if value is canonical:
        return
    owner_path, _, attribute = key.rpartition(".")
    owner = model.get_submodule(owner_path)
    if isinstance(canonical, torch.nn.Parameter) and attribute in owner._parameters:
        owner._parameters[attribute] = canonical
    else:
        with torch.no_grad():
            value.copy_(canonical)


def _device_map(manifest, target):
    """Which porta generator takes each saved one: the state of the device
    the model was saved from goes with the model to `target`, the device it
    is loaded onto, so its random numbers continue there."""
    saved = manifest.get("device")
    if saved is None or target is None:
        return {}
    saved, target = torch.device(saved), torch.device(target)
    if saved.type == "porta" and target.type == "porta":
        return {saved.index or 0: target.index or 0}
    return {}


def _optimizer_state(path, manifest, optimizer, tensors):
    """The optimizer's whole state as optimizer.state_dict() gives it (a
    ZeroRedundancyOptimizer's consolidated): saved so, or assembled from
    the ranks' ZeRO shards, so it loads into any optimizer of the same
    parameter groups (ZeRO with any number of ranks, or a plain one)."""
    if "optimizer" in manifest:
        return decode(manifest["optimizer"], tensors)
    shards = [entry for entry in manifest.get("ranks", ()) if "optimizer" in entry]
    if not shards:
        raise CheckpointError(f"{path}: holds no optimizer state")
    state, saved_groups = {}, None
    for entry in shards:
        local = decode(entry["optimizer"], tensors)
        for index, values in local["state"].items():
            state[entry["parameters"][index]] = values
        saved_groups = saved_groups or local["param_groups"]
    groups = optimizer.param_groups
    if len(groups) != len(saved_groups):
        raise CheckpointError(f"{path}: the optimizer has {len(groups)} parameter groups, the "
                              f"checkpoint's {len(saved_groups)}")
    whole, first = [], 0
    for group, saved in zip(groups, saved_groups):
        whole.append(dict(saved, params=list(range(first, first + len(group["params"])))))
        first += len(group["params"])
    return {"state": state, "param_groups": whole}


def _check(path, manifest, rank, size, model, optimizer, scheduler, scaler, data):
    """Everything `load` needs, checked: (tensors, this rank's part of the
    manifest, the optimizer's state)."""
    ranks = manifest.get("ranks")
    own = manifest
    if ranks is not None:
        # each rank takes the generators of the rank it replaces; a rank
        # the checkpoint had not keeps its own
        own = ranks[rank] if rank < len(ranks) else {}
    zero = any("optimizer" in entry for entry in ranks or ())
    skipped = set() if zero or ranks is None else \
        {entry["file"] for entry in ranks} - {own.get("file")}
    tensors = {}
    for name, record in manifest["files"].items():
        if name not in skipped:
            read = read_data(path, name, record)
            twice = sorted(set(read) & set(tensors))
            if twice:
                raise CheckpointError(f"{os.path.join(path, name)}: holds tensors another file "
                                      f"of the checkpoint holds too: {twice}")
            tensors.update(read)
    parts = [value for key, value in manifest.items() if key != "ranks"]
    parts += ranks if zero else [own]
    referenced = tensor_names(parts) + list(manifest.get("model", {}).values())
    absent = [name for name in referenced if name not in tensors]
    if absent:
        raise CheckpointError(f"{path}: the manifest names tensors no file holds: {absent}")
    if model is not None:
        if "model" not in manifest:
            raise CheckpointError(f"{path}: holds no model state")
        _check_model(path, model, manifest["model"], tensors)
    state = None
    if optimizer is not None:
        state = _optimizer_state(path, manifest, optimizer, tensors)
        _check_optimizer(path, optimizer, state)
    for name, given in (("scheduler", scheduler), ("scaler", scaler), ("data", data)):
        if given is not None and name not in manifest:
            raise CheckpointError(f"{path}: holds no {name} state")
    if data is not None:
        target = _data_target(data)
        if hasattr(target, "check_state_dict"):
            try:
                target.check_state_dict(decode(manifest["data"], tensors))
            except ValueError as error:
                raise CheckpointError(f"{path}: {error}") from None
    return tensors, own, state


def _agree(error, rank, size):
    """In a distributed job, every rank refuses if any rank's part is bad,
    so that no rank assigns what another cannot."""
    if size == 1:
        if error is not None:
            raise error
        return
    import torch.distributed as dist
    verdicts = [None] * size
    dist.all_gather_object(verdicts, None if error is None else str(error))
    for other, verdict in enumerate(verdicts):
        if verdict is not None:
            raise CheckpointError(verdict if other == rank else f"rank {other}: {verdict}")


def load(path, model=None, optimizer=None, scheduler=None, scaler=None, rng=True, data=None,
         map_location=None):
    """Restores what `save` wrote into the objects given; returns
    {"step": int, "extra": the saved extra or None}. `map_location`: the
    device the model (and optimizer state) should be on afterwards, moved
    there in place by torch_porta.migrate before the values are copied;
    None keeps the model where it is. Everything is checked before anything
    is assigned: on CheckpointError nothing was changed. In a distributed
    job every rank calls it; the number of ranks may differ from the
    saving job's (ZeRO optimizer state is resharded)."""
    rank, size = _world()
    model = _module(model) if model is not None else None
    error, checked = None, None
    try:
        manifest = read_manifest(path)
        checked = _check(path, manifest, rank, size, model, optimizer, scheduler, scaler, data)
    except CheckpointError as refused:
        error = refused
    _agree(error, rank, size)
    tensors, own, optimizer_state = checked

    if map_location is not None and model is not None:
        migrate(model, optimizer, to=map_location)
    if model is not None:
        _assign_model(model, manifest["model"], tensors)
    if optimizer is not None:
        optimizer.load_state_dict(optimizer_state)
    if scheduler is not None:
        scheduler.load_state_dict(decode(manifest["scheduler"], tensors))
    if scaler is not None:
        scaler.load_state_dict(decode(manifest["scaler"], tensors))
    if data is not None:
        _data_target(data).load_state_dict(decode(manifest["data"], tensors))
    if rng:
        target = map_location if map_location is not None or model is None \
            else _device_of(model)
        _restore_rng(own.get("rng", {}), tensors, _device_map(manifest, target))
    return {"step": manifest["step"], "extra": decode(manifest.get("extra"), tensors)}
