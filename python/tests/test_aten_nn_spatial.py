"""Spatial nn aten ops against PyTorch CPU: reflection/replication padding,
3-D pooling (average, max with indices, adaptive), the 1-D pools PyTorch
composes from the 2-D ones, and nearest/bilinear interpolation. Forward on
contiguous and non-contiguous inputs, backward through autograd, errors of
the CPU's type, and no op falling back to the CPU on the way."""
import pytest
import torch
import torch.nn.functional as F

from aten_compare import LAYOUTS, compare, compare_grad, make

DTYPES = [torch.float32, torch.float64]


@pytest.fixture(autouse=True)
def every_test_runs_natively(no_fallbacks):
    """Every test here runs natively: no op falls back to the CPU."""


# ---- padding ----

PADS = [
    ((2, 3, 6), (2, 3)),                     # 1-D, batched
    ((3, 6), (1, 2)),                        # 1-D, unbatched
    ((2, 3, 5, 6), (2, 1, 0, 3)),            # 2-D
    ((3, 5, 6), (1, 1, 2, 2)),               # 2-D, unbatched
    ((2, 3, 4, 5, 6), (1, 2, 3, 0, 2, 1)),   # 3-D
    ((3, 4, 5, 6), (1, 1, 1, 1, 1, 1)),      # 3-D, unbatched
    ((2, 3, 6), (-2, 1)),                    # cropping on one side
    ((2, 3, 5, 6), (0, 0, 0, 0)),            # no padding: still a new tensor
]


@pytest.mark.parametrize("mode", ["reflect", "replicate"])
@pytest.mark.parametrize("shape,pad", PADS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_pad(mode, shape, pad, dtype):
    fn = lambda x: F.pad(x, pad, mode=mode)  # noqa: E731
    compare(fn, make(shape, dtype))
    compare_grad(fn, make(shape, dtype))


@pytest.mark.parametrize("mode", ["reflect", "replicate"])
@pytest.mark.parametrize("layout", LAYOUTS[1:])
@pytest.mark.parametrize("shape,pad", [((2, 3, 5, 6), (2, 1, 3, 0)),
                                       ((2, 3, 4, 5, 6), (1, 2, 1, 0, 2, 1))])
def test_pad_non_contiguous(mode, layout, shape, pad):
    compare(lambda x: F.pad(x, pad, mode=mode), make(shape, torch.float32, layout))


@pytest.mark.parametrize("mode", ["reflect", "replicate"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.int64, torch.uint8,
                                   torch.bool])
def test_pad_other_dtypes(mode, dtype):
    compare(lambda x: F.pad(x, (2, 1, 1, 2), mode=mode), make((2, 3, 4, 5), dtype))


@pytest.mark.parametrize("mode", ["reflect", "replicate"])
def test_pad_zero_batch(mode):
    compare_grad(lambda x: F.pad(x, (1, 2, 2, 1), mode=mode), make((0, 3, 4, 5)))


@pytest.mark.parametrize("op,shape,pad", [
    (torch.ops.aten.reflection_pad1d, (2, 3, 4), [4, 0]),           # reflection pad >= size
    (torch.ops.aten.reflection_pad2d, (2, 3, 4), [1, 1, 3, 0]),
    (torch.ops.aten.reflection_pad3d, (2, 3, 4, 5), [1, 1, 1, 1, 1, 3]),
    (torch.ops.aten.reflection_pad1d, (2, 3, 4), [-3, -1]),         # empty output
    (torch.ops.aten.replication_pad1d, (2, 3, 4), [-3, -1]),
    (torch.ops.aten.reflection_pad1d, (2, 3, 4, 5), [1, 1]),        # wrong rank
    (torch.ops.aten.replication_pad3d, (2, 3, 4), [1, 1, 1, 1, 1, 1]),
    (torch.ops.aten.reflection_pad1d, (3, 0, 4), [1, 1]),           # empty non-batch axis
    (torch.ops.aten.replication_pad2d, (2, 3, 4), [1, 1, 1]),       # padding count
])
def test_pad_errors(op, shape, pad):
    compare(lambda x: op(x, pad), make(shape))


def test_pad_error_names_sizes():
    x = torch.zeros(2, 3, 4, device="porta")
    sizes = r"padding \(4, 0\) at dimension 2 of input \[2, ?3, ?4\]"
    with pytest.raises(RuntimeError, match=sizes):
        F.pad(x, (4, 0), mode="reflect")


def test_pad_backward_rejects_wrong_grad_shape():
    op = torch.ops.aten.reflection_pad1d_backward
    compare(lambda g, x: op(g, x, [1, 1]), make((2, 3, 5)), make((2, 3, 4)))


# ---- 3-D pooling ----

AVG3D = [
    ((2, 3, 7, 8, 9), dict(kernel_size=3, stride=2, padding=1)),
    ((2, 3, 8, 7, 6), dict(kernel_size=(3, 2, 2), stride=2, padding=1, ceil_mode=True)),
    ((2, 3, 8, 7, 6), dict(kernel_size=(3, 2, 2), stride=2, padding=1, ceil_mode=True,
                           count_include_pad=False)),
    ((3, 6, 6, 6), dict(kernel_size=2, divisor_override=3)),
    ((2, 3, 5, 6, 7), dict(kernel_size=(2, 3, 1), stride=(1, 2, 3))),
]


@pytest.mark.parametrize("shape,kwargs", AVG3D)
@pytest.mark.parametrize("dtype", DTYPES)
def test_avg_pool3d(shape, kwargs, dtype):
    fn = lambda x: F.avg_pool3d(x, **kwargs)  # noqa: E731
    compare(fn, make(shape, dtype))
    compare_grad(fn, make(shape, dtype))


MAX3D = [
    ((2, 3, 7, 8, 9), dict(kernel_size=3, stride=2, padding=1)),
    ((2, 3, 7, 8, 9), dict(kernel_size=(2, 3, 2), stride=(1, 2, 2), padding=(1, 1, 0),
                           dilation=(2, 1, 2), ceil_mode=True)),
    ((3, 6, 6, 6), dict(kernel_size=2)),
    ((1, 2, 5, 5, 5), dict(kernel_size=3, stride=1, padding=1, dilation=2)),
]


@pytest.mark.parametrize("shape,kwargs", MAX3D)
@pytest.mark.parametrize("dtype", DTYPES)
def test_max_pool3d(shape, kwargs, dtype):
    compare(lambda x: F.max_pool3d(x, return_indices=True, **kwargs), make(shape, dtype))
    compare_grad(lambda x: F.max_pool3d(x, **kwargs), make(shape, dtype))


ADAPTIVE3D = [((2, 3, 7, 9, 5), (3, 4, 2)), ((3, 7, 9, 5), 1), ((2, 3, 3, 4, 5), (5, 6, 7)),
              ((2, 3, 6, 6, 6), (None, 2, 3))]


@pytest.mark.parametrize("shape,size", ADAPTIVE3D)
@pytest.mark.parametrize("dtype", DTYPES)
def test_adaptive_avg_pool3d(shape, size, dtype):
    fn = lambda x: F.adaptive_avg_pool3d(x, size)  # noqa: E731
    compare(fn, make(shape, dtype))
    compare_grad(fn, make(shape, dtype))


@pytest.mark.parametrize("fn", [
    lambda x: F.avg_pool3d(x, 2, padding=1),
    lambda x: F.max_pool3d(x, 2, return_indices=True),
    lambda x: F.adaptive_avg_pool3d(x, (2, 3, 1)),
])
@pytest.mark.parametrize("layout", LAYOUTS[1:])
def test_pool3d_non_contiguous(fn, layout):
    compare(fn, make((2, 3, 5, 6, 4), torch.float32, layout))


def test_pool3d_other_dtypes():
    compare(lambda x: F.max_pool3d(x, 2, return_indices=True), make((2, 3, 4, 4, 4), torch.int32))
    compare(lambda x: F.avg_pool3d(x, 3, 2, 1), make((2, 3, 5, 5, 5), torch.int64))
    compare(lambda x: F.adaptive_avg_pool3d(x, 2), make((2, 3, 5, 5, 5), torch.float16),
            atol=1e-3, rtol=1e-3)


def test_pool3d_zero_batch():
    x = make((0, 2, 4, 4, 4))
    compare_grad(lambda t: F.avg_pool3d(t, 2), x)
    compare_grad(lambda t: F.max_pool3d(t, 2), x)
    compare_grad(lambda t: F.adaptive_avg_pool3d(t, 2), x)


@pytest.mark.parametrize("fn,shape", [
    (lambda x: F.avg_pool3d(x, 2), (2, 3, 3)),                        # wrong rank
    (lambda x: F.avg_pool3d(x, 2), (2, 3, 1, 3, 3)),                  # output too small
    (lambda x: F.avg_pool3d(x, 2, padding=2), (2, 3, 4, 4, 4)),       # pad > kernel / 2
    (lambda x: F.avg_pool3d(x, 2, divisor_override=0), (2, 3, 4, 4, 4)),
    (lambda x: F.max_pool3d(x, 2), (2, 3, 4, 1, 4)),
    (lambda x: F.max_pool3d(x, (2, 2)), (2, 3, 4, 4, 4)),             # two sizes for three axes
    (lambda x: F.adaptive_avg_pool3d(x, 2), (2, 0, 3, 3, 3)),        # empty channels
    (lambda x: F.adaptive_avg_pool3d(x, 2), (3, 3, 3)),
])
def test_pool3d_errors(fn, shape):
    compare(fn, make(shape))


def test_pool3d_error_names_sizes():
    with pytest.raises(RuntimeError, match=r"\[2, ?3, ?3\]"):
        F.avg_pool3d(torch.zeros(2, 3, 3, device="porta"), 2)
    with pytest.raises(RuntimeError, match=r"3x1x3x3.*too small"):
        F.max_pool3d(torch.zeros(2, 3, 1, 3, 3, device="porta"), 2)


# ---- 1-D pooling, composed by PyTorch from the 2-D ops ----

@pytest.mark.parametrize("shape,kwargs", [
    ((2, 3, 10), dict(kernel_size=3, stride=2, padding=1)),
    ((3, 10), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False)),
    ((2, 3, 9), dict(kernel_size=2)),
])
@pytest.mark.parametrize("dtype", DTYPES)
def test_avg_pool1d(shape, kwargs, dtype):
    fn = lambda x: F.avg_pool1d(x, **kwargs)  # noqa: E731
    compare(fn, make(shape, dtype))
    compare_grad(fn, make(shape, dtype))


@pytest.mark.parametrize("shape,size", [((2, 3, 10), 4), ((3, 7), 7), ((2, 3, 4), 6)])
@pytest.mark.parametrize("dtype", DTYPES)
def test_adaptive_avg_pool1d(shape, size, dtype):
    fn = lambda x: F.adaptive_avg_pool1d(x, size)  # noqa: E731
    compare(fn, make(shape, dtype))
    compare_grad(fn, make(shape, dtype))


# ---- interpolation ----

INTERPOLATE = [
    dict(size=(7, 9)),
    dict(scale_factor=1.7),
    dict(scale_factor=(2.3, 0.6)),
    dict(size=(3, 2)),
    dict(scale_factor=1.7, recompute_scale_factor=True),
]


@pytest.mark.parametrize("kwargs", INTERPOLATE)
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("dtype", DTYPES)
def test_interpolate_bilinear(kwargs, align_corners, dtype):
    fn = lambda x: F.interpolate(x, mode="bilinear", align_corners=align_corners,  # noqa: E731
                                 **kwargs)
    compare(fn, make((2, 3, 5, 6), dtype))
    compare_grad(fn, make((2, 3, 5, 6), dtype))


@pytest.mark.parametrize("kwargs", INTERPOLATE)
@pytest.mark.parametrize("dtype", DTYPES)
def test_interpolate_nearest(kwargs, dtype):
    fn = lambda x: F.interpolate(x, mode="nearest", **kwargs)  # noqa: E731
    compare(fn, make((2, 3, 5, 6), dtype))
    compare_grad(fn, make((2, 3, 5, 6), dtype))


@pytest.mark.parametrize("mode", ["nearest", "bilinear"])
@pytest.mark.parametrize("layout", LAYOUTS[1:])
def test_interpolate_non_contiguous(mode, layout):
    compare(lambda x: F.interpolate(x, scale_factor=2, mode=mode),
            make((2, 3, 4, 5), layout=layout))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_interpolate_bilinear_half(dtype):
    compare(lambda x: F.interpolate(x, size=(7, 9), mode="bilinear"), make((2, 3, 4, 5), dtype))


def test_interpolate_bilinear_zero_batch_and_errors():
    compare_grad(lambda x: F.interpolate(x, scale_factor=2, mode="bilinear"), make((0, 3, 4, 5)))
    op = torch.ops.aten.upsample_bilinear2d
    compare(lambda x: op(x, [0, 4], False), make((1, 2, 3, 3)))
    compare(lambda x: op(x, [4, 4], False), make((2, 3, 3)))
    compare(lambda x: op(x, [4, 4], False), make((1, 2, 3, 3), torch.bool))
