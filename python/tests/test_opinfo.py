"""OpInfo conformance: every OpInfo of PyTorch's op_db, run on porta against
the CPU (see opinfo_support.py for what is compared and the outcomes).

Each OpInfo must have the outcome opinfo_expected.json lists for it ("pass"
when absent; the list gives the reason of each other outcome). The list is strict both ways: an OpInfo that now does better
than listed fails too, so that fixes show in the list. Regenerate it after
adding ops:

    PORTA_OPINFO_UPDATE=1 .venv/bin/python -m pytest python/tests/test_opinfo.py

A JSON report of every outcome (with the ops that fell back and the first
error) is written to $PORTA_OPINFO_REPORT (default build/opinfo_report.json)
with a summary line "opinfo: N pass, N fail, N fallback, N unsupported,
N random, N skip", and how much of Core ATen (torch.Tag.core) porta covers
(core_aten.py). "unsupported" (what porta lacks by design) and "random"
(results that depend on porta's own random stream) are listed like "fail"
and "fallback", each with its reason in the report.

PORTA_TEST_MODE runs the same OpInfos in another mode: "fused" (fused
eager mode) or "compile" (each op under torch.compile(backend="porta"), one
sample per OpInfo: Dynamo and aot_autograd trace every sample anew, which
for every sample of every OpInfo would take far longer than the rest of
the suite). There an OpInfo that passes eagerly must pass too; other
outcomes are reported (to opinfo_report_<mode>.json), not compared.
PORTA_OPINFO_DTYPE runs the samples of another dtype: float64, bfloat16 or
complex64 (float32 by default), each held to its own list
(opinfo_expected_<dtype>.json) and reported to its own file.
PORTA_OPINFO_SAMPLES=N runs at most N samples per OpInfo in any mode (and
then, eagerly too, only the "pass" entries are compared): `make
test-opencl` runs fused mode on PoCL with one, which renders every op's
kernels to OpenCL C once, `make test-pjrt` the eager run on PJRT, and the
CPU's fused run takes two (the C conformance suite runs every primitive's
layouts fused on every device).
"""
import contextlib
import itertools
import os

import pytest
import torch
import torch_porta

import opinfo_report
import opinfo_support as support
from opinfo_report import DTYPE, EXPECTED, MODE, UPDATE

OPINFOS = support.opinfos()
# Set in a pytest-xdist worker, whose outcomes go to a part of the report
# that the controller merges (conftest.py).
WORKER = os.environ.get("PYTEST_XDIST_WORKER")
_outcomes = {}


@pytest.fixture(scope="module", autouse=True)
def report(pytestconfig):
    yield
    if WORKER:
        return
    line = opinfo_report.write(_outcomes)
    plugins = pytestconfig.pluginmanager
    terminal, capture = plugins.getplugin("terminalreporter"), plugins.getplugin("capturemanager")
    if terminal is not None and capture is not None:
        with capture.global_and_fixture_disabled():
            terminal.write_line("\n" + line)


SAMPLE_LIMIT = int(os.environ.get("PORTA_OPINFO_SAMPLES", "0")) or None


class _FirstSamples:
    """The OpInfo with only its first `limit` samples."""

    def __init__(self, op, limit):
        self._op, self._limit = op, limit

    def __getattr__(self, name):
        return getattr(self._op, name)

    def sample_inputs(self, *args, **kwargs):
        return itertools.islice(self._op.sample_inputs(*args, **kwargs), self._limit)

    def __call__(self, *args, **kwargs):
        return self._op(*args, **kwargs)


class _CompiledOpInfo(_FirstSamples):
    """The OpInfo with its first sample only, called through
    torch.compile(backend="porta") when given porta tensors (the CPU
    reference runs eagerly)."""

    def __init__(self, op):
        super().__init__(op, 1)
        function = op.op

        def call(*args, **kwargs):
            return function(*args, **kwargs)
        self._compiled = torch.compile(call, backend="porta", dynamic=False)

    def __call__(self, *args, **kwargs):
        leaves = torch.utils._pytree.tree_leaves((args, kwargs))
        if any(isinstance(v, torch.Tensor) and v.device.type == "porta" for v in leaves):
            return self._compiled(*args, **kwargs)
        return self._op(*args, **kwargs)


@contextlib.contextmanager
def _in_mode():
    if MODE == "fused":
        torch_porta.set_eager_mode("fused")
        try:
            yield
        finally:
            torch_porta.set_eager_mode("debug")
    elif MODE == "compile":
        torch._dynamo.reset()
        try:
            yield
        finally:
            torch._dynamo.reset()
    else:
        yield


@pytest.mark.parametrize("op", OPINFOS, ids=support.opinfo_key)
def test_opinfo(op):
    key = support.opinfo_key(op)
    with _in_mode():
        if MODE == "compile":
            op = _CompiledOpInfo(op)
        elif SAMPLE_LIMIT:
            op = _FirstSamples(op, SAMPLE_LIMIT)
        outcome = support.run_opinfo(op, DTYPE)
    _outcomes[key] = outcome
    if WORKER:
        opinfo_report.append_to_part(key, outcome, WORKER)
    status, expected = outcome["status"], EXPECTED.get(key, "pass")
    # the list holds the outcomes of every sample run eagerly: other modes
    # and runs of the first samples only must pass where it says "pass"
    if MODE != "eager" or SAMPLE_LIMIT:
        if expected == "pass" and status not in ("pass", "skip"):
            pytest.fail(f"{key} passes eagerly, {status} in {MODE} mode: "
                        f"{outcome.get('reason') or outcome.get('fallbacks')}")
        return
    if status == "skip" and (UPDATE or key not in EXPECTED):
        pytest.skip(outcome["reason"])
    if UPDATE or status == expected:
        return
    if status == "skip":
        pytest.fail(f"{key}: listed as {expected} but skipped now ({outcome['reason']}): "
                    "remove it from the list")
    if status == "pass":
        pytest.fail(f"{key} passes now: remove it from the list (opinfo_expected.json)")
    detail = outcome.get("reason") or f"ops run on the CPU: {outcome.get('fallbacks')}"
    if expected == "fail":
        pytest.fail(f"{key}: listed as fail, now {status} ({detail}): update the list")
    pytest.fail(f"{key}: expected {expected}, got {status}: {detail}")


# ---- the harness's own rules ----

def _opinfo(key):
    return next(op for op in OPINFOS if support.opinfo_key(op) == key)


def test_samples_keep_their_storage_on_porta():
    base = torch.arange(20.0)
    view = base[5:15].t()
    moved = support._to_porta(view)
    assert (moved.storage_offset(), moved.stride()) == (5, (1,))
    assert torch.equal(moved.as_strided((2, 2), (1, 2), 0).cpu(), base.as_strided((2, 2), (1, 2)))


def test_tolerance_overrides_are_the_opinfos_own():
    assert support.tolerance(_opinfo("add")) == support._DEFAULT_TOLERANCE
    # conv2d's only float32 override is for MPS, which computes with fast math
    assert support.tolerance(_opinfo("nn.functional.conv2d")) == support._DEFAULT_TOLERANCE
    conv3d = support.tolerance(_opinfo("nn.functional.conv_transpose3d"))
    assert conv3d["atol"] == 2e-4 and "TestCompositeCompliance" in conv3d["from"]


def test_float64_rule_accepts_rounding_not_errors():
    reference = torch.tensor([196.0, 0.2702], dtype=torch.float64)
    cpu = reference.float()
    assert support._as_accurate(cpu + torch.tensor([0.0, 2.9e-5]), cpu, reference)
    assert not support._as_accurate(cpu + torch.tensor([0.0, 1e-2]), cpu, reference)
    assert not support._as_accurate(cpu, cpu, None)


def test_random_samples_are_named_precisely():
    from torch.testing._internal.opinfo.core import SampleInput
    x = torch.ones(3)
    for key, kwargs, random in [("nn.functional.dropout", {}, True),
                                ("nn.functional.dropout", {"p": 0.0}, False),
                                ("nn.functional.dropout", {"p": 0.5, "training": False}, False),
                                ("nn.functional.alpha_dropout", {"p": 0.5}, False),
                                ("nn.functional.scaled_dot_product_attention", {"dropout_p": 0.5},
                                 True),
                                ("nn.functional.scaled_dot_product_attention", {}, False),
                                ("nn.functional.rrelu", {"lower": 0.0, "upper": 1.0,
                                                         "training": True}, True),
                                ("nn.functional.rrelu", {}, False),
                                ("add", {}, False)]:
        assert bool(support._random_sample(key, SampleInput(x, kwargs=kwargs))) == random
