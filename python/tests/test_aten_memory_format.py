"""Memory formats: for channels_last (NHWC) and channels_last_3d (NDHWC)
operands, porta's convolutions, batch norm, pooling and upsampling give
results and gradients with the strides PyTorch's CPU kernels give, and the
same values."""
import pytest
import torch
import torch.nn.functional as F

import torch_porta  # noqa: F401  (registers the device)

DEVICE = "porta"
CL = torch.channels_last
CL3 = torch.channels_last_3d


def _randn(*shape, seed=0, dtype=torch.float32, memory_format=torch.contiguous_format):
    t = torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)
    return t.contiguous(memory_format=memory_format)


def _check(fn, *inputs, rtol=1e-4, atol=1e-5):
    """fn on the CPU and on porta: the same result and gradients (as
    autograd.grad returns them, before any accumulation), strides
    included."""
    cpu_in = [t.clone(memory_format=torch.preserve_format).requires_grad_() for t in inputs]
    porta_in = [t.detach().to(DEVICE).requires_grad_() for t in inputs]
    for c, p in zip(cpu_in, porta_in):
        assert p.stride() == c.stride()
    expected, got = fn(*cpu_in), fn(*porta_in)
    assert got.stride() == expected.stride()
    torch.testing.assert_close(got.cpu(), expected.detach(), rtol=rtol, atol=atol)
    grad_out = torch.randn_like(expected)  # keeps the result's layout
    expected_grads = torch.autograd.grad(expected, cpu_in, grad_out)
    got_grads = torch.autograd.grad(got, porta_in, grad_out.to(DEVICE))
    for i, (g, e) in enumerate(zip(got_grads, expected_grads)):
        assert g.stride() == e.stride(), f"gradient of input {i}"
        torch.testing.assert_close(g.cpu(), e, rtol=rtol, atol=atol, msg=f"gradient of input {i}")


# ---- convolutions: the layout of input or weight decides ----

@pytest.mark.parametrize("x_format, w_format", [(CL, torch.contiguous_format),
                                                (torch.contiguous_format, CL), (CL, CL)])
def test_conv2d_takes_channels_last_from_input_or_weight(x_format, w_format):
    x = _randn(2, 4, 7, 6, seed=1, memory_format=x_format)
    w = _randn(5, 4, 3, 3, seed=2, memory_format=w_format)
    b = _randn(5, seed=3)
    _check(lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1), x, w, b)


def test_grouped_dilated_conv2d_channels_last():
    x = _randn(2, 6, 9, 8, seed=1, memory_format=CL)
    w = _randn(6, 3, 3, 2, seed=2)
    _check(lambda x, w: F.conv2d(x, w, groups=2, dilation=2, padding=(1, 0)), x, w)


def test_conv_transpose2d_channels_last():
    x = _randn(2, 4, 5, 5, seed=1, memory_format=CL)
    w = _randn(4, 3, 3, 3, seed=2)
    _check(lambda x, w: F.conv_transpose2d(x, w, stride=2, output_padding=1), x, w)


@pytest.mark.parametrize("batch, dtype", [(2, torch.float32), (1, torch.float32),
                                          (2, torch.float64)])
def test_conv3d_channels_last_3d(batch, dtype):
    """channels_last_3d where the CPU takes mkldnn (float32, a batch),
    contiguous where it takes its slow 3-d kernels."""
    x = _randn(batch, 3, 4, 5, 5, seed=1, dtype=dtype, memory_format=CL3)
    w = _randn(4, 3, 2, 3, 3, seed=2, dtype=dtype, memory_format=CL3)
    _check(lambda x, w: F.conv3d(x, w, padding=1), x, w)


def test_conv2d_float64_channels_last():
    x = _randn(2, 3, 6, 6, seed=1, dtype=torch.float64, memory_format=CL)
    w = _randn(4, 3, 3, 3, seed=2, dtype=torch.float64)
    _check(lambda x, w: F.conv2d(x, w), x, w)


def test_contiguous_conv2d_stays_contiguous():
    x = _randn(2, 3, 6, 6, seed=1)
    w = _randn(4, 3, 3, 3, seed=2)
    _check(lambda x, w: F.conv2d(x, w), x, w)


# ---- batch norm ----

@pytest.mark.parametrize("training", [True, False])
def test_batch_norm2d_channels_last(training):
    x = _randn(3, 4, 5, 6, seed=1, memory_format=CL)
    weight, bias = _randn(4, seed=2), _randn(4, seed=3)
    mean, var = _randn(4, seed=4), _randn(4, seed=5).abs() + 0.5
    _check(lambda x, w, b: F.batch_norm(x, mean.to(x.device), var.to(x.device), w, b,
                                        training=training), x, weight, bias)


def test_batch_norm3d_channels_last_3d():
    x = _randn(2, 3, 3, 4, 5, seed=1, memory_format=CL3)
    weight, bias = _randn(3, seed=2), _randn(3, seed=3)
    _check(lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True), x, weight, bias)


# ---- pooling ----

@pytest.mark.parametrize("pool", [
    lambda x: F.max_pool2d(x, 3, stride=2, padding=1),
    lambda x: F.avg_pool2d(x, 3, stride=2, padding=1),
    lambda x: F.adaptive_avg_pool2d(x, (3, 2)),
    lambda x: F.adaptive_max_pool2d(x, (3, 2)),
], ids=["max", "avg", "adaptive_avg", "adaptive_max"])
def test_pool2d_channels_last(pool):
    _check(pool, _randn(2, 5, 8, 7, seed=1, memory_format=CL))


@pytest.mark.parametrize("pool", [
    lambda x: F.max_pool3d(x, 2),
    lambda x: F.avg_pool3d(x, 2),
    lambda x: F.adaptive_avg_pool3d(x, (2, 3, 2)),
], ids=["max", "avg", "adaptive_avg"])
def test_pool3d_channels_last_3d(pool):
    _check(pool, _randn(2, 3, 4, 6, 5, seed=1, memory_format=CL3))


# ---- upsampling ----

@pytest.mark.parametrize("mode", ["nearest", "bilinear", "bicubic"])
def test_upsample2d_channels_last(mode):
    x = _randn(2, 3, 4, 5, seed=1, memory_format=CL)
    align = None if mode == "nearest" else False
    _check(lambda x: F.interpolate(x, scale_factor=2, mode=mode, align_corners=align), x)


@pytest.mark.parametrize("mode", ["nearest", "trilinear"])
def test_upsample3d_channels_last_3d(mode):
    x = _randn(1, 2, 3, 4, 3, seed=1, memory_format=CL3)
    align = None if mode == "nearest" else False
    _check(lambda x: F.interpolate(x, size=(4, 5, 6), mode=mode, align_corners=align), x)


# ---- elementwise ops keep the layout ----

def test_activation_and_arithmetic_keep_channels_last():
    x = _randn(2, 3, 4, 5, seed=1, memory_format=CL)
    y = _randn(2, 3, 4, 5, seed=2, memory_format=CL)
    _check(lambda x, y: F.relu(x) * y + 1, x, y)


def test_pointwise_in_place_and_out_write_where_they_are_told():
    x = _randn(2, 3, 4, 5, seed=1, memory_format=CL)
    y = _randn(2, 3, 4, 5, seed=2)
    out = torch.empty(2, 3, 4, 5, device=DEVICE)
    torch.add(x.to(DEVICE), y.to(DEVICE), out=out)
    assert out.is_contiguous()
    torch.testing.assert_close(out.cpu(), x + y)
    z = x.to(DEVICE)
    z.mul_(y.to(DEVICE))
    assert z.stride() == x.stride()
    torch.testing.assert_close(z.cpu(), x * y)
    grad = torch.empty(2, 3, 4, 5, device=DEVICE)
    _, buffer = torch.ops.aten.log_sigmoid_forward(x * y)
    torch.ops.aten.log_sigmoid_backward.grad_input(y.to(DEVICE), z, buffer.to(DEVICE),
                                                   grad_input=grad)
    assert grad.is_contiguous()
    expected = torch.ops.aten.log_sigmoid_backward(y, x * y, buffer)
    torch.testing.assert_close(grad.cpu(), expected)


def test_pointwise_broadcasts_lower_rank_operands_channels_last():
    x = _randn(2, 3, 4, 5, seed=1, memory_format=CL)
    _check(lambda x, row, bias: x * row + bias, x, _randn(5, seed=2), _randn(3, 1, 1, seed=3))
    _check(lambda bias, x: bias - x, _randn(3, 1, 1, seed=3), x)
