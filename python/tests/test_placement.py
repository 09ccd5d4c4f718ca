"""Placement: an op a porta device cannot run runs on another porta device,
with the copies inserted by libporta, instead of failing or leaving porta.

The device that lacks something is the OpenCL device with its float64 hidden
(PORTA_OPENCL_FP64=0: it behaves as a GPU without cl_khr_fp64). It is made
porta:0 and the CPU device porta:1 (PORTA_VISIBLE_DEVICES=opencl,cpu) in a
child process, since devices are probed once per process. There a program
mixing float32 and float64 work runs eagerly, in fused eager mode and
through torch.compile: results equal PyTorch's CPU, and metrics() shows the
float64 primitives placed from porta:0 on porta:1 while the float32 ones
stay on the OpenCL device."""
import json
import os
import subprocess
import sys
import textwrap

import pytest
import torch

import torch_porta

CHILD = textwrap.dedent("""
    import json
    import torch
    import torch_porta

    assert torch.porta.device_count() == 2
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(6, 8, generator=gen)
    w = torch.randn(8, 3, dtype=torch.float64, generator=gen)
    lin = torch.nn.Linear(3, 2, dtype=torch.float64)

    def program(x, w, lin):
        a = x * 2 + 1                      # float32: the OpenCL device
        d = a.double() @ w                 # float64: placed on the CPU device
        e = torch.tanh(lin(d)).sum(1)      # float64 model layer: placed
        return e.float() * 0.5 + 3         # back to float32 on OpenCL

    want = program(x, w, lin)
    report = {}
    dev_lin = torch.nn.Linear(3, 2, dtype=torch.float64).to("porta:0")
    dev_lin.load_state_dict(lin.state_dict())
    xs, ws = x.to("porta:0"), w.to("porta:0")

    def run(mode, fn):
        torch_porta.reset_metrics()
        got = fn(xs, ws, dev_lin)
        assert got.device == torch.device("porta", 0), got.device
        got = got.cpu()
        torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-6)
        m = torch_porta.metrics()
        json.dumps(m)  # with placements in it, the snapshot stays JSON
        report[mode] = {
            "placements": [[p["op"], p["from"], p["to"], p["count"], p["bytes_in"],
                            p["bytes_out"]] for p in m["placements"]],
            "prims_fused": m["prims_fused"],
            "fallbacks": m["fallbacks"],
        }

    run("eager", program)
    default_mode = torch_porta.get_eager_mode()
    torch_porta.set_eager_mode("fused")
    run("fused", program)
    torch_porta.set_eager_mode(default_mode)
    run("compile", torch.compile(program, backend="porta"))
    # float32 work alone places nothing (.item() would: it widens the
    # element to float64 on the device first)
    torch_porta.reset_metrics()
    (xs * 3 - 1).sum().cpu()
    report["float32_only"] = {"placements": len(torch_porta.metrics()["placements"])}
    print("REPORT " + json.dumps(report))
""")


def _run_child(tmp_path, fp64):
    env = dict(os.environ, PORTA_VISIBLE_DEVICES="opencl,cpu", PORTA_CACHE_DIR=str(tmp_path))
    if fp64 is not None:
        env["PORTA_OPENCL_FP64"] = fp64
    done = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    line = next(l for l in done.stdout.splitlines() if l.startswith("REPORT "))
    return json.loads(line[len("REPORT "):])


def _opencl_driver_installed():
    vendors = os.environ.get("OCL_ICD_VENDORS") or "/etc/OpenCL/vendors"
    return os.path.isdir(vendors) and any(n.endswith(".icd") for n in os.listdir(vendors))


# Skipped only where no OpenCL driver is installed at all (CI installs PoCL).
needs_opencl = pytest.mark.skipif(
    not _opencl_driver_installed() and "PORTA_REQUIRE_OPENCL" not in os.environ,
    reason="no OpenCL driver (PoCL: pocl-opencl-icd)")


@needs_opencl
def test_float64_is_placed_on_the_cpu_device_in_every_mode(tmp_path):
    report = _run_child(tmp_path, "0")
    for mode in ("eager", "fused", "compile"):
        placed = report[mode]["placements"]
        ops = {op for op, *_ in placed}
        assert "matmul" in ops and "cast" in ops, (mode, placed)
        for op, src, dst, count, bytes_in, bytes_out in placed:
            assert (src, dst) == (0, 1), (mode, op, src, dst)  # OpenCL -> CPU device
            assert count > 0 and bytes_in > 0 and bytes_out > 0, (mode, op)
        matmul = next(p for p in placed if p[0] == "matmul")
        # a.double() @ w and the layer's: their float64 operands cross at
        # least once, their results come back
        assert matmul[3] >= 2 and matmul[4] >= (48 + 24 + 18 + 6) * 8, (mode, matmul)
        assert matmul[5] >= (18 + 12) * 8, (mode, matmul)
        # nothing went to PyTorch's CPU kernels
        assert not report[mode]["fallbacks"], (mode, report[mode]["fallbacks"])
    # in fused mode the float32 work still fused on the OpenCL device
    assert report["fused"]["prims_fused"] > 0
    assert report["compile"]["prims_fused"] > 0
    assert report["float32_only"]["placements"] == 0


@needs_opencl
def test_nothing_is_placed_when_the_device_has_float64(tmp_path):
    report = _run_child(tmp_path, None)  # PoCL reports cl_khr_fp64
    for mode in ("eager", "fused", "compile"):
        assert report[mode]["placements"] == [], (mode, report[mode]["placements"])


def test_metrics_report_placements_as_a_list():
    torch_porta.reset_metrics()
    assert torch_porta.metrics()["placements"] == []
