import atexit
import os
import shutil
import tempfile

import pytest
import torch

import opinfo_report
import torch_porta

# Kernels the tests compile go to a directory of their own, removed at the
# end, never to the user's cache (libporta reads PORTA_CACHE_DIR at each
# compile).
_KERNEL_CACHE = tempfile.mkdtemp(prefix="porta-test-cache-")
os.environ.setdefault("PORTA_CACHE_DIR", _KERNEL_CACHE)
atexit.register(shutil.rmtree, _KERNEL_CACHE, ignore_errors=True)


def _is_xdist_worker(config):
    return hasattr(config, "workerinput")


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "serial: run in a pytest process of its own, never beside another test "
        "(MPI ranks, timing, progress lines, profiler traces, whole-demo subprocesses); "
        "`make test` runs these with -m serial after the rest, which runs in parallel")


def pytest_sessionstart(session):
    if not _is_xdist_worker(session.config):
        opinfo_report.remove_parts()


def pytest_sessionfinish(session):
    """With pytest-xdist, the OpInfo report merged from the workers' parts."""
    if _is_xdist_worker(session.config):
        return
    outcomes = opinfo_report.take_parts()
    if outcomes is None:
        return
    line = opinfo_report.write(outcomes)
    terminal = session.config.pluginmanager.getplugin("terminalreporter")
    if terminal is not None:
        terminal.write_line("\n" + line)


@pytest.fixture
def no_fallbacks():
    """The test's ops all run on porta: none falls back to the CPU."""
    torch_porta.reset_metrics()
    yield
    assert torch_porta.metrics()["fallbacks"] == {}


@pytest.fixture
def rng():
    return torch.Generator().manual_seed(0)


def assert_matches(porta_result, cpu_result, atol=1e-6):
    assert porta_result.device.type == "porta"
    assert porta_result.dtype == cpu_result.dtype
    assert porta_result.shape == cpu_result.shape
    torch.testing.assert_close(porta_result.cpu(), cpu_result, atol=atol, rtol=1e-5)
