"""softmax, log_softmax, their gradients and cross-entropy over the last
dim against PyTorch's CPU on the shapes the CPU's one-read kernel treats
apart (short rows side by side, rows of any length against its 16-float
loops, rows longer than its cached path, extremes), and that on the CPU
device each of them runs as that one kernel instead of a composition."""
import json

import pytest
import torch
import torch.nn.functional as F

import torch_porta
from aten_compare import compare, compare_grad, make

SHAPES = [(7, 3), (37, 10), (5, 17), (4, 1024), (3, 1), (2, 3, 33), (2, 40_003)]


@pytest.mark.parametrize("shape", SHAPES)
def test_forward_and_gradients_along_the_last_dim(shape):
    x = make(shape)
    compare(lambda t: (torch.softmax(t, -1), torch.log_softmax(t, -1)), x, atol=1e-6,
            rtol=1e-5)
    for fn in (torch.softmax, torch.log_softmax):
        _compare_grad(lambda t: fn(t, -1), x)


def _compare_grad(fn, x):
    """compare_grad with float32's rounding of a sum over a long row: the
    gradients hold sum(grad) times the result, and the two devices add in
    different orders."""
    cpu, porta = x.clone().requires_grad_(), x.to("porta").requires_grad_()
    seed = torch.randn(x.shape, generator=torch.Generator().manual_seed(1))
    fn(cpu).backward(seed)
    fn(porta).backward(seed.to("porta"))
    torch.testing.assert_close(porta.grad.cpu(), cpu.grad, rtol=1e-5, atol=1e-4)


def test_long_rows_that_grow_their_maximum_late():
    # the online sum is rescaled each time a later chunk raises the maximum
    x = torch.linspace(-30, 30, 2 * 70_000).reshape(2, 70_000)
    x[1] = x[1].flip(0)
    compare(lambda t: (torch.softmax(t, 1), torch.log_softmax(t, 1)), x, atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("cols", [3, 5000, 40_000])
def test_extremes_along_the_last_dim(cols):
    x = make((4, cols))
    x[0, 0], x[1, :], x[2, 1], x[3, -1] = float("-inf"), float("-inf"), float("nan"), 1e30
    compare(lambda t: (torch.softmax(t, 1), torch.log_softmax(t, 1)), x)


def test_cross_entropy_and_its_gradient():
    logits = make((37, 10))
    targets = torch.randint(0, 10, (37,), generator=torch.Generator().manual_seed(1))
    compare_grad(lambda t: F.cross_entropy(t, targets.to(t.device)), logits)


def _kernel_names(run, path):
    with torch_porta.profile(path):
        run()
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    return [e["name"] for e in events if e.get("cat") == "kernel"]


@pytest.mark.serial
def test_each_normalization_is_one_kernel_on_the_cpu(tmp_path):
    if torch.porta.get_device_properties(0).backend != "cpu":
        pytest.skip("the one-read kernel is the CPU backend's; other devices compose")
    x = make((64, 100)).to("porta").requires_grad_()

    def forward_and_backward():
        torch.softmax(x, 1).backward(torch.ones(64, 100, device="porta"))
        torch.log_softmax(x, 1).backward(torch.ones(64, 100, device="porta"))
    names = _kernel_names(forward_and_backward, tmp_path / "trace.json")
    for name in ("softmax", "softmax.log", "softmax.backward", "softmax.log_backward"):
        assert names.count(name) == 1, names
    assert not [n for n in names if n.startswith("reduce.")], names
