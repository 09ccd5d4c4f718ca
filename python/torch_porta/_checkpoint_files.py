"""The files of a training checkpoint (docs/checkpoint.md): state turned
into JSON with its tensors set aside, data files named by their content,
the manifest that hashes them and itself, and reading all of it back with
every check, so that a damaged or partial file is refused naming the file
and the tensor. checkpoint.py decides what is saved and assigns it."""
import hashlib
import json
import os
import struct

import torch

from . import _C

FORMAT = "porta-training-checkpoint-1"
MANIFEST = "manifest.json"


class CheckpointError(ValueError):
    """A checkpoint that cannot be loaded: damaged, partial, or not the
    model's. The model, optimizer and the rest are unchanged."""


# ---- JSON with tensors aside ----


class Tensors:
    """Tensors set aside while state is turned into JSON: each is stored
    once, by identity (tied parameters share one entry)."""

    def __init__(self):
        self.by_name, self._names = {}, {}
        self._originals = []  # alive while keyed by address: no address is reused

    def add(self, name, tensor):
        key = (tensor.device, tensor.untyped_storage().data_ptr(), tensor.storage_offset(),
               tuple(tensor.shape), tuple(tensor.stride()), tensor.dtype) \
            if tensor.device.type != "meta" else None
        if key is not None and key in self._names:
            return self._names[key]
        self.by_name[name] = tensor.detach().to("cpu").contiguous()
        if key is not None:
            self._names[key] = name
            self._originals.append(tensor)
        return name


def encode(value, tensors, name):
    """`value` as JSON-ready data; tensors go to `tensors` under names
    starting with `name`."""
    if isinstance(value, torch.Tensor):
        return {"__tensor__": tensors.add(name, value)}
    if isinstance(value, dict):
        if not all(isinstance(key, (str, int)) for key in value):
            raise TypeError(f"checkpoint: {name}: expected str or int keys, got "
                            f"{sorted({type(k).__name__ for k in value})}")
        return {"__dict__": [[key, encode(item, tensors, f"{name}.{key}")]
                             for key, item in value.items()]}
    if isinstance(value, tuple):
        return {"__tuple__": [encode(item, tensors, f"{name}.{i}")
                              for i, item in enumerate(value)]}
    if isinstance(value, list):
        return [encode(item, tensors, f"{name}.{i}") for i, item in enumerate(value)]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"checkpoint: {name}: a value of type {type(value).__name__} cannot be "
                    f"stored (only tensors, numbers, strings, None, lists, tuples and dicts: "
                    f"no pickle)")


def decode(value, tensors):
    if isinstance(value, list):
        return [decode(item, tensors) for item in value]
    if isinstance(value, dict):
        if "__tensor__" in value:
            return tensors[value["__tensor__"]]
        if "__tuple__" in value:
            return tuple(decode(item, tensors) for item in value["__tuple__"])
        return {key: decode(item, tensors) for key, item in value["__dict__"]}
    return value


def tensor_names(value):
    """The tensor entries an encoded value refers to."""
    if isinstance(value, list):
        return [name for item in value for name in tensor_names(item)]
    if isinstance(value, dict):
        if "__tensor__" in value:
            return [value["__tensor__"]]
        return tensor_names(list(value.values()))
    return []


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def safetensors_bytes(tensors, metadata=None):
    from safetensors.torch import save
    return save(tensors, metadata=metadata)


def sync_directory(path):
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def manifest_bytes(manifest):
    """The manifest with the SHA-256 of its own canonical text, so a
    damaged manifest is refused as a damaged data file is."""
    body = json.dumps(manifest, sort_keys=True, separators=(",", ":"))
    return json.dumps({"sha256": sha256(body.encode()), "manifest": manifest},
                      sort_keys=True, indent=1).encode()


def write_manifest(path, manifest):
    """manifest.json, replacing the last one atomically (porta_file_write)."""
    _C.write_file(os.path.join(path, MANIFEST), manifest_bytes(manifest))


def tensor_hashes(tensors):
    return {name: sha256(tensor.reshape(-1).view(torch.uint8).numpy().tobytes()
                         if tensor.numel() else b"")
            for name, tensor in tensors.items()}


def write_data(path, prefix, tensors):
    """A data file named by its content; its record for the manifest."""
    content = safetensors_bytes(tensors.by_name, {"format": FORMAT})
    name = f"{prefix}-{sha256(content)[:16]}.safetensors"
    _C.write_file(os.path.join(path, name), content)
    return name, {"bytes": len(content), "sha256": sha256(content),
                  "tensors": tensor_hashes(tensors.by_name)}


def read_manifest(path):
    manifest_path = os.path.join(path, MANIFEST)
    try:
        with open(manifest_path, "rb") as f:
            text = f.read()
    except FileNotFoundError:
        raise CheckpointError(f"{manifest_path}: no such file: not a checkpoint directory "
                              f"written by torch_porta.checkpoint.save") from None
    except NotADirectoryError:
        raise CheckpointError(f"{path}: expected a checkpoint directory written by "
                              f"torch_porta.checkpoint.save, got a file") from None
    try:
        outer = json.loads(text)
        manifest, recorded = outer["manifest"], outer["sha256"]
    except (ValueError, KeyError, TypeError) as error:
        raise CheckpointError(f"{manifest_path}: damaged or partial ({len(text)} bytes): "
                              f"not the JSON a checkpoint's manifest holds ({error})") from None
    body = json.dumps(manifest, sort_keys=True, separators=(",", ":"))
    if sha256(body.encode()) != recorded:
        raise CheckpointError(f"{manifest_path}: damaged: its content does not match the "
                              f"SHA-256 it records")
    if manifest.get("format") != FORMAT:
        raise CheckpointError(f"{manifest_path}: expected the format {FORMAT!r}, got "
                              f"{manifest.get('format')!r}")
    return manifest


def incomplete_tensor(content):
    """For a file shorter than recorded: the first tensor whose bytes are
    cut off, as safetensors' header lays them out, if the header is whole."""
    if len(content) < 8:
        return "its header"
    header_length = struct.unpack("<Q", content[:8])[0]
    if len(content) < 8 + header_length:
        return "its header"
    try:
        header = json.loads(content[8:8 + header_length])
    except ValueError:
        return "its header"
    available = len(content) - 8 - header_length
    cut = [(entry["data_offsets"][0], name) for name, entry in header.items()
           if name != "__metadata__" and entry["data_offsets"][1] > available]
    return f"tensor {min(cut)[1]!r}" if cut else "its end"


def read_data(path, name, record):
    file_path = os.path.join(path, name)
    try:
        with open(file_path, "rb") as f:
            content = f.read()
    except FileNotFoundError:
        raise CheckpointError(f"{file_path}: missing: the manifest names it") from None
    if len(content) != record["bytes"]:
        raise CheckpointError(f"{file_path}: truncated or partial: {len(content)} bytes, the "
                              f"manifest records {record['bytes']}; "
                              f"{incomplete_tensor(content)} is incomplete"
                              if len(content) < record["bytes"] else
                              f"{file_path}: {len(content)} bytes, the manifest records "
                              f"{record['bytes']}: not the file that was saved")
    from safetensors.torch import load as parse
    try:
        tensors = parse(content)
    except Exception as error:  # safetensors' own header checks
        raise CheckpointError(f"{file_path}: damaged: {error}") from None
    hashes = tensor_hashes(tensors)
    for tensor_name, expected in record["tensors"].items():
        if tensor_name not in tensors:
            raise CheckpointError(f"{file_path}: damaged: tensor {tensor_name!r} is missing")
        if hashes[tensor_name] != expected:
            raise CheckpointError(f"{file_path}: damaged: tensor {tensor_name!r} does not match "
                                  f"the SHA-256 the manifest records")
    if sha256(content) != record["sha256"]:
        raise CheckpointError(f"{file_path}: damaged: its header does not match the SHA-256 "
                              f"the manifest records (the tensors do)")
    return tensors
