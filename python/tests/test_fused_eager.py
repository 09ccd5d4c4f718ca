"""Fused eager mode (torch_porta.set_eager_mode("fused")) and explain():
ops recorded and run as fused kernels at sync points, results equal to
debug mode and to the CPU, schedules reused across training steps, and
errors found while running named with the Python line that issued the op."""
import os
import subprocess
import sys

import pytest
import torch
import torch.nn as nn

import torch_porta


@pytest.fixture
def fused_mode():
    torch_porta.set_eager_mode("fused")
    yield
    torch_porta.set_eager_mode("debug")


@pytest.fixture
def generator():
    return torch.Generator().manual_seed(0)


def _line_of(marker):
    """The line number in this file of the line ending with `marker`."""
    with open(__file__) as source:
        for number, line in enumerate(source, 1):
            if line.rstrip().endswith(marker):
                return number
    raise AssertionError(f"no line ends with {marker!r}")


# ---- kernel counts ----

def test_elementwise_chain_and_reduction_is_one_kernel(generator):
    a = torch.randn(64, 8192, generator=generator)
    b = torch.randn(64, 8192, generator=generator)
    pa, pb = a.to("porta"), b.to("porta")
    report = torch_porta.explain(lambda: (pa * pb + 1).relu().sum(1) * 2)
    assert len(report.kernels) == 1, str(report)
    assert report.kernels[0].fused
    torch.testing.assert_close(report.result.cpu(), (a * b + 1).relu().sum(1) * 2,
                               rtol=1e-5, atol=1e-3)
    assert torch_porta.metrics()["last_trace_kernels"] == 1


def test_layer_norm_forward_is_at_most_two_kernels(generator):
    norm = nn.LayerNorm(1024)
    with torch.no_grad():
        norm.weight.normal_(generator=generator)
        norm.bias.normal_(generator=generator)
    x = torch.randn(64, 1024, generator=generator)
    on_porta = nn.LayerNorm(1024).to("porta")
    on_porta.load_state_dict(norm.state_dict())
    px = x.to("porta")
    with torch.no_grad():
        report = torch_porta.explain(on_porta, px)
        expected = norm(x)
    assert 1 <= len(report.kernels) <= 2, str(report)
    torch.testing.assert_close(report.result.cpu(), expected, rtol=1e-5, atol=1e-5)


def _backend():
    return torch.porta.get_device_name(0).rsplit("(", 1)[-1].rstrip(")")


def test_linear_bias_gelu_is_one_gemm_with_fused_epilogue(generator):
    model = nn.Sequential(nn.Linear(256, 512), nn.GELU())
    x = torch.randn(128, 256, generator=generator)
    on_porta = nn.Sequential(nn.Linear(256, 512), nn.GELU()).to("porta")
    on_porta.load_state_dict(model.state_dict())
    px = x.to("porta")
    with torch.no_grad():
        report = torch_porta.explain(on_porta, px)
        expected = model(x)
    if _backend() in ("cpu", "pjrt"):  # pjrt: one StableHLO module
        assert len(report.kernels) == 1, str(report)
        assert report.kernels[0].is_matmul_with_epilogue, str(report)
    else:  # no GEMM epilogues there yet: the matmul, then the epilogue as one kernel
        assert len(report.kernels) == 2, str(report)
        assert not report.kernels[1].is_matmul_with_epilogue, str(report)
    torch.testing.assert_close(report.result.cpu(), expected, rtol=1e-4, atol=1e-5)


def test_explain_shows_source_and_restores_the_mode(generator):
    x = torch.randn(32, 64, generator=generator).to("porta")
    torch_porta.set_eager_mode("debug")
    report = torch_porta.explain(lambda: (x.exp() * 3).sum(), source=True)
    assert torch_porta.get_eager_mode() == "debug"
    assert not torch_porta._C.get_fusion()
    assert report.kernels and report.kernels[0].source, str(report)
    text = str(report)
    assert "kernel(s) in" in text and report.kernels[0].text in text


# ---- results ----

def _forward_backward(device, generator_seed=0):
    torch.manual_seed(generator_seed)
    model = nn.Sequential(nn.Linear(32, 64), nn.LayerNorm(64), nn.GELU(), nn.Linear(64, 10))
    generator = torch.Generator().manual_seed(generator_seed)
    x = torch.randn(16, 32, generator=generator)
    labels = torch.randint(0, 10, (16,), generator=generator)
    model.to(device)
    logits = model(x.to(device))
    loss = nn.functional.cross_entropy(logits.softmax(-1).log() * 1.5, labels.to(device))
    loss.backward()
    return [loss.detach().cpu(), logits.detach().cpu()] + \
        [p.grad.cpu() for p in model.parameters()]


def test_results_equal_debug_mode_and_cpu(fused_mode):
    fused = _forward_backward("porta")
    torch_porta.set_eager_mode("debug")
    debug = _forward_backward("porta")
    cpu = _forward_backward("cpu")
    for got, eager, expected in zip(fused, debug, cpu):
        torch.testing.assert_close(got, eager, rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-5)


def test_max_pool_indices_equal_cpu(fused_mode, generator):
    # the indices are composed of several steps per window position, which
    # fused execution must keep apart (their values alone can come out right)
    x = torch.randn(4, 3, 8, 8, generator=generator)
    values, indices = nn.functional.max_pool2d(x.to("porta"), 2, return_indices=True)
    expected_values, expected_indices = nn.functional.max_pool2d(x, 2, return_indices=True)
    torch.testing.assert_close(values.cpu(), expected_values)
    assert torch.equal(indices.cpu(), expected_indices)


def test_views_and_in_place_ops_see_recorded_writes(fused_mode):
    x = torch.zeros(4, 6, device="porta")
    x[:, 1:3] += 2
    y = x.t()
    y.mul_(3)
    x.add_(x.sum(0, keepdim=True))
    expected = torch.zeros(4, 6)
    expected[:, 1:3] += 2
    expected.t().mul_(3)
    expected.add_(expected.sum(0, keepdim=True))
    torch.testing.assert_close(x.cpu(), expected)


def _train(steps, device="porta"):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    generator = torch.Generator().manual_seed(0)
    batches = [(torch.randn(8, 16, generator=generator), torch.randn(8, 4, generator=generator))
               for _ in range(steps)]
    compiled, hits, losses = [], [], []
    for x, target in batches:
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(x.to(device)), target.to(device))
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        metrics = torch_porta.metrics()
        compiled.append(metrics["graphs_compiled"])
        hits.append(metrics["graph_cache_hits"])
    return losses, compiled, hits


def test_training_loop_compiles_once_then_reuses_schedules(fused_mode):
    torch_porta.reset_metrics()
    losses, compiled, hits = _train(6)
    # Step 1 creates gradients and optimizer state: its traces differ from
    # the later steps'. From step 2 on, every trace is one already seen.
    assert compiled[0] > 0
    assert compiled[1:] == [compiled[1]] * 5, compiled
    assert hits[-1] > hits[1], hits
    expected, _, _ = _train(6, device="cpu")
    for got, want in zip(losses, expected):
        assert got == pytest.approx(want, rel=1e-4)


def test_optimizer_step_flushes(fused_mode):
    model = nn.Linear(4, 2).to("porta")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model(torch.ones(3, 4, device="porta")).sum().backward()
    flushes = torch_porta.metrics()["flushes"]
    optimizer.step()
    assert torch_porta.metrics()["flushes"] > flushes


# ---- errors at a flush ----

def _bad_gather():
    x = torch.ones(2, 3, device="porta")
    index = torch.tensor([[0, 5]], device="porta")
    return torch.gather(x, 1, index)  # issues the bad gather


def test_data_dependent_error_raises_at_flush_naming_the_issuing_line(fused_mode):
    # gather checks its indices when it runs, so in fused mode the call
    # succeeds and the error comes at the next sync point.
    result = _bad_gather()
    with pytest.raises(IndexError) as raised:
        result.cpu()
    message = str(raised.value)
    assert "out of bounds" in message
    assert f"{os.path.basename(__file__)}:{_line_of('# issues the bad gather')}" in message
    assert "aten::gather" in message
    # The failure ended that trace: later work runs normally.
    assert (torch.ones(2, device="porta") * 2).sum().item() == 4


@pytest.mark.parametrize("sync", ["item", "synchronize", "set_eager_mode", "optimizer_step"])
def test_every_sync_point_raises_a_pending_error(fused_mode, sync):
    result = _bad_gather()
    with pytest.raises(IndexError, match="issued at .*test_fused_eager.py"):
        if sync == "item":
            result.sum().item()
        elif sync == "synchronize":
            torch.porta.synchronize()
        elif sync == "set_eager_mode":
            torch_porta.set_eager_mode("debug")
        else:
            parameter = nn.Parameter(torch.ones(2, device="porta"))
            parameter.grad = torch.ones(2, device="porta")
            torch.optim.SGD([parameter], lr=0.1).step()


def test_shape_errors_still_raise_at_the_call(fused_mode):
    with pytest.raises(RuntimeError):
        torch.ones(2, 3, device="porta") + torch.ones(4, device="porta")


def test_environment_selects_fused_mode():
    code = ("import torch, torch_porta\n"
            "assert torch_porta.get_eager_mode() == 'fused'\n"
            "assert torch_porta._C.get_fusion()\n"
            "x = torch.ones(3, device='porta')\n"
            "print((x * 2 + 1).sum().item())\n")
    env = dict(os.environ, PORTA_EAGER_MODE="fused")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "9.0"
