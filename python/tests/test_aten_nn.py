"""Neural-network aten ops (convolution, pooling) against PyTorch CPU:
forward and backward through autograd on the same inputs."""
import copy

import pytest
import torch
import torch.nn.functional as F

FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]


def _inputs(shapes, dtype, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [torch.randn(s, generator=gen, dtype=torch.float64).to(dtype) for s in shapes]


def check(fn, tensors, grad=True, layout=None, **kwargs):
    """fn on CPU and on porta; results (and gradients) must match."""
    porta = [t.to("porta") for t in tensors]
    if layout is not None:  # the first input as a non-contiguous view, on both devices
        base, view = layout(tensors[0])
        tensors = [view(base)] + list(tensors[1:])
        porta[0] = view(base.to("porta"))
    cpu = [t.clone().requires_grad_(grad and t.is_floating_point()) for t in tensors]
    if layout is not None:
        cpu[0] = view(base).detach().requires_grad_(cpu[0].requires_grad)
    porta = [p.detach().requires_grad_(c.requires_grad) for p, c in zip(porta, cpu)]
    expected, got = fn(*cpu, **kwargs), fn(*porta, **kwargs)
    expected_t = expected if isinstance(expected, tuple) else (expected,)
    got_t = got if isinstance(got, tuple) else (got,)
    for e, g in zip(expected_t, got_t):
        assert g.device.type == "porta"
        torch.testing.assert_close(g.cpu(), e, equal_nan=True)
    if not grad:
        return
    seed = torch.Generator().manual_seed(1)
    upstream = torch.randn(expected_t[0].shape, generator=seed, dtype=torch.float64).to(
        expected_t[0].dtype)
    expected_t[0].backward(upstream)
    got_t[0].backward(upstream.to("porta"))
    for c, p in zip(cpu, porta):
        if c.requires_grad:
            torch.testing.assert_close(p.grad.cpu(), c.grad, equal_nan=True)


def _transposed(x):
    """(base, view): x as the transpose of a contiguous tensor."""
    return x.transpose(-1, -2).contiguous(), lambda base: base.transpose(-1, -2)


def _stepped(x):
    """(base, view): x as every other element of a wider tensor."""
    return torch.stack([x, -x], dim=-1).flatten(-2), lambda base: base[..., ::2]


# ---- convolution ----

CONVS = [
    (F.conv2d, [(2, 4, 9, 9), (6, 2, 3, 3), (6,)], dict(stride=2, padding=1, dilation=2, groups=2)),
    (F.conv2d, [(2, 4, 9, 8), (6, 4, 3, 2), (6,)], dict(stride=(2, 3), padding=(1, 0))),
    (F.conv2d, [(1, 3, 6, 6), (3, 1, 3, 3)], dict(padding=1, groups=3)),
    (F.conv1d, [(2, 3, 10), (4, 3, 3)], dict(stride=3)),
    (F.conv3d, [(1, 2, 5, 5, 5), (2, 1, 2, 2, 2)], dict(groups=2, padding=1)),
    (F.conv_transpose2d, [(2, 4, 5, 5), (4, 3, 3, 3), (3,)],
     dict(stride=2, padding=1, output_padding=1)),
    (F.conv_transpose2d, [(2, 4, 5, 5), (4, 3, 3, 3), (6,)],
     dict(stride=2, padding=1, groups=2, dilation=2)),
    (F.conv_transpose1d, [(2, 4, 5), (4, 3, 3)], dict(stride=3, output_padding=2)),
    # output_padding >= stride (allowed below the dilation): rows no input reaches
    (F.conv_transpose2d, [(1, 2, 4, 4), (2, 2, 3, 3)], dict(output_padding=1, dilation=2)),
    # stride 1, with a padding within and beyond the kernel's reach (taps
    # that read only padding)
    (F.conv2d, [(3, 5, 8, 8), (7, 5, 3, 3), (7,)], dict(padding=1)),
    (F.conv2d, [(2, 4, 7, 7), (6, 2, 3, 3)], dict(padding=2, dilation=2, groups=2)),
    (F.conv2d, [(2, 3, 6, 7), (4, 3, 3, 3)], dict(padding=3)),
    (F.conv2d, [(2, 3, 6, 7), (4, 3, 3, 2)], dict(padding=(1, 0))),
]


@pytest.mark.parametrize("fn,shapes,kwargs", CONVS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_convolution(fn, shapes, kwargs, dtype):
    check(fn, _inputs(shapes, dtype), **kwargs)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_convolution_half(dtype):
    x, w = _inputs([(1, 2, 5, 5), (3, 2, 2, 2)], dtype)
    x, w = x.round(), w.round()  # exact products and sums: no rounding-order differences
    check(F.conv2d, [x, w], stride=2, padding=1)


@pytest.mark.parametrize("layout", [_transposed, _stepped])
def test_convolution_non_contiguous(layout):
    check(F.conv2d, _inputs([(2, 3, 7, 7), (4, 3, 3, 3), (4,)], torch.float64), layout=layout,
          padding=1)


def test_convolution_integers():
    x = torch.randint(-5, 5, (1, 2, 5, 5))
    w = torch.randint(-5, 5, (3, 2, 3, 3))
    check(F.conv2d, [x, w], grad=False, padding=1)


def test_convolution_zero_batch():
    check(F.conv2d, _inputs([(0, 2, 5, 5), (3, 2, 3, 3), (3,)], torch.float32), grad=False)


def test_conv2d_module_and_errors():
    torch.manual_seed(0)
    conv = torch.nn.Conv2d(3, 8, 3, stride=2, padding=1)
    x = torch.randn(2, 3, 8, 8)
    # a copy per device: .to moves parameters in place (as on CUDA), which
    # would move the weights the CPU graph saved for its backward
    check(lambda t: copy.deepcopy(conv).to(t.device)(t), [x])
    with pytest.raises(RuntimeError):
        F.conv2d(torch.randn(1, 3, 5, 5, device="porta"), torch.randn(4, 2, 3, 3, device="porta"))
    with pytest.raises(RuntimeError):
        F.conv2d(torch.randn(1, 3, 5, 5, device="porta"),
                 torch.randn(4, 3, 3, 3, dtype=torch.float64, device="porta"))


# ---- pooling ----

def _max_pool(x, **kwargs):
    return F.max_pool2d(x, return_indices=True, **kwargs)


POOLS = [
    (_max_pool, (2, 3, 9, 9), dict(kernel_size=3, stride=2, padding=1)),
    (_max_pool, (2, 3, 9, 8), dict(kernel_size=(3, 2), stride=2, padding=1, dilation=2,
                                   ceil_mode=True)),
    (_max_pool, (3, 10, 7), dict(kernel_size=3, stride=3, ceil_mode=True)),
    (F.avg_pool2d, (2, 3, 9, 9), dict(kernel_size=3, stride=2, padding=1)),
    (F.avg_pool2d, (2, 3, 9, 8), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True,
                                      count_include_pad=False)),
    (F.avg_pool2d, (2, 3, 10, 8), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
    (F.avg_pool2d, (3, 10, 8), dict(kernel_size=2, divisor_override=3)),
    (F.adaptive_avg_pool2d, (2, 3, 10, 7), dict(output_size=(3, 4))),
    (F.adaptive_avg_pool2d, (3, 10, 7), dict(output_size=1)),
    (F.adaptive_avg_pool2d, (2, 3, 5, 5), dict(output_size=(7, 7))),
]


@pytest.mark.parametrize("fn,shape,kwargs", POOLS)
@pytest.mark.parametrize("dtype", FLOATS)
def test_pooling(fn, shape, kwargs, dtype):
    x, = _inputs([shape], dtype)
    half = dtype in (torch.float16, torch.bfloat16)
    if half:
        x = (x * 4).round() / 4  # exactly representable sums
    # CPU's half adaptive backward rounds each window's share before adding;
    # porta adds in float32 and rounds once (closer to float64: see below)
    check(fn, [x], grad=not (half and fn is F.adaptive_avg_pool2d), **kwargs)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_adaptive_avg_pool_half_backward_rounds_once(dtype):
    x, g = _inputs([(2, 3, 10, 7), (2, 3, 3, 4)], dtype)
    exact = torch.ops.aten._adaptive_avg_pool2d_backward(g.double(), x.double())
    cpu = torch.ops.aten._adaptive_avg_pool2d_backward(g, x).double()
    porta = torch.ops.aten._adaptive_avg_pool2d_backward(g.to("porta"), x.to("porta"))
    assert porta.dtype == dtype
    assert (porta.cpu().double() - exact).abs().max() <= (cpu - exact).abs().max()


@pytest.mark.parametrize("fn", [_max_pool, F.avg_pool2d, F.adaptive_avg_pool2d])
@pytest.mark.parametrize("layout", [_transposed, _stepped])
def test_pooling_non_contiguous(fn, layout):
    kwargs = dict(output_size=(2, 3)) if fn is F.adaptive_avg_pool2d else dict(kernel_size=2)
    check(fn, _inputs([(2, 3, 6, 6)], torch.float64), layout=layout, **kwargs)


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64])
def test_max_pool_integers(dtype):
    x = torch.randint(0, 100, (2, 3, 7, 7)).to(dtype)
    check(_max_pool, [x], grad=False, kernel_size=3, stride=2, padding=1)


def test_avg_pool_int64_divides_toward_zero():
    x = torch.randint(-50, 50, (2, 3, 7, 7))
    check(F.avg_pool2d, [x], grad=False, kernel_size=3, stride=2, padding=1)


def test_pool_modules_zero_batch_and_errors():
    x, = _inputs([(2, 4, 8, 8)], torch.float32)
    for module in (torch.nn.MaxPool2d(2), torch.nn.AvgPool2d(3, 2, 1),
                   torch.nn.AdaptiveAvgPool2d((1, 1))):
        check(module, [x])
        check(module, _inputs([(0, 4, 8, 8)], torch.float32), grad=False)
    with pytest.raises(RuntimeError):
        F.max_pool2d(torch.randn(1, 1, 4, 4, device="porta"), 2, padding=2)
    with pytest.raises(RuntimeError):
        F.avg_pool2d(torch.randn(1, 1, 2, 2, device="porta"), 3)
    with pytest.raises(RuntimeError):
        F.avg_pool2d(torch.randn(1, 1, 4, 4, device="porta"), 2, divisor_override=0)
    with pytest.raises(RuntimeError):
        F.adaptive_avg_pool2d(torch.randn(1, 0, 4, 4, device="porta"), 2)


# ---- normalization ----

NORMS = [
    (lambda: torch.nn.BatchNorm2d(3), (4, 3, 5, 5)),
    (lambda: torch.nn.BatchNorm1d(3), (4, 3)),
    (lambda: torch.nn.BatchNorm1d(3, affine=False), (4, 3, 6)),
    (lambda: torch.nn.BatchNorm2d(3, track_running_stats=False), (2, 3, 4, 4)),
    (lambda: torch.nn.LayerNorm([5, 6]), (2, 3, 5, 6)),
    (lambda: torch.nn.LayerNorm(6, elementwise_affine=False), (4, 6)),
]


@pytest.mark.parametrize("make,shape", NORMS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("train", [True, False])
def test_norm_modules(make, shape, dtype, train):
    torch.manual_seed(0)
    cpu, porta = make().to(dtype), make().to(dtype).to("porta")
    with torch.no_grad():
        for p, q in zip(cpu.parameters(), porta.parameters()):
            p.normal_()
            q.copy_(p)
    cpu.train(train)
    porta.train(train)
    x, = _inputs([shape], dtype)
    check(lambda t: (cpu if t.device.type == "cpu" else porta)(t), [x])
    for p, q in zip(cpu.parameters(), porta.parameters()):
        torch.testing.assert_close(q.grad.cpu(), p.grad)
    for p, q in zip(cpu.buffers(), porta.buffers()):  # running stats updated in place
        torch.testing.assert_close(q.cpu(), p)


@pytest.mark.parametrize("layout", [_transposed, _stepped])
def test_norm_non_contiguous(layout):
    x, = _inputs([(4, 3, 6)], torch.float64)
    check(lambda t: F.layer_norm(t, [6]), [x], layout=layout)
    check(lambda t: F.batch_norm(t, None, None, training=True), [x], layout=layout)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_norm_half_computes_in_float32(dtype):
    x, = _inputs([(4, 3, 5)], dtype)
    for op in (lambda t: torch.ops.aten.native_layer_norm(t, [5], None, None, 1e-5),
               lambda t: torch.ops.aten.native_batch_norm(t, None, None, None, None, True, 0.1,
                                                          1e-5)):
        expected, got = op(x), op(x.to("porta"))
        for e, g in zip(expected, got):
            assert g.dtype == e.dtype
            # CPU's half kernels round intermediate steps differently: 1 ulp
            torch.testing.assert_close(g.cpu(), e, atol=1e-3, rtol=1.6e-2)


def test_norm_errors():
    with pytest.raises(RuntimeError):
        F.layer_norm(torch.randn(2, 3, device="porta"), [4])
    with pytest.raises(ValueError):  # F.batch_norm checks the batch before dispatch
        F.batch_norm(torch.randn(1, 3, device="porta"), None, None, training=True)
    with pytest.raises(RuntimeError):
        torch.ops.aten.native_batch_norm(torch.randn(1, 3, device="porta"), None, None, None,
                                         None, True, 0.1, 1e-5)


# ---- losses ----

@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("shapes", [[(3, 4), (3, 4)], [(0,), (0,)], [(), ()], [(2, 5, 3), (2, 5, 3)]])
@pytest.mark.parametrize("dtype", FLOATS)
def test_mse_loss(reduction, shapes, dtype):
    tensors = _inputs(shapes, dtype)
    if dtype in (torch.float16, torch.bfloat16):
        tensors = [(t * 4).round() / 4 for t in tensors]
    check(lambda a, b: F.mse_loss(a, b, reduction=reduction), tensors)


def test_mse_loss_non_contiguous():
    x, y = _inputs([(4, 6), (4, 6)], torch.float64)
    check(F.mse_loss, [x, y], layout=_transposed)
    check(F.mse_loss, [x, y], layout=_stepped)


NLL_SHAPES = [((5, 4), (5,)), ((4,), ()), ((2, 4, 3, 3), (2, 3, 3)), ((0, 4), (0,))]


@pytest.mark.parametrize("shape,target_shape", NLL_SHAPES)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("label_smoothing", [0.0, 0.2])
def test_cross_entropy(shape, target_shape, reduction, weighted, label_smoothing):
    x, = _inputs([shape], torch.float64)
    gen = torch.Generator().manual_seed(2)
    target = torch.randint(0, 4, target_shape, generator=gen)
    if target.numel() > 1:
        target.view(-1)[1] = -100  # ignored
    weight = torch.rand(4, generator=gen, dtype=torch.float64) if weighted else None

    def loss(t):
        w = None if weight is None else weight.to(t.device)
        return F.cross_entropy(t, target.to(t.device), weight=w, reduction=reduction,
                               ignore_index=-100, label_smoothing=label_smoothing)
    check(loss, [x])


@pytest.mark.parametrize("dtype", FLOATS)
def test_nll_loss_dtypes(dtype):
    x, = _inputs([(6, 5)], dtype)
    x = (x * 4).round() / 4  # exact sums: CPU's half kernel rounds each step
    target = torch.tensor([0, 4, 2, 2, 1, 3])
    check(lambda t: F.nll_loss(t, target.to(t.device), ignore_index=2), [x])
    check(lambda t: F.nll_loss(t, target.to(t.device).to(torch.uint8)), [x], grad=False)


def test_nll_loss_non_contiguous_and_module():
    x, = _inputs([(4, 6)], torch.float64)
    target = torch.tensor([1, 0, 3, 3])
    check(lambda t: F.nll_loss(t, target.to(t.device)), [x], layout=_transposed)
    check(lambda t: F.nll_loss(t, target.to(t.device)), [x], layout=_stepped)
    module = torch.nn.CrossEntropyLoss(label_smoothing=0.1, ignore_index=3)
    check(lambda t: module(t, target.to(t.device)), [x])


def test_nll_loss_errors():
    x = torch.randn(3, 4, device="porta")
    with pytest.raises(IndexError):
        F.nll_loss(x, torch.tensor([0, 4, 1], device="porta"))
    with pytest.raises(RuntimeError):
        F.nll_loss(x, torch.tensor([0, 1, 1], dtype=torch.int32, device="porta"))
    with pytest.raises(RuntimeError):
        F.nll_loss(x, torch.tensor([0, 1, 1], device="porta"),
                   weight=torch.ones(4, dtype=torch.float64, device="porta"))


# ---- group norm ----

@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("shape,groups", [((3, 4, 5, 2), 2), ((2, 6, 7), 3), ((2, 4), 4)])
def test_group_norm(affine, shape, groups):
    torch.manual_seed(0)
    cpu = torch.nn.GroupNorm(groups, shape[1], affine=affine).double()
    porta = torch.nn.GroupNorm(groups, shape[1], affine=affine).double().to("porta")
    with torch.no_grad():
        for p, q in zip(cpu.parameters(), porta.parameters()):
            p.normal_()
            q.copy_(p)
    x, = _inputs([shape], torch.float64)
    check(lambda t: (cpu if t.device.type == "cpu" else porta)(t), [x])
    for p, q in zip(cpu.parameters(), porta.parameters()):
        torch.testing.assert_close(q.grad.cpu(), p.grad)


@pytest.mark.parametrize("layout", [_transposed, _stepped])
def test_group_norm_non_contiguous_and_float32(layout):
    x, = _inputs([(2, 4, 6)], torch.float32)
    check(lambda t: F.group_norm(t, 2), [x], layout=layout)


# ---- dropout ----

def test_dropout_masks_and_scales():
    x = torch.randn(200, 100, device="porta")
    torch.porta.manual_seed(3)
    y, mask = torch.ops.aten.native_dropout(x, 0.3, True)
    assert mask.dtype == torch.bool and y.dtype == x.dtype
    assert abs(mask.float().mean().item() - 0.7) < 0.02
    torch.testing.assert_close(y.cpu(), x.cpu() * mask.cpu() / 0.7)
    torch.porta.manual_seed(3)
    again, same = torch.ops.aten.native_dropout(x, 0.3, True)
    assert torch.equal(same.cpu(), mask.cpu())  # the seed decides the mask
    _, other = torch.ops.aten.native_dropout(x, 0.3, True)
    assert not torch.equal(other.cpu(), mask.cpu())  # the generator moved on


def test_dropout_eval_edges_and_backward():
    x, = _inputs([(4, 5)], torch.float32)
    for p, train in [(0.5, False), (0.0, True), (1.0, True)]:
        check(lambda t: torch.ops.aten.native_dropout(t, p, train), [x], grad=False)
    xp = x.to("porta").requires_grad_()
    y = torch.nn.Dropout(0.5)(xp)
    y.backward(torch.ones_like(y))
    kept = y.detach().cpu() != 0
    torch.testing.assert_close(xp.grad.cpu(), kept.float() * 2)
    check(torch.nn.Dropout(0.0), [x])
    check(torch.nn.Dropout(0.4).eval(), [x])
    with pytest.raises(RuntimeError):
        torch.ops.aten.native_dropout(xp.detach(), 1.5, True)


# ---- upsampling ----

@pytest.mark.parametrize("size,scale", [((6, 9), None), (None, 2), (None, (1.7, 2.3)),
                                        ((3, 3), None), (None, 0.5)])
@pytest.mark.parametrize("dtype", FLOATS)
def test_upsample_nearest2d(size, scale, dtype):
    x, = _inputs([(2, 3, 4, 5)], dtype)
    check(lambda t: F.interpolate(t, size=size, scale_factor=scale, mode="nearest"), [x],
          grad=dtype == torch.float64)


def test_upsample_nearest2d_non_contiguous_and_integers():
    x, = _inputs([(1, 2, 3, 4)], torch.float64)
    check(lambda t: F.interpolate(t, scale_factor=2), [x], layout=_transposed)
    check(lambda t: F.interpolate(t, size=(5, 7)), [x], layout=_stepped)
    check(lambda t: F.interpolate(t, scale_factor=3), [torch.arange(12, dtype=torch.uint8)
                                                       .reshape(1, 1, 3, 4)], grad=False)


# ---- binary cross entropy ----

@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_binary_cross_entropy(reduction, weighted, dtype):
    gen = torch.Generator().manual_seed(4)
    x = torch.rand(3, 4, generator=gen, dtype=dtype)
    x[0, 0], x[1, 1] = 0, 1  # log clamped at -100; gradient through the 1e-12 floor
    target = torch.rand(3, 4, generator=gen, dtype=dtype)
    weight = torch.rand(3, 4, generator=gen, dtype=dtype) if weighted else None

    def loss(t):
        w = None if weight is None else weight.to(t.device)
        return F.binary_cross_entropy(t, target.to(t.device), weight=w, reduction=reduction)
    check(loss, [x])


def test_binary_cross_entropy_non_contiguous_and_errors():
    x = torch.rand(4, 6, dtype=torch.float64)
    check(lambda t: F.binary_cross_entropy(t, torch.full_like(t, 0.25)), [x], layout=_transposed)
    check(torch.nn.BCEWithLogitsLoss(), [torch.randn(4, 6), torch.rand(4, 6)])
    with pytest.raises(RuntimeError):
        F.binary_cross_entropy(torch.full((2,), 1.5, device="porta"),
                               torch.zeros(2, device="porta"))
    with pytest.raises(RuntimeError):
        torch.ops.aten.binary_cross_entropy(torch.rand(2, device="porta"),
                                            torch.zeros(3, device="porta"))


# ---- soft margin loss (PyTorch's composite wrote into an empty out=) ----

@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("shapes", [[(3, 4), (3, 4)], [(3, 4), (4,)], [(), ()], [(0, 2), (0, 2)]])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_soft_margin_loss(reduction, shapes, dtype):
    x, target = _inputs(shapes, dtype)
    check(lambda t: F.soft_margin_loss(t, target.sign().to(t.device), reduction=reduction), [x])
    check(lambda t: F.soft_margin_loss(t, torch.ones_like(t), reduction=reduction), [x],
          layout=_stepped if x.dim() else None)


def test_soft_margin_loss_errors():
    for x, target in [(torch.randn(3), torch.randn(2, 3)), (torch.arange(3), torch.arange(3))]:
        with pytest.raises(RuntimeError):
            torch.ops.aten.soft_margin_loss(x, target)
        with pytest.raises(RuntimeError):
            torch.ops.aten.soft_margin_loss(x.to("porta"), target.to("porta"))


def test_layer_norm_single_element_gradient_is_exact():
    """A single normalized element is 0 after normalization: the weight's
    gradient is exactly 0 (PyTorch CPU's fused x * rstd - mean * rstd leaves
    the rounding error of mean * rstd, up to 1e-4 with eps = 1e-5)."""
    x, weight = torch.tensor([[-4.3228]], device="porta"), torch.tensor([-8.4784], device="porta")
    weight.requires_grad_()
    out = F.layer_norm(x, [1], weight, None, 1e-5)
    out.sum().backward()
    assert weight.grad.cpu().item() == 0


@pytest.mark.parametrize("kernel,stride,dilation", [(2, 2, 1), (3, 1, 1), (2, 1, 2), ((1, 3), (2, 1), 1)])
def test_max_pool_ties_nan_and_infinities_pick_as_the_cpu(kernel, stride, dilation):
    x = torch.tensor([[1.0, 1.0, float("nan"), 2.0, float("-inf")],
                      [float("nan"), 1.0, 2.0, 2.0, float("-inf")],
                      [0.0, -0.0, float("inf"), float("nan"), float("-inf")],
                      [float("-inf"), float("-inf"), 3.0, 3.0, float("-inf")]]).reshape(1, 1, 4, 5)
    pool = lambda t: F.max_pool2d(t, kernel, stride, dilation=dilation, return_indices=True)
    (values, indices), (expected, expected_indices) = pool(x.to("porta")), pool(x)
    torch.testing.assert_close(values.cpu(), expected, equal_nan=True)
    assert torch.equal(indices.cpu(), expected_indices)


@pytest.mark.parametrize("size,kwargs", [
    ((5, 4), dict(kernel_size=3, stride=2, padding=1)),
    ((5, 4), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
    ((5, 4), dict(kernel_size=(3, 2), stride=1, padding=1, dilation=2)),
    # the first window lies wholly in the padding: -inf at an index past the input
    ((2, 2), dict(kernel_size=2, padding=1, dilation=3)),
])
@pytest.mark.parametrize("layout", ["contiguous", "channels_last"])
def test_max_pool_border_windows_pick_as_the_cpu(size, kwargs, layout):
    """Windows clipped by the padding start at their first tap inside the
    input: an all -inf window keeps that index, NaN still wins."""
    x = torch.randn(2, 3, *size)
    x[0, 0] = float("-inf")
    x[0, 1, 0, 0] = x[1, 2, -1, -1] = float("nan")
    x[1, 0, :2] = 7.0  # ties
    if layout == "channels_last":
        x = x.contiguous(memory_format=torch.channels_last)
    pool = lambda t: F.max_pool2d(t, return_indices=True, **kwargs)
    (values, indices), (expected, expected_indices) = pool(x.to("porta")), pool(x)
    torch.testing.assert_close(values.cpu(), expected, equal_nan=True)
    assert torch.equal(indices.cpu(), expected_indices)
    assert values.is_contiguous(memory_format=torch.channels_last) == \
        expected.is_contiguous(memory_format=torch.channels_last)


def test_convolution_backward_in_fused_mode_equals_cpu():
    """The demo CNN's two convolutions, their weight and input gradients
    recorded and run by the compiler."""
    import torch_porta
    x, w1, b1, w2 = _inputs([(8, 1, 8, 8), (16, 1, 3, 3), (16,), (32, 16, 3, 3)], torch.float64)

    def layers(x, w1, b1, w2):
        return F.conv2d(F.relu(F.conv2d(x, w1, b1, padding=1)), w2, padding=1)

    torch_porta.set_eager_mode("fused")
    try:
        check(layers, [x, w1, b1, w2])
    finally:
        torch_porta.set_eager_mode("debug")
