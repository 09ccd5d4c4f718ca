"""Sorting and sampling ops on porta against PyTorch's CPU: sort, topk,
kthvalue, median, masked_scatter, col2im, cdist, pdist, embedding_bag and
grid_sample; forward and backward, ties, NaN, dims, non-contiguous and empty
inputs, errors, and that none of them falls back to the CPU."""
import pytest
import torch
import torch.nn.functional as F

from aten_compare import ALL_DTYPES, FLOAT_DTYPES, LAYOUTS, compare, compare_grad, make


def _ties(shape, dtype, seed=0):
    """Few distinct values, so rows hold many ties; floats also NaN, ±inf, ±0."""
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    if not dtype.is_floating_point:
        low = 0 if dtype == torch.uint8 else -3
        return torch.randint(low, 4, shape, generator=g).to(dtype)
    choices = torch.tensor([-2.5, -1, -0.0, 0.0, 0.5, 1, 3, float("nan"), float("inf"),
                            -float("inf")])
    return choices[torch.randint(0, len(choices), shape, generator=g)].to(dtype)


# ---- sort ----

@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("descending", [False, True])
def test_sort_stable_ties_every_dtype(dtype, descending, no_fallbacks):
    x = _ties((4, 33), dtype)
    for dim in (0, 1, -1):
        compare(lambda t: torch.sort(t, dim=dim, descending=descending, stable=True), x)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape,dim", [((5, 7), 0), ((5, 7), 1), ((2, 3, 4), 1), ((3, 0), 1),
                                       ((0, 3), 0), ((), 0), ((), -1), ((6,), 0)])
def test_sort_shapes_and_layouts(shape, dim, layout, no_fallbacks):
    x = make(shape, layout=layout)
    compare(lambda t: torch.sort(t, dim=dim), x)
    compare(lambda t: torch.sort(t, dim=dim, descending=True, stable=True), x)
    compare(lambda t: torch.argsort(t, dim=dim, stable=True), x)
    compare(lambda t: t.msort() if t.dim() else t, x)


def test_sort_long_rows_and_nan(no_fallbacks):
    x = make((3, 2000), torch.float64)
    x[0, ::7] = float("nan")
    compare(lambda t: torch.sort(t, stable=True), x)
    compare(lambda t: torch.sort(t, descending=True, stable=True), x)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_sort_topk_backward(dtype):
    x = make((4, 6), dtype)
    compare_grad(lambda t: torch.sort(t, dim=1, descending=True)[0] * 2, x)
    compare_grad(lambda t: torch.sort(t, dim=0)[0], x)
    compare_grad(lambda t: torch.topk(t, 3, dim=1)[0], x)
    compare_grad(lambda t: torch.kthvalue(t, 2, dim=0)[0], x)
    compare_grad(lambda t: torch.median(t, dim=1)[0], x)
    compare_grad(lambda t: torch.median(t), x)


def test_sort_errors():
    x = make((2, 3))
    compare(lambda t: torch.sort(t, dim=2), x)
    compare(lambda t: torch.sort(t, dim=-3), x)
    with pytest.raises(IndexError, match="range"):
        torch.sort(x.to("porta"), dim=5)


# ---- topk ----

@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("largest", [True, False])
def test_topk(layout, largest, no_fallbacks):
    x = make((5, 8), torch.float32, layout)
    for k, dim in ((3, 1), (0, 1), (8, 1), (5, 0), (1, -1)):
        compare(lambda t: torch.topk(t, k, dim=dim, largest=largest), x)
        compare(lambda t: torch.topk(t, k, dim=dim, largest=largest, sorted=False)[0].sort(
            dim=dim)[0], x)


@pytest.mark.parametrize("dtype", ALL_DTYPES[1:])
def test_topk_dtypes_values(dtype, no_fallbacks):
    x = _ties((3, 10), dtype)
    for largest in (True, False):
        values, indices = torch.topk(x.to("porta"), 4, largest=largest)
        expected = torch.topk(x, 4, largest=largest)[0]
        torch.testing.assert_close(values.cpu(), expected, equal_nan=True)
        # ties may pick any of the tied positions; they must hold the value
        torch.testing.assert_close(x.gather(1, indices.cpu()), expected, equal_nan=True)


def test_topk_nan_scalar_empty_errors(no_fallbacks):
    x = torch.tensor([[1.0, float("nan"), 3.0, -1.0]])
    compare(lambda t: torch.topk(t, 2), x)
    compare(lambda t: torch.topk(t, 2, largest=False), x)
    compare(lambda t: torch.topk(t, 1), torch.tensor(2.0))
    compare(lambda t: torch.topk(t, 0, dim=1), torch.ones(3, 0))
    compare(lambda t: torch.topk(t, 5), make((3, 4)))
    compare(lambda t: torch.topk(t, -1), make((3, 4)))


# ---- kthvalue, median ----

@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("keepdim", [False, True])
def test_kthvalue_median(layout, keepdim, no_fallbacks):
    x = make((5, 7), torch.float64, layout)
    for dim in (0, 1, -1):
        compare(lambda t: torch.kthvalue(t, 2, dim=dim, keepdim=keepdim), x)
        compare(lambda t: torch.median(t, dim=dim, keepdim=keepdim), x)
    compare(torch.median, x)


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.float32, torch.float16])
def test_median_dtypes_nan_scalar(dtype, no_fallbacks):
    x = make((4, 5), dtype)
    compare(lambda t: torch.median(t, 1), x)
    compare(torch.median, x)
    compare(lambda t: (torch.median(t, 0), torch.kthvalue(t, 1, 0)), torch.tensor(3, dtype=dtype))
    if dtype.is_floating_point:
        y = torch.tensor([[1.0, float("nan"), 2.0, float("nan")], [4, 3, 2, 1]], dtype=dtype)
        compare(lambda t: torch.median(t, 1), y)
        compare(lambda t: torch.kthvalue(t, 3, 1), y)
        compare(torch.median, y)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64])
def test_nanmedian(dtype, no_fallbacks):
    nan = float("nan")
    x = make((4, 5), dtype)
    if dtype.is_floating_point:
        x = torch.tensor([[nan, nan, 6, nan, nan], [1, nan, 2, 5, nan], [3, nan, nan, 4, 1],
                          [2, 1, 0, -1, 7]], dtype=dtype)
        # an all-NaN row gives NaN; the CPU's index there depends on its selection order
        all_nan = torch.full((2, 4), nan, dtype=dtype)
        compare(lambda t: (torch.nanmedian(t, 1)[0], torch.nanmedian(t)), all_nan)
    for keepdim in (False, True):
        compare(lambda t: torch.nanmedian(t, 1, keepdim=keepdim), x)
        compare(lambda t: torch.nanmedian(t, 0, keepdim=keepdim), x)
    compare(torch.nanmedian, x)
    compare(torch.nanmedian, x[1:])
    if dtype == torch.float64:
        compare_grad(lambda t: torch.nanmedian(t, 1)[0], make((4, 5), dtype))


def test_out_variants(no_fallbacks):
    x = make((4, 6))

    def outs(fn):
        def run(t):
            values = torch.empty(0, device=t.device)
            indices = torch.empty(0, dtype=torch.int64, device=t.device)
            returned = fn(t, (values, indices))
            return values, indices, returned[0], returned[1]
        return run

    compare(outs(lambda t, out: torch.sort(t, 1, out=out)), x)
    compare(outs(lambda t, out: torch.sort(t, dim=0, descending=True, stable=True, out=out)), x)
    compare(outs(lambda t, out: torch.topk(t, 3, out=out)), x)
    compare(outs(lambda t, out: torch.kthvalue(t, 2, 0, out=out)), x)
    compare(outs(lambda t, out: torch.median(t, 1, keepdim=True, out=out)), x)
    compare(outs(lambda t, out: torch.nanmedian(t, 1, out=out)), x)

    def given(t):  # outs of the right shape are written in place
        values, indices = torch.zeros(4, 6, device=t.device), torch.zeros(
            4, 6, dtype=torch.int64, device=t.device)
        torch.sort(t, 1, out=(values, indices))
        return values, indices
    compare(given, x)


def test_kthvalue_median_errors():
    x = make((3, 4))
    compare(lambda t: torch.kthvalue(t, 0), x)
    compare(lambda t: torch.kthvalue(t, 5), x)
    compare(lambda t: torch.median(t, 1), torch.ones(3, 0))
    compare(lambda t: torch.kthvalue(t, 1, 1), torch.ones(3, 0))
    compare(lambda t: torch.median(t, 2), x)


# ---- masked_scatter ----

@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_masked_scatter(dtype, layout, no_fallbacks):
    x, source = make((4, 6), dtype, layout), make((30,), dtype, seed=1)
    mask = make((4, 6), seed=2, layout=layout) > 0
    compare(lambda t, m, s: t.masked_scatter(m, s), x, mask, source)
    compare(lambda t, m, s: t.clone().masked_scatter_(m, s), x, mask, source)
    compare(lambda t, m, s: t.masked_scatter(m, s), x, mask[0], source)  # mask broadcast
    compare(lambda t, m, s: t.masked_scatter(m, s), x[0], mask, source)  # self broadcast
    compare(lambda t, m, s: t.masked_scatter(m, s.reshape(5, 6)), x, mask, source)


def test_masked_scatter_empty_and_scalar(no_fallbacks):
    compare(lambda t, m, s: t.masked_scatter(m, s), make((0, 3)), torch.ones(0, 3).bool(),
            make((2,)))
    compare(lambda t, m, s: t.masked_scatter(m, s), torch.tensor(1.0), torch.tensor(True),
            torch.tensor([5.0]))
    compare(lambda t, m, s: t.masked_scatter(m, s), make((3,)), torch.zeros(3).bool(),
            torch.ones(0))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_masked_scatter_backward(dtype, no_fallbacks):
    mask = make((3, 5), seed=2) > 0
    compare_grad(lambda t, s: t.masked_scatter(mask.to(t.device), s) * 3, make((3, 5), dtype),
                 make((20,), dtype, seed=1))
    compare_grad(lambda t, s: t.masked_scatter(mask.to(t.device), s), make((5,), dtype),
                 make((4, 5), dtype, seed=1))


def test_masked_scatter_errors():
    x, mask = make((3, 4)), make((3, 4), seed=2) > 0
    compare(lambda t, m, s: t.masked_scatter(m, s), x, mask, make((2,)))
    compare(lambda t, m, s: t.masked_scatter(m, s), x, mask.int(), make((12,)))
    compare(lambda t, m, s: t.masked_scatter(m, s), x, mask, make((12,), torch.float64))
    compare(lambda t, m, s: t.masked_scatter_(m, s), make((4,)), mask, make((12,)))


# ---- col2im (fold), im2col (unfold) ----

FOLDS = [  # output_size, kernel_size, dilation, padding, stride
    ((4, 5), (2, 2), 1, 0, 1),
    ((6, 7), (3, 2), (2, 1), (1, 2), (2, 1)),
    ((5, 5), 1, 1, 0, 2),
    ((3, 3), 3, 1, 1, 1),
]


def _fold_input(output_size, kernel_size, dilation, padding, stride, batch, dtype, layout):
    unfolded = F.unfold(torch.zeros(1, 1, *output_size), kernel_size, dilation, padding, stride)
    blocks, area = unfolded.shape[-1], unfolded.shape[1]
    shape = (batch, 3 * area, blocks) if batch is not None else (3 * area, blocks)
    return make(shape, dtype, layout)


@pytest.mark.parametrize("geometry", FOLDS)
@pytest.mark.parametrize("batch", [2, None, 0])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_fold_unfold(geometry, batch, layout, no_fallbacks):
    output_size, kernel_size, dilation, padding, stride = geometry
    x = _fold_input(*geometry, batch, torch.float32, layout)
    compare(lambda t: F.fold(t, output_size, kernel_size, dilation, padding, stride), x)
    image = make(((batch,) if batch is not None else ()) + (3,) + output_size, layout=layout)
    compare(lambda t: F.unfold(t, kernel_size, dilation, padding, stride), image)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_fold_unfold_backward(dtype, no_fallbacks):
    geometry = FOLDS[1]
    x = _fold_input(*geometry, 2, dtype, "contiguous")
    compare_grad(lambda t: F.fold(t, *geometry), x)
    compare_grad(lambda t: F.unfold(t, *geometry[1:]), make((2, 3, 6, 7), dtype))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.int64])
def test_fold_dtypes(dtype, no_fallbacks):
    x = _fold_input(*FOLDS[0], 2, dtype, "contiguous")
    compare(lambda t: F.fold(t, *FOLDS[0]), x)
    compare(lambda t: F.unfold(t, *FOLDS[0][1:]), make((2, 3, 4, 5), dtype))


def test_fold_unfold_errors():
    x = make((2, 12, 12))
    fold = torch.ops.aten.col2im
    compare(lambda t: fold(t, [4, 5], [2, 2], [1, 1], [0, 0], [1, 1]), make((2, 12, 9)))
    compare(lambda t: fold(t, [4, 5], [2, 2], [1, 1], [0, 0], [1, 1]), make((2, 13, 12)))
    compare(lambda t: fold(t, [4, 5], [2, 2], [1, 1], [0, 0], [0, 1]), x)
    compare(lambda t: fold(t, [4, 5], [2, 2], [1, 1], [-1, 0], [1, 1]), x)
    compare(lambda t: fold(t, [4, 5], [2, 2], [1, 1], [0, 0], [1, 1]), make((12,)))
    compare(lambda t: torch.ops.aten.im2col(t, [2, 2], [1, 1], [0, 0], [1, 1]),
            make((2, 3, 1, 1)))


# ---- cdist, pdist ----

P_VALUES = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, float("inf")]


@pytest.mark.parametrize("p", P_VALUES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_cdist(p, dtype, no_fallbacks):
    x1, x2 = make((2, 5, 4), dtype), make((2, 6, 4), dtype, seed=1)
    compare(lambda a, b: torch.cdist(a, b, p=p), x1, x2)
    compare(lambda a, b: torch.cdist(a, b, p=p), x1, x2[0])  # batch broadcast
    compare(lambda a, b: torch.cdist(a, b, p=p), x1.mT.contiguous().mT, x2[:, ::2])
    compare(lambda a, b: torch.ops.aten._cdist_forward(a, b, p, None), x1, x2)
    compare_grad(lambda a, b: torch.cdist(a, b, p=p), x1, x2)
    compare_grad(lambda a, b: torch.cdist(a, b, p=p), x1, x2[0])


@pytest.mark.parametrize("mode", ["use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist",
                                  "use_mm_for_euclid_dist_if_necessary"])
def test_cdist_euclidean_modes(mode, no_fallbacks):
    x1, x2 = make((30, 3), torch.float64), make((27, 3), torch.float64, seed=1)
    compare(lambda a, b: torch.cdist(a, b, compute_mode=mode), x1, x2)
    compare(lambda a, b: torch.ops.aten._cdist_forward(a, b, 2.0, 1), x1, x2)
    compare_grad(lambda a, b: torch.cdist(a, b, compute_mode=mode), x1, x2)


def test_cdist_empty_and_errors(no_fallbacks):
    compare(lambda a, b: torch.cdist(a, b), make((0, 3)), make((4, 3)))
    compare(lambda a, b: torch.cdist(a, b), make((2, 0)), make((4, 0)))
    compare(lambda a, b: torch.cdist(a, b, p=float("inf")), make((2, 0)), make((4, 0)))
    compare(lambda a, b: torch.cdist(a, b), make((3,)), make((4, 3)))
    compare(lambda a, b: torch.cdist(a, b), make((3, 4)), make((4, 3)))
    compare(lambda a, b: torch.cdist(a, b, p=-1.0), make((3, 4)), make((4, 4)))
    compare(lambda a, b: torch.cdist(a, b), make((3, 4), torch.int64), make((4, 4), torch.int64))
    compare(lambda a, b: torch.cdist(a, b), make((3, 4), torch.float16),
            make((4, 4), torch.float16))


@pytest.mark.parametrize("p", P_VALUES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_pdist(p, dtype, no_fallbacks):
    x = make((6, 4), dtype)
    compare(lambda t: F.pdist(t, p=p), x)
    compare(lambda t: F.pdist(t, p=p), make((6, 4), dtype, "transposed"))
    compare_grad(lambda t: F.pdist(t, p=p), x)


def test_pdist_empty_and_errors(no_fallbacks):
    compare(F.pdist, make((1, 3)))
    compare(F.pdist, make((0, 3)))
    compare(F.pdist, make((4, 0)))
    compare(F.pdist, make((2, 3, 4)))
    compare(lambda t: F.pdist(t, -1.0), make((3, 4)))
    compare(F.pdist, make((3, 4), torch.float16))


# ---- embedding_bag ----

BAG_INDICES = torch.tensor([1, 2, 4, 5, 4, 3, 2, 9])
BAG_OFFSETS = torch.tensor([0, 4, 4, 6])


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("padding_idx", [None, 2])
@pytest.mark.parametrize("include_last_offset", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_embedding_bag(mode, padding_idx, include_last_offset, dtype, no_fallbacks):
    weight = make((10, 3), dtype)
    fn = lambda w, i, o: F.embedding_bag(i, w, o, mode=mode, padding_idx=padding_idx,
                                         include_last_offset=include_last_offset)
    # with include_last_offset the last offset closes the last bag
    offsets = torch.cat([BAG_OFFSETS, torch.tensor([8])]) if include_last_offset else BAG_OFFSETS
    compare(fn, weight, BAG_INDICES, offsets)
    compare(fn, weight, BAG_INDICES.int(), offsets.int())
    compare(fn, make((10, 3), dtype, "transposed"), BAG_INDICES, offsets)
    compare_grad(lambda w: fn(w, BAG_INDICES.to(w.device), offsets.to(w.device)), weight)
    compare(lambda w, i: F.embedding_bag(i, w, mode=mode, padding_idx=padding_idx), weight,
            BAG_INDICES.reshape(2, 4))
    compare(lambda w, i: F.embedding_bag(i, w, mode=mode, padding_idx=padding_idx), weight,
            torch.zeros(3, 0, dtype=torch.int64))


@pytest.mark.parametrize("mode", ["sum", "mean"])
def test_embedding_bag_scale_grad_by_freq(mode, no_fallbacks):
    """Each weight row's gradient divided by how often its index occurs. The
    CPU kernel divides some rows by another index's count (PyTorch 2.13), so
    the reference is the unscaled CPU gradient divided by the counts."""
    weight = make((10, 3))
    grads = []
    for device, scale in (("cpu", False), ("porta", True)):
        w = weight.detach().to(device).requires_grad_()
        out = F.embedding_bag(BAG_INDICES.to(device), w, BAG_OFFSETS.to(device), mode=mode,
                              scale_grad_by_freq=scale)
        out.backward(make(out.shape, seed=1).to(device))
        grads.append(w.grad.cpu())
    counts = torch.bincount(BAG_INDICES, minlength=10).clamp_min(1).unsqueeze(1)
    torch.testing.assert_close(grads[1], grads[0] / counts)


@pytest.mark.parametrize("padding_idx", [None, 4])
def test_embedding_bag_per_sample_weights(padding_idx, no_fallbacks):
    fn = lambda w, s: F.embedding_bag(BAG_INDICES.to(w.device), w, BAG_OFFSETS.to(w.device),
                                      mode="sum", per_sample_weights=s, padding_idx=padding_idx)
    compare(fn, make((10, 3)), make((8,), seed=1))
    compare_grad(fn, make((10, 3), torch.float64), make((8,), torch.float64, seed=1))


def test_embedding_bag_errors():
    weight = make((10, 3))
    bag = torch.ops.aten._embedding_bag
    compare(lambda w, i, o: bag(w, i, o, False, 0, False, None, False, -1), weight, BAG_INDICES,
            torch.tensor([1, 4]))
    compare(lambda w, i, o: bag(w, i, o, False, 0, False, None, False, -1), weight, BAG_INDICES,
            torch.tensor([0, 9]))
    compare(lambda w, i, o, s: bag(w, i, o, False, 2, False, s, False, -1), weight, BAG_INDICES,
            torch.tensor([0, 4]), make((8,)))
    compare(lambda w, i, o: bag(w, i, o, False, 3, False, None, False, -1), weight, BAG_INDICES,
            torch.tensor([0, 4]))
    compare(lambda w, i, o: bag(w, i, o, False, 0, False, None, False, -1), weight,
            BAG_INDICES + 5, torch.tensor([0, 4]))
    compare(lambda w, i, o: bag(w, i, o, False, 0, False, None, False, -1),
            make((10, 3), torch.int32), BAG_INDICES, torch.tensor([0, 4]))


# ---- grid_sample ----

def _grid(shape, dtype=torch.float32, seed=3):
    """Sample points in [-1.2, 1.2]: some fall outside the image."""
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(shape, generator=g) * 2.4 - 1.2).to(dtype)


@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_grid_sample(mode, padding_mode, align_corners, dtype, no_fallbacks):
    fn = lambda x, g: F.grid_sample(x, g, mode=mode, padding_mode=padding_mode,
                                    align_corners=align_corners)
    x, grid = make((2, 3, 5, 6), dtype), _grid((2, 4, 3, 2), dtype)
    compare(fn, x, grid)
    compare(fn, make((2, 3, 5, 6), dtype, "transposed"), _grid((2, 3, 4, 2), dtype).transpose(1, 2))
    if mode != "bicubic" or dtype == torch.float64:  # float32: 16 taps round differently
        compare_grad(fn, x, grid)


def test_grid_sample_single_pixel_half_and_empty(no_fallbacks):
    fn = lambda x, g: F.grid_sample(x, g, padding_mode="reflection", align_corners=True)
    compare(fn, make((1, 2, 1, 1)), _grid((1, 3, 3, 2)))
    compare_grad(fn, make((1, 2, 1, 4), torch.float64), _grid((1, 3, 3, 2), torch.float64))
    compare(lambda x, g: F.grid_sample(x, g, align_corners=False), make((2, 3, 5, 6), torch.float16),
            _grid((2, 4, 3, 2), torch.float16), atol=1e-2, rtol=1e-2)
    compare(lambda x, g: F.grid_sample(x, g, align_corners=False), make((0, 3, 5, 6)),
            _grid((0, 4, 3, 2)))
    compare(lambda x, g: F.grid_sample(x, g, align_corners=False), make((1, 3, 5, 6)),
            _grid((1, 0, 3, 2)))


def test_grid_sample_errors():
    x = make((1, 2, 3, 4))
    fn = lambda x, g: F.grid_sample(x, g, align_corners=False)
    compare(fn, x, _grid((2, 2, 2, 2)))
    compare(fn, x, _grid((1, 2, 2, 3)))
    compare(fn, make((1, 2, 0, 4)), _grid((1, 2, 2, 2)))
    compare(fn, x, _grid((1, 2, 2, 2), torch.float64))
