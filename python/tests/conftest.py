import atexit
import os
import shutil
import tempfile

import pytest
import torch

import torch_porta

# Kernels the tests compile go to a directory of their own, removed at the
# end, never to the user's cache (libporta reads PORTA_CACHE_DIR at each
# compile).
_KERNEL_CACHE = tempfile.mkdtemp(prefix="porta-test-cache-")
os.environ.setdefault("PORTA_CACHE_DIR", _KERNEL_CACHE)
atexit.register(shutil.rmtree, _KERNEL_CACHE, ignore_errors=True)


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
