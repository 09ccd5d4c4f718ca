"""Counters of what the porta device did: ops run natively (by libporta or
a Python glue kernel), ops that fell back to PyTorch's CPU kernels, bytes
copied between the host and porta, and sync points (the moments the host
waits for porta's results: "item"; "to_host" for cpu(), printing, which
formats a CPU copy, and any copy to the CPU; "synchronize" for
torch.porta.synchronize(); "fallback" for each op run on the CPU).

The counters are plain dict increments, cheap enough to stay always on.
"""
import collections

from . import _C

_ops = collections.Counter()  # Python glue kernels; libporta's ops count in C
_fallbacks = collections.Counter()
_syncs = collections.Counter()
_bytes = collections.Counter()
# Ops a fallback issues itself (the copies to and from the CPU) are part of
# the fallback, not ops of the program.
_fallback_depth = 0


def count_op(name):
    if not _fallback_depth:
        _ops[name] += 1


def count_fallback(name):
    _fallbacks[name] += 1


def count_sync(kind):
    # A fallback's copies to the CPU are one sync, counted as "fallback".
    if not _fallback_depth:
        _syncs[kind] += 1


def count_copy(dst, src):
    """Counts the bytes of copy_(dst, src) that cross between the host and
    porta (a copy within porta moves none)."""
    to_porta, from_porta = dst.device.type == "porta", src.device.type == "porta"
    if to_porta != from_porta:
        _bytes["to_device" if to_porta else "to_host"] += src.numel() * src.element_size()


class inside_fallback:
    """Context in which ops are the fallback's own, not counted as ops."""

    def __enter__(self):
        global _fallback_depth
        _fallback_depth += 1
        _C.aten_pause_counting(True)

    def __exit__(self, *exc):
        global _fallback_depth
        _fallback_depth -= 1
        _C.aten_pause_counting(_fallback_depth > 0)


def metrics():
    """A snapshot: {"ops": {name: n}, "fallbacks": {name: n},
    "bytes_to_device": n, "bytes_to_host": n, "syncs": {kind: n}}.
    Op names are aten overload names as in "add.Tensor" ("neg" for a
    default overload)."""
    ops = collections.Counter(_C.aten_op_counts())
    ops.update(_ops)
    return {
        "ops": dict(ops),
        "fallbacks": dict(_fallbacks),
        "bytes_to_device": _bytes["to_device"],
        "bytes_to_host": _bytes["to_host"],
        "syncs": dict(_syncs),
    }


def reset_metrics():
    for counter in (_ops, _fallbacks, _syncs, _bytes):
        counter.clear()
    _C.aten_reset_op_counts()
