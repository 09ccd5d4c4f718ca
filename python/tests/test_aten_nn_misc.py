"""Native nn, index, random and histogram ops in libporta against PyTorch
CPU: prelu, rrelu, channel_shuffle, renorm, embedding's max_norm,
nonzero_static, _segment_reduce, unique's dim, interpolate's nearest-exact,
bicubic and antialiased modes, cauchy_, log_normal_, geometric_,
multinomial, histogram and histogramdd, batch_norm's running-stat update,
fractional max pooling, ctc_loss and 3-D grid_sample: values, dtypes and
shapes, zero-size and non-contiguous inputs, errors of the same type,
gradients through autograd, and no CPU fallback on the way."""
import pytest
import torch
import torch.nn.functional as F

from aten_compare import LAYOUTS, compare, compare_grad, make


# ---- activations ----

@pytest.mark.parametrize("layout", LAYOUTS)
def test_prelu(layout, no_fallbacks):
    x = make((2, 3, 4), layout=layout)
    compare(F.prelu, x, make((3,), seed=1))
    compare(F.prelu, x, make((1,), seed=1))
    compare(F.prelu, make((0, 3)), make((3,)))
    compare_grad(F.prelu, x, make((3,), seed=1))
    compare_grad(F.prelu, make((5,)), make((1,), seed=1))


def test_prelu_errors(no_fallbacks):
    compare(F.prelu, make((2, 3), torch.int64), make((3,), torch.int64))
    compare(F.prelu, make((2, 3)), make((4,)))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_rrelu_evaluation(layout, no_fallbacks):
    x = make((3, 5), layout=layout)
    compare(lambda t: F.rrelu(t, 0.1, 0.3, training=False), x)
    compare_grad(lambda t: F.rrelu(t, 0.1, 0.3, training=False), x)
    compare(lambda t: F.rrelu(t, 0.3, 0.1), x)  # lower > upper


def test_rrelu_training_draws_slopes_in_range(no_fallbacks):
    x = make((200,)).to("porta").requires_grad_()
    y = F.rrelu(x, 0.1, 0.3, training=True)
    slope = (y / x).detach().cpu()
    negative = x.detach().cpu() < 0
    assert torch.equal(slope[~negative], torch.ones_like(slope[~negative]))
    assert slope[negative].min() >= 0.1 and slope[negative].max() <= 0.3
    assert slope[negative].std() > 0.01  # drawn, not the mean slope
    y.sum().backward()
    torch.testing.assert_close(x.grad.cpu(), slope)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_channel_shuffle(layout, no_fallbacks):
    x = make((2, 6, 3, 4), layout=layout)
    compare(lambda t: F.channel_shuffle(t, 3), x)
    compare(lambda t: F.channel_shuffle(t, 2), make((1, 4, 5), torch.int32))
    compare(lambda t: F.channel_shuffle(t, 2), make((0, 4, 2)))
    compare_grad(lambda t: F.channel_shuffle(t, 3), x)


def test_channel_shuffle_errors(no_fallbacks):
    for shape, groups in [((2, 6, 3), 4), ((2, 6, 3), 0), ((2, 6), 3)]:
        compare(lambda t: F.channel_shuffle(t, groups), make(shape))


# ---- norms ----

@pytest.mark.parametrize("layout", LAYOUTS)
def test_renorm(layout, no_fallbacks):
    x = make((3, 4, 5), layout=layout)
    for p, dim, maxnorm in [(2, 0, 3.0), (1, 1, 5.0), (3.5, -1, 0.5), (float("inf"), 2, 2.0)]:
        compare(lambda t: torch.renorm(t, p, dim, maxnorm), x)
    compare_grad(lambda t: torch.renorm(t, 2, 1, 3.0), x)
    compare(lambda t: torch.renorm(t, 2, 0, 1.0), make((0, 3)))


def test_renorm_errors(no_fallbacks):
    compare(lambda t: torch.renorm(t, 2, 0, 1.0), make((4,)))
    compare(lambda t: torch.renorm(t, -1, 0, 1.0), make((2, 4)))
    compare(lambda t: torch.renorm(t, 2, 0, -1.0), make((2, 4)))
    compare(lambda t: torch.renorm(t, 2, 3, 1.0), make((2, 4)))


def test_embedding_max_norm(no_fallbacks):
    weight = make((6, 3))
    indices = torch.tensor([[0, 2, 2], [5, 0, 1]])

    def embed(w, i):
        w = w.clone()
        out = F.embedding(i, w, max_norm=1.5, norm_type=2.0)
        return out, w  # the rows looked up are renormalized in place

    compare(embed, weight, indices)
    compare(lambda w, i: F.embedding(i, w.clone(), max_norm=0.5, norm_type=1.0), weight,
            torch.tensor([4, 3]))


# ---- index ----

@pytest.mark.parametrize("size", [0, 2, 5, 9])
def test_nonzero_static(size, no_fallbacks):
    x = make((3, 4))
    x[x.abs() < 2] = 0
    compare(lambda t: torch.nonzero_static(t, size=size), x)
    compare(lambda t: torch.nonzero_static(t, size=size, fill_value=7), x.mT)
    compare(lambda t: torch.nonzero_static(t, size=size), make((5,), torch.bool))
    compare(lambda t: torch.nonzero_static(t, size=size), make((0, 2)))


def test_nonzero_static_errors(no_fallbacks):
    compare(lambda t: torch.nonzero_static(t, size=-1), make((3,)))


def _segment(reduce, data, lengths=None, offsets=None, axis=0, initial=None):
    return torch.segment_reduce(data, reduce, lengths=lengths, offsets=offsets, axis=axis,
                                unsafe=False, initial=initial)


@pytest.mark.parametrize("reduce", ["sum", "mean", "max", "min", "prod"])
@pytest.mark.parametrize("initial", [None, 2.0])
def test_segment_reduce_lengths(reduce, initial, no_fallbacks):
    data = make((6, 3))
    data[1, 0] = 0  # a zero for prod's gradient
    data[4, 1] = data[5, 1]  # a tie for max's or min's
    lengths = torch.tensor([2, 0, 1, 3])
    compare(lambda d, l: _segment(reduce, d, lengths=l, initial=initial), data, lengths)
    # an empty segment's mean is NaN, which compare_grad's comparison refuses
    lengths = torch.tensor([2, 1, 3])
    compare_grad(lambda d: _segment(reduce, d, lengths=to_device(lengths, d), initial=initial), data)


@pytest.mark.parametrize("reduce", ["sum", "mean", "max", "prod"])
def test_segment_reduce_offsets_axis(reduce, no_fallbacks):
    data = make((3, 5, 2), layout="transposed")
    offsets = torch.tensor([[0, 0, 1, 3, 5], [0, 2, 2, 5, 5], [0, 1, 2, 3, 5]])
    compare(lambda d, o: _segment(reduce, d, offsets=o, axis=1, initial=1.0), data, offsets)
    compare_grad(lambda d: _segment(reduce, d, offsets=to_device(offsets, d), axis=1,
                                    initial=1.0), data)


def to_device(t, like):
    return t.to(like.device)


# ---- upsampling ----

def _interpolate(mode, size=None, scale_factor=None, **kwargs):
    return lambda t: F.interpolate(t, size=size, scale_factor=scale_factor, mode=mode, **kwargs)


@pytest.mark.parametrize("shape, size", [((2, 3, 5), (8,)), ((1, 2, 4, 6), (7, 3)),
                                         ((1, 2, 3, 4, 5), (4, 6, 2))])
def test_nearest_exact(shape, size, no_fallbacks):
    x = make(shape)
    compare(_interpolate("nearest-exact", size), x)
    compare(_interpolate("nearest-exact", size), make(shape, torch.uint8))
    compare(_interpolate("nearest-exact", scale_factor=1.7), x)
    compare_grad(_interpolate("nearest-exact", size), x)


@pytest.mark.parametrize("mode, antialias", [("bicubic", False), ("bilinear", True),
                                             ("bicubic", True)])
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("size", [(9, 4), (2, 11)])
def test_bicubic_and_antialias(mode, antialias, align_corners, size, no_fallbacks):
    x = make((2, 3, 5, 7), layout="transposed")
    fn = _interpolate(mode, size, align_corners=align_corners, antialias=antialias)
    compare(fn, x, atol=1e-5, rtol=1e-5)
    compare(fn, x.double())
    compare_grad(fn, x.contiguous())


def test_bicubic_scale_and_errors(no_fallbacks):
    compare(_interpolate("bicubic", scale_factor=1.5, recompute_scale_factor=False),
            make((1, 1, 4, 4)), atol=1e-5, rtol=1e-5)
    compare(_interpolate("bicubic", (3, 3)), make((1, 1, 4, 4), torch.int64))


# ---- random distributions ----

def test_cauchy_log_normal_geometric(no_fallbacks):
    torch.manual_seed(0)
    x = torch.empty(4000, device="porta")
    c = x.clone().cauchy_(1.0, 2.0).cpu()
    assert abs(c.median().item() - 1.0) < 0.2
    ln = x.clone().log_normal_(0.5, 0.25).cpu()
    assert ln.min() > 0 and abs(ln.log().mean().item() - 0.5) < 0.05
    g = torch.empty(4000, device="porta", dtype=torch.int64).geometric_(0.25).cpu()
    assert g.dtype == torch.int64 and g.min() >= 1 and abs(g.float().mean().item() - 4) < 0.3


def test_random_distributions_follow_the_seed(no_fallbacks):
    def draw():
        torch.manual_seed(3)
        x = torch.empty(16, device="porta")
        return [x.clone().cauchy_().cpu(), x.clone().log_normal_().cpu(),
                x.clone().geometric_(0.5).cpu(),
                torch.multinomial(torch.ones(3, 8, device="porta"), 4).cpu()]
    for a, b in zip(draw(), draw()):
        assert torch.equal(a, b)


def test_random_distribution_errors(no_fallbacks):
    compare(lambda t: t.clone().cauchy_(0, -1), make((3,)))
    compare(lambda t: t.clone().log_normal_(0, 0), make((3,)))
    compare(lambda t: t.clone().geometric_(1.5), make((3,)))
    compare(lambda t: t.clone().cauchy_(), make((3,), torch.int64))


def test_multinomial(no_fallbacks):
    torch.manual_seed(0)
    p = torch.tensor([[0.0, 1.0, 3.0, 0.0], [2.0, 2.0, 0.0, 4.0]], device="porta")
    drawn = torch.multinomial(p, 3).cpu()
    assert drawn.dtype == torch.int64 and drawn.shape == (2, 3)
    for row, allowed in zip(drawn, [{1, 2}, {0, 1, 3}]):
        # without replacement: distinct, and never a zero-probability class
        # unless the others are used up
        assert len(set(row.tolist())) == 3
        first = row[:len(allowed)].tolist()
        assert set(first) <= allowed, (row, allowed)
    assert set(drawn[1].tolist()) == {0, 1, 3}
    many = torch.multinomial(p[0], 4000, replacement=True).cpu()
    assert set(many.unique().tolist()) <= {1, 2}
    assert abs((many == 2).float().mean().item() - 0.75) < 0.03
    one = torch.multinomial(p, 1).cpu()
    assert one.shape == (2, 1) and one[0, 0].item() in (1, 2)


def test_multinomial_errors(no_fallbacks):
    compare(lambda t: torch.multinomial(t, 5), make((4,)).abs())  # more than categories
    compare(lambda t: torch.multinomial(t, 2), torch.tensor([1.0, -1.0, 2.0]))
    compare(lambda t: torch.multinomial(t, 2), torch.zeros(3))
    compare(lambda t: torch.multinomial(t, 0), torch.ones(3))
    compare(lambda t: torch.multinomial(t, 1), torch.ones(2, 2, 2))


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_unique_dim(dim, no_fallbacks):
    x = torch.tensor([[1, 3, 1, 2], [0, 2, 0, 1], [1, 3, 1, 2]], dtype=torch.int64)
    for t in (x, x.float(), x.mT, make((4, 5)).round().clamp(-1, 1)):
        compare(lambda v: torch.unique(v, dim=dim, return_inverse=True, return_counts=True), t)
    compare(lambda v: torch.unique(v, dim=dim, sorted=False), make((3, 2), torch.bool))
    compare(lambda v: torch.unique(v, dim=0), make((0, 3)))


# ---- histograms ----

@pytest.mark.parametrize("density", [False, True])
def test_histogram(density, no_fallbacks):
    x = make((4, 6), layout="transposed")
    weight = make((4, 6), seed=1).abs()
    compare(lambda t: torch.histogram(t, 5, density=density), x)
    compare(lambda t: torch.histogram(t, 4, range=(-1.0, 2.0), density=density), x)
    compare(lambda t, w: torch.histogram(t, 3, weight=w, density=density), x, weight)
    compare(lambda t, b: torch.histogram(t, b, density=density), x,
            torch.tensor([-3.0, -1.0, 0.0, 0.5, 4.0]))
    compare(lambda t: torch.histogram(t, 3), torch.full((5,), 2.0))  # one value: widened range
    compare(lambda t: torch.histogram(t, 3), torch.tensor([1.0, float("nan"), 2.0]))
    compare(lambda t: torch.histogram(t, 3), make((0,)))


def test_histogramdd(no_fallbacks):
    x = make((20, 3))
    compare(lambda t: torch.histogramdd(t, [2, 3, 4]), x)
    compare(lambda t: torch.histogramdd(t, [2, 2, 2], range=[-1.0, 1.0, 0.0, 2.0, -2.0, 0.0],
                                        density=True), x)
    compare(lambda t, w: torch.histogramdd(t, [3, 1, 2], weight=w), x, make((20,), seed=2).abs())
    edges = [torch.tensor([-2.0, 0.0, 2.0]), torch.tensor([-1.0, 1.0]),
             torch.tensor([-5.0, 0.0, 1.0, 5.0])]
    compare(lambda t, *b: torch.histogramdd(t, list(b)), x, *edges)


def test_histogram_errors(no_fallbacks):
    compare(lambda t: torch.histogram(t, 3), make((4,), torch.int64))
    compare(lambda t: torch.histogram(t, 3, range=(2.0, 1.0)), make((4,)))
    compare(lambda t: torch.histogram(t, 3), torch.tensor([1.0, float("inf")]))
    compare(lambda t: torch.histogramdd(t, [2, 2]), make((5, 3)))


# ---- batch norm ----

def test_batch_norm_with_update(no_fallbacks):
    x, weight, bias = make((4, 3, 5)), make((3,), seed=1), make((3,), seed=2)

    def run(t, w, b):
        mean, var = torch.zeros(3, device=t.device), torch.ones(3, device=t.device)
        out = torch.ops.aten._batch_norm_with_update(t, w, b, mean, var, 0.1, 1e-5)
        return out[:3] + (mean, var)

    compare(run, x, weight, bias, atol=1e-5, rtol=1e-5)
    compare_grad(lambda t, w, b: run(t, w, b)[0], x, weight, bias)
    evaluated = lambda t: torch.ops.aten._batch_norm_no_update(  # noqa: E731
        t, None, None, torch.full((3,), 0.5, device=t.device),
        torch.full((3,), 2.0, device=t.device), 0.1, 1e-5)[0]
    compare(evaluated, x)


# ---- fractional max pooling ----

@pytest.mark.parametrize("shape, kernel, output", [((2, 3, 9, 7), (3, 2), (4, 5)),
                                                   ((3, 8, 8), (2, 2), (5, 3)),
                                                   ((1, 2, 5, 6, 7), (2, 3, 2), (3, 2, 4)),
                                                   ((2, 5, 5, 5), (2, 2, 2), (2, 3, 3))])
def test_fractional_max_pool(shape, kernel, output, no_fallbacks):
    x = make(shape)
    axes = len(kernel)
    batch = 1 if len(shape) == axes + 1 else shape[0]
    samples = torch.rand(batch, shape[-axes - 1], axes, generator=torch.Generator().manual_seed(0))
    pool = F.fractional_max_pool2d if axes == 2 else F.fractional_max_pool3d

    def run(t):
        return pool(t, kernel, output_size=output, return_indices=True,
                    _random_samples=samples.to(t.device))
    compare(run, x)
    compare_grad(lambda t: run(t)[0], x)


def test_fractional_max_pool_errors(no_fallbacks):
    samples = torch.rand(1, 2, 2)
    compare(lambda t, r: F.fractional_max_pool2d(t, 4, output_size=4, _random_samples=r),
            make((1, 2, 5, 5)), samples)
    compare(lambda t, r: F.fractional_max_pool2d(t, 2, output_size=2, _random_samples=r),
            make((2, 5, 5), torch.int64), samples)
    compare(lambda t, r: F.fractional_max_pool3d(t, 2, output_size=(2, 2, 4), _random_samples=r),
            make((1, 2, 5, 5, 5)), torch.rand(1, 2, 3))


# ---- ctc loss ----

@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("padded", [False, True])
def test_ctc_loss(reduction, padded, no_fallbacks):
    torch.manual_seed(0)
    t, n, c = 12, 3, 5
    log_probs = torch.randn(t, n, c).log_softmax(2)
    target_lengths = torch.tensor([4, 0, 3])
    input_lengths = torch.tensor([12, 5, 9])
    targets = torch.tensor([[1, 1, 2, 3], [0, 0, 0, 0], [4, 2, 4, 0]])
    if not padded:
        targets = torch.cat([row[:length] for row, length in zip(targets, target_lengths)])

    def run(lp):
        return F.ctc_loss(lp, targets.to(lp.device), input_lengths, target_lengths,
                          reduction=reduction)
    compare(run, log_probs, atol=1e-5, rtol=1e-5)
    if reduction != "none":
        compare_grad(run, log_probs)


def test_ctc_loss_impossible_alignment(no_fallbacks):
    log_probs = torch.randn(3, 1, 4).log_softmax(2)
    targets = torch.tensor([[1, 1, 2]])  # needs 4 steps: 1, blank, 1, 2

    def run(lp, zero_infinity):
        return F.ctc_loss(lp, targets.to(lp.device), [3], [3], reduction="sum",
                          zero_infinity=zero_infinity)
    compare(lambda lp: run(lp, False), log_probs)
    compare_grad(lambda lp: run(lp, True), log_probs)


# ---- grid sampling of volumes ----

@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_3d(mode, padding_mode, align_corners, no_fallbacks):
    x = make((2, 3, 4, 5, 6))
    grid = make((2, 3, 2, 4, 3), seed=1) * 0.5  # some points outside [-1, 1]

    def run(t, g):
        return F.grid_sample(t, g, mode=mode, padding_mode=padding_mode,
                             align_corners=align_corners)
    compare(run, x, grid, atol=1e-5, rtol=1e-5)
    compare_grad(run, x, grid)


def test_grid_sample_3d_errors(no_fallbacks):
    compare(lambda t, g: F.grid_sample(t, g, mode="bicubic", align_corners=False),
            make((1, 1, 2, 2, 2)), make((1, 1, 1, 1, 3)))
    compare(lambda t, g: F.grid_sample(t, g, align_corners=False), make((1, 1, 2, 2, 2)),
            make((1, 1, 1, 1, 2)))
    compare(lambda t, g: F.grid_sample(t, g, align_corners=False), make((1, 1, 2, 2, 2)),
            make((1, 0, 1, 1, 3)))
