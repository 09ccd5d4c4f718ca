"""Ops the OpInfo conformance test used to send to the CPU fallback, now
native in libporta, mostly reductions, index and pooling ops: amax/amin
out=, aminmax, nansum, count_nonzero, vdot, equal, addbmm, cummax/cummin
(src/aten/reduce/, linalg/), logaddexp, xlogy, angle, frexp, linalg_cross
(elementwise/, linalg/), index_fill, masked_select, take/put, index_reduce
(index/), searchsorted (sort/), adaptive max pooling, max_unpool,
upsample_nearest 1d/3d (nn/): values, dtypes and layouts against PyTorch
CPU, zero-size inputs, errors of the same type, gradients through
autograd, and no fallback on the way."""
import warnings

import pytest
import torch

import torch_porta
from aten_compare import (FLOAT_DTYPES, LAYOUTS, assert_same_outcome_and_no_leak, compare,
                          compare_grad, make, to_porta)

NUMBER_DTYPES = [torch.uint8, torch.int8, torch.int32, torch.int64, torch.float16,
                 torch.bfloat16, torch.float32, torch.float64]


def _out_like(result_fn, *inputs):
    """An empty out= tensor of the CPU result's dtype, on porta."""
    return torch.empty(0, dtype=result_fn(*inputs).dtype)


# ---- reductions ----

@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", [torch.int32, torch.float32, torch.float64])
def test_amax_amin_out(layout, dtype, no_fallbacks):
    x = make((3, 4, 5), dtype, layout)
    for fn in (torch.amax, torch.amin):
        for dim, keepdim in (((1,), False), ((0, 2), True), ((), False)):
            expected = fn(x, dim, keepdim)
            out = torch.full(expected.shape, 7, dtype=dtype, device="porta")
            got = fn(x.to("porta"), dim, keepdim, out=out)
            assert got.data_ptr() == out.data_ptr()
            torch.testing.assert_close(out.cpu(), expected)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the out= of the wrong shape is resized
            compare(lambda t, o: fn(t, 1, out=o), x, torch.empty(1, dtype=dtype))
    compare(lambda t, o: torch.amax(t, 0, out=o), make((0, 3)), torch.empty(0))
    compare(lambda t, o: torch.amax(t, 0, out=o), x, torch.empty(0, dtype=torch.float16))


@pytest.mark.parametrize("dtype", [torch.bool, torch.uint8, torch.int64, torch.float16,
                                   torch.float32, torch.float64])
def test_aminmax(dtype, no_fallbacks):
    x = make((4, 5), dtype)
    compare(torch.aminmax, x)
    for dim in (0, 1, -1):
        for keepdim in (False, True):
            compare(lambda t: torch.aminmax(t, dim=dim, keepdim=keepdim), x)
    compare(lambda t: torch.aminmax(t, keepdim=True), x)
    compare(lambda t: torch.aminmax(t, dim=0), make((3, 0), dtype))
    compare(lambda t: torch.aminmax(t, dim=1), make((3, 0), dtype))  # IndexError
    compare(torch.aminmax, make((0, 3), dtype))  # RuntimeError: no identity
    compare(lambda t: torch.aminmax(t, dim=2), x)
    compare(torch.aminmax, make((), dtype))
    compare(torch.aminmax, make((4, 5), dtype, "transposed"))


def test_aminmax_out(no_fallbacks):
    x = make((4, 5))
    low, high = torch.empty(4, device="porta"), torch.empty(4, device="porta")
    got = torch.aminmax(x.to("porta"), dim=1, out=(low, high))
    assert got.min.data_ptr() == low.data_ptr() and got.max.data_ptr() == high.data_ptr()
    expected = torch.aminmax(x, dim=1)
    torch.testing.assert_close(low.cpu(), expected.min)
    torch.testing.assert_close(high.cpu(), expected.max)
    compare(lambda t, a, b: torch.aminmax(t, out=(a, b)), x, torch.empty(0), torch.empty(0))


@pytest.mark.parametrize("dtype", [torch.bool, torch.int32, torch.int64] + FLOAT_DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_nansum(dtype, layout, no_fallbacks):
    x = make((4, 6), dtype, layout)
    if dtype.is_floating_point:
        x = x.clone()
        x[1, 2] = x[3, 0] = float("nan")
    tolerance = {"atol": 1e-2, "rtol": 1e-2} if dtype in (torch.float16, torch.bfloat16) else {}
    compare(torch.nansum, x, **tolerance)
    compare(lambda t: torch.nansum(t, 1), x, **tolerance)
    compare(lambda t: torch.nansum(t, (0, 1), keepdim=True), x, **tolerance)
    compare(lambda t: torch.nansum(t, 0, dtype=torch.float64), x)
    compare(lambda t: torch.nansum(t, 0, out=torch.empty(0, dtype=torch.nansum(x).dtype,
                                                          device=t.device)), x, **tolerance)
    compare(lambda t: torch.nansum(t, 0), make((0, 3), dtype))
    compare(lambda t: torch.nansum(t, (0, 0)), x)


def test_nansum_grad(no_fallbacks):
    compare_grad(lambda t: torch.nansum(t, 1), make((3, 4), torch.float64))
    compare_grad(torch.nanmean, make((3, 4)))


@pytest.mark.parametrize("dtype", [torch.bool, torch.uint8, torch.int64, torch.float32,
                                   torch.float64])
def test_count_nonzero(dtype, no_fallbacks):
    x = make((3, 4, 5), dtype).clone()
    x[0] = 0
    for dims in ((), (0,), (1, 2), (-1, 0)):
        compare(lambda t: torch.count_nonzero(t, dims), x)
    compare(lambda t: torch.count_nonzero(t, 1), make((3, 4, 5), dtype, "transposed"))
    compare(torch.count_nonzero, make((0, 2), dtype))
    compare(lambda t: torch.count_nonzero(t, (0, 0)), x)
    compare(lambda t: torch.count_nonzero(t, 3), x)


@pytest.mark.parametrize("dtype", [torch.int64, torch.float32, torch.float64])
def test_vdot_equal(dtype, no_fallbacks):
    a, b = make((7,), dtype), make((7,), dtype, seed=1)
    compare(torch.vdot, a, b)
    compare(torch.vdot, make((7,), dtype, "stepped"), b)
    compare(torch.vdot, make((0,), dtype), make((0,), dtype))
    compare(torch.vdot, a, make((6,), dtype))
    compare(torch.vdot, make((2, 3), dtype), make((2, 3), dtype))
    compare(torch.vdot, a.float(), b.double())
    for x, y in ((a, a.clone()), (a, b), (a, a[:6]), (make((2, 3), dtype), make((3, 2), dtype)),
                 (make((0, 3), dtype), make((0, 3), dtype)), (a, a.double())):
        assert torch.equal(x.to("porta"), y.to("porta")) == torch.equal(x, y)
    nan = torch.tensor([1.0, float("nan")])
    assert not torch.equal(nan.to("porta"), nan.to("porta"))
    transposed = make((3, 4), dtype, "transposed")
    assert torch.equal(transposed.to("porta"), transposed.contiguous().to("porta"))


def test_vdot_grad(no_fallbacks):
    compare_grad(torch.vdot, make((5,), torch.float64), make((5,), torch.float64, seed=1))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_addbmm(dtype, layout, no_fallbacks):
    self, b1, b2 = make((3, 5), dtype), make((4, 3, 6), dtype, layout), make((4, 6, 5), dtype, layout, 1)
    tolerance = {"atol": 1e-4, "rtol": 1e-4}
    compare(torch.addbmm, self, b1, b2, **tolerance)
    compare(lambda s, x, y: torch.addbmm(s, x, y, beta=0.5, alpha=-2), self, b1, b2, **tolerance)
    compare(lambda s, x, y: torch.addbmm(s, x, y, beta=0), torch.full((3, 5), float("nan"),
                                                                      dtype=dtype), b1, b2, **tolerance)
    compare(torch.addbmm, make((5,), dtype), b1, b2, **tolerance)
    compare(lambda s, x, y: s.clone().addbmm_(x, y, alpha=3), self, b1, b2, **tolerance)
    compare(lambda s, x, y: torch.addbmm(s, x, y, out=torch.empty(3, 5, dtype=dtype,
                                                                  device=s.device)),
            self, b1, b2, **tolerance)
    compare(torch.addbmm, self, make((0, 3, 6), dtype), make((0, 6, 5), dtype))
    compare(torch.addbmm, self, make((4, 3, 6), dtype), make((3, 6, 5), dtype))
    compare(torch.addbmm, self, make((4, 3, 6), dtype), make((4, 7, 5), dtype))
    compare(torch.addbmm, self, make((3, 6), dtype), make((4, 6, 5), dtype))
    compare(torch.addbmm, make((3, 4), dtype), b1, b2)


def test_addbmm_grad(no_fallbacks):
    d = torch.float64
    compare_grad(lambda s, x, y: torch.addbmm(s, x, y, beta=0.5, alpha=2),
                 make((3, 5), d), make((4, 3, 6), d), make((4, 6, 5), d, seed=1))


# ---- elementwise ----

@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_logaddexp(layout, dtype, no_fallbacks):
    a, b = make((4, 5), dtype, layout), make((4, 5), dtype, layout, seed=1)
    special = torch.tensor([float("inf"), float("-inf"), float("nan"), 3.0, float("-inf"), 0.0],
                           dtype=dtype)
    other = torch.tensor([float("inf"), float("-inf"), 1.0, 3.0, 2.0, -200.0], dtype=dtype)
    tolerance = {"atol": 1e-2, "rtol": 1e-2} if dtype in (torch.float16, torch.bfloat16) else {}
    for fn in (torch.logaddexp, torch.logaddexp2):
        compare(fn, a, b, **tolerance)
        compare(fn, special, other, **tolerance)
        compare(fn, a, make((5,), dtype), **tolerance)
        compare(lambda x, y: fn(x, y, out=torch.empty(4, 5, dtype=dtype, device=x.device)), a, b,
                **tolerance)
        compare(fn, make((0, 5), dtype), make((5,), dtype))
        compare(fn, a, make((3,), dtype))
    compare(torch.logaddexp, make((3,), torch.int64), make((3,), torch.int64))
    compare(torch.logaddexp, make((3,), torch.int64), make((3,), torch.float32))


def test_logaddexp_grad(no_fallbacks):
    d = torch.float64
    compare_grad(torch.logaddexp, make((3, 4), d), make((3, 4), d, seed=1))
    compare_grad(torch.logaddexp2, make((3, 4), d), make((4,), d, seed=1))


@pytest.mark.parametrize("dtype", [torch.bool, torch.int64] + FLOAT_DTYPES)
def test_xlogy(dtype, no_fallbacks):
    x = make((4, 5), dtype).clone()
    y = make((4, 5), dtype, seed=1)
    y = y if dtype == torch.bool else y.abs()
    x[0, :2] = 0
    if dtype.is_floating_point:
        y = y.clone()
        y[0, 1] = y[1, 1] = float("nan")
        y[2, 0] = 0
    tolerance = {"atol": 1e-2, "rtol": 1e-2} if dtype in (torch.float16, torch.bfloat16) else {}
    compare(torch.xlogy, x, y, **tolerance)
    compare(torch.xlogy, make((4, 5), dtype, "transposed"), y, **tolerance)
    compare(lambda a: torch.xlogy(2, a), y, **tolerance)
    compare(lambda a: torch.xlogy(a, 3.5), x, **tolerance)
    compare(lambda a, b: torch.xlogy(a, b, out=torch.empty(4, 5, dtype=torch.xlogy(x, y).dtype,
                                                           device=a.device)), x, y, **tolerance)
    compare(lambda a, b: a.clone().xlogy_(b), x, y, **tolerance)
    compare(lambda a: a.clone().xlogy_(2), x, **tolerance)
    compare(torch.xlogy, make((0, 5), dtype), y)
    compare(torch.xlogy, x, make((3,), dtype))


def test_xlogy_grad_kl_div(no_fallbacks):
    d = torch.float64
    compare_grad(torch.xlogy, make((3, 4), d), make((3, 4), d, seed=1).abs() + 0.1)
    target = make((3, 4), d, seed=2).softmax(-1)
    compare_grad(lambda p: torch.nn.functional.kl_div(p.log_softmax(-1), target.to(p.device),
                                                      reduction="batchmean"), make((3, 4), d))


# ---- index ops ----

@pytest.mark.parametrize("dtype", [torch.bool, torch.int32, torch.float32, torch.float64])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_index_fill(dtype, layout, no_fallbacks):
    x = make((4, 6), dtype, layout)
    index = torch.tensor([2, 0, -1, 2])
    for dim in (0, 1, -1):
        compare(lambda t, i: t.index_fill(dim, i, 1), x, index)
        compare(lambda t, i: t.clone().index_fill_(dim, i, 0), x, index)
        compare(lambda t, i, v: t.index_fill(dim, i, v), x, index, torch.tensor(1, dtype=dtype))
    compare(lambda t, i: t.index_fill(0, i, 1), x, torch.tensor(1))
    compare(lambda t, i: t.index_fill(0, i, 1), x, torch.tensor([], dtype=torch.int64))
    compare(lambda t, i: t.index_fill(0, i, 1), make((), dtype), torch.tensor([0]))
    compare(lambda t, i: t.index_fill(1, i, 1), make((0, 3), dtype), torch.tensor([1]))
    compare(lambda t, i: t.index_fill(0, i, 1), x, torch.tensor([4]))  # IndexError
    compare(lambda t, i: t.index_fill(0, i, 1), x, torch.tensor([1], dtype=torch.int32))
    compare(lambda t, i: t.index_fill(0, i, 1), x, torch.tensor([[1]]))
    compare(lambda t, i: t.index_fill(2, i, 1), x, torch.tensor([1]))
    compare(lambda t, i, v: t.index_fill(0, i, v), x, torch.tensor([1]), torch.ones(2))


def test_index_fill_grad(no_fallbacks):
    compare_grad(lambda t: t.index_fill(1, torch.tensor([0, 2], device=t.device), -1.0),
                 make((3, 4), torch.float64))


@pytest.mark.parametrize("dtype", [torch.bool, torch.int64, torch.float32, torch.float64])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_masked_select(dtype, layout, no_fallbacks):
    x = make((4, 6), dtype, layout)
    mask = make((4, 6), torch.bool, layout, seed=1)
    compare(torch.masked_select, x, mask)
    compare(torch.masked_select, x, mask[0])
    compare(torch.masked_select, x[0], mask)
    compare(torch.masked_select, x, torch.zeros(4, 6, dtype=torch.bool))
    compare(torch.masked_select, make((0, 6), dtype), mask[0])
    compare(lambda t, m: torch.masked_select(t, m, out=torch.empty(0, dtype=dtype, device=t.device)),
            x, mask)
    compare(torch.masked_select, x, mask.to(torch.uint8))
    compare(torch.masked_select, x, make((4, 5), torch.bool))


def test_masked_select_grad(no_fallbacks):
    mask = make((3, 4), torch.bool, seed=1)
    compare_grad(lambda t: torch.masked_select(t, mask.to(t.device)), make((3, 4), torch.float64))


@pytest.mark.parametrize("dtype", [torch.bool, torch.int32, torch.float32, torch.float64])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_take_put(dtype, layout, no_fallbacks):
    x = make((3, 4), dtype, layout)
    index = torch.tensor([[0, 11], [-1, 5], [-12, 3]])
    compare(torch.take, x, index)
    compare(torch.take, x, torch.tensor([], dtype=torch.int64))
    compare(torch.take, make((), dtype), torch.tensor(0))
    compare(lambda t, i: torch.take(t, i, out=torch.empty(0, dtype=dtype, device=t.device)), x, index)
    compare(torch.take, x, torch.tensor([12]))
    compare(torch.take, x, torch.tensor([-13]))
    compare(torch.take, x, torch.tensor([1], dtype=torch.int32))
    compare(torch.take, make((0,), dtype), torch.tensor([0]))
    compare(torch.take, make((0,), dtype), torch.tensor([], dtype=torch.int64))
    compare(lambda t, i, s: t.put(i, s), make((0,), dtype), torch.tensor([], dtype=torch.int64),
            make((0,), dtype))
    source = make((5,), dtype, seed=2)
    unique = torch.tensor([0, 11, -2, 5, 3])
    compare(lambda t, i, s: t.put(i, s), x, unique, source)
    compare(lambda t, i, s: t.clone().put_(i, s), x, unique, source)
    if dtype != torch.bool:
        repeated = torch.tensor([1, 1, -11, 4, 4])
        compare(lambda t, i, s: t.put(i, s, accumulate=True), x, repeated, source)
        compare(lambda t, i, s: t.clone().put_(i, s, accumulate=True), x, repeated, source)
    compare(lambda t, i, s: t.put(i, s), x, unique[:4], source)
    compare(lambda t, i, s: t.put(i, s), x, torch.tensor([0, 12, 1, 2, 3]), source)
    compare(lambda t, i, s: t.put(i, s), x, unique, source.double() if dtype != torch.float64
            else source.float())
    compare(lambda t, i, s: t.put(i, s), x, unique.int(), source)


def test_take_put_grad(no_fallbacks):
    d = torch.float64
    index = torch.tensor([[0, 5], [-1, 5]])
    compare_grad(lambda t: torch.take(t, index.to(t.device)), make((3, 4), d))
    compare_grad(lambda t, s: t.put(index.to(t.device), s, accumulate=True),
                 make((3, 4), d), make((2, 2), d))


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("dtype", [torch.int32, torch.float32, torch.float64])
def test_index_reduce(reduce, include_self, dtype, no_fallbacks):
    warnings.filterwarnings("ignore", "index_reduce")
    x = make((5, 4), dtype)
    index = torch.tensor([1, 3, 1, 0, 1, 4])
    source = make((6, 4), dtype, seed=1)
    fn = lambda t, i, s: t.index_reduce(0, i, s, reduce, include_self=include_self)  # noqa: E731
    compare(fn, x, index, source)
    compare(fn, make((5, 4), dtype, "transposed"), index, make((6, 4), dtype, "stepped"))
    compare(lambda t, i, s: t.index_reduce(1, i, s, reduce, include_self=include_self),
            x, index[:3] + 1, make((5, 3), dtype))
    compare(lambda t, i, s: t.clone().index_reduce_(0, i, s, reduce, include_self=include_self),
            x, index, source)
    compare(lambda t, i, s: torch.index_reduce(t, 0, i, s, reduce, include_self=include_self,
                                               out=torch.empty(5, 4, dtype=dtype, device=t.device)),
            x, index, source)
    compare(fn, x, index.int(), source)
    compare(fn, x, torch.tensor([], dtype=torch.int64), make((0, 4), dtype))


def test_index_reduce_errors(no_fallbacks):
    warnings.filterwarnings("ignore", "index_reduce")
    x, index, source = make((5, 4)), torch.tensor([1, 3]), make((2, 4))
    compare(lambda t, i, s: t.index_reduce(0, i, s, "sum"), x, index, source)
    compare(lambda t, i, s: t.index_reduce(0, i, s, "prod"), x, index.float(), source)
    compare(lambda t, i, s: t.index_reduce(0, i, s, "prod"), x, index, source.double())
    compare(lambda t, i, s: t.index_reduce(0, i, s, "prod"), x, index, make((2, 5)))
    compare(lambda t, i, s: t.index_reduce(0, i, s, "prod"), x, torch.tensor([1, 5]), source)
    compare(lambda t, i, s: t.index_reduce(0, i, s, "prod"), x, torch.tensor([1, -1]), source)


def test_index_reduce_grad(no_fallbacks):
    warnings.filterwarnings("ignore", "index_reduce")
    d = torch.float64
    index = torch.tensor([1, 3, 0])
    for reduce in ("prod", "mean", "amax"):
        compare_grad(lambda t, s: t.index_reduce(0, index.to(t.device), s, reduce),
                     make((4, 3), d), make((3, 3), d, seed=1))


# ---- max pooling: adaptive, unpooling ----

@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_adaptive_max_pool(dtype, layout, no_fallbacks):
    F = torch.nn.functional
    x = make((2, 3, 7, 9), dtype, layout)
    for size in ((3, 4), (7, 9), (1, 1), (5, 2), (9, 11)):
        compare(lambda t: F.adaptive_max_pool2d(t, size, return_indices=True), x)
    compare(lambda t: F.adaptive_max_pool2d(t, (2, 3), return_indices=True), x[0])
    compare(lambda t: F.adaptive_max_pool1d(t, 4, return_indices=True), make((2, 3, 10), dtype, layout))
    compare(lambda t: F.adaptive_max_pool3d(t, (2, 3, 2), return_indices=True),
            make((2, 2, 5, 4, 6), dtype, layout))
    compare(lambda t: F.adaptive_max_pool2d(t, (2, 2), return_indices=True), make((0, 3, 4, 4), dtype))
    compare(lambda t: F.adaptive_max_pool2d(t, (0, 2), return_indices=True), make((1, 3, 4, 4), dtype))
    compare(lambda t: torch.ops.aten.adaptive_max_pool2d(t, [2, 2]), make((1, 0, 4), dtype))
    compare(lambda t: torch.ops.aten.adaptive_max_pool2d(t, [2, 2]), make((4, 4), dtype))
    compare(lambda t: torch.ops.aten.adaptive_max_pool2d(t, [2, 2, 2]), make((1, 4, 4), dtype))
    compare(lambda t: torch.ops.aten.adaptive_max_pool2d(t, [2, 2]), make((1, 4, 4), torch.int64))
    out, indices = torch.empty(0, dtype=dtype, device="porta"), torch.empty(0, dtype=torch.int64,
                                                                            device="porta")
    torch.ops.aten.adaptive_max_pool2d.out(x.to("porta"), [3, 4], out=out, indices=indices)
    expected = torch.ops.aten.adaptive_max_pool2d(x, [3, 4])
    torch.testing.assert_close(out.cpu(), expected[0])
    torch.testing.assert_close(indices.cpu(), expected[1])


def test_adaptive_max_pool_grad(no_fallbacks):
    F = torch.nn.functional
    d = torch.float64
    compare_grad(lambda t: F.adaptive_max_pool2d(t, (3, 4)), make((2, 3, 7, 9), d))
    compare_grad(lambda t: F.adaptive_max_pool3d(t, (2, 3, 2)), make((1, 2, 5, 4, 6), d))
    compare_grad(lambda t: F.adaptive_max_pool1d(t, 3), make((2, 7), d))


@pytest.mark.parametrize("dtype", [torch.int64, torch.float32, torch.float64])
def test_max_unpool(dtype, no_fallbacks):
    F = torch.nn.functional
    x = make((2, 3, 6, 8), torch.float64)
    pooled, indices = F.max_pool2d(x, 2, return_indices=True)
    pooled = pooled.to(dtype)
    compare(lambda t, i: F.max_unpool2d(t, i, 2), pooled, indices)
    compare(lambda t, i: F.max_unpool2d(t, i, 2, output_size=(7, 9)), pooled, indices)
    compare(lambda t, i: F.max_unpool2d(t, i, 2), pooled[0], indices[0])
    compare(lambda t, i: F.max_unpool2d(t, i, 2), pooled.mT, indices.mT)
    pooled1, indices1 = F.max_pool1d(x[0], 2, return_indices=True)
    compare(lambda t, i: F.max_unpool1d(t, i, 2), pooled1.to(dtype), indices1)
    x3 = make((1, 2, 4, 4, 6), torch.float64)
    pooled3, indices3 = F.max_pool3d(x3, 2, return_indices=True)
    compare(lambda t, i: F.max_unpool3d(t, i, 2), pooled3.to(dtype), indices3)
    compare(lambda t, i: torch.ops.aten.max_unpool2d(t, i, [4, 4]), make((1, 2, 2), dtype),
            torch.tensor([[[0, 16], [1, 2]]]))
    compare(lambda t, i: torch.ops.aten.max_unpool2d(t, i, [4]), make((1, 2, 2), dtype),
            torch.tensor([[[0, 1], [1, 2]]]))
    compare(lambda t, i: torch.ops.aten.max_unpool2d(t, i, [4, 4]), make((1, 2, 2), dtype),
            torch.tensor([[[0, 1, 1, 2]]]))
    compare(lambda t, i: torch.ops.aten.max_unpool2d(t, i, [4, 4]), make((2, 2), dtype),
            torch.tensor([[0, 1], [1, 2]]))
    compare(lambda t, i: torch.ops.aten.max_unpool3d(t, i, [4, 4, 4], [0, 1, 1], [0, 0, 0]),
            make((1, 1, 2, 2), dtype), torch.tensor([[[[0, 1], [1, 2]]]]))


def test_max_unpool_grad(no_fallbacks):
    F = torch.nn.functional
    x = make((2, 3, 6, 8), torch.float64)
    pooled, indices = F.max_pool2d(x, 2, return_indices=True)
    compare_grad(lambda t: F.max_unpool2d(t, indices.to(t.device), 2), pooled)
    x3 = make((1, 2, 4, 4, 6), torch.float64)
    pooled3, indices3 = F.max_pool3d(x3, 2, return_indices=True)
    compare_grad(lambda t: F.max_unpool3d(t, indices3.to(t.device), 2), pooled3)


# ---- nearest upsampling over 1 and 3 axes ----

@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.uint8])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_upsample_nearest_1d_3d(dtype, layout, no_fallbacks):
    F = torch.nn.functional
    x1, x3 = make((2, 3, 5), dtype, layout), make((2, 2, 3, 4, 5), dtype, layout)
    for size in (5, 9, 10, 3):
        compare(lambda t: F.interpolate(t, size=size, mode="nearest"), x1)
    for scale in (2.0, 1.5, 0.7):
        compare(lambda t: F.interpolate(t, scale_factor=scale, mode="nearest"), x1)
        compare(lambda t: F.interpolate(t, scale_factor=scale, mode="nearest"), x3)
    for size in ((3, 4, 5), (6, 8, 10), (5, 3, 7), (1, 1, 1)):
        compare(lambda t: F.interpolate(t, size=size, mode="nearest"), x3)
    compare(lambda t: F.interpolate(t, size=4, mode="nearest"), make((0, 3, 5), dtype))
    compare(lambda t: F.interpolate(t, size=(2, 3, 4), mode="nearest"), make((0, 2, 3, 4, 5), dtype))
    compare(lambda t: torch.ops.aten.upsample_nearest1d(t, [7]), make((2, 5), dtype))
    compare(lambda t: torch.ops.aten.upsample_nearest1d(t, [7]), make((1, 2, 0), dtype))
    compare(lambda t: torch.ops.aten.upsample_nearest3d.out(
        t, [4, 6, 8], out=torch.empty(2, 2, 4, 6, 8, dtype=dtype, device=t.device)), x3)
    compare(lambda t: torch.ops.aten.upsample_nearest1d.out(
        t, [8], out=torch.empty(0, dtype=dtype, device=t.device)), x1)


def test_upsample_nearest_1d_3d_grad(no_fallbacks):
    F = torch.nn.functional
    d = torch.float64
    compare_grad(lambda t: F.interpolate(t, size=8, mode="nearest"), make((2, 3, 5), d))
    compare_grad(lambda t: F.interpolate(t, scale_factor=0.6, mode="nearest"), make((2, 3, 5), d))
    compare_grad(lambda t: F.interpolate(t, size=(5, 3, 7), mode="nearest"), make((2, 2, 3, 4, 5), d))
    compare_grad(lambda t: F.interpolate(t, scale_factor=1.5, mode="nearest"),
                 make((1, 2, 3, 4, 5), d))


# ---- angle, linalg_cross, frexp ----

@pytest.mark.parametrize("dtype", [torch.bool, torch.uint8, torch.int64] + FLOAT_DTYPES)
def test_angle(dtype, no_fallbacks):
    x = make((4, 5), dtype, "transposed")
    compare(torch.angle, x)
    if dtype.is_floating_point:
        compare(torch.angle, torch.tensor([-1.0, 0.0, -0.0, float("nan"), float("-inf"), 2.0],
                                          dtype=dtype))
    compare(lambda t: torch.angle(t, out=torch.empty(0, dtype=torch.angle(x).dtype, device=t.device)),
            x)
    compare(torch.angle, make((0, 3), dtype))


def test_angle_grad(no_fallbacks):
    compare_grad(torch.angle, make((3, 4), torch.float64))


@pytest.mark.parametrize("dtype", [torch.int32, torch.float32, torch.float64])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_linalg_cross(dtype, layout, no_fallbacks):
    a, b = make((4, 3), dtype, layout), make((4, 3), dtype, layout, seed=1)
    compare(torch.linalg.cross, a, b)
    compare(lambda x, y: torch.linalg.cross(x, y, dim=0), make((3, 5), dtype, layout), make((3, 5), dtype))
    compare(torch.linalg.cross, make((1, 3), dtype), make((5, 3), dtype))
    compare(lambda x, y: torch.cross(x, y, dim=1), a, b)
    compare(lambda x, y: torch.linalg.cross(x, y, out=torch.empty(4, 3, dtype=dtype, device=x.device)),
            a, b)
    compare(torch.linalg.cross, make((0, 3), dtype), make((0, 3), dtype))
    compare(torch.linalg.cross, make((2, 2), dtype), make((2, 2), dtype))
    compare(torch.linalg.cross, make((2, 3), dtype), make((3,), dtype))
    compare(lambda x, y: torch.linalg.cross(x, y, dim=2), a, b)
    compare(torch.linalg.cross, a, b.double() if dtype != torch.float64 else b.float())
    compare(torch.linalg.cross, make((3,), torch.bool), make((3,), torch.bool))


def test_linalg_cross_grad(no_fallbacks):
    d = torch.float64
    compare_grad(torch.linalg.cross, make((4, 3), d), make((4, 3), d, seed=1))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_frexp(dtype, layout, no_fallbacks):
    x = make((4, 6), dtype, layout)
    compare(torch.frexp, x)
    tiny = torch.finfo(dtype).tiny
    special = torch.tensor([0.0, -0.0, 1.0, 0.5, 3.0, -7.25, float("inf"), float("-inf"),
                            float("nan"), tiny, tiny / 4, torch.finfo(dtype).max, 1 - 2 ** -8,
                            2.0 ** 10], dtype=dtype)
    compare(torch.frexp, special)
    compare(torch.frexp, make((0, 2), dtype))
    compare(lambda t: torch.frexp(t, out=(torch.empty(0, dtype=dtype, device=t.device),
                                          torch.empty(0, dtype=torch.int32, device=t.device))), x)
    compare(torch.frexp, make((3,), torch.int64))
    compare(lambda t: torch.frexp(t, out=(torch.empty(0, dtype=dtype, device=t.device),
                                          torch.empty(0, dtype=torch.int64, device=t.device))), x)


def test_frexp_float64_extremes(no_fallbacks):
    compare(torch.frexp, torch.tensor([1e-310, 2.0 ** -1074, 2.0 ** 1023, -1e300],
                                      dtype=torch.float64))


# ---- searchsorted, bucketize ----

@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.float32, torch.float64])
@pytest.mark.parametrize("right", [False, True])
def test_searchsorted(dtype, right, no_fallbacks):
    boundaries = torch.tensor([-3, -1, 0, 0, 2, 5, 5, 9]).to(dtype)
    values = make((4, 6), dtype)
    compare(lambda b, v: torch.searchsorted(b, v, right=right), boundaries, values)
    compare(lambda b, v: torch.searchsorted(b, v, side="right" if right else "left"),
            boundaries, values)
    compare(lambda b, v: torch.searchsorted(b, v, right=right, out_int32=True), boundaries, values)
    compare(lambda b, v: torch.searchsorted(b, v, right=right), boundaries, boundaries)
    compare(lambda b, v: torch.searchsorted(b, v, right=right), boundaries,
            make((4, 6), dtype, "transposed"))
    batched = make((3, 5), dtype).sort(-1).values
    compare(lambda b, v: torch.searchsorted(b, v, right=right), batched, make((3, 4), dtype, seed=1))
    compare(lambda b, v: torch.searchsorted(b, v, right=right), batched.mT.contiguous().mT,
            make((3, 7), dtype, "stepped"))
    compare(lambda b: torch.searchsorted(b, 2, right=right), boundaries)
    compare(lambda b, v: torch.searchsorted(b, v, right=right), boundaries[:0], values)
    compare(lambda b, v: torch.searchsorted(b, v, right=right), boundaries, values[:0])
    compare(lambda b, v, o: torch.searchsorted(b, v, right=right, sorter=o), boundaries[:0], values,
            torch.tensor([], dtype=torch.int64))
    unsorted = torch.tensor([5, -1, 9, 0, 2]).to(dtype)
    compare(lambda b, v, s: torch.searchsorted(b, v, right=right, sorter=s), unsorted, values,
            unsorted.argsort())
    compare(lambda b, v: torch.bucketize(v, b, right=right), boundaries, values)
    compare(lambda b, v: torch.bucketize(v, b, right=right, out_int32=True), boundaries, values)
    compare(lambda b: torch.bucketize(3, b, right=right), boundaries)
    compare(lambda b, v: torch.searchsorted(b, v, right=right, out=torch.empty(0, dtype=torch.int64,
                                                                                device=b.device)),
            boundaries, values)
    compare(lambda b, v: torch.bucketize(v, b, right=right, out=torch.empty(4, 6, dtype=torch.int64,
                                                                             device=b.device)),
            boundaries, values)


def test_searchsorted_nan_promotion_errors(no_fallbacks):
    b = torch.tensor([1.0, 3, 5, 7])
    compare(torch.searchsorted, b, torch.tensor([float("nan"), 1.0, float("inf"), float("-inf")]))
    compare(torch.searchsorted, b, torch.tensor([3, 4]))
    compare(torch.searchsorted, b.long(), torch.tensor([3.5, 4]))
    compare(lambda s: torch.searchsorted(s, 3), b.reshape(2, 2))
    compare(torch.searchsorted, b.reshape(2, 2), torch.ones(3, 1))
    compare(torch.searchsorted, b.reshape(2, 2), torch.ones(2))
    compare(lambda s, v: torch.searchsorted(s, v, side="left", right=True), b, torch.ones(2))
    compare(lambda s, v: torch.searchsorted(s, v, side="middle"), b, torch.ones(2))
    compare(lambda s, v, o: torch.searchsorted(s, v, sorter=o), b, torch.ones(2), torch.tensor([0, 1, 2]))
    compare(lambda s, v, o: torch.searchsorted(s, v, sorter=o), b, torch.ones(2),
            torch.tensor([0, 1, 2, 3]).int())
    compare(lambda s, v, o: torch.searchsorted(s, v, sorter=o), b, torch.ones(2),
            torch.tensor([0, 1, 2, 4]))
    compare(torch.searchsorted, b.bool(), torch.ones(2).bool())
    compare(lambda v, s: torch.bucketize(v, s), torch.tensor([3, 4]), b.reshape(2, 2))


# ---- cummax / cummin ----

@pytest.mark.parametrize("dtype", [torch.bool, torch.uint8, torch.int32, torch.int64] + FLOAT_DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_cummax_cummin(dtype, layout, no_fallbacks):
    x = make((5, 37), dtype, layout)
    for fn in (torch.cummax, torch.cummin):
        for dim in (0, 1, -1):
            compare(lambda t: fn(t, dim), x)
        compare(lambda t: fn(t, 0), make((), dtype))
        compare(lambda t: fn(t, 1), make((3, 0), dtype))
        compare(lambda t: fn(t, 2), x)
        ties = torch.tensor([1, 1, 0, 0, 2, 2, 1]).to(dtype)
        compare(lambda t: fn(t, 0), ties)
        if dtype.is_floating_point:
            nan = float("nan")
            compare(lambda t: fn(t, 0), torch.tensor([1.0, nan, 2.0, nan, 1.0, -1.0], dtype=dtype))
    values = torch.empty(0, dtype=dtype, device="porta")
    indices = torch.empty(0, dtype=torch.int64, device="porta")
    torch.cummax(x.to("porta"), 1, out=(values, indices))
    expected = torch.cummax(x, 1)
    torch.testing.assert_close(values.cpu(), expected.values)
    torch.testing.assert_close(indices.cpu(), expected.indices)


def test_cummax_cummin_grad(no_fallbacks):
    d = torch.float64
    compare_grad(lambda t: torch.cummax(t, 1).values, make((3, 9), d))
    compare_grad(lambda t: torch.cummin(t, 0).values, make((9, 3), d))


# ---- nothing leaks, on success or error ----

def _leak_cases():
    """Calls of the new ops, each given `p` to put its tensors on porta:
    successes and every kind of error."""
    x, i = make((4, 6)), torch.tensor([1, 3])
    b = torch.tensor([1.0, 3, 5])
    F = torch.nn.functional
    return [
        lambda p: torch.aminmax(p(x), dim=1), lambda p: torch.aminmax(p(x[:0]), dim=1),
        lambda p: torch.nansum(p(x), 1), lambda p: torch.count_nonzero(p(x), (0, 0)),
        lambda p: torch.addbmm(p(x[:, :2]), p(make((2, 4, 3))), p(make((2, 3, 2)))),
        lambda p: torch.addbmm(p(x), p(make((2, 4, 3))), p(make((2, 4, 2)))),
        lambda p: torch.equal(p(x), p(x)), lambda p: torch.vdot(p(x[0]), p(x[1, :5])),
        lambda p: torch.logaddexp(p(x), p(x)), lambda p: torch.xlogy(p(x), p(x[:2])),
        lambda p: p(x).index_fill(0, p(i), 1), lambda p: p(x).index_fill(0, p(torch.tensor([9])), 1),
        lambda p: torch.masked_select(p(x), p(x > 0)), lambda p: torch.take(p(x), p(torch.tensor([99]))),
        lambda p: p(x).put(p(i), p(torch.ones(2)), accumulate=True),
        lambda p: p(x).put(p(i), p(torch.ones(3))),
        lambda p: p(x).index_reduce(0, p(i), p(x[:2]), "amax", include_self=False),
        lambda p: p(x).index_reduce(0, p(torch.tensor([1, 7])), p(x[:2]), "mean"),
        lambda p: F.adaptive_max_pool2d(p(x[None]), (2, 4), return_indices=True),
        lambda p: F.adaptive_max_pool2d(p(x[None, :0]), (2, 4)),
        lambda p: torch.ops.aten.max_unpool2d(p(x[None]), p(torch.full((1, 4, 6), 99)), [4, 6]),
        lambda p: F.interpolate(p(x[None]), size=9, mode="nearest"),
        lambda p: torch.linalg.cross(p(x[:, :3]), p(x[:, 3:])), lambda p: torch.frexp(p(x)),
        lambda p: torch.searchsorted(p(b), p(x)),
        lambda p: torch.searchsorted(p(b), p(x), sorter=p(torch.tensor([0, 1, 5]))),
        lambda p: torch.cummax(p(x), 1), lambda p: torch.cummin(p(x), 3),
    ]


@pytest.mark.parametrize("case", range(len(_leak_cases())))
def test_no_leaks(case, no_fallbacks):
    warnings.filterwarnings("ignore", "index_reduce")
    assert_same_outcome_and_no_leak(_leak_cases()[case], to_porta)


def test_more_out_variants(no_fallbacks):
    x = make((3, 4))
    index = torch.tensor([0, 2])
    compare(lambda t: torch.count_nonzero(t), x)
    compare(lambda t: torch.count_nonzero(t, 1), x)
    compare(lambda t: torch.ops.aten.count_nonzero.out(t, 0, out=torch.empty(0, dtype=torch.int64,
                                                                              device=t.device)), x)
    compare(lambda t: torch.ops.aten.count_nonzero.dim_IntList_out(
        t, [0, 1], out=torch.empty(0, dtype=torch.int64, device=t.device)), x)
    compare(lambda a, b: torch.vdot(a, b, out=torch.empty(0, device=a.device)), x[0], x[1])
    compare(lambda t, i: torch.ops.aten.index_fill.int_Scalar_out(
        t, 1, i, 2.5, out=torch.empty(0, device=t.device)), x, index)
    compare(lambda t, i, v: torch.ops.aten.index_fill.int_Tensor_out(
        t, 0, i, v, out=torch.empty(3, 4, device=t.device)), x, index, torch.tensor(-1.0))
    compare(lambda t, i, s: torch.ops.aten.put.out(t, i, s, True, out=torch.empty(0, device=t.device)),
            x, index, torch.ones(2))
    compare(lambda b: torch.ops.aten.bucketize.Scalar_out(
        2, b, out=torch.empty(0, dtype=torch.int64, device=b.device)), torch.tensor([1.0, 3.0]))
