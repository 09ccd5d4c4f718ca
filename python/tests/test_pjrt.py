"""The PJRT device (an XLA CPU plugin): ops and a small MLP's training step
run there as StableHLO modules and match PyTorch's CPU.

A child process makes the PJRT device porta:0 and the CPU device porta:1
(PORTA_VISIBLE_DEVICES=pjrt,cpu), since devices are probed once per process,
with PORTA_FALLBACK=error so nothing leaves porta for PyTorch's CPU kernels.
Eagerly, in fused eager mode and (the ops) through torch.compile, results equal PyTorch's CPU, and the
placement counters show that elementwise ops, reductions, matmuls, pads,
gathers, index_selects, scatters, sorts, convolutions and max pooling ran on the PJRT
device (what it lacks, such as random numbers or integer division, may be
placed on porta:1). Skipped where no PJRT plugin is installed
(PORTA_REQUIRE_PJRT makes that a failure)."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

def _no_pjrt():
    why = "no PJRT device: install a plugin (pip install --no-deps lammps-jax-pjrt-cpu)"
    if os.environ.get("PORTA_REQUIRE_PJRT"):
        pytest.fail(f"PORTA_REQUIRE_PJRT is set but {why}")
    pytest.skip(why)


CHILD = textwrap.dedent("""
    import json
    import torch
    import torch_porta

    if torch.porta.get_device_properties(0).backend != "pjrt":
        print("REPORT " + json.dumps({"no_pjrt": True}))
        raise SystemExit(0)
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(16, 8, generator=gen)
    y = torch.randn(16, 4, generator=gen)
    a = torch.randn(20, 7, generator=gen)
    b = torch.randn(7, generator=gen)

    def ops(a, b):
        return [a + b, a * b - 1, torch.exp(a).sum(1), torch.relu(a).amax(0),
                (a > 0).sum(), a.t() @ a, torch.where(a > b, a, b / 2), a.to(torch.float16) * 3,
                torch.atan(a * 3), torch.nn.functional.pad(a, (1, -2), value=0.5),
                torch.gather(a, 1, (a.abs() * 3).long().clamp(max=6)),
                a.index_select(0, torch.arange(5, device=a.device) * 3),
                torch.sort(a, dim=1, stable=True)[1],
                torch.zeros_like(a).scatter_add(1, (a.abs() * 3).long().clamp(max=6), a),
                torch.nn.functional.conv1d(a[None], b.reshape(1, 1, 7).expand(20, 1, 7),
                                           padding=2, groups=20),
                torch.nn.functional.max_pool1d(a[None], 3, stride=2, padding=1)]

    def train_step(model, x, y, steps=2):
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        losses = []
        for _ in range(steps):
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            losses.append(loss.detach())
        return losses, [p.detach() for p in model.parameters()]

    def mlp():
        torch.manual_seed(1)
        return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(),
                                   torch.nn.Linear(16, 4))

    want_ops = ops(a, b)
    want_losses, want_params = train_step(mlp(), x, y)
    report = {}

    def run(mode):
        torch_porta.reset_metrics()
        got = ops(a.to("porta:0"), b.to("porta:0"))
        for g, w in zip(got, want_ops):
            assert g.device == torch.device("porta", 0), g.device
            torch.testing.assert_close(g.cpu(), w, rtol=1e-5, atol=1e-5)
        model = mlp().to("porta:0")
        losses, params = train_step(model, x.to("porta:0"), y.to("porta:0"))
        for g, w in zip(losses + params, want_losses + want_params):
            torch.testing.assert_close(g.cpu(), w, rtol=1e-5, atol=1e-5)
        m = torch_porta.metrics()
        report[mode] = {
            "placed": sorted({p["op"] for p in m["placements"]}),
            "fallbacks": m["fallbacks"],
            "prims_fused": m["prims_fused"],
        }

    default_mode = torch_porta.get_eager_mode()
    run("eager")
    torch_porta.set_eager_mode("fused")
    run("fused")
    torch_porta.set_eager_mode(default_mode)
    torch_porta.reset_metrics()
    compiled = torch.compile(lambda a, b: ops(a, b), backend="porta")
    for g, w in zip(compiled(a.to("porta:0"), b.to("porta:0")), want_ops):
        torch.testing.assert_close(g.cpu(), w, rtol=1e-5, atol=1e-5)
    m = torch_porta.metrics()
    report["compile"] = {"placed": sorted({p["op"] for p in m["placements"]}),
                         "fallbacks": m["fallbacks"], "prims_fused": m["prims_fused"]}
    print("REPORT " + json.dumps(report))
""")


def test_ops_and_mlp_training_run_on_the_pjrt_device(tmp_path):
    env = dict(os.environ, PORTA_VISIBLE_DEVICES="pjrt,cpu", PORTA_FALLBACK="error",
               PORTA_CACHE_DIR=str(tmp_path))
    done = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    line = next(l for l in done.stdout.splitlines() if l.startswith("REPORT "))
    report = json.loads(line[len("REPORT "):])
    if report.get("no_pjrt"):
        _no_pjrt()
    for mode in ("eager", "fused", "compile"):
        placed = report[mode]["placed"]
        # elementwise ops, casts, reductions and matmul ran on the PJRT device
        for op in placed:
            assert not op.startswith(("unary.", "binary.", "ternary.", "reduce.")), (mode, placed)
            assert op not in ("cast", "fill", "matmul"), (mode, placed)
            assert not op.startswith(("pad", "gather", "index_select", "scatter", "sort",
                                      "conv", "pool")), (mode, placed)
        assert not report[mode]["fallbacks"], (mode, report[mode]["fallbacks"])
    assert report["fused"]["prims_fused"] > 0 and report["compile"]["prims_fused"] > 0


RECOMPILES = textwrap.dedent("""
    import torch
    import torch_porta

    if torch.porta.get_device_properties(0).backend != "pjrt":
        print("NO_PJRT")
        raise SystemExit(0)
    for n in (6, 6, 9):
        (torch.arange(n, dtype=torch.float32).to("porta:0") * 3).cpu()
""")


def test_recompiles_name_the_shape_that_changed():
    env = dict(os.environ, PORTA_VISIBLE_DEVICES="pjrt,cpu", PORTA_LOG="recompiles")
    done = subprocess.run([sys.executable, "-c", RECOMPILES], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    if "NO_PJRT" in done.stdout:
        _no_pjrt()
    lines = [l for l in done.stderr.splitlines() if "again for pjrt" in l]
    # the multiply compiled for [6] once and again for [9]; the repeat of [6]
    # compiled nothing
    assert any("domain [6] -> [9]" in l for l in lines), done.stderr
    assert not any("[6] -> [6]" in l for l in lines), done.stderr
