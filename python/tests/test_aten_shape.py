"""The shape family (src/aten/shape/) against PyTorch's CPU: layouts
(sizes, strides, storage offsets) of views, aliasing, values and dtypes of
copies, errors, and gradients."""
import pytest
import torch

DTYPES = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
          torch.float16, torch.bfloat16, torch.float32, torch.float64]


def make(shape, dtype=torch.float32, layout="contiguous"):
    """A CPU tensor of distinct values laid out contiguously, transposed or
    sliced with a step (the same values each way)."""
    numel = 1
    for s in shape:
        numel *= s
    values = torch.arange(numel, dtype=torch.float64).reshape(shape)
    if dtype == torch.bool:
        values = values % 3 == 1
    else:
        values = (values % 100).to(dtype)
    if layout == "transposed" and len(shape) >= 2:
        return values.transpose(0, -1).contiguous().transpose(0, -1)
    if layout == "stepped" and len(shape) >= 1:
        wide = list(shape)
        wide[-1] *= 2
        base = torch.zeros(wide, dtype=dtype)
        base[..., ::2] = values
        return base[..., ::2]
    return values


def on_porta(cpu):
    """The same tensor on porta with the same strides and offset, on a copy
    of its whole storage: as_strided may read the gaps between its elements,
    so those must hold the CPU's values too, not uninitialized memory."""
    count = cpu.untyped_storage().nbytes() // cpu.element_size()
    storage = torch.empty(0, dtype=cpu.dtype).set_(cpu.untyped_storage(), 0, (count,), (1,))
    return storage.to("porta").as_strided(cpu.shape, cpu.stride(), cpu.storage_offset())


def assert_same(got, expected, layout=True):
    assert got.device.type == "porta"
    assert got.dtype == expected.dtype
    assert got.shape == expected.shape
    if layout:
        assert got.stride() == expected.stride()
        assert got.storage_offset() == expected.storage_offset()
    torch.testing.assert_close(got.cpu(), expected, equal_nan=True)


def raises_like(fn, cpu, porta):
    with pytest.raises(Exception) as expected:
        fn(cpu)
    with pytest.raises(type(expected.value)):
        fn(porta)


LAYOUTS = ["contiguous", "transposed", "stepped"]

VIEWS = {
    "view": lambda t: t.view(*t.shape[:-1], 2, -1),
    "view_merge": lambda t: t.view(-1, t.shape[-1]) if t.stride(0) == t.shape[1] * t.stride(1)
    else t.view(1, *t.shape),
    "unsafe_view": lambda t: torch.ops.aten._unsafe_view(t.contiguous(), (t.numel(),)),
    "reshape_alias": lambda t: torch.ops.aten._reshape_alias(t, (t.numel(),), (1,))
    if t.is_contiguous() else t,
    "as_strided": lambda t: t.as_strided((2, 2), (1, 2), 1),
    "as_strided_keep_offset": lambda t: t[1:].as_strided((2,), (3,)),
    "expand": lambda t: t[:, :1].expand(3, -1, 5, -1),
    "expand_leading_one": lambda t: t.expand(1, 1, *t.shape),
    "permute": lambda t: t.permute(2, 0, 1),
    "permute_negative": lambda t: t.permute(-1, -3, -2),
    "t": lambda t: t[0].t(),
    "t_1d": lambda t: t[0, 0].t(),
    "transpose": lambda t: t.transpose(0, 2),
    "transpose_negative": lambda t: t.transpose(-1, 1),
    "slice": lambda t: t[:, 1:3],
    "slice_step": lambda t: t[:, ::2, 1:4:3],
    "slice_negative": lambda t: t[-1:, -2:],
    "slice_empty": lambda t: t[:, 5:],
    "slice_clamped": lambda t: torch.ops.aten.slice(t, 2, -100, 100, 2),
    "select": lambda t: t.select(1, -1),
    "select_first": lambda t: t[1],
    "unsqueeze": lambda t: t.unsqueeze(1),
    "unsqueeze_end": lambda t: t.unsqueeze(-1),
    "unsqueeze_front": lambda t: t.unsqueeze(0),
    "squeeze": lambda t: t[:, :1].squeeze(),
    "squeeze_dim": lambda t: t[:, :1].squeeze(1),
    "squeeze_dim_kept": lambda t: t.squeeze(0),
    "squeeze_dims": lambda t: t[:1, :1].squeeze((0, -2)),
    "unfold": lambda t: t.unfold(2, 2, 1),
    "unfold_step": lambda t: t.unfold(-1, 1, 3),
    "diagonal": lambda t: t.diagonal(1, 1, 2),
    "narrow": lambda t: t.narrow(2, 1, 2),
    "split": lambda t: t.split(2, 1)[1],
    "unbind": lambda t: t.unbind(2)[3],
    "chunk": lambda t: t.chunk(2, 2)[1],
    "movedim": lambda t: t.movedim(0, 2),
    "indexing": lambda t: t[..., None, 1:3:2],
    "chain": lambda t: t.transpose(0, 1)[1:].unsqueeze(0)[0, ::2],
}


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("name", list(VIEWS))
def test_views_match_cpu_layout(name, layout):
    cpu = make((2, 3, 4), layout=layout)
    porta = on_porta(cpu)
    expected, got = VIEWS[name](cpu), VIEWS[name](porta)
    assert_same(got, expected)
    if expected._base is not None or expected.data_ptr() == cpu.data_ptr():
        assert got.untyped_storage().data_ptr() == porta.untyped_storage().data_ptr()


@pytest.mark.parametrize("dtype", DTYPES)
def test_views_of_every_dtype(dtype):
    cpu = make((2, 3, 4), dtype)
    porta = on_porta(cpu)
    for name in ("view", "permute", "slice_step", "select", "expand", "unfold", "squeeze"):
        assert_same(VIEWS[name](porta), VIEWS[name](cpu))


def test_zero_dim_and_zero_size_views():
    scalar = torch.tensor(3.5)
    for fn in (lambda t: t.view(1, 1), lambda t: t.view(-1), lambda t: t.unsqueeze(0),
               lambda t: t.unsqueeze(-1), lambda t: t.squeeze(), lambda t: t.squeeze(0),
               lambda t: t.t(), lambda t: t.transpose(0, -1), lambda t: t.expand(2, 3),
               lambda t: t.permute(()), lambda t: t.unfold(0, 1, 1),
               lambda t: t.as_strided((2,), (0,))):
        assert_same(fn(scalar.to("porta")), fn(scalar))
    empty = torch.zeros(2, 0, 3).transpose(0, 2)
    for fn in (lambda t: t.view(3, 0, 2), lambda t: t.view(0, 5), lambda t: t.view(-1),
               lambda t: t[1:], lambda t: t.select(2, 1), lambda t: t.unsqueeze(1),
               lambda t: t.expand(4, 3, 0, 2), lambda t: t.permute(1, 2, 0),
               lambda t: t.squeeze(1)):
        assert_same(fn(on_porta(empty)), fn(empty))


def test_writes_through_views_show_in_base_and_siblings():
    cpu = make((4, 6))
    porta = on_porta(cpu)
    for t in (cpu, porta):
        t.t()[2:5:2].fill_(-1)
        t.view(24)[::5].fill_(-2)
        t.unsqueeze(0).expand(3, 4, 6)[1, 3].fill_(-3)
        sibling_a, sibling_b = t[1], t.select(0, 1)
        sibling_a.add_(100)
        sibling_b.mul_(2)
        t.as_strided((2, 2), (7, 1), 3).zero_()
    assert_same(porta, cpu)


@pytest.mark.parametrize("case", [
    lambda t: t.transpose(0, 1).view(-1),
    lambda t: t.view(5, 5),
    lambda t: t.view(-1, -1),
    lambda t: t.select(1, 4),
    lambda t: t.select(3, 0),
    lambda t: t.unsqueeze(4),
    lambda t: t.transpose(0, 3),
    lambda t: t.permute(0, 1),
    lambda t: t.permute(0, 0, 1),
    lambda t: t.t(),
    lambda t: t.expand(2, 5, 4),
    lambda t: t.expand(3, 4),
    lambda t: t.expand(-1, 2, 3, 4),
    lambda t: torch.ops.aten.slice(t, 0, 0, 2, 0),
    lambda t: t.squeeze((0, 0)),
    lambda t: t.unfold(2, 5, 1),
    lambda t: t.unfold(2, 2, 0),
    lambda t: t.as_strided((2, 2), (1, -1)),
    lambda t: t.as_strided((30,), (1,)),
    lambda t: t[0, 0].select(0, 0).select(0, 0),
])
def test_view_errors_match_cpu(case):
    cpu = make((2, 3, 4))
    raises_like(case, cpu, on_porta(cpu))


def test_view_error_message():
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        make((2, 3)).to("porta").t().view(6)


def test_inplace_view_ops():
    for fn in (lambda t: t.unsqueeze_(1), lambda t: t.transpose_(0, 2), lambda t: t[0].t_(),
               lambda t: t[:, :1].squeeze_(1), lambda t: t.as_strided_((2, 2), (1, 2), 1),
               lambda t: t.squeeze_()):
        cpu = make((2, 3, 4))
        porta = on_porta(cpu)
        assert_same(fn(porta), fn(cpu))


VIEW_GRADS = ["view", "permute", "t", "transpose", "slice_step", "select", "unsqueeze",
              "squeeze", "expand", "unfold", "as_strided", "diagonal", "split", "unbind",
              "narrow", "movedim"]


@pytest.mark.parametrize("name", VIEW_GRADS)
def test_view_gradients(name):
    cpu = make((2, 3, 4), torch.float64)
    porta = on_porta(cpu)
    grads = []
    for t in (cpu, porta):
        leaf = t.clone().requires_grad_()
        out = VIEWS[name](leaf)
        weight = make(tuple(out.shape), torch.float64).to(t.device) + 1
        (out * weight).sum().backward()
        grads.append(leaf.grad)
    assert_same(grads[1], grads[0], layout=False)


# ---- copies: cat, flip, roll, tril/triu, clone, copy_, _to_copy ----

@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cat(layout, dim):
    a = make((2, 3, 4), layout=layout)
    b = make((2, 3, 4), torch.int32, layout=layout) + 7
    sizes = [2, 3, 4]
    sizes[dim] = 1
    c = make(tuple(sizes), torch.float64)
    inputs = [a, b, c]
    assert_same(torch.cat([on_porta(t) for t in inputs], dim), torch.cat(inputs, dim))


@pytest.mark.parametrize("dtype", DTYPES)
def test_cat_and_stack_every_dtype(dtype):
    a, b = make((2, 3), dtype), make((2, 3), dtype, "transposed")
    assert_same(torch.cat([on_porta(a), on_porta(b)], 1), torch.cat([a, b], 1))
    assert_same(torch.stack([on_porta(a), on_porta(b)], 1), torch.stack([a, b], 1))


def test_cat_legacy_empty_and_zero_size():
    a = make((2, 3))
    for inputs, dim in (([torch.zeros(0), a], 1), ([a, torch.zeros(0, dtype=torch.int64)], 0),
                        ([torch.zeros(0), torch.zeros(0)], 3), ([a, torch.zeros(2, 0)], 1),
                        ([torch.zeros(0, 3), torch.zeros(0, 3)], 0), ([a], 0)):
        assert_same(torch.cat([on_porta(t) for t in inputs], dim), torch.cat(inputs, dim))


@pytest.mark.parametrize("inputs,dim", [
    ([], 0),
    ([torch.tensor(1.0)], 0),
    ([torch.ones(2, 3), torch.zeros(2, 0)], 0),
    ([torch.ones(2, 3), torch.ones(2, 4)], 0),
    ([torch.ones(2, 3), torch.ones(2, 3, 1)], 0),
    ([torch.ones(2, 3), torch.ones(2, 3)], 2),
])
def test_cat_errors(inputs, dim):
    raises_like(lambda ts: torch.cat(ts, dim), inputs, [t.to("porta") for t in inputs])


def test_cat_out():
    a, b = make((2, 3)), make((1, 3), torch.int64)
    expected = torch.cat([a, b], out=torch.empty(3, 3, dtype=torch.float64))
    out = torch.empty(3, 3, dtype=torch.float64, device="porta")
    got = torch.cat([on_porta(a), on_porta(b)], out=out)
    assert got is out
    assert_same(got, expected)
    with pytest.raises(RuntimeError):
        torch.cat([on_porta(a)], out=torch.empty(2, 3, dtype=torch.int64, device="porta"))


def test_cat_stack_gradients():
    a, b = make((2, 3), torch.float64), make((2, 3), torch.float64, "transposed")
    grads = []
    for device in ("cpu", "porta"):
        x = a.to(device).detach().clone().requires_grad_()
        y = b.to(device).detach().clone().requires_grad_()
        out = torch.cat([x, torch.stack([x, y]).sum(0)], 1)
        (out * torch.arange(12.0, dtype=torch.float64).reshape(2, 6).to(device)).sum().backward()
        grads.append((x.grad, y.grad))
    for got, expected in zip(grads[1], grads[0]):
        assert_same(got, expected, layout=False)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_flip_roll_tril_triu(dtype, layout):
    cpu = make((3, 4, 5), dtype, layout)
    porta = on_porta(cpu)
    for fn in (lambda t: t.flip(0), lambda t: t.flip((-1, 1)), lambda t: t.flip(()),
               lambda t: t.roll(1, 0), lambda t: t.roll((-2, 7), (2, 0)), lambda t: t.roll(5),
               lambda t: t.roll((1, 1), (1, 1)),
               lambda t: t.tril(), lambda t: t.tril(-1), lambda t: t.triu(2), lambda t: t.triu(-9),
               lambda t: t[0].tril(1), lambda t: t[0].triu()):
        assert_same(fn(porta), fn(cpu))


def test_flip_roll_tril_zero_dim_and_zero_size():
    for t in (torch.tensor(2.5), torch.zeros(0, 3), torch.zeros(3, 0, 2)):
        fns = [lambda t: t.flip(-1), lambda t: t.roll(2)]
        if t.dim():
            fns.append(lambda t: t.roll(1, 0))
        if t.dim() >= 2:
            fns += [lambda t: t.tril(), lambda t: t.triu(1)]
        for fn in fns:
            assert_same(fn(on_porta(t)), fn(t))


def test_tril_triu_in_place_and_out():
    cpu = make((4, 5), torch.float32)
    porta = on_porta(cpu)
    assert_same(porta.clone().tril_(1), cpu.clone().tril_(1))
    assert_same(porta.t().triu_(), cpu.t().triu_(), layout=False)
    out = torch.empty(4, 5, device="porta")
    assert torch.tril(porta, -1, out=out) is out
    assert_same(out, torch.tril(cpu, -1))
    torch.triu(porta, 0, out=out)
    assert_same(out, torch.triu(cpu))


@pytest.mark.parametrize("case", [
    lambda t: t.flip((0, 0)), lambda t: t.flip(3), lambda t: t.roll((1, 2), 0),
    lambda t: t.roll((), ()), lambda t: t.roll(1, 4), lambda t: t[0, 0].tril(),
    lambda t: t[0, 0].triu(), lambda t: t[0, 0, 0].roll(1, 0),
])
def test_flip_roll_tril_errors(case):
    cpu = make((2, 3, 4))
    raises_like(case, cpu, on_porta(cpu))


def test_flip_roll_tril_gradients():
    cpu = make((3, 4), torch.float64)
    for fn in (lambda t: t.flip(1), lambda t: t.roll((1, -1), (0, 1)), lambda t: t.tril(),
               lambda t: t.triu(1), lambda t: t.repeat(2, 1, 3),
               lambda t: torch.nn.functional.pad(t, (1, 2, 0, 1))):
        grads = []
        for t in (cpu, on_porta(cpu)):
            leaf = t.clone().requires_grad_()
            out = fn(leaf)
            (out * (make(tuple(out.shape), torch.float64).to(t.device) + 1)).sum().backward()
            grads.append(leaf.grad)
        assert_same(grads[1], grads[0], layout=False)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_copies_built_on_views(layout):
    cpu = make((3, 4, 5), layout=layout)
    porta = on_porta(cpu)
    for fn in (lambda t: t.clone(), lambda t: t.contiguous(), lambda t: t.repeat(2, 1, 1, 2),
               lambda t: t.to(torch.int16), lambda t: t.to(torch.float64),
               lambda t: torch.nn.functional.pad(t, (1, 2)),
               lambda t: torch.constant_pad_nd(t, (0, 1, 2, 0), 3.5),
               lambda t: torch.select_scatter(t, t[:, 0] * 0 + 1, 1, 0),
               lambda t: torch.slice_scatter(t, t[:, :2] + 1, 1, 0, 4, 2),
               lambda t: torch.diagonal_scatter(t, t.diagonal(0, 1, 2) + 1, 0, 1, 2),
               lambda t: torch.ops.aten.copy(t, t[:1])):
        assert_same(fn(porta), fn(cpu))


def test_copy_into_porta_casts_and_broadcasts():
    for dtype in DTYPES:
        cpu_dst = torch.zeros(3, 4, dtype=dtype).t()
        porta_dst = on_porta(cpu_dst)
        src = make((4, 1), torch.float32)
        cpu_dst.copy_(src)
        porta_dst.copy_(on_porta(src))
        assert_same(porta_dst, cpu_dst)
