"""Factory aten ops on porta against PyTorch CPU: empty, empty_strided, full,
zeros/ones(_like), scalar_tensor, fill, zero_, arange, linspace, logspace,
eye. Shapes, dtypes, strides and values must match."""
import pytest
import torch

import torch_porta  # noqa: F401

DTYPES = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
          torch.float16, torch.bfloat16, torch.float32, torch.float64]
NUMERIC = DTYPES[1:]
FLOATS = [torch.float16, torch.bfloat16, torch.float32, torch.float64]


def same(make, exact=True):
    """make(device) on CPU and porta: same dtype, shape, strides and values."""
    want, got = make("cpu"), make("porta")
    assert got.device.type == "porta"
    assert (got.dtype, got.shape, got.stride()) == (want.dtype, want.shape, want.stride())
    if exact:
        assert torch.equal(got.cpu(), want), (got.cpu(), want)
    else:
        torch.testing.assert_close(got.cpu(), want)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(), (0,), (3,), (2, 0, 4), (2, 3, 4)])
def test_empty_zeros_ones_full(dtype, shape):
    for make in (lambda d: torch.empty(shape, dtype=dtype, device=d).zero_(),
                 lambda d: torch.zeros(shape, dtype=dtype, device=d),
                 lambda d: torch.ones(shape, dtype=dtype, device=d),
                 lambda d: torch.full(shape, 3, dtype=dtype, device=d)):
        same(make)


@pytest.mark.parametrize("value", [7, -2, 2.5, True, 2**62 + 1])
def test_full_infers_dtype_from_the_value(value):
    same(lambda d: torch.full((2, 3), value, device=d))


def test_scalar_tensor():
    same(lambda d: torch.scalar_tensor(3, device=d))
    same(lambda d: torch.scalar_tensor(True, dtype=torch.int32, device=d))


def test_empty_strided_keeps_the_layout():
    same(lambda d: torch.empty_strided((2, 3), (1, 2), device=d).fill_(1))
    same(lambda d: torch.empty_strided((2, 0, 3), (0, 3, 1), device=d))
    same(lambda d: torch.empty_strided((), (), dtype=torch.int16, device=d).fill_(4))


def test_like_factories_keep_strides_and_dtype():
    for base in (lambda d: torch.empty(3, 4, device=d).t(),
                 lambda d: torch.empty(3, 8, dtype=torch.int32, device=d)[:, ::2],
                 lambda d: torch.empty((), dtype=torch.float64, device=d)):
        same(lambda d: torch.zeros_like(base(d)))
        same(lambda d: torch.ones_like(base(d), dtype=torch.int8))
        same(lambda d: torch.full_like(base(d), 5))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("value", [0, 1, -1, 2.75, True])
def test_fill_casts_like_cpu(dtype, value):
    if dtype == torch.uint8 and value == 2.75:
        value = 200
    same(lambda d: torch.zeros(2, 3, dtype=dtype, device=d).fill_(value))
    same(lambda d: torch.zeros(4, 6, dtype=dtype, device=d)[::2, 1::2].fill_(value))
    same(lambda d: torch.zeros(3, 4, dtype=dtype, device=d).t().fill_(value))
    same(lambda d: torch.fill(torch.zeros(2, dtype=dtype, device=d), value))


def test_fill_writes_through_views_in_place():
    base = torch.zeros(4, 4, device="porta")
    view = base[1:3, ::2]
    assert view.fill_(5) is view
    want = torch.zeros(4, 4)
    want[1:3, ::2] = 5
    assert torch.equal(base.cpu(), want)
    assert base.zero_() is base and not base.cpu().any()


def test_fill_tensor_value():
    same(lambda d: torch.zeros(3, device=d).fill_(torch.tensor(2.5, device=d)))
    same(lambda d: torch.zeros(3, dtype=torch.int64, device=d).fill_(torch.tensor(2.5)))
    with pytest.raises(RuntimeError, match="0-dimension value tensor but got tensor with 1"):
        torch.zeros(3, device="porta").fill_(torch.ones(2, device="porta"))


@pytest.mark.parametrize("dtype,value", [(torch.uint8, 300), (torch.uint8, -1.0),
                                         (torch.int8, 128), (torch.int32, 2**40),
                                         (torch.int16, float("nan")), (torch.float32, 1e300)])
def test_fill_overflow_is_an_error(dtype, value):
    with pytest.raises(RuntimeError, match="cannot be converted to type .* without overflow"):
        torch.zeros(2, dtype=dtype).fill_(value)
    with pytest.raises(RuntimeError, match="cannot be converted to type .* without overflow"):
        torch.zeros(2, dtype=dtype, device="porta").fill_(value)


def test_fill_wraps_negative_ints_into_uint8_like_cpu():
    same(lambda d: torch.zeros(2, dtype=torch.uint8, device=d).fill_(-1))


def test_negative_sizes_are_rejected():
    for make in (lambda: torch.empty(2, -1, device="porta"),
                 lambda: torch.empty_strided((2, -1), (1, 1), device="porta"),
                 lambda: torch.full((2, -1), 1.0, device="porta")):
        with pytest.raises(RuntimeError, match="negative dimension -1: \\[2, -1\\]"):
            make()


@pytest.mark.parametrize("args,kwargs", [
    ((10,), {}), ((2, 9), {}), ((2, 9, 3), {}), ((5, -5, -1.5), {}), ((0, 1, 0.1), {}),
    ((-2.5, 7), {}), ((0.5, 5, 1.5), {"dtype": torch.int64}), ((0, 0), {}),
    ((0, 300, 7), {"dtype": torch.int16}), ((0, 200, 3), {"dtype": torch.uint8}),
    ((1, 2, 0.25), {"dtype": torch.float64}), ((3,), {"dtype": torch.float32}),
])
def test_arange_matches_cpu_exactly(args, kwargs):
    same(lambda d: torch.arange(*args, device=d, **kwargs))


@pytest.mark.parametrize("dtype", FLOATS)
def test_arange_long_float_ranges(dtype):
    # CPU's vectorized kernel rounds its chunk base to the dtype, so its last
    # bits depend on the host's SIMD width; porta computes start + i * step.
    same(lambda d: torch.arange(-3, 100, 0.37, dtype=dtype, device=d), exact=False)


def test_arange_errors():
    with pytest.raises(RuntimeError, match="step must be nonzero"):
        torch.arange(0, 1, 0, device="porta")
    with pytest.raises(RuntimeError, match="inconsistent with step sign"):
        torch.arange(0, -1, 1, device="porta")
    with pytest.raises(RuntimeError, match="unsupported range"):
        torch.arange(0, float("inf"), device="porta")
    with pytest.raises(RuntimeError, match="not implemented for 'Bool'"):
        torch.arange(5, dtype=torch.bool, device="porta")


def test_arange_out():
    out = torch.empty(4, dtype=torch.int32, device="porta")
    assert torch.arange(2, 10, 2, out=out) is out
    assert torch.equal(out.cpu(), torch.arange(2, 10, 2, dtype=torch.int32))


@pytest.mark.parametrize("dtype", NUMERIC)
@pytest.mark.parametrize("start,end,steps", [(0, 1, 11), (-3, 17, 7), (2, 5, 1), (2, 5, 0),
                                             (10, 0, 6)])
def test_linspace(dtype, start, end, steps):
    if dtype == torch.uint8 and min(start, end) < 0:
        return
    same(lambda d: torch.linspace(start, end, steps, dtype=dtype, device=d))


def test_linspace_long_float_ranges():
    for dtype in FLOATS:
        same(lambda d: torch.linspace(-3.3, 7.1, 101, dtype=dtype, device=d), exact=False)
    with pytest.raises(RuntimeError, match="number of steps must be non-negative"):
        torch.linspace(0, 1, -1, device="porta")


def test_linspace_out():
    out = torch.empty(5, device="porta")
    assert torch.linspace(0, 1, 5, out=out) is out
    assert torch.equal(out.cpu(), torch.linspace(0, 1, 5))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64])
def test_logspace(dtype):
    same(lambda d: torch.logspace(-2, 2, 9, dtype=dtype, device=d), exact=False)
    same(lambda d: torch.logspace(0, 10, 11, base=2, dtype=dtype, device=d))


@pytest.mark.parametrize("dtype", DTYPES)
def test_eye(dtype):
    same(lambda d: torch.eye(3, dtype=dtype, device=d))
    same(lambda d: torch.eye(2, 4, dtype=dtype, device=d))
    same(lambda d: torch.eye(4, 2, dtype=dtype, device=d))
    same(lambda d: torch.eye(0, 3, dtype=dtype, device=d))


def test_eye_out_and_errors():
    out = torch.ones(2, 3, device="porta")
    assert torch.eye(2, 3, out=out) is out
    assert torch.equal(out.cpu(), torch.eye(2, 3))
    with pytest.raises(RuntimeError, match="n must be greater or equal to 0, got -1"):
        torch.eye(-1, device="porta")
    with pytest.raises(RuntimeError, match="m must be greater or equal to 0, got -2"):
        torch.eye(2, -2, device="porta")


def test_default_dtype_is_followed():
    torch.set_default_dtype(torch.float64)
    try:
        same(lambda d: torch.empty(2, device=d).fill_(1.5))
        same(lambda d: torch.full((2,), 1.5, device=d))
        same(lambda d: torch.arange(0, 1, 0.25, device=d))
        same(lambda d: torch.linspace(0, 1, 5, device=d))
        same(lambda d: torch.eye(2, device=d))
        same(lambda d: torch.scalar_tensor(2, device=d))
    finally:
        torch.set_default_dtype(torch.float32)
    same(lambda d: torch.full((2,), 1.5, device=d))


def test_factories_backward():
    # Factories are leaves; their results take part in autograd like CPU's.
    for device in ("cpu", "porta"):
        x = torch.full((3,), 2.0, device=device, requires_grad=True)
        (x * torch.arange(3.0, device=device)).sum().backward()
        assert torch.equal(x.grad.cpu(), torch.arange(3.0))


def test_out_of_another_shape_is_resized_like_cpu():
    empty = torch.empty(0, dtype=torch.int64, device="porta")
    assert torch.arange(5, out=empty) is empty
    assert torch.equal(empty.cpu(), torch.arange(5))
    held = torch.zeros(2, 2, device="porta")
    with pytest.warns(UserWarning, match="was resized since it had shape \\[2, 2\\]"):
        torch.linspace(0, 1, 3, out=held)
    assert held.shape == (3,) and torch.equal(held.cpu(), torch.linspace(0, 1, 3))
    eye = torch.empty(0, device="porta")
    torch.eye(2, 3, out=eye)
    assert torch.equal(eye.cpu(), torch.eye(2, 3))
    perm = torch.empty(0, dtype=torch.int64, device="porta")
    torch.randperm(6, out=perm)
    assert sorted(perm.cpu().tolist()) == list(range(6))


def test_composites_that_fill_an_empty_out():
    # mvlgamma builds its arange through arange.out on an empty tensor
    x = torch.tensor([2.5, 3.0])
    torch.testing.assert_close(torch.mvlgamma(x.to("porta"), 2).cpu(), torch.mvlgamma(x, 2))
