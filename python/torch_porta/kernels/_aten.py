"""One thin binding for every op of libporta's aten layer.

For each overload libporta implements, a _C.AtenKernel (python/csrc/kernel.c)
is registered for the PrivateUse1 key: it puts the dispatcher's arguments in
schema order (with the defaults read here from the schema), reads porta
tensors as libporta views, runs the op and wraps the results. The schema's
alias annotations say how to return: an in-place or out= result is the
input tensor itself, a view is a tensor on its base's storage, anything else
is a new tensor. The rules the kernels call back into live here and in
_tensors.py.
"""
import types
import warnings

import torch

from .. import _C, _dtypes, _modes, _tensors

_NO_DEFAULT = object()


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
    PyTorch then resizes the out tensor (warning when it held elements),
    keeping the out tensor's dtype."""
    if not isinstance(result, _C.Tensor) or result.sizes == tuple(target.shape):
        return
    result_dtype = _dtypes.to_torch(result.dtype)
    if result_dtype != target.dtype:
        if not torch.can_cast(result_dtype, target.dtype):
            raise RuntimeError(f"result type {_TYPE_NAMES.get(result_dtype, result_dtype)} can't "
                               "be cast to the desired output type "
                               f"{_TYPE_NAMES.get(target.dtype, target.dtype)}")
        result = _C.cast(result, _dtypes.to_porta(target.dtype))
    if target.numel():
        warnings.warn(
            f"An output with one or more elements was resized since it had shape "
            f"{list(target.shape)}, which does not match the required output shape "
            f"{list(result.sizes)}. This behavior is deprecated, and in a future PyTorch "
            "release outputs will not be resized unless they have zero elements. You can "
            "explicitly reuse an out tensor t by resizing it, inplace, to zero elements "
            "with t.resize_(0).", UserWarning)
    _tensors.rebind(target, result)


# PyTorch's names of dtypes in its error messages.
_TYPE_NAMES = {torch.bool: "Bool", torch.uint8: "Byte", torch.int8: "Char", torch.int16: "Short",
               torch.int32: "Int", torch.int64: "Long", torch.float16: "Half",
               torch.bfloat16: "BFloat16", torch.float32: "Float", torch.float64: "Double"}


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


def _make_kernel(op_id, name, op):
    schema = op._schema
    names = tuple(argument.name for argument in schema.arguments)
    defaults = tuple(default for _, default, _ in _argument_plan(schema))
    returns = tuple((how, -1 if source is None else source)
                    for how, source in _return_plan(schema))
    returns_list = len(schema.returns) == 1 and str(schema.returns[0].type) == "List[Tensor]"
    takes_dtype = "dtype" in names
    return _C.AtenKernel(op_id, name, op, names, defaults, returns, returns_list, takes_dtype)


def _foreign(tensor, arguments):
    """A tensor of another device passed to a porta op: a CPU scalar tensor
    stands for its number (x * torch.tensor(2)), as PyTorch allows on every
    device; anything else raises like CUDA, naming the devices in argument
    order."""
    if tensor.device.type == "cpu" and tensor.dim() == 0:
        return tensor.item()
    tensors = [a for a in arguments if isinstance(a, torch.Tensor)]
    if all(t.device == tensor.device for t in tensors):
        tensors.append(torch.empty(0, device="porta"))
    raise _tensors._devices_error(tensors)


def _setup_kernels():
    """Gives the C kernels the Python objects and rules they call on."""
    context = types.SimpleNamespace(
        no_default=_NO_DEFAULT, torch_dtypes=_dtypes._PORTA_ORDER,
        dtype_codes=dict(_dtypes._TO_PORTA), memory_formats=dict(_MEMORY_FORMATS),
        tensor_type=torch.Tensor, device_type=torch.device, layout_type=torch.layout,
        generator_type=torch.Generator, create_empty=torch._C._acc.create_empty_tensor,
        wrap=_tensors.wrap,
        wrap_view=_tensors.wrap_view, resize_out=_resize_out, foreign=_foreign,
        device_index=_tensors.device_index, sync_default_dtype=_sync_default_dtype,
        reject_generator=_reject_generator, defer=_modes._defer)
    _C.aten_kernel_setup(context)


def _overload(name):
    packet, _, overload = name.partition(".")
    return getattr(getattr(torch.ops.aten, packet), overload or "default")


# Ops whose device PyTorch picks from a device argument (BackendSelect), so
# that porta's kernel also sees copies from or to another device: those
# calls take PyTorch's composite path (empty on the target + copy_). The
# copy is synchronous, which honours non_blocking=True too; PyTorch would
# otherwise pin the CPU side, and a Python-registered device cannot give it
# a pinned-memory allocator.
_CROSS_DEVICE = ("_to_copy",)


def _route_cross_device(op, kernel):
    composite = torch._C.DispatchKeySet(torch._C.DispatchKey.CompositeExplicitAutograd)

    def run(self, *args, **kwargs):
        device = kwargs.get("device")
        if not _tensors.is_porta(self) or (device is not None and device.type != "porta"):
            kwargs["non_blocking"] = False
            return op.redispatch(composite, self, *args, **kwargs)
        return kernel(self, *args, **kwargs)
    return run


def register_all():
    """Registers every aten op libporta implements; returns their names."""
    _setup_kernels()
    names = set()
    for name, op_id in _C.aten_ops().items():
        op = _overload(name)
        kernel = _make_kernel(op_id, name, op)
        if name in _CROSS_DEVICE:
            kernel = _route_cross_device(op, kernel)
        torch.library.impl(f"aten::{name}", "PrivateUse1")(kernel)
        names.add(name)
    return names
