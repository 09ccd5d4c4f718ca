"""scripts/pjrt_gpu_check.sh on a machine without what it needs: it stops at
once, exit status 2, with a line saying what is missing (a GPU, JAX's CUDA
PJRT plugin), before building anything."""
import glob
import os
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "pjrt_gpu_check.sh")


def _run_with_nvidia_smi(tmp_path, body):
    """The script with a stand-in nvidia-smi (a shell script `body`) first on
    the PATH; its logs in tmp_path/logs."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "nvidia-smi"
    fake.write_text("#!/bin/sh\n" + body + "\n")
    fake.chmod(0o755)
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}", OUT=str(tmp_path / "logs"))
    env.pop("PORTA_PJRT_PLUGINS", None)
    return subprocess.run(["bash", SCRIPT], env=env, capture_output=True, text=True, timeout=60)


def test_without_a_gpu_it_stops_naming_nvidia_smis_answer(tmp_path):
    done = _run_with_nvidia_smi(
        tmp_path, "echo \"NVIDIA-SMI has failed because it couldn't communicate with the "
                  "NVIDIA driver.\"; exit 9")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "pjrt_gpu_check: no NVIDIA GPU here (nvidia-smi: NVIDIA-SMI has failed" in done.stderr
    assert "== build" not in done.stdout


def test_without_the_cuda_plugin_it_stops_saying_what_to_install(tmp_path):
    venv_plugins = glob.glob(os.path.join(ROOT, ".venv", "lib", "python3*", "site-packages",
                                          "jax_plugins", "*cuda*", "*.so"))
    if venv_plugins:
        pytest.skip("JAX's CUDA PJRT plugin is installed here: the script would run")
    done = _run_with_nvidia_smi(tmp_path, "echo 'NVIDIA H100 80GB HBM3, 560.35, 81559 MiB'")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "pjrt_gpu_check: no CUDA PJRT plugin" in done.stderr
    assert "jax-cuda13-pjrt" in done.stderr
    assert "== build" not in done.stdout
