"""Running one function on CPU tensors and on their porta copies, and
comparing what it returns (values, dtypes, shapes), the error it raises, or
the gradients autograd computes."""
import pytest
import torch
import torch_porta

ALL_DTYPES = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
              torch.float16, torch.bfloat16, torch.float32, torch.float64]
FLOAT_DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
LAYOUTS = ["contiguous", "transposed", "stepped"]


def make(shape, dtype=torch.float32, layout="contiguous", seed=0):
    """A CPU tensor of `shape` and `dtype`; "transposed" and "stepped" give
    a non-contiguous view (a transpose, a slice with step 2)."""
    shape = tuple(shape)
    if layout == "transposed" and len(shape) >= 2:
        return make(shape[:-2] + shape[-2:][::-1], dtype, seed=seed).mT
    if layout == "stepped" and shape:
        return make(shape[:-1] + (2 * shape[-1],), dtype, seed=seed)[..., ::2]
    values = torch.randn(shape, generator=torch.Generator().manual_seed(seed)) * 3
    if dtype == torch.bool:
        return values > 0
    if not dtype.is_floating_point:
        return (values.abs() if dtype == torch.uint8 else values).round().to(dtype)
    return values.to(dtype)


def to_porta(value):
    if isinstance(value, torch.Tensor):
        return value.detach().to("porta")
    if isinstance(value, (list, tuple)):
        return type(value)(to_porta(v) for v in value)
    return value


def _tensors(result):
    if isinstance(result, torch.Tensor):
        return [result]
    return [t for item in result for t in _tensors(item)]


def compare(fn, *inputs, **tolerances):
    """fn on the CPU inputs and on porta copies: the same results (dtype,
    shape, values at assert_close's default tolerances unless given), or an
    error of the same type. libporta has no NotImplementedError: an op
    PyTorch's CPU does not implement for a dtype raises its base class,
    RuntimeError, on porta."""
    try:
        expected = fn(*inputs)
    except Exception as error:
        expected_type = RuntimeError if isinstance(error, NotImplementedError) else type(error)
        with pytest.raises(expected_type):
            fn(*to_porta(inputs))
        return
    got = fn(*to_porta(inputs))
    for g, e in zip(_tensors(got), _tensors(expected), strict=True):
        assert g.device.type == "porta"
        assert (g.dtype, g.shape) == (e.dtype, e.shape)
        torch.testing.assert_close(g.cpu(), e, equal_nan=True, **tolerances)


def compare_grad(fn, *inputs):
    """fn and the gradients of every input through autograd, CPU vs porta."""
    cpu = [x.detach().clone().requires_grad_() for x in inputs]
    porta = [x.detach().to("porta").requires_grad_() for x in inputs]
    expected, got = fn(*cpu), fn(*porta)
    seed = torch.randn(expected.shape, generator=torch.Generator().manual_seed(1))
    expected.backward(seed.to(expected.dtype))
    got.backward(seed.to(got.dtype).to("porta"))
    torch.testing.assert_close(got.detach().cpu(), expected.detach())
    for g, e in zip(porta, cpu):
        torch.testing.assert_close(g.grad.cpu(), e.grad)


def assert_same_outcome_and_no_leak(run, to_device):
    """run(convert) on the CPU, then with to_device as convert: the same
    outcome (a result, or the same error; NotImplementedError on the CPU may
    be a RuntimeError on porta), and porta's memory back where it was once
    the result is gone."""
    try:
        expected = run(lambda t: t)
    except (RuntimeError, IndexError) as error:
        expected = type(error)
    with torch.no_grad():
        before = torch_porta.memory_allocated()
        try:
            got = run(to_device)
        except (RuntimeError, IndexError) as error:
            got = type(error)
        assert isinstance(got, type) == isinstance(expected, type)
        if isinstance(got, type):
            assert issubclass(got, expected if expected is not NotImplementedError else RuntimeError)
        del got
        assert torch_porta.memory_allocated() == before
