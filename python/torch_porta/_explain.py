"""torch_porta.explain(fn, *args): the kernels libporta runs for fn.

    report = torch_porta.explain(lambda: (a * b + 1).relu().sum(1) * 2)
    print(report)            # the kernels, one entry each
    len(report.kernels)      # 1

fn runs in fused mode (whatever the eager mode was; it is restored after)
and everything it issued is flushed before the report is read. libporta
writes the report (porta_explain_start/stop), per flushed trace:

    trace <hash>: <n> primitives -> <k> kernels (scheduled | schedule reused)
      kernel 0: fused elementwise [mul, add, relu] over [64, 8192]
      kernel 1: sum
    <with source=True, the generated code of each fused kernel, after its line>

A kernel is fused ("fused elementwise", "fused reduction", "matmul with
fused epilogue", naming the primitives it computes and its domain) or one
primitive run by its own kernel (its name alone).
"""
import re

from . import _C, _modes

_TRACE = re.compile(r"trace (\S+): (\d+) primitives -> (\d+) kernels \((.*)\)")
_KERNEL = re.compile(r"\s+kernel (\d+): (.*)")


class Kernel:
    """One kernel of the report: `text` is what it computes, `details` the
    lines after it (its generated source), `trace` the index of its trace
    in the report."""

    def __init__(self, text, trace):
        self.text = text
        self.details = []
        self.trace = trace

    @property
    def source(self):
        return "\n".join(self.details)

    @property
    def fused(self):
        """Whether libporta generated the kernel (else one primitive ran by
        its own kernel)."""
        return self.text.startswith(("fused ", "matmul with fused epilogue"))

    @property
    def is_matmul_with_epilogue(self):
        """Whether the kernel is a GEMM applying fused elementwise work to
        its output blocks."""
        return self.text.startswith("matmul with fused epilogue")

    def __repr__(self):
        return f"Kernel({self.text!r})"

    def __str__(self):
        return "\n".join([self.text, *self.details])


class Trace:
    """One flushed trace: its structure's `hash`, `primitives` recorded,
    `cached` (its schedule was reused) and its `kernels`."""

    def __init__(self, hash_text, primitives, cached):
        self.hash = hash_text
        self.primitives = primitives
        self.cached = cached
        self.kernels = []

    def __repr__(self):
        return (f"Trace({self.hash}, {self.primitives} primitives, "
                f"{len(self.kernels)} kernels{', cached' if self.cached else ''})")


class Explanation:
    """What explain() found: `kernels` (Kernel, in run order), `traces`
    (Trace, one per flush that ran something), `report` (libporta's text)
    and `result` (what fn returned)."""

    def __init__(self, report, result):
        self.report = report
        self.result = result
        self.traces = parse(report)
        self.kernels = [kernel for trace in self.traces for kernel in trace.kernels]

    def __len__(self):
        return len(self.kernels)

    def __iter__(self):
        return iter(self.kernels)

    def __str__(self):
        lines = [f"{len(self.kernels)} kernel(s) in {len(self.traces)} trace(s)"]
        for number, trace in enumerate(self.traces):
            reuse = ", schedule reused" if trace.cached else ""
            lines.append(f"trace {number}: {trace.primitives} primitives -> "
                         f"{len(trace.kernels)} kernels{reuse}")
            for kernel in trace.kernels:
                lines.append(f"  {kernel.text}")
                lines.extend(f"    {line}" for line in kernel.details)
        return "\n".join(lines)

    def __repr__(self):
        return (f"<porta explanation: {len(self.kernels)} kernel(s) in "
                f"{len(self.traces)} trace(s)>")


def parse(report):
    """The traces of a report, with their kernels (see the module's doc)."""
    traces = []
    for line in report.splitlines():
        header = _TRACE.match(line)
        if header:
            traces.append(Trace(header.group(1), int(header.group(2)),
                                header.group(4) == "schedule reused"))
            continue
        kernel = _KERNEL.match(line)
        if kernel and traces:
            traces[-1].kernels.append(Kernel(kernel.group(2).rstrip(), len(traces) - 1))
        elif traces and traces[-1].kernels and line.strip():
            traces[-1].kernels[-1].details.append(line.rstrip())
    return traces


def explain(fn, *args, source=False, **kwargs):
    """Runs fn(*args, **kwargs) in fused mode and returns an Explanation of
    the kernels its ops became. Work issued before the call runs first and
    is not part of the report."""
    previous = _modes.get_eager_mode()
    _modes.set_eager_mode("fused")  # a sync point: earlier work runs here
    _C.explain_start(bool(source))
    try:
        result = fn(*args, **kwargs)
        _C.flush()
    finally:
        report = _C.explain_stop()
        _modes.set_eager_mode(previous)
    return Explanation(report, result)
