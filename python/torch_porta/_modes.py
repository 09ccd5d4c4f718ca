"""Eager modes of the porta device.

"debug" (the default): every op runs to completion when it is issued and
raises its error at the line that issued it. libporta's CPU backend works
this way anyway.

"strict": the semantics of an asynchronous device queue, as on CUDA, so a
program that works in strict mode does not rely on ops finishing when they
are issued. An op that PyTorch's own checks accept (its Meta kernel: shapes,
dtypes, arguments) but that fails in libporta (a data-dependent error such
as an index out of range, memory) does not raise: it returns results of the
right shape and dtype, marked poisoned, and the error surfaces at the next
sync point (item(), cpu(), printing, torch.porta.synchronize()) naming the
op and the Python line that issued it. Errors the Meta kernel finds raise at
the call, as CUDA's host-side checks do. The issuing line is captured only
when an op fails, so strict mode costs nothing on success.

"fused": ops are checked and their results allocated when issued, as in
debug mode, but libporta records them instead of running them and runs the
recorded trace as fused kernels at the next sync point: any read or write
of a porta tensor's contents by the host (item(), cpu(), printing, copies
to and from the CPU, a CPU fallback), torch.porta.synchronize(), the end
of every optimizer.step(), switching modes, or the trace reaching its size
limit. A trace shaped like an earlier one reuses its schedule and kernels.
An error that only running finds (an index out of range) raises at the
sync point, naming the Python line that issued the op.
"""
import os
import traceback

import torch
from torch.optim.optimizer import register_optimizer_step_post_hook

from . import _C, _metrics

MODES = ("debug", "strict", "fused")
_mode = os.environ.get("PORTA_EAGER_MODE", "debug")
if _mode not in MODES:
    raise ValueError(f"PORTA_EAGER_MODE must be one of {MODES}, got {_mode!r}")
_pending = []  # deferred failures, oldest first
# Frames in torch and torch_porta are never the line that issued an op.
_SKIPPED_DIRS = (os.path.dirname(torch.__file__), os.path.dirname(__file__))
_C.trace_site_setup([os.path.join(d, "") for d in _SKIPPED_DIRS])  # "torch/", not "torchvision"


def _apply(mode):
    _C.aten_set_strict(mode == "strict")  # the C kernels of libporta's ops defer too
    _C.set_fusion(mode == "fused")  # turning fusion off runs what was recorded


def set_eager_mode(mode):
    """Selects "debug", "strict" or "fused" (see the module's doc). Switching
    is a sync point: a failure still pending, deferred in strict mode or
    found running the fused trace, raises here (the new mode applies even
    then)."""
    global _mode
    if mode not in MODES:
        raise ValueError(f"eager mode must be one of {MODES}, got {mode!r}")
    try:
        _raise_pending("set_eager_mode")
        _C.flush()
    finally:
        _mode = mode
        _apply(mode)


def get_eager_mode():
    return _mode


def sync_point(kind):
    """The host waits for porta here: counts it, runs the fused trace and
    raises the oldest failure deferred in strict mode (later ones are
    dropped, as a CUDA error makes the results after it meaningless)."""
    _metrics.count_sync(kind)
    if _mode == "fused":
        _C.flush()
    _raise_pending(kind)


def surface_pending(kind):
    """Runs the fused trace and raises a failure still pending, as a sync
    point does, without counting a sync (the copy that follows counts)."""
    if _mode == "fused":
        _C.flush()
    _raise_pending(kind)


def _flush_after_step(optimizer, args, kwargs):
    # An optimizer step ends a training iteration: its updates run now, so
    # a trace never spans iterations and every iteration's trace is alike.
    if _mode == "fused":
        _C.flush()


register_optimizer_step_post_hook(_flush_after_step)
_apply(_mode)


def _raise_pending(kind):
    if _pending:
        name, error, issued_at = _pending[0]
        _pending.clear()
        raise type(error)(f"{error}\n(porta strict mode: raised by aten::{name} issued at "
                          f"{issued_at}; surfaced at {kind})") from error


def is_poisoned(tensor):
    """Whether tensor is a result of an op that failed in strict mode."""
    return getattr(tensor.untyped_storage(), "_porta_poisoned", False)


def issued(name, op, kernel):
    """The Python glue kernel of aten overload `op` as the dispatcher calls
    it: counted, and in strict mode with its failures deferred (the C
    kernels of libporta's ops do the same in python/csrc/kernel.c)."""
    def run(*args, **kwargs):
        _metrics.count_op(name)
        if _mode == "fused":
            _C.trace_site_here(name)
            return kernel(*args, **kwargs)
        if _mode == "debug":
            return kernel(*args, **kwargs)
        try:
            return kernel(*args, **kwargs)
        except Exception as error:
            return _defer(name, op, args, kwargs, error)
    return run


def defer_native(name, values, error):
    """Strict mode for libporta's native kernels (python/native/): op `name`
    failed with `error` on `values` (every argument, in schema order)."""
    from .kernels._aten import _overload
    op = _overload(name)
    arguments = op._schema.arguments
    args = [v for v, a in zip(values, arguments) if not a.kwarg_only]
    kwargs = {a.name: v for v, a in zip(values, arguments) if a.kwarg_only}
    return _defer(name, op, tuple(args), kwargs, error)


def _issuing_line():
    """file:line of the innermost frame outside torch and torch_porta."""
    skipped = (os.path.dirname(torch.__file__), os.path.dirname(__file__))
    for frame in reversed(traceback.extract_stack()):
        if not frame.filename.startswith(skipped):
            return f"{frame.filename}:{frame.lineno} ({frame.line})"
    return "<unknown>"


def _meta(value):
    if isinstance(value, torch.Tensor) and value.device.type == "porta":
        return torch.empty_strided(value.shape, value.stride(), dtype=value.dtype,
                                   device="meta")
    if isinstance(value, (list, tuple)):
        return type(value)(_meta(item) for item in value)
    return value


def _defer(name, op, args, kwargs, error):
    try:
        shapes = op(*_meta(args), **{k: _meta(v) for k, v in kwargs.items()})
    except Exception:
        raise error from None  # PyTorch's own checks reject the call too
    from .kernels._aten import _return_plan
    values = list(args) + [kwargs.get(a.name) for a in op._schema.arguments[len(args):]]
    multiple = len(op._schema.returns) > 1
    results = list(shapes) if multiple else [shapes]
    placeholders = []
    for (how, source), shape in zip(_return_plan(op._schema), results):
        if how == "input":  # in-place or out=: the written tensor is poisoned
            values[source].untyped_storage()._porta_poisoned = True
            placeholders.append(values[source])
        elif how == "view":
            raise error  # a view must share its base's storage: nothing to stand in
        elif isinstance(shape, torch.Tensor):
            placeholder = torch.empty_strided(shape.shape, shape.stride(), dtype=shape.dtype,
                                              device="porta")
            placeholder.untyped_storage()._porta_poisoned = True
            placeholders.append(placeholder)
        else:
            placeholders.append(shape)
    _pending.append((name, error, _issuing_line()))
    return tuple(placeholders) if multiple else placeholders[0]
