"""Aten ops without a porta kernel run through PyTorch's CPU kernels.

One boxed fallback for the PrivateUse1 key catches every op that neither
libporta nor a glue kernel implements: it copies the porta inputs to the
CPU, runs the op there, copies new results to porta and writes the CPU
results of mutated arguments (in-place, out=) back into the porta tensors.
Each op warns once; torch_porta.metrics() counts every fallback, and
PORTA_FALLBACK=error makes a fallback a NotImplementedError instead.

Ops whose result must share a porta tensor's storage (views) or that
rewrite a tensor's metadata (set_, resize_, squeeze_, ...) cannot run on a
copy: they raise NotImplementedError whatever PORTA_FALLBACK says.
"""
import os
import warnings

import torch

from . import _C, _metrics, _modes, _tensors
from .kernels._aten import _return_plan

# Arguments written although the schema does not mark them (a!): batch norm
# updates running_mean and running_var in training.
_UNANNOTATED_WRITES = {"native_batch_norm": (3, 4)}
_TENSOR_TYPES = ("Tensor", "Optional[Tensor]")
_warned = set()
_library = None


def op_name(op):
    """"add.Tensor" for aten::add.Tensor, "neg" for a default overload."""
    packet = op._schema.name.partition("::")[2]
    return packet if op._overloadname == "default" else f"{packet}.{op._overloadname}"


def _refusal(op):
    """Why op cannot run on CPU copies of its inputs, or None."""
    if torch.Tag.inplace_view in op.tags:
        return "it rewrites a tensor's sizes, strides or storage"
    if any(how == "view" for how, _ in _return_plan(op._schema)):
        return "it returns a view, which must share the porta tensor's storage"
    return None


def _schema_values(schema, args, kwargs):
    """The arguments in schema order, defaults filled in."""
    values = list(args)
    for argument in schema.arguments[len(args):]:
        if argument.name in kwargs:
            values.append(kwargs[argument.name])
        else:
            values.append(argument.default_value if argument.has_default_value() else None)
    return values


def _flat_tensors(values):
    for value in values:
        if isinstance(value, torch.Tensor):
            yield value
        elif isinstance(value, (list, tuple)):
            yield from _flat_tensors(value)


def _to_cpu(value, copies):
    """value with its porta tensors on the CPU; `copies` (id -> CPU copy)
    holds the tensors already copied in this call, so a tensor passed twice
    travels once and its two uses alias on the CPU as they do on porta."""
    if _tensors.is_porta(value):
        copy = copies.get(id(value))
        if copy is None:
            copy = copies[id(value)] = value.cpu()
        return copy
    if isinstance(value, torch.device) and value.type == "porta":
        return torch.device("cpu")
    if isinstance(value, (list, tuple)):
        return type(value)(_to_cpu(item, copies) for item in value)
    return value


def _cpu_out(value):
    """An uninitialized CPU tensor like an out= argument: the op overwrites
    (or resizes) it, so its values need not travel."""
    if _tensors.is_porta(value):
        return torch.empty_strided(value.shape, value.stride(), dtype=value.dtype)
    if isinstance(value, (list, tuple)):
        return type(value)(_cpu_out(item) for item in value)
    return value


def _is_out(argument):
    return argument.kwarg_only and argument.alias_info is not None \
        and argument.alias_info.is_write


def _cpu_value(value, argument, copies):
    if _is_out(argument):
        return _cpu_out(value)
    if str(argument.type) in _TENSOR_TYPES:
        value = _number_as_tensor(value)
    return _to_cpu(value, copies)


def _number_as_tensor(value):
    """The boxed fallback receives a number written in an expression
    (zeta(x, 2.0)) as a Python number, which a Tensor argument refuses. A
    zero-dim tensor of the dtype PyTorch gives such a number promotes the
    same way against tensors of any dimension."""
    if isinstance(value, bool):
        return torch.tensor(value)
    if isinstance(value, int):
        return torch.tensor(value, dtype=torch.int64)
    if isinstance(value, float):
        return torch.tensor(value, dtype=torch.get_default_dtype())
    return value


def _to_porta(value, device):
    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, (list, tuple)):
        return type(value)(_to_porta(item, device) for item in value)
    return value


def _write_back(porta, cpu):
    if isinstance(porta, torch.Tensor):
        if porta.shape != cpu.shape:  # an out= the CPU kernel resized
            porta.resize_(cpu.shape)
        porta.copy_(cpu)
    elif isinstance(porta, (list, tuple)):
        for porta_item, cpu_item in zip(porta, cpu):
            _write_back(porta_item, cpu_item)


def _porta_device(values):
    for value in values:
        if _tensors.is_porta(value):
            return value.device
        if isinstance(value, torch.device) and value.type == "porta":
            return value
        if isinstance(value, (list, tuple)):
            found = _porta_device(value)
            if found is not None:
                return found
    return None


def _run_on_cpu(op, args, kwargs):
    schema = op._schema
    values = _schema_values(schema, args, kwargs)
    _tensors.check_same_device(*_flat_tensors(values))
    device = _porta_device(values) or torch.device("porta", 0)
    copies = {}  # the values hold every copied tensor alive, so no id is reused
    cpu_values = [_cpu_value(v, a, copies) for v, a in zip(values, schema.arguments)]
    positional = [v for v, a in zip(cpu_values, schema.arguments) if not a.kwarg_only]
    keywords = {a.name: v for v, a in zip(cpu_values, schema.arguments) if a.kwarg_only}
    try:
        result = op(*positional, **keywords)
    except NotImplementedError as error:  # PyTorch has no CPU kernel either
        raise NotImplementedError(f"aten::{op_name(op)} is not implemented on porta, and "
                                  f"its CPU kernel cannot run it: {error}") from None

    written = [i for i, a in enumerate(schema.arguments)
               if a.alias_info is not None and a.alias_info.is_write]
    written += _UNANNOTATED_WRITES.get(schema.name.partition("::")[2], ())
    for index in written:
        _write_back(values[index], cpu_values[index])

    plan = _return_plan(schema)
    if not plan:
        return None
    results = result if len(plan) > 1 else (result,)
    out = [values[source] if how == "input" else _to_porta(r, device)
           for (how, source), r in zip(plan, results)]
    return tuple(out) if len(plan) > 1 else out[0]


def fallback(op, *args, **kwargs):
    name = op_name(op)
    reason = _refusal(op)
    if reason:
        raise NotImplementedError(f"aten::{name} is not implemented on porta and cannot run "
                                  f"on the CPU: {reason}")
    if os.environ.get("PORTA_FALLBACK") == "error":
        raise NotImplementedError(f"aten::{name} is not implemented on porta "
                                  "(PORTA_FALLBACK=error forbids running it on the CPU)")
    if name not in _warned:
        _warned.add(name)
        warnings.warn(f"aten::{name} is not implemented on porta; running it on the CPU",
                      UserWarning, stacklevel=2)
    _metrics.count_fallback(name)
    _modes.sync_point("fallback")  # the CPU reads porta's results
    # While profiling, a "fallback" event on the host's track (0 when off).
    begin = _C.profiler_begin()
    try:
        with _metrics.inside_fallback():
            return _run_on_cpu(op, args, kwargs)
    finally:
        if begin:
            _C.profiler_record("fallback", -1, f"aten::{name}", begin)


def complex_fallback(name, args, kwargs, dtype):
    """An op porta has but does not compute on complex operands, given some:
    the CPU runs it as it runs ops porta lacks, unless PORTA_FALLBACK=error."""
    if os.environ.get("PORTA_FALLBACK") == "error":
        raise NotImplementedError(f"aten::{name}: not implemented for {dtype} on porta "
                                  "(PORTA_FALLBACK=error forbids running it on the CPU)")
    packet, _, overload = name.partition(".")
    return fallback(getattr(getattr(torch.ops.aten, packet), overload or "default"),
                    *args, **kwargs)


def install():
    global _library
    _library = torch.library.Library("_", "IMPL")
    _library.fallback(fallback, dispatch_key="PrivateUse1")
