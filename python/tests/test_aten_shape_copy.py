"""The copy and layout ops (src/aten/shape/copy.c, shape/layout.c, the
*_like factories, rand/randn, var.dim) against PyTorch's CPU: values,
dtypes, the strides PyTorch chooses for each memory format, aliasing of the
view ops, errors, and gradients."""
import pytest
import torch

from aten_compare import compare, compare_grad, make

aten = torch.ops.aten


def pair(shape, dtype=torch.float32, layout=lambda t: t):
    """The same tensor on the CPU and on porta, each made by applying
    `layout` to a contiguous base on its own device (so porta's tensor has
    the CPU's strides even when they are not dense)."""
    base = make(shape, dtype)
    return layout(base), layout(base.to("porta"))


def assert_same(got, expected, strides=True):
    assert got.device.type == "porta"
    assert (got.dtype, got.shape) == (expected.dtype, expected.shape)
    if strides:
        assert got.stride() == expected.stride()
    torch.testing.assert_close(got.cpu(), expected, equal_nan=True)


def same_buffer(a, b):
    return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


# Inputs of every kind of layout: dense (contiguous, permuted, channels
# last), not dense (stepped, a permutation with gaps), overlapping
# (expanded), with size-1 and size-0 dims.
LAYOUTS = {
    "contiguous": ((2, 3, 4, 5), lambda t: t),
    "transposed": ((2, 3, 4, 5), lambda t: t.transpose(1, 3)),
    "permuted": ((2, 3, 4, 5), lambda t: t.permute(3, 1, 0, 2)),
    "channels_last": ((2, 3, 4, 5), lambda t: t.contiguous(memory_format=torch.channels_last)),
    "stepped": ((2, 3, 4, 6), lambda t: t[..., ::2]),
    "permuted_stepped": ((2, 6, 4, 5), lambda t: t.permute(0, 3, 2, 1)[..., ::2]),
    "expanded": ((2, 1, 4, 5), lambda t: t.expand(2, 3, 4, 5)),
    "size_one": ((2, 1, 4, 1), lambda t: t.transpose(0, 2)),
    "empty": ((2, 0, 4, 5), lambda t: t.transpose(1, 2)),
    "rank5": ((2, 3, 2, 4, 5), lambda t: t.transpose(2, 4)),
    "scalar": ((), lambda t: t),
}
FORMATS = {"none": None, "contiguous": torch.contiguous_format,
           "preserve": torch.preserve_format, "channels_last": torch.channels_last,
           "channels_last_3d": torch.channels_last_3d}


def format_fits(fmt, rank):
    return {"channels_last": rank == 4, "channels_last_3d": rank == 5}.get(fmt, True)


@pytest.mark.parametrize("fmt", list(FORMATS))
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_clone_strides_match_cpu(layout, fmt):
    shape, view = LAYOUTS[layout]
    if not format_fits(fmt, len(shape)):
        pytest.skip("format needs another rank (errors tested below)")
    cpu, porta = pair(shape, torch.float32, view)
    kwargs = {} if FORMATS[fmt] is None else {"memory_format": FORMATS[fmt]}
    got = porta.clone(**kwargs)
    assert_same(got, cpu.clone(**kwargs))
    assert not same_buffer(got, porta)


@pytest.mark.parametrize("dtype", [torch.bool, torch.uint8, torch.int32, torch.int64,
                                   torch.float16, torch.bfloat16, torch.float32, torch.float64])
def test_clone_every_dtype(dtype):
    cpu, porta = pair((3, 4), dtype, lambda t: t.t())
    assert_same(porta.clone(), cpu.clone())


def test_clone_is_a_copy_with_gradient():
    cpu, porta = pair((3, 4))
    copy = porta.clone()
    copy.fill_(7)
    assert_same(porta, cpu)
    for dtype in (torch.float32, torch.float64):
        compare_grad(lambda x: (x.clone() * x).sum(-1), make((3, 4), dtype))
        compare_grad(lambda x: x.clone(memory_format=torch.channels_last) * 2,
                     make((2, 3, 4, 5), dtype))


@pytest.mark.parametrize("fmt,rank", [("channels_last", 3), ("channels_last", 5),
                                      ("channels_last_3d", 4)])
def test_wrong_rank_for_channels_last_is_an_error(fmt, rank):
    cpu, porta = pair((2,) * rank)
    for fn in (lambda t: t.clone(memory_format=FORMATS[fmt]),
               lambda t: t.to(torch.float64, memory_format=FORMATS[fmt]),
               lambda t: torch.empty_like(t, memory_format=FORMATS[fmt])):
        with pytest.raises(RuntimeError):
            fn(cpu)
        with pytest.raises(RuntimeError, match=f"rank {rank + 1 if fmt.endswith('3d') else 4}"):
            fn(porta)


DTYPE_PAIRS = [(torch.float32, torch.float64), (torch.float64, torch.float32),
               (torch.float32, torch.int32), (torch.int64, torch.float16),
               (torch.bool, torch.float32), (torch.float32, torch.bool),
               (torch.uint8, torch.int64), (torch.bfloat16, torch.float32)]


@pytest.mark.parametrize("source,target", DTYPE_PAIRS)
def test_to_copy_casts_like_cpu(source, target):
    cpu, porta = pair((3, 5), source, lambda t: t.t())
    assert_same(porta.to(target), cpu.to(target))
    assert_same(aten._to_copy(porta, dtype=target), aten._to_copy(cpu, dtype=target))


@pytest.mark.parametrize("fmt", list(FORMATS))
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_to_copy_strides_match_cpu(layout, fmt):
    shape, view = LAYOUTS[layout]
    if not format_fits(fmt, len(shape)):
        pytest.skip("format needs another rank")
    cpu, porta = pair(shape, torch.float32, view)
    kwargs = {} if FORMATS[fmt] is None else {"memory_format": FORMATS[fmt]}
    assert_same(aten._to_copy(porta, dtype=torch.float64, **kwargs),
                aten._to_copy(cpu, dtype=torch.float64, **kwargs))
    assert_same(aten._to_copy(porta, device="porta", **kwargs), aten._to_copy(cpu, **kwargs))


def test_to_copy_same_dtype_is_a_new_tensor_and_crosses_devices():
    cpu, porta = pair((3, 4))
    copy = aten._to_copy(porta)
    assert not same_buffer(copy, porta)
    assert_same(porta.to(torch.float64), cpu.to(torch.float64))
    torch.testing.assert_close(porta.to("cpu", torch.float64), cpu.double())


def test_to_copy_gradient():
    for source, target in [(torch.float32, torch.float64), (torch.float64, torch.float32)]:
        compare_grad(lambda x: x.to(target) * 3, make((3, 4), source))


def test_copy_keeps_self_layout_and_dtype():
    for self_view in (lambda t: t, lambda t: t.t(), lambda t: t[:, ::2]):
        cpu, porta = pair((4, 6), torch.float64, self_view)
        for src in (make((cpu.shape[1],), torch.float32), make(tuple(cpu.shape), torch.int32),
                    torch.tensor(2.5)):
            expected = aten.copy(cpu, src)
            got = aten.copy(porta, src.to("porta") if src.dim() else src)
            assert_same(got, expected)
            assert not same_buffer(got, porta)
    assert_same(porta, cpu)  # self is not written


def test_copy_errors_and_storage_layout():
    # (PyTorch has no derivative for aten::copy)
    compare(lambda a, b: aten.copy(a, b), make((3, 4)), make((3, 5)))
    compare(lambda a, b: aten.copy(a.expand(3, 4), b), make((1, 4)), make((3, 4)))
    base_cpu, base = pair((4, 6))
    expected = aten.copy(base_cpu[1:, ::2], make((3,)))
    got = aten.copy(base[1:, ::2], make((3,)).to("porta"))
    assert_same(got, expected)  # self's layout on a copy of its whole buffer
    assert got.storage_offset() == expected.storage_offset()


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "stepped", "scalar", "empty"])
def test_alias_is_a_view(layout):
    shape, view = LAYOUTS[layout]
    cpu, porta = pair(shape, torch.float32, view)
    got, expected = aten.alias(porta), aten.alias(cpu)
    assert_same(got, expected)
    assert got.storage_offset() == expected.storage_offset()
    assert same_buffer(got, porta)
    got.fill_(5)
    expected.fill_(5)
    assert_same(porta, cpu)
    compare_grad(lambda x: aten.alias(x) * x, make((3, 4)))


# ---- the *_like factories and rand/randn ----

@pytest.mark.parametrize("fmt", list(FORMATS))
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "channels_last", "stepped",
                                    "permuted_stepped", "expanded", "rank5", "empty"])
def test_like_factories_strides_match_cpu(layout, fmt):
    shape, view = LAYOUTS[layout]
    if not format_fits(fmt, len(shape)):
        pytest.skip("format needs another rank")
    cpu, porta = pair(shape, torch.float32, view)
    kwargs = {} if FORMATS[fmt] is None else {"memory_format": FORMATS[fmt]}
    expected = torch.empty_like(cpu, dtype=torch.int32, **kwargs)
    got = torch.empty_like(porta, dtype=torch.int32, **kwargs)
    assert (got.device.type, got.dtype, got.shape, got.stride()) == \
        ("porta", expected.dtype, expected.shape, expected.stride())
    assert_same(torch.full_like(porta, 2.5, **kwargs), torch.full_like(cpu, 2.5, **kwargs))


@pytest.mark.parametrize("dtype", [torch.bool, torch.uint8, torch.int64, torch.float16,
                                   torch.float32, torch.float64])
@pytest.mark.parametrize("value", [0, 1, -3, 2.75, True])
def test_full_like_values(dtype, value):
    cpu, porta = pair((3, 4), torch.float32, lambda t: t.t())
    for kwargs in ({"dtype": dtype}, {}):
        try:
            expected = torch.full_like(cpu, value, **kwargs)
        except RuntimeError:
            with pytest.raises(RuntimeError):
                torch.full_like(porta, value, **kwargs)
            continue
        assert_same(torch.full_like(porta, value, **kwargs), expected)
    assert_same(aten.full_like(porta.to(dtype), value), aten.full_like(cpu.to(dtype), value))


def test_full_like_overflow_and_large_ints():
    cpu, porta = pair((2, 2), torch.int64)
    compare(lambda t: torch.full_like(t, 300, dtype=torch.int8), cpu)
    compare(lambda t: torch.full_like(t, 2.5e40), cpu)
    assert_same(torch.full_like(porta, 2**62 + 1), torch.full_like(cpu, 2**62 + 1))


@pytest.mark.parametrize("op", [torch.rand, torch.randn])
@pytest.mark.parametrize("dtype", [None, torch.float16, torch.bfloat16, torch.float64])
def test_rand_randn_shapes_dtypes_and_streams(op, dtype):
    torch.porta.manual_seed(5)
    first = op(64, 33, dtype=dtype, device="porta")
    assert first.dtype == (dtype or torch.get_default_dtype())
    assert first.shape == (64, 33) and first.is_contiguous()
    second = op(64, 33, dtype=dtype, device="porta")
    torch.porta.manual_seed(5)
    torch.testing.assert_close(op(64, 33, dtype=dtype, device="porta").cpu(), first.cpu())
    assert not torch.equal(first.cpu(), second.cpu())
    values = first.cpu().double()
    if op is torch.rand:
        assert values.min() >= 0 and values.max() < 1
        assert abs(values.mean().item() - 0.5) < 0.05
    else:
        assert abs(values.mean().item()) < 0.1 and abs(values.std().item() - 1) < 0.1
    assert op(0, 3, dtype=dtype, device="porta").shape == (0, 3)
    assert op((), dtype=dtype, device="porta").shape == ()


@pytest.mark.parametrize("op", [torch.rand, torch.randn])
def test_rand_randn_errors(op):
    for args, kwargs in [((2, 3), {"dtype": torch.int64}), ((-1, 3), {})]:
        with pytest.raises(RuntimeError):
            op(*args, **kwargs)
        with pytest.raises(RuntimeError):
            op(*args, device="porta", **kwargs)


def test_rand_follows_default_dtype():
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        assert torch.rand(2, device="porta").dtype == torch.float64
        assert torch.randn(2, device="porta").dtype == torch.float64
    finally:
        torch.set_default_dtype(previous)


# ---- views: diagonal, split_with_sizes ----

DIAGONALS = [(0, 0, 1), (1, 0, 1), (-1, 0, 1), (2, 1, 2), (-2, 2, 0), (0, -1, -3),
             (5, 0, 1), (-5, 1, 2), (3, 2, 1)]


@pytest.mark.parametrize("offset,dim1,dim2", DIAGONALS)
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "stepped"])
def test_diagonal_layout_and_values(offset, dim1, dim2, layout):
    views = {"contiguous": lambda t: t, "transposed": lambda t: t.transpose(0, 2),
             "stepped": lambda t: t[:, ::2]}
    cpu, porta = pair((4, 6, 4), torch.float64, views[layout])
    got, expected = porta.diagonal(offset, dim1, dim2), cpu.diagonal(offset, dim1, dim2)
    assert_same(got, expected)
    assert got.storage_offset() == expected.storage_offset()
    assert same_buffer(got, porta)


def test_diagonal_writes_show_in_base_and_gradient():
    cpu, porta = pair((4, 5))
    for t in (cpu, porta):
        t.diagonal(1).fill_(-1)
        t.diagonal(-2).mul_(10)
    assert_same(porta, cpu)
    for dtype in (torch.float32, torch.float64):
        compare_grad(lambda x: x.diagonal(1, 0, 2) * 2, make((3, 4, 5), dtype))
        compare_grad(lambda x: torch.diagonal(x, -1), make((4, 3), dtype, "transposed"))


@pytest.mark.parametrize("case", [lambda t: t.diagonal(0, 1, 1), lambda t: t.diagonal(0, 0, 3),
                                  lambda t: t[0, 0].diagonal(), lambda t: t[0, 0, 0].diagonal()])
def test_diagonal_errors(case):
    compare(case, make((3, 4, 5)))


SPLITS = [([2, 3, 1], 0), ([0, 6], 0), ([4, 1], 1), ([1, 1, 1, 1, 1], -1), ([6], 0)]


@pytest.mark.parametrize("sizes,dim", SPLITS)
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_split_with_sizes_views(sizes, dim, layout):
    view = (lambda t: t) if layout == "contiguous" else (lambda t: t.t().contiguous().t())
    cpu, porta = pair((6, 5), torch.float32, view)
    expected, got = cpu.split_with_sizes(sizes, dim), porta.split_with_sizes(sizes, dim)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert_same(g, e)
        assert g.storage_offset() == e.storage_offset()
        assert same_buffer(g, porta)
    got[-1].fill_(-4)
    expected[-1].fill_(-4)
    assert_same(porta, cpu)


def test_split_with_sizes_errors_and_gradient():
    x = make((6, 5))
    compare(lambda t: t.split_with_sizes([2, 2], 0), x)
    compare(lambda t: t.split_with_sizes([7, -1], 0), x)
    compare(lambda t: t.split_with_sizes([5], 2), x)
    compare(lambda t: aten.split_with_sizes(t[0, 0], [1]), x)
    with pytest.raises(RuntimeError, match=r"sum exactly to 6 .*\[2, 2\]"):
        x.to("porta").split_with_sizes([2, 2], 0)
    for dtype in (torch.float32, torch.float64):
        compare_grad(lambda t: torch.cat([p * (i + 1) for i, p in
                                          enumerate(t.split_with_sizes([1, 3, 2], 0))]),
                     make((6, 5), dtype))


# ---- copies: repeat, constant_pad_nd ----

REPEATS = [((2, 3), (2, 1)), ((2, 3), (1, 1, 3)), ((2, 3), (2, 0)), ((3,), (2, 2, 2)),
           ((), (3, 2)), ((), ()), ((2, 1, 3), (1, 4, 1)), ((0, 2), (3, 1))]


@pytest.mark.parametrize("shape,repeats", REPEATS)
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "stepped"])
def test_repeat(shape, repeats, layout):
    for dtype in (torch.float32, torch.int64, torch.bool):
        compare(lambda t: t.repeat(*repeats) if repeats else t.repeat(()),
                make(shape, dtype, layout))
    result = make(shape).to("porta").repeat(repeats)
    assert result.is_contiguous()


def test_repeat_errors_and_gradient():
    compare(lambda t: t.repeat(2), make((2, 3)))
    compare(lambda t: t.repeat(2, -1), make((2, 3)))
    with pytest.raises(RuntimeError, match="17 repeat dims"):
        make((2,)).to("porta").repeat([2] * 17)
    for dtype in (torch.float32, torch.float64):
        compare_grad(lambda t: t.repeat(2, 1, 3), make((3, 4), dtype, "transposed"))


PADS = [(1, 2), (0, 0, 1, 1), (-1, 2), (2, -3, 1, -1), (1, 1, 0, 0, 2, 0), (-2, -2), (0, 0)]


@pytest.mark.parametrize("pad", PADS)
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "stepped"])
def test_constant_pad_nd(pad, layout):
    for dtype, value in [(torch.float32, 0), (torch.float64, -1.5), (torch.int64, 7),
                         (torch.uint8, 3), (torch.bool, True)]:
        compare(lambda t: aten.constant_pad_nd(t, pad, value), make((3, 4, 5), dtype, layout))


def test_constant_pad_nd_errors_and_gradient():
    x = make((3, 4))
    compare(lambda t: aten.constant_pad_nd(t, [1]), x)
    compare(lambda t: aten.constant_pad_nd(t, [1, 1, 1, 1, 1, 1]), x)
    compare(lambda t: aten.constant_pad_nd(t, [-3, -2]), x)
    compare(lambda t: aten.constant_pad_nd(t.to(torch.uint8), [1, 1], 300), x)
    compare(lambda t: aten.constant_pad_nd(t.to(torch.uint8), [1, 1], -1), x)  # wraps to 255
    compare(lambda t: aten.constant_pad_nd(t, [0, 0], 1), make((0, 3)))
    compare(lambda t: aten.constant_pad_nd(t, [1, 1], 1), make((0, 3)))
    for dtype in (torch.float32, torch.float64):
        compare_grad(lambda t: aten.constant_pad_nd(t, [1, -1, 2, 0], 3.0), make((3, 4), dtype))


# ---- the *_scatter ops ----

SCATTERS = {
    "select": (lambda t: t.select(1, -2), lambda t, s: aten.select_scatter(t, s, 1, -2)),
    "select_first": (lambda t: t[0], lambda t, s: aten.select_scatter(t, s, 0, 0)),
    "slice": (lambda t: t[:, 1:4:2], lambda t, s: aten.slice_scatter(t, s, 1, 1, 4, 2)),
    "slice_default": (lambda t: t, lambda t, s: aten.slice_scatter(t, s)),
    "slice_negative": (lambda t: t[..., -3:], lambda t, s: aten.slice_scatter(t, s, -1, -3)),
    "slice_empty": (lambda t: t[:, 7:], lambda t, s: aten.slice_scatter(t, s, 1, 7, 9)),
    "diagonal": (lambda t: t.diagonal(1, 1, 2),
                 lambda t, s: aten.diagonal_scatter(t, s, 1, 1, 2)),
    "diagonal_negative": (lambda t: t.diagonal(-1, 2, 0),
                          lambda t, s: aten.diagonal_scatter(t, s, -1, 2, 0)),
    "as_strided": (lambda t: t.as_strided((2, 3), (5, 2), 1),
                   lambda t, s: aten.as_strided_scatter(t, s, (2, 3), (5, 2), 1)),
}


@pytest.mark.parametrize("name", list(SCATTERS))
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "stepped", "offset"])
def test_scatter_ops_match_cpu(name, layout):
    views = {"contiguous": lambda t: t, "transposed": lambda t: t.transpose(0, 2),
             "stepped": lambda t: t[:, :, ::2], "offset": lambda t: t[1:]}
    view_of, scatter = SCATTERS[name]
    for dtype in (torch.float32, torch.float64, torch.int32):
        cpu, porta = pair((4, 5, 8), dtype, views[layout])
        src = make(tuple(view_of(cpu).shape), dtype, seed=3)
        expected, got = scatter(cpu, src), scatter(porta, src.to("porta"))
        assert_same(got, expected)
        assert got.storage_offset() == expected.storage_offset()
        assert not same_buffer(got, porta)
        assert_same(porta, cpu)  # self is not written


def test_scatter_ops_cast_src_and_accept_expanded_self():
    cpu, porta = pair((1, 4), torch.float64, lambda t: t.expand(3, 4))
    src = make((4,), torch.float32)
    assert_same(aten.select_scatter(porta, src.to("porta"), 0, 1),
                aten.select_scatter(cpu, src, 0, 1))


@pytest.mark.parametrize("case", [
    lambda t, s: aten.select_scatter(t, s[:3], 1, 0),
    lambda t, s: aten.select_scatter(t, s, 1, 9),
    lambda t, s: aten.slice_scatter(t, s, 1, 0, 2),
    lambda t, s: aten.slice_scatter(t, s[:, :2], 1, 0, 4, 0),
    lambda t, s: aten.diagonal_scatter(t, s[0, :2], 0, 1, 1),
    lambda t, s: aten.diagonal_scatter(t, s[0, :2], 0, 0, 1),
    lambda t, s: aten.as_strided_scatter(t, s[0], (2, 3), (5, 2)),
])
def test_scatter_errors(case):
    compare(case, make((4, 5)), make((4, 4)))


@pytest.mark.parametrize("name", list(SCATTERS))
def test_scatter_ops_gradient(name):
    view_of, scatter = SCATTERS[name]
    for dtype in (torch.float32, torch.float64):
        x = make((4, 5, 8), dtype)
        src = make(tuple(view_of(x).shape), dtype, seed=3)
        compare_grad(lambda t, s: scatter(t, s) * 2, x, src)


# ---- var.dim: PyTorch's decomposition (var.correction, native) ----

@pytest.mark.parametrize("dim", [None, 0, 1, -1, (0, 2), ()])
@pytest.mark.parametrize("unbiased", [True, False])
@pytest.mark.parametrize("keepdim", [True, False])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "stepped"])
def test_var_dim(dim, unbiased, keepdim, layout):
    for dtype in (torch.float32, torch.float64):
        compare(lambda t: aten.var.dim(t, dim, unbiased, keepdim), make((3, 4, 5), dtype, layout))


def test_var_dim_edges_errors_and_gradient():
    compare(lambda t: aten.var.dim(t, [0], True, False), make((1, 3)))
    compare(lambda t: aten.var.dim(t, [1], False, True), make((2, 0)))
    compare(lambda t: aten.var.dim(t, [0, 0], True, False), make((2, 3)))
    compare(lambda t: aten.var.dim(t, [3], True, False), make((2, 3)))
    compare(lambda t: aten.var.dim(t, [0], True, False), make((2, 3), torch.int64))
    for dtype in (torch.float32, torch.float64):
        compare_grad(lambda t: aten.var.dim(t, [1], True, False), make((3, 4), dtype))
        compare_grad(lambda t: aten.var.dim(t, None, False, True), make((3, 4), dtype, "stepped"))
