"""One thin binding for every op of libporta's aten layer.

For each overload libporta implements, a kernel is registered for the
PrivateUse1 key that puts the dispatcher's arguments in schema order (with
defaults), unwraps tensors, and calls _C.aten_call. The schema's alias
annotations say how to return: an in-place or out= result is the input
tensor itself, a view is a tensor on its base's storage, anything else is a
new tensor.
"""
import warnings

import torch

from .. import _C, _dtypes, _modes, _tensors

_NO_DEFAULT = object()


def _convert(value):
    if isinstance(value, torch.Tensor):
        if _tensors.is_porta(value):
            return _tensors.unwrap(value)
        if value.device.type == "cpu" and value.dim() == 0:
            return value.item()  # a number written in an expression (x * 2)
        raise _tensors._devices_error([value, torch.empty(0, device="porta")])
    if isinstance(value, (list, tuple)):
        return [_convert(item) for item in value]
    if isinstance(value, torch.dtype):
        return _dtypes.to_porta(value)
    if isinstance(value, torch.device):
        return _tensors.device_index(value)
    if isinstance(value, torch.memory_format):
        return _MEMORY_FORMATS[value]
    if isinstance(value, torch.layout):
        return None
    if isinstance(value, torch.Generator):
        _reject_generator(value)
    return value


# porta_memory_format codes (include/porta.h).
_MEMORY_FORMATS = {torch.contiguous_format: 0, torch.preserve_format: 1,
                   torch.channels_last: 2, torch.channels_last_3d: 3}


def _reject_generator(generator):
    # PyTorch's Python PrivateUse1 hooks cannot make generators for porta
    # (no getNewGenerator), so any generator passed belongs to another device;
    # porta's random ops draw from torch.porta's per-device generator.
    raise RuntimeError(f"Expected a 'porta' device type for generator but found "
                       f"'{generator.device.type}': porta ops use torch.porta's default "
                       "generator (seed it with torch.manual_seed or torch.porta.manual_seed)")


_default_dtype = [torch.float32]


def _sync_default_dtype():
    """Tells libporta torch.get_default_dtype() when it has changed: the
    factories need it for dtype=None and libporta cannot ask PyTorch."""
    default = torch.get_default_dtype()
    if default is not _default_dtype[0]:
        _C.aten_set_default_dtype(_dtypes.to_porta(default))
        _default_dtype[0] = default


# A schema default for a dtype is c10's ScalarType code (randperm's dtype=4
# is torch.int64), not porta's: the codes of the dtypes porta has.
_SCALAR_TYPE_CODES = {0: torch.uint8, 1: torch.int8, 2: torch.int16, 3: torch.int32,
                      4: torch.int64, 5: torch.float16, 6: torch.float32, 7: torch.float64,
                      11: torch.bool, 15: torch.bfloat16}


def _resize_out(target, result):
    """An out= op returns a new tensor when `target` had the wrong shape:
    PyTorch then resizes the out tensor (warning when it held elements)."""
    if not isinstance(result, _C.Tensor) or result.sizes == tuple(target.shape):
        return
    if target.numel():
        warnings.warn(
            f"An output with one or more elements was resized since it had shape "
            f"{list(target.shape)}, which does not match the required output shape "
            f"{list(result.sizes)}. This behavior is deprecated, and in a future PyTorch "
            "release outputs will not be resized unless they have zero elements. You can "
            "explicitly reuse an out tensor t by resizing it, inplace, to zero elements "
            "with t.resize_(0).", UserWarning)
    _tensors.rebind(target, result)


def _argument_plan(schema):
    """(name, default, kwarg_only) per argument, in schema order."""
    plan = []
    for argument in schema.arguments:
        default = argument.default_value if argument.has_default_value() else _NO_DEFAULT
        if argument.name == "dtype" and type(default) is int:
            default = _SCALAR_TYPE_CODES[default]
        plan.append((argument.name, default, argument.kwarg_only))
    return plan


def _return_plan(schema):
    """Per return: ("input", i) when it aliases and writes input i (in-place,
    out=), ("view", i) when it is a view of input i, ("new", None) else."""
    alias_of = {}
    for index, argument in enumerate(schema.arguments):
        if argument.alias_info is not None:
            for alias in argument.alias_info.before_set:
                alias_of[alias] = index
    plan = []
    for returned in schema.returns:
        info = returned.alias_info
        if info is None or not info.before_set:
            plan.append(("new", None))
            continue
        source = alias_of[next(iter(info.before_set))]
        plan.append(("input" if info.is_write else "view", source))
    return plan


def _make_kernel(op_id, schema):
    arguments = _argument_plan(schema)
    returns = _return_plan(schema)
    returns_list = len(schema.returns) == 1 and str(schema.returns[0].type) == "List[Tensor]"
    takes_dtype = any(argument.name == "dtype" for argument in schema.arguments)

    def kernel(*args, **kwargs):
        values = list(args)
        for name, default, _ in arguments[len(args):]:
            value = kwargs.get(name, default)
            if value is _NO_DEFAULT:
                raise TypeError(f"aten::{schema.name}: missing argument '{name}'")
            values.append(value)
        tensors = [v for v in values if isinstance(v, torch.Tensor)]
        _tensors.check_same_device(*tensors)
        if takes_dtype:
            _sync_default_dtype()
        results = _C.aten_call(op_id, tuple(_convert(v) for v in values))
        if returns_list:
            return [_tensors.wrap(r) for r in results]
        out = []
        for (how, source), result in zip(returns, results):
            if how == "input":
                _resize_out(values[source], result)
                out.append(values[source])
            elif how == "view":
                out.append(_tensors.wrap_view(values[source], result))
            elif isinstance(result, _C.Tensor):
                out.append(_tensors.wrap(result))
            else:
                out.append(result)
        return out[0] if len(out) == 1 else tuple(out)

    return kernel


def _overload(name):
    packet, _, overload = name.partition(".")
    return getattr(getattr(torch.ops.aten, packet), overload or "default")


def register_all():
    """Registers every aten op libporta implements; returns their names."""
    names = set()
    for name, op_id in _C.aten_ops().items():
        op = _overload(name)
        kernel = _modes.issued(name, op, _make_kernel(op_id, op._schema))
        torch.library.impl(f"aten::{name}", "PrivateUse1")(kernel)
        names.add(name)
    return names
