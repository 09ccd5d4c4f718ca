"""torch.compile(model) with no backend named: graphs that compute on porta
run through porta's compiler (training included) and give the CPU's
results; graphs with no porta tensor still go to Inductor."""
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


@pytest.fixture
def inductor_calls(monkeypatch):
    """The graphs handed to Inductor's compile_fx (the default backend
    looks it up at each call)."""
    import torch._inductor.compile_fx as compile_fx_module
    calls = []
    compile_fx = compile_fx_module.compile_fx

    def counting_compile_fx(model_, example_inputs_, *args, **kwargs):
        calls.append([value.device.type for value in example_inputs_
                      if isinstance(value, torch.Tensor)])
        return compile_fx(model_, example_inputs_, *args, **kwargs)

    monkeypatch.setattr(compile_fx_module, "compile_fx", counting_compile_fx)
    return calls


def _mlp(seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(12, 32), nn.GELU(), nn.Linear(32, 32), nn.LayerNorm(32),
                         nn.ReLU(), nn.Linear(32, 3))


def _mlp_batch(step):
    generator = torch.Generator().manual_seed(step)
    return torch.randn(16, 12, generator=generator), torch.randn(16, 3, generator=generator)


def _cnn(seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(4, 8, 3), nn.BatchNorm2d(8), nn.ReLU(), nn.Flatten(),
                         nn.Linear(8 * 2 * 2, 5))


def _cnn_batch(step):
    generator = torch.Generator().manual_seed(step)
    return torch.randn(6, 1, 8, 8, generator=generator), torch.randn(6, 5, generator=generator)


def _train_like_cpu(make_model, make_batch, make_optimizer, steps=3, rtol=1e-4, atol=1e-5):
    """Trains make_model() eagerly on the CPU and through
    torch.compile(model) on porta, step by step, and compares."""
    reference = make_model()
    model = make_model().to("porta")
    compiled = torch.compile(model)
    optimizers = [make_optimizer(reference), make_optimizer(model)]
    for step in range(steps):
        x, target = make_batch(step)
        losses = []
        for run, optimizer, device in ((reference, optimizers[0], "cpu"),
                                       (compiled, optimizers[1], "porta")):
            optimizer.zero_grad()
            out = run(x.to(device))
            assert out.device.type == device
            loss = nn.functional.mse_loss(out, target.to(device))
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        assert losses[1] == pytest.approx(losses[0], rel=rtol), f"step {step}"
    for got, expected in zip(model.state_dict().values(), reference.state_dict().values()):
        assert got.device.type == "porta"
        torch.testing.assert_close(got.cpu(), expected, rtol=rtol, atol=atol)


def test_mlp_trains_through_porta_compiler_as_on_cpu(inductor_calls):
    torch_porta.reset_metrics()
    _train_like_cpu(_mlp, _mlp_batch, lambda m: torch.optim.AdamW(m.parameters(), lr=1e-2))
    compiles = torch_porta.metrics()["compiles"]
    assert compiles.get("dynamo", 0) >= 1, compiles
    assert compiles.get("forward", 0) >= 1, compiles
    assert compiles.get("backward", 0) >= 1, compiles
    assert inductor_calls == []


def test_cnn_trains_through_porta_compiler_as_on_cpu(inductor_calls):
    torch_porta.reset_metrics()
    _train_like_cpu(_cnn, _cnn_batch,
                    lambda m: torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9),
                    atol=1e-4)
    compiles = torch_porta.metrics()["compiles"]
    assert compiles.get("forward", 0) >= 1 and compiles.get("backward", 0) >= 1, compiles
    assert inductor_calls == []


def test_inference_under_no_grad_uses_porta_inference_graph():
    reference = _mlp()
    compiled = torch.compile(_mlp().to("porta"))
    x, _ = _mlp_batch(0)
    torch_porta.reset_metrics()
    with torch.no_grad():
        got = compiled(x.to("porta"))
    torch.testing.assert_close(got.cpu(), reference(x), rtol=1e-4, atol=1e-4)
    assert torch_porta.metrics()["compiles"].get("inference", 0) >= 1


def test_cpu_model_in_the_same_process_still_uses_inductor(inductor_calls):
    porta_model = torch.compile(_mlp().to("porta"))
    x, _ = _mlp_batch(0)
    porta_model(x.to("porta")).sum().backward()
    assert inductor_calls == []

    cpu_model = _mlp()
    compiled = torch.compile(cpu_model)
    torch_porta.reset_metrics()
    got = compiled(x)
    torch.testing.assert_close(got, cpu_model(x), rtol=1e-5, atol=1e-5)
    assert inductor_calls and all(devices == ["cpu"] * len(devices)
                                  for devices in inductor_calls), inductor_calls
    assert torch_porta.metrics()["compiles"] == {}


def _porta_then_cpu(x, y):
    a = (x * 2 + 1).relu()
    torch._dynamo.graph_break()
    return a, (y * 3 - 1).relu()


def test_graph_break_sends_each_graph_to_its_own_compiler(inductor_calls):
    compiled = torch.compile(_porta_then_cpu)
    x, y = torch.randn(4, 5), torch.randn(4, 5)
    torch_porta.reset_metrics()
    a, b = compiled(x.to("porta"), y)
    expected_a, expected_b = _porta_then_cpu(x, y)
    assert a.device.type == "porta" and b.device.type == "cpu"
    torch.testing.assert_close(a.cpu(), expected_a)
    torch.testing.assert_close(b, expected_b)
    assert torch_porta.metrics()["compiles"].get("dynamo", 0) == 1
    assert inductor_calls == [["cpu"]]


def _mixed(x, y):
    return (x * y.to(x.device)).sum(1), y + 1


def test_graph_with_porta_and_cpu_tensors_runs_on_porta(inductor_calls):
    compiled = torch.compile(_mixed)
    x, y = torch.randn(3, 4), torch.randn(3, 4)
    torch_porta.reset_metrics()
    total, shifted = compiled(x.to("porta"), y)
    expected_total, expected_shifted = _mixed(x, y)
    assert total.device.type == "porta" and shifted.device.type == "cpu"
    torch.testing.assert_close(total.cpu(), expected_total)
    torch.testing.assert_close(shifted, expected_shifted)
    assert torch_porta.metrics()["compiles"].get("dynamo", 0) == 1
    assert inductor_calls == []


def test_graph_making_porta_tensors_from_cpu_inputs_runs_on_porta(inductor_calls):
    compiled = torch.compile(lambda y: (y.to("porta") * 2).exp())
    y = torch.randn(5)
    got = compiled(y)
    assert got.device.type == "porta"
    torch.testing.assert_close(got.cpu(), (y * 2).exp())
    assert inductor_calls == []


@pytest.mark.parametrize("options", [{"mode": "reduce-overhead"}, {"mode": "max-autotune"},
                                     {"dynamic": True}])
def test_inductor_options_fall_back_to_porta_behaviour(options, inductor_calls):
    reference = _mlp()
    model = _mlp().to("porta")
    compiled = torch.compile(model, **options)
    torch_porta.reset_metrics()
    for rows in (8, 16):
        x = torch.randn(rows, 12)
        out = compiled(x.to("porta"))
        out.sum().backward()
        torch.testing.assert_close(out.detach().cpu(), reference(x).detach(),
                                   rtol=1e-4, atol=1e-4)
    assert torch_porta.metrics()["compiles"].get("backward", 0) >= 1
    assert inductor_calls == []


def test_dynamo_has_a_device_interface_for_porta():
    from torch._dynamo.device_interface import get_interface_for_device
    interface = get_interface_for_device("porta")
    assert interface.device_count() == torch_porta.device_count()
    assert interface.is_available() and interface.current_device() == 0
    with interface.device("porta:0"):
        interface.synchronize()
    assert interface.get_device_properties(0).name == torch_porta.get_device_name(0)
    count = torch_porta.device_count()
    with pytest.raises(ValueError, match=f"expected 0 to {count - 1}.*got {count}"):
        interface.device(count)


def test_works_when_dynamo_loaded_before_torch_porta():
    code = textwrap.dedent("""
        import torch, torch._dynamo.device_interface as device_interface
        import torch_porta
        got = torch.compile(lambda x: x * 2 + 1)(torch.ones(3, device="porta"))
        assert got.cpu().tolist() == [3.0, 3.0, 3.0], got
        assert torch_porta.metrics()["compiles"]["dynamo"] == 1
        print(device_interface.get_interface_for_device("porta").__name__)
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "PortaInterface"
