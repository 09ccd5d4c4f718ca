"""The PJRT backend's devices from Python: `porta devices` lists the XLA
CPU plugin's device as backend "pjrt", and ops on it (StableHLO modules
there, or placed on the CPU, copying through the device's buffers) give the
CPU's results. Skipped, saying why, where no PJRT plugin is installed
(the set-up installs one; PORTA_REQUIRE_PJRT, set by CI, makes it a
failure)."""
import os
import subprocess
import sys

import pytest
import torch

import torch_porta  # noqa: F401  (registers the device)


def pjrt_index():
    for index in range(torch.porta.device_count()):
        if torch.porta.get_device_properties(index).backend == "pjrt":
            return index
    if os.environ.get("PORTA_VISIBLE_DEVICES"):
        pytest.skip("no PJRT device among PORTA_VISIBLE_DEVICES")
    why = "no PJRT device: install a plugin (pip install --no-deps lammps-jax-pjrt-cpu)"
    if os.environ.get("PORTA_REQUIRE_PJRT"):
        pytest.fail(f"PORTA_REQUIRE_PJRT is set but {why}")
    pytest.skip(why)


def test_porta_devices_lists_the_pjrt_device():
    index = pjrt_index()
    porta = os.path.join(os.path.dirname(sys.executable), "porta")
    done = subprocess.run([porta, "devices"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    line = next(l for l in done.stdout.splitlines() if l.startswith(f"porta:{index} "))
    assert line.split()[1] == "pjrt" and line.split()[-1] == "cpu", done.stdout


def test_ops_on_the_pjrt_device_give_the_cpus_results():
    device = f"porta:{pjrt_index()}"
    x = torch.ones(3, device=device) + 1
    assert x.device == torch.device(device)
    torch.testing.assert_close(x.cpu(), torch.ones(3) + 1, rtol=0, atol=0)
    a = torch.randn(5, 7, generator=torch.Generator().manual_seed(0))
    b = torch.randn(7, 3, generator=torch.Generator().manual_seed(1))
    got = (a.to(device) @ b.to(device)).relu().sum(0)
    torch.testing.assert_close(got.cpu(), (a @ b).relu().sum(0), rtol=1e-5, atol=1e-5)
    strided = a.to(device).t()[1:, ::2]  # a view reads through partial copies
    torch.testing.assert_close(strided.cpu(), a.t()[1:, ::2], rtol=0, atol=0)


def test_a_pjrt_device_alone_places_on_the_hidden_cpu():
    # PORTA_VISIBLE_DEVICES=pjrt hides the CPU backend from the program, not
    # from placement: what the plugin cannot run still runs on the host CPU,
    # counted as placed on device -1.
    pjrt_index()
    script = (
        "import torch, torch_porta\n"
        "x = torch.randn(5, 6, generator=torch.Generator().manual_seed(0))\n"
        "assert torch.porta.device_count() == 1\n"
        "assert torch.porta.get_device_properties(0).backend == 'pjrt'\n"
        "n = (x * 10).long()\n"
        "got = (n.to('porta') // 3).cpu()\n"  # integer division reports division by zero eagerly
        "assert torch.equal(got, n // 3)\n"
        "placed = [p for p in torch_porta.metrics()['placements']\n"
        "          if p['op'].startswith('binary.floor_divide')]\n"
        "assert placed and all(p['from'] == 0 and p['to'] == -1 for p in placed), placed\n"
        "print('ok')\n")
    env = dict(os.environ, PORTA_VISIBLE_DEVICES="pjrt")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stdout + done.stderr
