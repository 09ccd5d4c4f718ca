"""Counters of what the porta device did: ops run natively (by libporta or
a Python glue kernel), ops that fell back to PyTorch's CPU kernels, bytes
copied between the host and porta, and sync points (the moments the host
waits for porta's results: "item"; "to_host" for cpu(), printing, which
formats a CPU copy, and any copy to the CPU; "synchronize" for
torch.porta.synchronize(); "fallback" for each op run on the CPU).

The compiler's counters (fused mode and torch.compile) come from libporta:
traces run ("flushes"), traces scheduled anew ("graphs_compiled") or that
reused a schedule ("graph_cache_hits"), kernels built ("kernels_compiled"),
found loaded ("kernel_memory_hits") or loaded from the disk cache
("kernel_disk_hits"), "compile_seconds", fused kernels launched
("kernels_run"), primitives run inside fused kernels ("prims_fused") or by
their own kernel ("prims_alone"), the kernels of the last trace
("last_trace_kernels") and their mean per trace ("kernels_per_trace").
"placements" lists, per (op, from, to), a dict {"op", "from", "to",
"count", "bytes_in", "bytes_out"}: primitives a porta device could not run
(float64 on an OpenCL device without cl_khr_fp64, a kernel a backend
lacks) that ran on device "to" instead of "from" (porta:N indices), and
the bytes copied there and back (a list, so the snapshot stays JSON).
"compiles" counts the graphs torch.compile gave the porta backend
("dynamo") and the aten graphs it compiled ("forward", "backward",
"inference").

The counters are plain dict increments, cheap enough to stay always on.
"""
import collections

from . import _C

_ops = collections.Counter()  # Python glue kernels; libporta's ops count in C
_fallbacks = collections.Counter()
_syncs = collections.Counter()
_bytes = collections.Counter()
_compiles = collections.Counter()  # graphs given to the torch.compile backend
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


def count_compile(kind):
    _compiles[kind] += 1


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
    "bytes_to_device": n, "bytes_to_host": n, "syncs": {kind: n},
    "compiles": {kind: n}} and the compiler's counters (see the module's
    doc) at the top level. Op names are aten overload names as in
    "add.Tensor" ("neg" for a default overload)."""
    ops = collections.Counter(_C.aten_op_counts())
    ops.update(_ops)
    compiler = _C.compiler_stats()
    kernels = compiler["kernels_run"] + compiler["prims_alone"]
    return {
        "ops": dict(ops),
        "fallbacks": dict(_fallbacks),
        "bytes_to_device": _bytes["to_device"],
        "bytes_to_host": _bytes["to_host"],
        "syncs": dict(_syncs),
        "compiles": dict(_compiles),
        "placements": [{"op": op, "from": src, "to": dst, "count": n, "bytes_in": b_in,
                        "bytes_out": b_out}
                       for op, src, dst, n, b_in, b_out in _C.placement_counts()],
        **compiler,
        "kernels_per_trace": kernels / compiler["flushes"] if compiler["flushes"] else 0.0,
    }


def reset_metrics():
    for counter in (_ops, _fallbacks, _syncs, _bytes, _compiles):
        counter.clear()
    _C.aten_reset_op_counts()
    _C.compiler_stats_reset()
    _C.placement_counts_reset()
