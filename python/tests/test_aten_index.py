"""Index aten ops (libporta's src/aten/index/) against PyTorch's CPU."""
import pytest
import torch

import torch_porta  # noqa: F401

DTYPES = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
          torch.float16, torch.bfloat16, torch.float32, torch.float64]
FLOATS = [torch.float16, torch.bfloat16, torch.float32, torch.float64]


def make(shape, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.rand(shape, generator=g) > 0.5
    if dtype.is_floating_point:
        return torch.randn(shape, generator=g).to(dtype)
    low = 0 if dtype == torch.uint8 else -50
    return torch.randint(low, 50, shape, generator=g).to(dtype)


def porta(t):
    return t.to("porta")


def same(fn, *args):
    """fn on CPU tensors and on their porta copies: equal results (or the
    same exception type)."""
    try:
        expected = fn(*args)
    except Exception as cpu_error:  # noqa: BLE001
        with pytest.raises(type(cpu_error)):
            fn(*[porta(a) if isinstance(a, torch.Tensor) else a for a in args])
        return None
    got = fn(*[porta(a) if isinstance(a, torch.Tensor) else a for a in args])
    assert got.device.type == "porta"
    assert got.dtype == expected.dtype and got.shape == expected.shape
    torch.testing.assert_close(got.cpu(), expected, equal_nan=True)
    return got


def transposed(t):
    """A non-contiguous tensor with t's values."""
    return t.t().contiguous().t() if t.dim() == 2 else t


def grads_match(fn, x, *rest):
    """d(fn(x) * w)/dx on both devices."""
    cpu = x.clone().requires_grad_()
    out = fn(cpu, *rest)
    w = make(out.shape, out.dtype, seed=7)
    out.backward(w)
    dev = porta(x).requires_grad_()
    out_p = fn(dev, *[porta(a) if isinstance(a, torch.Tensor) else a for a in rest])
    out_p.backward(porta(w))
    torch.testing.assert_close(dev.grad.cpu(), cpu.grad)


# ---- index_select, gather ----

@pytest.mark.parametrize("dtype", DTYPES)
def test_index_select_dtypes(dtype):
    x = make((4, 5), dtype)
    for dim, index in [(0, [3, 0, 0, 2]), (1, [4, 1]), (-1, []), (0, 2)]:
        same(lambda t, i: t.index_select(dim, i), x, torch.tensor(index))
    same(lambda t, i: t.index_select(1, i), transposed(x), torch.tensor([1, 3], dtype=torch.int32))
    same(lambda t, i: t[:, ::2].index_select(1, i), x, torch.tensor([2, 0]))


def test_index_select_edges_and_errors():
    same(lambda t, i: t.index_select(0, i), torch.tensor(3.0), torch.tensor([0]))
    same(lambda t, i: t.index_select(0, i), torch.zeros(0, 3), torch.tensor([], dtype=torch.long))
    same(lambda t, i: t.index_select(0, i), torch.ones(3, 2), torch.tensor([3]))
    same(lambda t, i: t.index_select(0, i), torch.ones(3, 2), torch.tensor([-1]))
    same(lambda t, i: t.index_select(0, i), torch.ones(3, 2), torch.tensor([1.0]))


def test_index_select_backward():
    grads_match(lambda t, i: t.index_select(0, i), make((4, 3), torch.float32),
                torch.tensor([1, 1, 3]))


@pytest.mark.parametrize("dtype", DTYPES)
def test_gather_dtypes(dtype):
    x = make((3, 4), dtype)
    same(lambda t, i: torch.gather(t, 1, i), x, torch.tensor([[0, 3], [1, 1], [2, 0]]))
    same(lambda t, i: torch.gather(t, 0, i), transposed(x), torch.tensor([[2, 0, 1, 1]]))


def test_gather_edges_errors_backward():
    same(lambda t, i: torch.gather(t, 0, i), torch.tensor(2.0), torch.tensor(0))
    same(lambda t, i: torch.gather(t, 1, i), torch.ones(2, 0), torch.zeros(2, 0, dtype=torch.long))
    same(lambda t, i: torch.gather(t, 0, i), torch.ones(3, 2), torch.tensor([[5, 0]]))
    same(lambda t, i: torch.gather(t, 0, i), torch.ones(3, 2), torch.tensor([[0, 0, 0]]))
    grads_match(lambda t, i: torch.gather(t, 1, i), make((3, 4), torch.float64),
                torch.tensor([[0, 0], [3, 1], [2, 2]]))


# ---- scatter family ----

INDEX = torch.tensor([[0, 2, 1], [2, 2, 0]])


@pytest.mark.parametrize("dtype", DTYPES)
def test_scatter_src_and_value(dtype):
    x, src = make((3, 4), dtype), make((2, 3), dtype, seed=1)
    same(lambda t, i, s: t.scatter(0, i, s), x, INDEX.clamp(max=1) * 2, src)
    same(lambda t, i: t.scatter(1, i, 1), x, INDEX)
    same(lambda t, i, s: t.clone().scatter_(1, i, s), transposed(x), INDEX, src)
    same(lambda t, i: t.clone().scatter_(0, i, 0), x, INDEX)


@pytest.mark.parametrize("dtype", [d for d in DTYPES if d != torch.bool])
@pytest.mark.filterwarnings("ignore:The reduce argument of torch.scatter")
def test_scatter_add_and_reduce(dtype):
    x, src = make((3, 4), dtype), make((2, 3), dtype, seed=1)
    if dtype.is_floating_point:
        src = src.abs() + 0.5  # keeps products of halves in range
    same(lambda t, i, s: t.scatter_add(1, i, s), x, INDEX, src)
    same(lambda t, i, s: t.clone().scatter_add_(0, i, s), x, INDEX, src)
    for reduce in ["sum", "prod", "amax", "amin", "mean"]:
        for include_self in [True, False]:
            same(lambda t, i, s: t.scatter_reduce(1, i, s, reduce, include_self=include_self),
                 x, INDEX, src)
            same(lambda t, i, s: t.clone().scatter_reduce_(1, i, s, reduce,
                                                            include_self=include_self),
                 transposed(x), INDEX, src)
    for reduce in ["add", "multiply"]:
        same(lambda t, i, s: t.scatter(1, i, s, reduce=reduce), x, INDEX, src)
        same(lambda t, i: t.clone().scatter_(1, i, 2, reduce=reduce), x, INDEX)


def test_scatter_errors_and_backward():
    x = torch.ones(3, 4)
    same(lambda t, i, s: t.scatter(0, i, s), x, torch.tensor([[3]]), torch.ones(1, 1))
    same(lambda t, i, s: t.scatter(0, i, s), x, torch.tensor([[0]]), torch.ones(1, 1).double())
    same(lambda t, i, s: t.scatter_reduce(0, i, s, "foo"), x, torch.tensor([[0]]), torch.ones(1, 1))
    same(lambda t, i, s: t.scatter(0, i, s), torch.ones(0, 2), torch.zeros(0, 2, dtype=torch.long),
         torch.ones(0, 2))
    src = make((2, 3), torch.float32, seed=1)
    grads_match(lambda t, i, s: t.scatter(1, i, s), make((3, 4), torch.float32), INDEX, src)
    grads_match(lambda t, i, s: t.scatter_add(1, i, s), make((3, 4), torch.float32), INDEX, src)
    grads_match(lambda s, t, i: t.scatter_add(1, i, s), src, make((3, 4), torch.float32), INDEX)


@pytest.mark.parametrize("dtype", [d for d in DTYPES if d != torch.bool])
def test_index_add(dtype):
    x, source = make((4, 3), dtype), make((2, 3), dtype, seed=1)
    same(lambda t, i, s: t.index_add(0, i, s), x, torch.tensor([3, 3]), source)
    same(lambda t, i, s: t.clone().index_add_(1, i, s, alpha=2), transposed(x), torch.tensor([2, 0, 2]),
         make((4, 3), dtype, seed=2))
    same(lambda t, i, s: t.index_add(0, i, s), x, torch.tensor([4, 0]), source)


# ---- advanced indexing ----

@pytest.mark.parametrize("dtype", DTYPES)
def test_index_tensor_dtypes(dtype):
    x = make((3, 4, 5), dtype)
    i, j = torch.tensor([[0, 2], [1, -1]]), torch.tensor([3, -4])
    same(lambda t, a: t[a], x, i)
    same(lambda t, a, b: t[a, b], x, i, j)
    same(lambda t, a, b: t[:, a, b], x, i, j)
    same(lambda t, a, b: t[a, :, b], x, i.int(), j)
    same(lambda t, a: t[..., a], x[:, ::2].transpose(0, 2), j.abs() % 2)
    same(lambda t, m: t[m], x, make((3, 4), torch.bool, seed=3))
    same(lambda t, m: t[:, m], x, make((4,), torch.bool, seed=4))


def test_index_tensor_edges_errors_backward():
    x = make((3, 4), torch.float32)
    same(lambda t, a: t[a], x, torch.tensor([], dtype=torch.long))
    same(lambda t, a: t[a], torch.ones(0, 2), torch.tensor([], dtype=torch.long))
    same(lambda t, a: t[a], x, torch.tensor(2))
    same(lambda t, a: t[a], x, torch.tensor([3]))
    same(lambda t, a: t[:, a], x, torch.tensor([-5]))
    same(lambda t, a, b: t[a, b], x, torch.tensor([0, 1]), torch.tensor([0, 1, 2]))
    same(lambda t, a, b, c: t[a, b, c], x, torch.tensor([0]), torch.tensor([0]), torch.tensor([0]))
    same(lambda t, m: t[m], x, torch.tensor([True, False]))
    same(lambda t, a: t[a], x, torch.tensor([1.0]))
    grads_match(lambda t, a: t[a], x, torch.tensor([0, 2, 0]))
    grads_match(lambda t, a, b: t[a, b], x, torch.tensor([0, 2, 0]), torch.tensor([1]))


@pytest.mark.parametrize("dtype", DTYPES)
def test_index_put(dtype):
    x = make((3, 4, 5), dtype)
    i, j = torch.tensor([[0, 2], [1, 0]]), torch.tensor([3, 1])
    v = make((2, 2, 5), dtype, seed=1)
    same(lambda t, a, b: t.index_put((a, b), v[:, :, 0]), x, i, j)
    same(lambda t, a, val: t.clone().index_put_((a,), val), x, i, v[:, :, None, 0])
    same(lambda t, a, b: t.index_put((None, a, b), torch.tensor(1).to(t.device, dtype)), x, i, j)
    same(lambda t, a, b: t.clone().index_put_((a, None, b), v[0, 0].to(t.device)),
         x.transpose(1, 2).contiguous().transpose(1, 2), i, j)
    same(lambda t, m: t.clone().index_put_((m,), torch.tensor(0).to(t.device, dtype)),
         x, make((3, 4), torch.bool, seed=5))
    if dtype != torch.bool:
        same(lambda t, a: t.index_put((a,), torch.ones((), dtype=dtype).to(t.device),
                                      accumulate=True), x, torch.tensor([0, 0, 2, 0]))


def test_index_put_writes_through_views_and_errors():
    base = make((4, 6), torch.float32)
    for view in [lambda t: t[:, ::2], lambda t: t.t()]:
        def put(t):
            view(t).index_put_((torch.tensor([1, 0]).to(t.device),), torch.tensor(9.0).to(t.device))
            return t
        same(put, base.clone())
    x = torch.ones(3, 4)
    same(lambda t, a: t.index_put((a,), torch.ones(5).to(t.device)), x, torch.tensor([0, 1]))
    same(lambda t, a: t.index_put((a,), torch.ones(4).double().to(t.device)), x, torch.tensor([0]))
    same(lambda t, a: t.index_put((a,), torch.ones(4).to(t.device)), x, torch.tensor([7]))


# ---- masked_fill, nonzero ----

@pytest.mark.parametrize("dtype", DTYPES)
def test_masked_fill(dtype):
    x, mask = make((3, 4), dtype), make((4,), torch.bool, seed=2)
    same(lambda t, m: t.masked_fill(m, 1), x, mask)
    same(lambda t, m: t.masked_fill(m, 2.5), x, mask)
    same(lambda t, m: t.masked_fill(m, torch.tensor(3, dtype=dtype).to(t.device)), x, mask)
    same(lambda t, m: t.clone().masked_fill_(m, 0), transposed(x), make((3, 4), torch.bool))
    same(lambda t, m: t.masked_fill(m, 1), x[0], make((2, 4), torch.bool))


def test_masked_fill_errors_and_backward():
    x = torch.ones(3, 4)
    same(lambda t, m: t.masked_fill(m, 1), x, torch.ones(4, dtype=torch.long))
    same(lambda t, m: t.masked_fill(m, torch.ones(2).to(t.device)), x, torch.ones(4, dtype=torch.bool))
    same(lambda t, m: t.masked_fill_(m, 1), torch.ones(4), torch.ones(2, 4, dtype=torch.bool))
    grads_match(lambda t, m: t.masked_fill(m, 0.5), make((3, 4), torch.float32),
                make((3, 4), torch.bool))


@pytest.mark.parametrize("dtype", DTYPES)
def test_nonzero(dtype):
    same(torch.nonzero, make((3, 4), dtype))
    same(torch.nonzero, transposed(make((3, 4), dtype)))
    same(torch.nonzero, torch.zeros(0, 3, dtype=dtype))
    same(torch.nonzero, torch.ones((), dtype=dtype))
    same(torch.nonzero, torch.zeros(5, dtype=dtype))


# ---- embedding ----

@pytest.mark.parametrize("dtype", FLOATS)
def test_embedding(dtype):
    weight = make((6, 3), dtype)
    for indices in [torch.tensor([[0, 5], [2, 2]]), torch.tensor(4), torch.tensor([], dtype=torch.long),
                    torch.tensor([1, 3], dtype=torch.int32)]:
        same(torch.nn.functional.embedding, indices, weight)
    same(torch.nn.functional.embedding, torch.tensor([6]), weight)


@pytest.mark.parametrize("padding_idx", [None, 2, -1])
@pytest.mark.parametrize("scale", [False, True])
def test_embedding_backward(padding_idx, scale):
    indices = torch.tensor([[0, 2, 2], [5, 2, 0]])
    grads_match(lambda w, i: torch.nn.functional.embedding(i, w, padding_idx=padding_idx,
                                                           scale_grad_by_freq=scale),
                make((6, 4), torch.float32), indices)


def test_gather_scatter_empty_index_any_dtype_and_zero_dim():
    """PyTorch checks neither an empty index's dtype nor its shape, and reads
    0-d operands as 1-d (OpInfo gather's samples)."""
    x = make((5,), torch.float32)
    for index in (torch.zeros(0, dtype=torch.uint8), torch.zeros(2, 0, dtype=torch.uint8)):
        same(lambda t, i: torch.gather(t, 0, i), x, index)
        same(lambda t, i: t.scatter(0, i, 7.0), x, index)
        same(lambda t, i: t.clone().scatter_add_(0, i, torch.ones(i.shape, device=t.device)),
             x, index)
    scalar = torch.tensor(3.0)
    same(lambda t, i: torch.gather(t, 0, i), scalar, torch.tensor([0, 0]))
    same(lambda t, i: torch.gather(t, -1, i), scalar, torch.tensor(0))
    same(lambda t, i: torch.gather(t, 0, i), x, torch.tensor(2))
    same(lambda t, i: t.scatter(0, i, torch.tensor(5.0, device=t.device)), scalar, torch.tensor(0))
    same(lambda t, i: t.clone().scatter_add_(0, i, torch.tensor([2.0, 3.0], device=t.device)),
         scalar, torch.tensor([0, 0]))
    same(lambda t, i: torch.gather(t, 0, i), x, torch.tensor([1], dtype=torch.uint8))  # error
    grads_match(lambda t, i: torch.gather(t, 0, i), scalar.double(), torch.tensor([0, 0]))
    grads_match(lambda t, i: torch.gather(t, 0, i), x.double(), torch.zeros(0, dtype=torch.uint8))
