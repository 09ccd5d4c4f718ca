"""torch.compile(..., backend="porta"): inference and training equal to the
CPU's eager results, CPU inputs, dynamic sizes reusing kernels, the disk
cache across processes, recompile logging. The training-parity models run
through torch.compile in test_parity.py."""
import os
import subprocess
import sys
import textwrap

import pytest
import torch
import torch.nn as nn

import torch_porta


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def _mlp(seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(12, 32), nn.GELU(), nn.Linear(32, 32), nn.LayerNorm(32),
                         nn.ReLU(), nn.Linear(32, 3))


def _batch(rows=16, seed=1):
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(rows, 12, generator=generator), torch.randn(rows, 3, generator=generator)


def test_backend_is_registered_by_importing_torch_porta():
    assert "porta" in torch._dynamo.list_backends()


@pytest.mark.parametrize("device", ["porta", "cpu"])
def test_inference_matches_cpu_eager(device):
    reference = _mlp()
    model = _mlp().to(device)
    compiled = torch.compile(model, backend="porta")
    x, _ = _batch()
    with torch.no_grad():
        got = compiled(x.to(device))
        expected = reference(x)
    assert got.device.type == device
    torch.testing.assert_close(got.cpu(), expected, rtol=1e-4, atol=1e-4)
    assert torch_porta.metrics()["compiles"].get("inference", 0) >= 1


@pytest.mark.parametrize("device", ["porta", "cpu"])
def test_training_matches_cpu_eager(device):
    reference = _mlp()
    model = _mlp().to(device)
    compiled = torch.compile(model, backend="porta")
    optimizers = [torch.optim.AdamW(m.parameters(), lr=1e-2) for m in (reference, model)]
    for step in range(4):
        x, target = _batch(seed=step)
        losses = []
        for run, optimizer, on in ((reference, optimizers[0], "cpu"),
                                   (compiled, optimizers[1], device)):
            optimizer.zero_grad()
            loss = nn.functional.mse_loss(run(x.to(on)), target.to(on))
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        assert losses[1] == pytest.approx(losses[0], rel=1e-4), f"step {step}"
    for got, expected in zip(model.parameters(), reference.parameters()):
        assert got.device.type == device
        torch.testing.assert_close(got.detach().cpu(), expected.detach(), rtol=1e-4, atol=1e-5)


def test_cpu_parameters_are_copied_once_until_they_change():
    model = _mlp()
    compiled = torch.compile(model, backend="porta")
    x, _ = _batch()
    with torch.no_grad():
        compiled(x)
        torch_porta.reset_metrics()
        compiled(x)
        moved = torch_porta.metrics()["bytes_to_device"]
        # Only the batch crosses: the parameters' copies are kept.
        assert moved == x.numel() * x.element_size()
        model[0].weight.mul_(2)  # an in-place change is seen
        got = compiled(x)
        torch.testing.assert_close(got, model(x), rtol=1e-4, atol=1e-4)


def test_cpu_buffers_written_by_the_program_are_written_back():
    torch.manual_seed(0)
    reference = nn.Sequential(nn.Linear(6, 8), nn.BatchNorm1d(8))
    model = nn.Sequential(nn.Linear(6, 8), nn.BatchNorm1d(8))
    model.load_state_dict(reference.state_dict())
    compiled = torch.compile(model, backend="porta")
    x = torch.randn(10, 6)
    torch.testing.assert_close(compiled(x), reference(x), rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(model[1].running_mean, reference[1].running_mean)
    torch.testing.assert_close(model[1].running_var, reference[1].running_var)


def _elementwise_program(x, w):
    return ((x * w + 1).relu() * 2).sum(-1)


def test_mark_dynamic_reuses_kernels_for_a_new_size():
    compiled = torch.compile(_elementwise_program, backend="porta")
    w = torch.randn(64, device="porta")
    first = torch.randn(8, 64, device="porta")
    torch._dynamo.mark_dynamic(first, 0)
    compiled(first, w).cpu()
    before = torch_porta.metrics()
    second = torch.randn(24, 64, device="porta")
    torch._dynamo.mark_dynamic(second, 0)
    got = compiled(second, w)
    after = torch_porta.metrics()
    torch.testing.assert_close(got.cpu(), _elementwise_program(second.cpu(), w.cpu()),
                               rtol=1e-5, atol=1e-4)
    assert after["compiles"]["dynamo"] == before["compiles"]["dynamo"]  # one symbolic graph
    assert after["kernels_compiled"] == before["kernels_compiled"]
    assert after["kernel_memory_hits"] > before["kernel_memory_hits"]


def test_automatic_dynamic_shapes_reuse_kernels():
    compiled = torch.compile(_elementwise_program, backend="porta", dynamic=None)
    w = torch.randn(64, device="porta")
    results = []
    kernels_compiled = []
    for rows in (8, 16, 40):
        x = torch.randn(rows, 64, device="porta")
        results.append((compiled(x, w).cpu(), _elementwise_program(x.cpu(), w.cpu())))
        kernels_compiled.append(torch_porta.metrics()["kernels_compiled"])
    for got, expected in results:
        torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-4)
    # Dynamo recompiles once for a dynamic size; the kernels stay those of
    # the first size.
    assert kernels_compiled[2] == kernels_compiled[0], kernels_compiled


_TRAINING_SCRIPT = textwrap.dedent("""
    import json, torch, torch.nn as nn, torch_porta
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(12, 32), nn.GELU(), nn.Linear(32, 3)).to("porta")
    compiled = torch.compile(model, backend="porta")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    torch_porta.reset_metrics()
    for step in range(3):
        x = torch.randn(16, 12).to("porta")
        optimizer.zero_grad()
        loss = compiled(x).pow(2).mean()
        loss.backward()
        optimizer.step()
        loss.item()
    print(json.dumps(torch_porta.metrics()))
""")


def _run_training(cache_dir):
    env = dict(os.environ, PORTA_CACHE_DIR=cache_dir)
    done = subprocess.run([sys.executable, "-c", _TRAINING_SCRIPT], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    import json
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_second_process_loads_every_kernel_from_the_disk_cache(tmp_path):
    first = _run_training(str(tmp_path))
    assert first["kernels_compiled"] > 0, first
    second = _run_training(str(tmp_path))
    assert second["kernels_compiled"] == 0, second
    assert second["kernel_disk_hits"] > 0, second


def test_porta_log_recompiles_prints_why_dynamo_recompiled():
    code = textwrap.dedent("""
        import torch, torch_porta
        f = torch.compile(lambda x: x * 2 + 1, backend="porta")
        f(torch.ones(4, device="porta"))
        f(torch.ones(4, 3, device="porta"))
    """)
    env = dict(os.environ, PORTA_LOG="recompiles")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "Recompiling function" in done.stderr, done.stderr


def _gather_twice(x, index):
    doubled = x * 2
    return torch.gather(doubled, 1, index)  # the compiled gather


def test_error_at_the_end_of_a_compiled_graph_names_the_program_line():
    compiled = torch.compile(_gather_twice, backend="porta")
    x = torch.ones(2, 3, device="porta")
    with pytest.raises(IndexError) as raised:
        compiled(x, torch.tensor([[0, 5]], device="porta"))
    with open(__file__) as source:
        line = next(number for number, text in enumerate(source, 1)
                    if text.rstrip().endswith("# the compiled gather"))
    assert f"{os.path.basename(__file__)}:{line} (aten::gather" in str(raised.value)
    assert compiled(x, torch.tensor([[2, 0]], device="porta")).cpu().tolist() == [[2.0, 2.0]]


def _scaled_norm(x, eps):
    return x / (x.pow(2).mean(-1, keepdim=True) + eps).sqrt()


def test_python_float_inputs_under_dynamic_true_stay_host_numbers():
    # dynamic=True passes a float argument as a 0-d CPU tensor the graph
    # reads with .item(); it is not a CPU input to copy to porta.
    compiled = torch.compile(_scaled_norm, backend="porta", dynamic=True)
    x = torch.randn(4, 6, requires_grad=True)
    on_porta = x.detach().to("porta").requires_grad_()
    torch_porta.reset_metrics()
    for eps in (1e-5, 1e-3):
        got = compiled(on_porta, eps)
        got.sum().backward()
        torch.testing.assert_close(got.detach().cpu(), _scaled_norm(x, eps).detach(),
                                   rtol=1e-5, atol=1e-5)
    assert torch_porta.metrics()["compiles"].get("backward", 0) >= 1
