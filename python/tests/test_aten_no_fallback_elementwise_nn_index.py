"""More ops the OpInfo conformance test used to send to the CPU fallback,
now native in libporta, mostly elementwise, nn and index ops: heaviside,
hypot, signbit, sinc, nextafter (src/aten/elementwise/), glu, the shrinks,
huber and smooth_l1 losses, upsample_linear (nn/), trace (linalg/),
index_copy, repeat_interleave, unique (index/), isin, histc, mode (sort/),
logcumsumexp (reduce/): values, dtypes and layouts against PyTorch CPU,
zero-size inputs, errors of the same type, gradients through autograd, and
no fallback on the way."""
import warnings

import pytest
import torch
import torch.nn.functional as F

import torch_porta
from aten_compare import (FLOAT_DTYPES, LAYOUTS, assert_same_outcome_and_no_leak, compare,
                          compare_grad, make)

NUMBER_DTYPES = [torch.bool, torch.uint8, torch.int8, torch.int32, torch.int64, torch.float16,
                 torch.bfloat16, torch.float32, torch.float64]


def _special_floats(dtype):
    return torch.tensor([0.0, -0.0, 1.5, -2.5, float("inf"), -float("inf"), float("nan"),
                         1e-30, 3.0], dtype=dtype)


def _compare_out(fn, *inputs, dtype=None):
    """fn(*inputs, out=...) into a right-sized and an empty out tensor of
    `dtype` (the first input's unless given)."""
    dtype = dtype or inputs[0].dtype
    expected = fn(*inputs, out=torch.empty(0, dtype=dtype))
    compare(lambda *a: fn(*a[:-1], out=a[-1]), *inputs, torch.empty_like(expected))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # an out= of the wrong shape is resized
        compare(lambda *a: fn(*a[:-1], out=a[-1]), *inputs, torch.empty(0, dtype=dtype))


# ---- elementwise ----

@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", NUMBER_DTYPES)
def test_heaviside(dtype, layout, no_fallbacks):
    x, values = make((4, 6), dtype, layout), make((4, 6), dtype, layout, seed=1)
    x[0] = 0
    compare(torch.heaviside, x, values)
    compare(torch.heaviside, x, values[0])  # broadcast
    _compare_out(torch.heaviside, x, values)
    compare(lambda a, b: a.clone().heaviside_(b), x, values)
    compare(torch.heaviside, make((0, 3), dtype), make((3,), dtype))


def test_heaviside_special_and_errors(no_fallbacks):
    x = _special_floats(torch.float32)
    compare(torch.heaviside, x, torch.full_like(x, 0.5))
    compare(torch.heaviside, make((3,)), make((3,), torch.float64))  # mixed dtypes
    compare(torch.heaviside, make((3,)), make((4,)))  # shapes


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", NUMBER_DTYPES)
def test_hypot(dtype, layout, no_fallbacks):
    a, b = make((4, 6), dtype, layout), make((4, 6), dtype, layout, seed=1)
    compare(torch.hypot, a, b)  # integers and bool fail as on the CPU
    if dtype.is_floating_point:
        _compare_out(torch.hypot, a, b)
        compare(lambda x, y: x.clone().hypot_(y), a, b)
        compare(torch.hypot, a, b[0])
        compare(torch.hypot, make((0, 2), dtype), make((2,), dtype))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_hypot_special_and_grad(dtype, no_fallbacks):
    x = _special_floats(dtype)
    compare(torch.hypot, x, x.flip(0))
    compare(torch.hypot, torch.tensor([1e30, 1e-30, 0.0], dtype=dtype),
            torch.tensor([1e30, 1e-30, 0.0], dtype=dtype))
    compare_grad(torch.hypot, make((3, 4), dtype), make((3, 4), dtype, seed=1))


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", NUMBER_DTYPES)
def test_signbit(dtype, layout, no_fallbacks):
    x = make((4, 6), dtype, layout)
    compare(torch.signbit, x)
    _compare_out(torch.signbit, x, dtype=torch.bool)
    compare(torch.signbit, make((0,), dtype))
    if dtype.is_floating_point:
        compare(torch.signbit, _special_floats(dtype)[:6])  # -0.0 and the infinities


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", NUMBER_DTYPES)
def test_sinc(dtype, layout, no_fallbacks):
    x = make((4, 6), dtype, layout)
    compare(torch.sinc, x)
    _compare_out(torch.sinc, x, dtype=torch.sinc(x).dtype)
    compare(lambda t: t.clone().sinc_(), x)  # integers cannot hold the result
    compare(torch.sinc, make((0, 2), dtype))
    if dtype.is_floating_point:
        compare(torch.sinc, _special_floats(dtype))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_sinc_grad(dtype, no_fallbacks):
    compare_grad(torch.sinc, make((3, 4), dtype))


# ---- glu ----

@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_glu(dtype, layout, no_fallbacks):
    x = make((4, 6, 8), dtype, layout)
    for dim in (0, 1, -1):
        compare(lambda t: F.glu(t, dim), x)
        _compare_out(lambda t, out: torch.ops.aten.glu.out(t, dim, out=out), x)
    compare(lambda t: F.glu(t, 1), make((0, 4), dtype))


def test_glu_errors(no_fallbacks):
    compare(lambda t: F.glu(t, 0), make((3, 4)))  # odd halving dimension
    compare(lambda t: F.glu(t, 3), make((3, 4)))  # dim out of range
    compare(lambda t: torch.ops.aten.glu(t), torch.tensor(2.0))  # scalar
    compare(lambda t: F.glu(t, 1), make((3, 4), torch.int64))


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_glu_grad(dtype, layout, no_fallbacks):
    x = make((4, 6), dtype, layout)
    for dim in (0, 1):
        compare_grad(lambda t: F.glu(t, dim), x)
    grad = make((4, 3), dtype)
    compare(lambda g, t: torch.ops.aten.glu_backward(g, t, 1), grad, x)
    compare(lambda g, t, o: torch.ops.aten.glu_backward.grad_input(g, t, 1, grad_input=o),
            grad, x, torch.empty(4, 6, dtype=dtype))


# ---- hardshrink, softshrink ----

@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_shrinks(dtype, layout, no_fallbacks):
    x = make((4, 6), dtype, layout)
    for lambd in (0.5, 1.5, 0.0):
        compare(lambda t: F.hardshrink(t, lambd), x)
        compare(lambda t: F.softshrink(t, lambd), x)
        _compare_out(lambda t, out: torch.ops.aten.hardshrink.out(t, lambd, out=out), x)
        _compare_out(lambda t, out: torch.ops.aten.softshrink.out(t, lambd, out=out), x)
    special = _special_floats(dtype)
    compare(F.hardshrink, special)
    compare(F.softshrink, special)
    compare(F.hardshrink, make((0, 3), dtype))
    compare(F.softshrink, make((0, 3), dtype))


def test_shrink_errors(no_fallbacks):
    compare(lambda t: F.softshrink(t, -0.5), make((3,)))
    compare(F.hardshrink, make((3,), torch.int64))
    compare(F.softshrink, make((3,), torch.int64))


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_shrink_grads(dtype, layout, no_fallbacks):
    x = make((4, 6), dtype, layout)
    compare_grad(lambda t: F.hardshrink(t, 1.0), x)
    compare_grad(lambda t: F.softshrink(t, 1.0), x)
    grad = make((4, 6), dtype, seed=2)
    for op in (torch.ops.aten.hardshrink_backward, torch.ops.aten.softshrink_backward):
        compare(lambda g, t: op(g, t, 0.5), grad, x)
        compare(lambda g, t, o: op.grad_input(g, t, 0.5, grad_input=o), grad, x,
                torch.empty(4, 6, dtype=dtype))


# ---- huber_loss, smooth_l1_loss ----

LOSSES = [(F.huber_loss, "delta", (1.0, 0.5, 2.5)), (F.smooth_l1_loss, "beta", (1.0, 0.5, 0.0))]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_robust_losses(dtype, layout, reduction, no_fallbacks):
    x, target = make((4, 6), dtype, layout), make((4, 6), dtype, layout, seed=1)
    tolerance = {"atol": 1e-2, "rtol": 1e-2} if dtype in (torch.float16, torch.bfloat16) else {}
    for loss, width_name, widths in LOSSES:
        for width in widths:
            kwargs = {"reduction": reduction, width_name: width}
            compare(lambda a, b: loss(a, b, **kwargs), x, target, **tolerance)
        compare(lambda a, b: loss(a, b, reduction=reduction), make((0, 3), dtype),
                make((0, 3), dtype))


def test_robust_loss_outs_and_errors(no_fallbacks):
    x, target = make((4, 6)), make((4, 6), seed=1)
    _compare_out(lambda a, b, out: torch.ops.aten.huber_loss.out(a, b, 0, 0.5, out=out),
                 x, target)
    _compare_out(lambda a, b, out: torch.ops.aten.smooth_l1_loss.out(a, b, 2, 0.5, out=out),
                 x, target)
    compare(lambda a, b: F.huber_loss(a, b, delta=0.0), x, target)
    compare(lambda a, b: F.huber_loss(a, b, delta=-1.0), x, target)
    compare(lambda a, b: F.smooth_l1_loss(a, b, beta=-1.0), x, target)
    compare(lambda a, b: torch.ops.aten.huber_loss(a, b, 1, 1.0), x, make((3, 6)))


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_robust_loss_grads(dtype, layout, reduction, no_fallbacks):
    x, target = make((4, 6), dtype, layout), make((4, 6), dtype, layout, seed=1)
    x[0, :2] = target[0, :2]  # a zero difference: the beta = 0 kink
    for loss, width_name, widths in LOSSES:
        for width in widths:
            kwargs = {"reduction": reduction, width_name: width}
            compare_grad(lambda a, b: loss(a, b, **kwargs), x, target)
    grad = make((4, 6), dtype, seed=2)
    for op in (torch.ops.aten.huber_loss_backward, torch.ops.aten.smooth_l1_loss_backward):
        compare(lambda g, a, b: op(g, a, b, 0, 0.5), grad, x, target)
    compare(lambda g, a, b, o: torch.ops.aten.huber_loss_backward.out(g, a, b, 0, 0.5,
                                                                     grad_input=o),
            grad, x, target, torch.empty(4, 6, dtype=dtype))
    compare(lambda g, a, b, o: torch.ops.aten.smooth_l1_loss_backward.grad_input(
        g, a, b, 0, 0.5, grad_input=o), grad, x, target, torch.empty(4, 6, dtype=dtype))


# ---- trace ----

@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", NUMBER_DTYPES)
def test_trace(dtype, layout, no_fallbacks):
    for shape in ((4, 6), (6, 4), (5, 5), (0, 3)):
        compare(torch.trace, make(shape, dtype, layout))
    if dtype != torch.bool:  # refused by the CPU
        compare(lambda t, o: torch.ops.aten.trace.out(t, out=o), make((4, 6), dtype, layout),
                torch.empty((), dtype=torch.trace(make((2, 2), dtype)).dtype))
    compare(torch.trace, make((3,), dtype))  # not a matrix


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_trace_grad(dtype, no_fallbacks):
    compare_grad(torch.trace, make((4, 6), dtype))


# ---- index_copy ----

@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", NUMBER_DTYPES)
def test_index_copy(dtype, layout, no_fallbacks):
    x = make((5, 6), dtype, layout)
    for dim, index, source_shape in ((0, [4, 0, 2], (3, 6)), (1, [5, 1], (5, 2)),
                                     (-1, [], (5, 0))):
        index = torch.tensor(index, dtype=torch.int64)
        source = make(source_shape, dtype, layout, seed=1)
        compare(lambda t, i, s: torch.index_copy(t, dim, i, s), x, index, source)
        compare(lambda t, i, s: t.clone().index_copy_(dim, i, s), x, index, source)
        compare(lambda t, i, s, o: torch.index_copy(t, dim, i, s, out=o), x, index, source,
                torch.empty(5, 6, dtype=dtype))
    scalar = make((), dtype)
    compare(lambda t, i, s: torch.index_copy(t, 0, i, s), scalar, torch.tensor(0), make((), dtype))


def test_index_copy_errors(no_fallbacks):
    x, source = make((5, 6)), make((2, 6))
    compare(lambda t, i, s: torch.index_copy(t, 0, i, s), x, torch.tensor([0, 5]), source)
    compare(lambda t, i, s: torch.index_copy(t, 0, i, s), x, torch.tensor([0, -1]), source)
    compare(lambda t, i, s: torch.index_copy(t, 0, i, s), x, torch.tensor([0, 1], dtype=torch.int32),
            source)
    compare(lambda t, i, s: torch.index_copy(t, 0, i, s), x, torch.tensor([0, 1]),
            source.double())
    compare(lambda t, i, s: torch.index_copy(t, 0, i, s), x, torch.tensor([0, 1, 2]), source)
    compare(lambda t, i, s: torch.index_copy(t, 0, i, s), x, torch.tensor([0, 1]), make((2, 5)))
    compare(lambda t, i, s: torch.index_copy(t, 2, i, s), x, torch.tensor([0, 1]), source)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_index_copy_grad(dtype, no_fallbacks):
    index = torch.tensor([3, 0])
    compare_grad(lambda t, s: torch.index_copy(t, 1, index.to(t.device), s), make((4, 5), dtype),
                 make((4, 2), dtype, seed=1))


# ---- repeat_interleave ----

@pytest.mark.parametrize("dtype", [torch.int32, torch.int64])
def test_repeat_interleave_counts(dtype, no_fallbacks):
    for repeats in ([2, 0, 3, 1], [0, 0], [], [4], [0, 3, 0]):
        compare(torch.repeat_interleave, torch.tensor(repeats, dtype=dtype))
    compare(lambda r, o: torch.ops.aten.repeat_interleave.Tensor_out(r, out=o),
            torch.tensor([1, 2], dtype=dtype), torch.empty(0, dtype=dtype))
    compare(lambda r: torch.repeat_interleave(r, output_size=6), torch.tensor([2, 0, 3, 1],
                                                                               dtype=dtype))
    compare(torch.repeat_interleave, torch.tensor([[1, 2]], dtype=dtype))
    compare(torch.repeat_interleave, torch.tensor([1.0, 2.0]))
    compare(torch.repeat_interleave, torch.tensor([1, -2], dtype=dtype))


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.int64])
def test_repeat_interleave_self(dtype, layout, no_fallbacks):
    x = make((3, 4), dtype, layout)
    compare(lambda t, r: torch.repeat_interleave(t, r, dim=0), x, torch.tensor([1, 0, 2]))
    compare(lambda t, r: torch.repeat_interleave(t, r, dim=1), x, torch.tensor([2, 2, 0, 1]))
    compare(lambda t, r: torch.repeat_interleave(t, r), x, torch.tensor([1] * 12))
    compare(lambda t: torch.repeat_interleave(t, 2, dim=1), x)
    if dtype.is_floating_point:
        compare_grad(lambda t: torch.repeat_interleave(t, torch.tensor([1, 0, 2], device=t.device),
                                                       dim=0), x)


# ---- logcumsumexp ----

@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_logcumsumexp(dtype, layout, no_fallbacks):
    x = make((5, 37), dtype, layout)
    for dim in (0, 1, -1):
        compare(lambda t: torch.logcumsumexp(t, dim), x)
        _compare_out(lambda t, out: torch.logcumsumexp(t, dim, out=out), x)
    compare(lambda t: torch.logcumsumexp(t, 0), make((), dtype))
    compare(lambda t: torch.logcumsumexp(t, 1), make((3, 0), dtype))
    special = torch.tensor([-1000.0, 0.0, float("-inf"), float("inf"), float("inf"), 5.0,
                            float("nan"), 1.0], dtype=dtype)
    compare(lambda t: torch.logcumsumexp(t, 0), special)
    compare(lambda t: torch.logcumsumexp(t, 0), torch.full((4,), float("-inf"), dtype=dtype))


def test_logcumsumexp_errors_and_grad(no_fallbacks):
    compare(lambda t: torch.logcumsumexp(t, 0), make((3,), torch.int64))
    compare(lambda t: torch.logcumsumexp(t, 2), make((3, 4)))
    for dtype in (torch.float32, torch.float64):
        compare_grad(lambda t: torch.logcumsumexp(t, 1), make((3, 9), dtype))
        large = make((5, 5, 5), dtype)
        large[0] = 10000  # an ulp of the result shows in the gradient
        for dim in (0, 1, 2):
            compare_grad(lambda t: torch.logcumsumexp(t, dim), large)


# ---- isin ----

@pytest.mark.parametrize("dtype", [torch.uint8, torch.int32, torch.int64, torch.float16,
                                   torch.float32, torch.float64])
@pytest.mark.parametrize("invert", [False, True])
def test_isin(dtype, invert, no_fallbacks):
    elements, tests = make((4, 6), dtype, "transposed"), make((7,), dtype, seed=1)
    compare(lambda e, t: torch.isin(e, t, invert=invert), elements, tests)
    compare(lambda e, t: torch.isin(e, t, invert=invert), elements, tests.reshape(7, 1)[::2])
    compare(lambda e: torch.isin(e, 2, invert=invert), elements)
    compare(lambda t: torch.isin(2, t, invert=invert), tests)
    compare(lambda e, t: torch.isin(e, t, invert=invert), make((0, 3), dtype), tests)
    compare(lambda e, t: torch.isin(e, t, invert=invert), elements, make((0,), dtype))
    compare(lambda e, t, o: torch.isin(e, t, invert=invert, out=o), elements, tests,
            torch.empty(4, 6, dtype=torch.bool))


def test_isin_mixed_and_nan(no_fallbacks):
    compare(torch.isin, torch.tensor([1.0, 2.5, float("nan"), 3.0]),
            torch.tensor([3, 1, 2]))
    compare(torch.isin, torch.tensor([1, 2, 3]), torch.tensor([2.0, float("nan"), 3.5]))


# ---- histc ----

@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_histc(dtype, layout, no_fallbacks):
    x = make((5, 8), dtype, layout)
    compare(torch.histc, x)
    compare(lambda t: torch.histc(t, 7, -2, 3), x)
    compare(lambda t: torch.histc(t, 4, 0, 0), x)
    compare(lambda t: torch.histc(t, 4), torch.full((3,), 2.0, dtype=dtype))
    compare(lambda t: torch.histc(t, 3), make((0,), dtype))
    compare(lambda t: torch.histc(t, 4, -1, 1),
            torch.tensor([-1.0, 1.0, 0.0, 0.5, float("nan"), 2.0, -5.0], dtype=dtype))
    compare(lambda t, o: torch.histc(t, 5, out=o), x, torch.empty(0, dtype=dtype))


def test_histc_errors(no_fallbacks):
    compare(lambda t: torch.histc(t, 0), make((3,)))
    compare(lambda t: torch.histc(t, 3, 2, 1), make((3,)))
    compare(lambda t: torch.histc(t, 3), make((3,), torch.bool))


# ---- mode ----

@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", [torch.bool, torch.uint8, torch.int32, torch.int64,
                                   torch.float16, torch.float32, torch.float64])
def test_mode(dtype, layout, no_fallbacks):
    x = make((6, 9), dtype, layout).div(3).floor().to(dtype) if dtype != torch.bool \
        else make((6, 9), dtype, layout)
    for dim in (0, 1, -1):
        for keepdim in (False, True):
            compare(lambda t: torch.mode(t, dim, keepdim), x)
    compare(lambda t: torch.mode(t, 0), make((), dtype))
    compare(lambda t: torch.mode(t, 1), make((0, 3), dtype))
    compare(lambda t: torch.mode(t, 0), make((0, 3), dtype))  # IndexError
    compare(lambda t, v, i: torch.mode(t, 1, out=(v, i)), x, torch.empty(0, dtype=dtype),
            torch.empty(0, dtype=torch.int64))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_mode_grad(dtype, no_fallbacks):
    x = torch.tensor([[1.0, 2.0, 2.0, 3.0], [4.0, 4.0, 5.0, 5.0]], dtype=dtype)
    compare_grad(lambda t: torch.mode(t, 1).values, x)


# ---- nothing leaks, on success or error ----

def _leak_cases():
    """Calls of the new ops, each given `p` to put its tensors on porta:
    successes and errors."""
    x, i = make((4, 6)), torch.tensor([1, 3])
    r = torch.tensor([2, 0, 3])
    return [
        lambda p: torch.heaviside(p(x), p(x)), lambda p: torch.heaviside(p(x), p(x.double())),
        lambda p: torch.hypot(p(x), p(x[0])), lambda p: torch.hypot(p(i), p(i)),
        lambda p: torch.signbit(p(x)), lambda p: torch.sinc(p(x)),
        lambda p: F.glu(p(x), 1), lambda p: F.glu(p(x[:3]), 0),
        lambda p: torch.ops.aten.glu_backward(p(x[:, :3]), p(x), 1),
        lambda p: F.hardshrink(p(x)), lambda p: F.softshrink(p(x), -1.0),
        lambda p: F.huber_loss(p(x), p(x.flip(0))), lambda p: F.smooth_l1_loss(p(x), p(x[:3])),
        lambda p: torch.ops.aten.smooth_l1_loss_backward(p(x), p(x), p(x.flip(1)), 1, 0.0),
        lambda p: torch.trace(p(x)), lambda p: torch.trace(p(x[0])),
        lambda p: torch.index_copy(p(x), 0, p(i), p(x[:2])),
        lambda p: torch.index_copy(p(x), 0, p(torch.tensor([1, 9])), p(x[:2])),
        lambda p: torch.repeat_interleave(p(r)), lambda p: torch.repeat_interleave(p(-r)),
        lambda p: torch.logcumsumexp(p(x), 1), lambda p: torch.isin(p(x), p(x[0])),
        lambda p: torch.histc(p(x), 5), lambda p: torch.histc(p(x), 5, 3, 1),
        lambda p: torch.mode(p(x), 1), lambda p: torch.mode(p(x[:0]), 0),
        lambda p: F.interpolate(p(x[None]), size=9, mode="linear"),
        lambda p: torch.ops.aten.upsample_trilinear3d(p(x[None, None, None]), [2, 5, 3], True),
        lambda p: torch.ops.aten.upsample_linear1d(p(x[None]), [0], False),
        lambda p: torch.unique(p(x.round()), return_inverse=True, return_counts=True),
        lambda p: torch.unique_consecutive(p(x.round()), return_counts=True, dim=1),
        lambda p: torch.unique_consecutive(p(x), dim=2),
        lambda p: torch.nextafter(p(x), p(x[0])), lambda p: torch.nextafter(p(x), p(x[:3])),
    ]


@pytest.mark.parametrize("case", range(len(_leak_cases())))
def test_no_leaks(case, no_fallbacks):
    assert_same_outcome_and_no_leak(_leak_cases()[case], lambda t: t.to("porta"))


# ---- upsample_linear1d, upsample_trilinear3d ----

@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("align_corners", [False, True])
def test_upsample_linear(dtype, layout, align_corners, no_fallbacks):
    # within one bfloat16 ulp at |x| < 16: the CPU rounds between the axes
    tolerance = {torch.float16: {"atol": 1e-2, "rtol": 1e-2},
                 torch.bfloat16: {"atol": 7e-2, "rtol": 1e-2}}.get(dtype, {})
    x1, x3 = make((2, 3, 5), dtype, layout), make((2, 2, 3, 4, 5), dtype, layout)
    for size in (9, 3, 5, 1):
        compare(lambda t: F.interpolate(t, size=size, mode="linear",
                                        align_corners=align_corners), x1, **tolerance)
    for size in ((5, 7, 9), (2, 3, 2), (3, 4, 5)):
        compare(lambda t: F.interpolate(t, size=size, mode="trilinear",
                                        align_corners=align_corners), x3, **tolerance)
    for scale in (2.0, 0.6, 1.7):
        compare(lambda t: F.interpolate(t, scale_factor=scale, mode="linear",
                                        align_corners=align_corners), x1, **tolerance)
        compare(lambda t: F.interpolate(t, scale_factor=scale, mode="trilinear",
                                        align_corners=align_corners), x3, **tolerance)
    compare(lambda t: F.interpolate(t, size=4, mode="linear"), make((0, 3, 5), dtype))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("align_corners", [False, True])
def test_upsample_linear_grad(dtype, align_corners, no_fallbacks):
    compare_grad(lambda t: F.interpolate(t, size=8, mode="linear", align_corners=align_corners),
                 make((2, 3, 5), dtype))
    compare_grad(lambda t: F.interpolate(t, size=(4, 6, 3), mode="trilinear",
                                         align_corners=align_corners),
                 make((2, 2, 3, 4, 5), dtype, "transposed"))
    compare_grad(lambda t: F.interpolate(t, scale_factor=1.5, mode="trilinear",
                                         align_corners=align_corners), make((1, 2, 3, 4, 2), dtype))


def test_upsample_linear_outs_and_errors(no_fallbacks):
    x1, x3 = make((2, 3, 5)), make((2, 2, 3, 4, 5))
    _compare_out(lambda t, out: torch.ops.aten.upsample_linear1d.out(t, [7], False, out=out), x1)
    _compare_out(lambda t, out: torch.ops.aten.upsample_trilinear3d.out(t, [4, 5, 6], True,
                                                                        out=out), x3)
    compare(lambda g: torch.ops.aten.upsample_linear1d_backward(g, [7], [2, 3, 5], False),
            make((2, 3, 7)))
    compare(lambda g, o: torch.ops.aten.upsample_trilinear3d_backward.grad_input(
        g, [4, 5, 6], [2, 2, 3, 4, 5], True, grad_input=o), make((2, 2, 4, 5, 6)),
        torch.empty(2, 2, 3, 4, 5))
    compare(lambda t: torch.ops.aten.upsample_linear1d(t, [0], False), x1)
    compare(lambda t: torch.ops.aten.upsample_linear1d(t, [4], False), make((3, 5)))
    compare(lambda t: torch.ops.aten.upsample_trilinear3d(t, [4, 4, 4], False),
            make((2, 2, 3, 4, 5), torch.int64))


# ---- unique_consecutive, _unique, _unique2 ----

@pytest.mark.parametrize("dtype", [torch.bool, torch.uint8, torch.int32, torch.int64,
                                   torch.float16, torch.float32, torch.float64])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_unique(dtype, layout, no_fallbacks):
    x = make((4, 6), dtype, layout).div(2).floor().to(dtype) if dtype != torch.bool \
        else make((4, 6), dtype, layout)
    for inverse in (False, True):
        for counts in (False, True):
            compare(lambda t: torch.unique(t, return_inverse=inverse, return_counts=counts), x)
            compare(lambda t: torch.unique(t, sorted=False, return_inverse=inverse,
                                           return_counts=counts), x)
            compare(lambda t: torch.unique_consecutive(t, return_inverse=inverse,
                                                       return_counts=counts), x)
            for dim in (0, 1):
                compare(lambda t: torch.unique_consecutive(t, return_inverse=inverse,
                                                           return_counts=counts, dim=dim),
                        x.repeat_interleave(2, dim=dim))
        compare(lambda t: torch._unique(t, return_inverse=inverse), x)
    for empty in (make((0,), dtype), make((2, 0), dtype)):
        compare(lambda t: torch.unique(t, return_inverse=True, return_counts=True), empty)
        compare(lambda t: torch.unique_consecutive(t, return_inverse=True, return_counts=True),
                empty)
    compare(lambda t: torch.unique(t, return_inverse=True), make((), dtype))


# ---- nextafter ----

@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", NUMBER_DTYPES)
def test_nextafter(dtype, layout, no_fallbacks):
    a, b = make((4, 6), dtype, layout), make((4, 6), dtype, layout, seed=1)
    compare(torch.nextafter, a, b, atol=0, rtol=0)  # integers and bool fail as on the CPU
    if dtype.is_floating_point:
        compare(torch.nextafter, a, b[0], atol=0, rtol=0)
        _compare_out(torch.nextafter, a, b)
        compare(lambda x, y: x.clone().nextafter_(y), a, b, atol=0, rtol=0)
        special = _special_floats(dtype)
        for other in (special.flip(0), torch.zeros_like(special), -special, special):
            compare(torch.nextafter, special, other, atol=0, rtol=0)
        compare(torch.nextafter, make((0, 2), dtype), make((2,), dtype))
