"""Fault injection from Python (torch_porta.set_faults, docs/faults.md): a
device allocation, a driver call, a kernel build or a file write that fails
during a porta op, a fused op or a model's output write surfaces as a
Python error naming the fault (or, where Porta has a fallback, does not
change the result), and the next op works.

Runs on porta:0: the CPU, or the OpenCL device under `make test-opencl`."""
import os
import pathlib
import subprocess

import pytest
import torch
import torch.nn as nn

import torch_porta

ROOT = pathlib.Path(__file__).resolve().parents[2]
CLI = os.environ.get("PORTA_CLI", str(ROOT / "build" / "porta"))
INJECTED = "fault injected by the rule"


@pytest.fixture
def faults():
    yield torch_porta.set_faults
    torch_porta.set_faults(None)


@pytest.fixture
def fused_cold_cache(tmp_path, monkeypatch):
    """Fused mode with an empty kernel cache, so kernels are built here."""
    monkeypatch.setenv("PORTA_CACHE_DIR", str(tmp_path / "cache"))
    torch_porta.set_eager_mode("fused")
    yield tmp_path / "cache"
    torch_porta.set_eager_mode("debug")


def on_cpu():
    return torch_porta.get_device_name(0).endswith("(cpu)")


def temporary_files(root):
    return [p for p in pathlib.Path(root).rglob("*") if ".tmp" in p.name]


def test_malformed_rules_raise_and_change_nothing(faults):
    with pytest.raises(RuntimeError, match=r'expected comma-separated .* got "alloc:zero"'):
        faults("alloc:zero")
    x = torch.arange(4.0, device="porta")
    assert (x + 1).cpu().tolist() == [1, 2, 3, 4]


def test_allocation_fault_raises_and_the_next_op_works(faults):
    x = torch.arange(4.0, device="porta")
    before = torch_porta.memory_allocated()
    faults("alloc:1")
    with pytest.raises((RuntimeError, MemoryError), match=INJECTED + " alloc:1"):
        x + 1
    assert torch_porta.memory_allocated() == before
    assert (x + 1).cpu().tolist() == [1, 2, 3, 4]


def test_driver_fault_raises_and_the_next_op_works(faults):
    x = torch.arange(4.0, device="porta")
    y = torch.full((4,), 2.0, device="porta")
    faults("driver:1")
    with pytest.raises(RuntimeError, match=INJECTED + " driver:1"):
        (x * y).cpu()
    assert (x * y).cpu().tolist() == [0, 2, 4, 6]


def test_fused_build_fault_then_the_kernel_builds(faults, fused_cold_cache):
    """The CPU runs a kernel its compiler could not build as separate ops
    (the result is unchanged, and the trace keeps that schedule); OpenCL
    raises at the sync point. The same trace then works, and another one
    builds its kernel."""
    def fused(n):
        x = torch.linspace(-1, 1, n, device="porta")
        return (x * 5).sin().exp().neg().sigmoid().cpu()

    def want(n):
        return (torch.linspace(-1, 1, n) * 5).sin().exp().neg().sigmoid()

    def compiled():
        return torch_porta._C.compiler_stats()["kernels_compiled"]

    faults("build:1")
    before = compiled()
    if on_cpu():
        torch.testing.assert_close(fused(7), want(7))
    else:
        with pytest.raises(RuntimeError, match=INJECTED + " build:1"):
            fused(7)
    assert compiled() == before
    torch.testing.assert_close(fused(7), want(7))
    torch.testing.assert_close(fused(9), want(9))
    assert compiled() > before


def test_kernel_cache_write_fault_leaves_no_partial_file(faults, fused_cold_cache):
    """A kernel whose cache entry cannot be written still runs (once built
    or run as separate ops); nothing half-written stays in the cache."""
    x = torch.linspace(-1, 1, 7, device="porta")
    want = (x.cpu() * 3).cos().tanh().abs().sqrt()
    faults("write:1")
    torch.testing.assert_close((x * 3).cos().tanh().abs().sqrt().cpu(), want)
    assert not temporary_files(fused_cold_cache)
    torch.testing.assert_close((x * 3).cos().tanh().abs().sqrt().cpu(), want)


def test_model_output_write_fault_exits_1_and_writes_nothing(tmp_path):
    """`porta run` of an exported model whose output's write hits a full
    disk (PORTA_FAULTS=write:3: the data, after the header): exit status 1
    with the OS's error, and neither the output nor a temporary file."""
    if not os.access(CLI, os.X_OK):
        pytest.fail(f"the porta command is not built: {CLI} (set PORTA_CLI)")
    model = nn.Linear(3, 2).eval()
    torch_porta.export(model, (torch.randn(4, 3),), tmp_path / "m.porta")
    from safetensors.torch import save_file
    save_file({"0": torch.randn(4, 3)}, tmp_path / "in.safetensors")
    out = tmp_path / "out.safetensors"
    command = [CLI, "run", str(tmp_path / "m.porta"), "--input", str(tmp_path / "in.safetensors"),
               "--output", str(out)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    done = subprocess.run(command, capture_output=True, text=True, timeout=120,
                          env={**env, "PORTA_FAULTS": "write:3"})
    assert done.returncode == 1, done.stdout + done.stderr
    assert "No space left on device" in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.safetensors", "m.porta"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert out.exists()
