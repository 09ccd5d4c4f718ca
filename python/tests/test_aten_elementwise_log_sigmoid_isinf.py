"""log_sigmoid (forward with its buffer, backward), isneginf and isposinf on
porta against the CPU: float dtypes, non-contiguous inputs, out=."""
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import torch_porta  # noqa: F401

from aten_compare import ALL_DTYPES, FLOAT_DTYPES, LAYOUTS, compare, compare_grad, make, to_porta


def special(dtype, layout="contiguous"):
    """Random values with infinities, NaN and signed zeros planted."""
    x = make((6, 8), dtype, layout)
    if dtype.is_floating_point:
        x = x.clone()
        x[0, :5] = torch.tensor([float("inf"), -float("inf"), float("nan"), 0.0, -0.0])
        x[1, :2] = torch.tensor([40.0, -40.0])
        x = make((6, 8), dtype, layout).copy_(x) if layout != "contiguous" else x
    return x


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_log_sigmoid_forward_and_buffer(dtype, layout):
    x = special(dtype, layout)
    compare(torch.ops.aten.log_sigmoid_forward, x)
    compare(F.logsigmoid, x)
    compare(nn.LogSigmoid(), x)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_log_sigmoid_backward(dtype, layout):
    compare_grad(F.logsigmoid, make((6, 8), dtype, layout))
    compare_grad(nn.LogSigmoid(), make((3, 4, 5), dtype, layout, seed=2))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_log_sigmoid_backward_op_with_cpu_buffer(dtype):
    x = special(dtype)
    grad = make((6, 8), dtype, seed=3)
    _, buffer = torch.ops.aten.log_sigmoid_forward(x)
    compare(torch.ops.aten.log_sigmoid_backward, grad, x, buffer)


def test_log_sigmoid_refuses_integers():
    compare(torch.ops.aten.log_sigmoid_forward, make((4,), torch.int64))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_log_sigmoid_out_variants(dtype):
    x = make((6, 8), dtype, "transposed")

    def forward_out(x):
        output, buffer = torch.empty(x.shape, dtype=dtype, device=x.device), \
            torch.empty(x.shape, dtype=dtype, device=x.device)
        result = torch.ops.aten.log_sigmoid_forward.output(x, output=output, buffer=buffer)
        assert result[0] is output and result[1] is buffer
        return output, buffer

    compare(forward_out, x)
    _, buffer = torch.ops.aten.log_sigmoid_forward(x)
    grad = make((6, 8), dtype, "stepped", seed=4)

    def backward_out(grad, x, buffer):
        out = torch.empty(x.shape, dtype=dtype, device=x.device)
        result = torch.ops.aten.log_sigmoid_backward.grad_input(grad, x, buffer, grad_input=out)
        assert result is out
        return out

    compare(backward_out, grad, x, buffer)


@pytest.mark.parametrize("fn", [torch.isneginf, torch.isposinf])
@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_isneginf_isposinf(fn, dtype, layout):
    compare(fn, special(dtype, layout))


@pytest.mark.parametrize("fn", [torch.isneginf, torch.isposinf])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int32])
def test_isneginf_isposinf_out(fn, dtype):
    x = special(dtype, "transposed")

    def with_out(x):
        out = torch.empty(x.shape, dtype=torch.bool, device=x.device)
        assert fn(x, out=out) is out
        return out

    compare(with_out, x)
    # a non-boolean out is refused
    compare(lambda x: fn(x, out=torch.empty(x.shape, device=x.device)), x)
