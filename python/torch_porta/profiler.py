"""A Chrome/Perfetto trace of what each porta device does.

    with torch_porta.profile("trace.json"):
        loss = model(x).sum()
        loss.backward()

or, as torch.profiler allows, ``prof = torch_porta.profile("trace.json");
prof.start(); ...; prof.stop()``. The file opens in chrome://tracing and
https://ui.perfetto.dev: one track per device (``porta:N backend (name)``)
and one for the host, one row per thread that issued the work, with events
for kernels (eager ops' primitives, fused kernels), kernel builds (the C
compiler, OpenCL, NVRTC), copies (between devices, to and from a device's
memory), syncs (flushes of fused mode, synchronize) and the ops PyTorch's
CPU ran for porta (the fallback), each with its arguments (bytes, what a
build did, which devices a copy joined).

On OpenCL and CUDA devices a kernel's event spans its launch, since the
device runs it later: the time shows in the read or synchronize that waits
for it. Stopping flushes fused mode's recorded ops first, so their kernels
land in the trace. One profiler runs at a time in a process.
"""
import os
import tempfile

from . import _C

__all__ = ["profile"]


class profile:
    """Records kernels, compiles, copies and syncs of every porta device
    between start() and stop() (or over a ``with`` block) and writes them to
    ``path`` as a Chrome trace event file. Without a path, the trace is kept
    for export_chrome_trace(path)."""

    def __init__(self, path=None):
        self.path = None if path is None else os.fspath(path)
        self._running = False
        self._trace = None  # the file's text, when no path was given

    def start(self):
        if self._running:
            raise RuntimeError("torch_porta.profile: already started")
        _C.profiler_start()
        self._running = True
        return self

    def stop(self):
        if not self._running:
            raise RuntimeError("torch_porta.profile: stop() without start()")
        self._running = False
        try:
            _C.flush()  # fused mode's pending ops run inside the trace
        finally:
            if self.path is not None:
                _C.profiler_stop(self.path)
            else:
                self._trace = _stop_into_text()

    def export_chrome_trace(self, path):
        """Writes the trace of a profiler made without a path to ``path``."""
        if self._running:
            raise RuntimeError("torch_porta.profile: export_chrome_trace() before stop()")
        if self._trace is None:
            raise RuntimeError("torch_porta.profile: nothing to export (the trace was written "
                               f"to {self.path})" if self.path else
                               "torch_porta.profile: nothing recorded yet")
        _C.write_file(path, self._trace)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False


def _stop_into_text():
    handle, name = tempfile.mkstemp(prefix="porta-trace-", suffix=".json")
    os.close(handle)
    try:
        _C.profiler_stop(name)
        with open(name, encoding="utf-8") as f:
            return f.read()
    finally:
        os.unlink(name)
