"""In-place and out= ops composed of several primitives (addcmul_, addcdiv_,
lerp_, clamp_, the fused optimizer steps) write their last step straight into
the destination, with no temporary and no copy: checked against PyTorch's CPU
for values and aliasing (views as destinations, a destination that overlaps
an operand, broadcast operands, dtypes the result cannot be cast to), and by
counting the kernels of an AdamW step, so the copies cannot come back
unnoticed."""
import json
from collections import Counter

import pytest
import torch

import torch_porta
from aten_compare import make


def _both(fn, *tensors):
    """fn run on CPU copies of `tensors` and on porta copies; both results
    and both sets of (possibly modified) tensors, on the CPU."""
    cpu = [t.clone() for t in tensors]
    porta = [t.to("porta") for t in tensors]
    return fn(*cpu), fn(*porta), cpu, porta


def _assert_same(fn, *tensors):
    expected, got, cpu, porta = _both(fn, *tensors)
    torch.testing.assert_close(got.cpu(), expected)
    for p, c in zip(porta, cpu, strict=True):
        torch.testing.assert_close(p.cpu(), c)


_INPLACE_OPS = {
    "addcmul_": lambda x, a, b: x.addcmul_(a, b, value=0.5),
    "addcdiv_": lambda x, a, b: x.addcdiv_(a, b.abs() + 1, value=-2),
    "lerp_scalar": lambda x, a, b: x.lerp_(a, 0.25),
    "lerp_scalar_near_end": lambda x, a, b: x.lerp_(a, 0.75),
    "lerp_tensor": lambda x, a, b: x.lerp_(a, b.sigmoid()),
    "clamp_": lambda x, a, b: x.clamp_(-1, 2),
    "clamp_tensor": lambda x, a, b: x.clamp_(a, a + b.abs()),
    "clamp_min_": lambda x, a, b: x.clamp_min_(a),
}


@pytest.mark.parametrize("name", list(_INPLACE_OPS))
def test_inplace_result_is_self_with_cpu_values(name):
    fn = _INPLACE_OPS[name]
    x, a, b = (make((4, 6), seed=i) for i in range(3))
    porta_x = x.to("porta")
    result = fn(porta_x, a.to("porta"), b.to("porta"))
    assert result is porta_x
    torch.testing.assert_close(porta_x.cpu(), fn(x.clone(), a, b))


@pytest.mark.parametrize("name", list(_INPLACE_OPS))
def test_inplace_into_views(name):
    """A transposed and a stepped view as self write only their elements."""
    fn = _INPLACE_OPS[name]
    a, b = make((6, 4), seed=1), make((6, 4), seed=2)

    def on_views(base, a, b):
        fn(base.t(), a.t(), b.t())
        fn(base[:, ::2], a[:, ::2], b[:, ::2])
        return base

    _assert_same(on_views, make((6, 4), seed=0), a, b)


@pytest.mark.parametrize("name", list(_INPLACE_OPS))
def test_inplace_with_broadcast_operands(name):
    fn = _INPLACE_OPS[name]
    _assert_same(lambda x, a, b: fn(x, a, b), make((3, 5), seed=0), make((5,), seed=1),
                 make((3, 1), seed=2))


@pytest.mark.parametrize("name", ["addcmul_", "addcdiv_", "lerp_scalar", "lerp_tensor",
                                  "clamp_tensor"])
def test_inplace_destination_overlapping_an_operand(name):
    """self shifted by one element against an operand of the same buffer
    (which PyTorch's CPU refuses): every element is computed from the
    operand's values before the write, as from a clone of it."""
    fn = _INPLACE_OPS[name]
    base, b = make((9,), seed=0), make((8,), seed=1)
    expected = base.clone()
    fn(expected[1:], base[:-1].clone(), b)
    got = base.to("porta")
    fn(got[1:], got[:-1], b.to("porta"))
    torch.testing.assert_close(got.cpu(), expected)


def test_inplace_self_operand_same_place():
    """self as every operand (each element reads only itself)."""
    _assert_same(lambda x: x.addcmul_(x, x, value=0.25), make((5, 3), seed=0))
    _assert_same(lambda x: x.addcdiv_(x, x.abs() + 1), make((5, 3), seed=0))
    _assert_same(lambda x: x.lerp_(x.flip(0), 0.3), make((5, 3), seed=0))


def test_inplace_errors_as_pytorch():
    x = torch.zeros(3, dtype=torch.int64, device="porta")
    f = torch.ones(3, device="porta")
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
        x.addcmul_(f, f)
    small = torch.zeros(3, device="porta")
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        small.addcmul_(torch.ones(2, 3, device="porta"), torch.ones(3, device="porta"))
    with pytest.raises(RuntimeError, match="expected dtype"):
        f.lerp_(torch.ones(3, dtype=torch.float64, device="porta"), 0.5)


def test_out_variants_write_into_out():
    a, b, c = (make((4, 5), seed=i) for i in range(3))
    for name, fn in [("addcmul", lambda a, b, c, out: torch.addcmul(a, b, c, value=2, out=out)),
                     ("addcdiv", lambda a, b, c, out: torch.addcdiv(a, b, c.abs() + 1, out=out)),
                     ("lerp", lambda a, b, c, out: torch.lerp(a, b, 0.6, out=out)),
                     ("clamp", lambda a, b, c, out: torch.clamp(a, -1, 1, out=out))]:
        out = torch.empty(4, 5, device="porta")
        result = fn(a.to("porta"), b.to("porta"), c.to("porta"), out)
        assert result is out, name
        torch.testing.assert_close(out.cpu(), fn(a, b, c, torch.empty(4, 5)), msg=name)
        if name == "clamp":  # PyTorch's clamp requires out in the result dtype
            continue
        # a wider out: the result is computed apart, then cast into it
        wider = torch.empty(4, 5, dtype=torch.float64, device="porta")
        fn(a.to("porta"), b.to("porta"), c.to("porta"), wider)
        expected = fn(a, b, c, torch.empty(4, 5, dtype=torch.float64))
        torch.testing.assert_close(wider.cpu(), expected, msg=name)


def _kernel_counts(fn):
    """The primitives' kernels run by fn() in eager debug mode, by name."""
    profiler = torch_porta.profile()
    with profiler:
        fn()
    events = json.loads(profiler._trace)
    events = events["traceEvents"] if isinstance(events, dict) else events
    return Counter(e["name"] for e in events if e.get("cat") == "kernel" and e.get("ph") == "X")


def _adamw_step_counts(**options):
    params = [make(shape, seed=i).to("porta").requires_grad_() for i, shape in
              enumerate([(8, 4), (8,)])]
    for i, p in enumerate(params):
        p.grad = make(p.shape, seed=10 + i).to("porta")
    optimizer = torch.optim.AdamW(params, lr=0.01, weight_decay=0.1, **options)
    optimizer.step()  # the first step makes the state
    return _kernel_counts(optimizer.step)


def test_fused_adamw_step_writes_states_in_place():
    """Per parameter: exp_avg * beta1 + grad * (1 - beta1) into exp_avg,
    likewise exp_avg_sq, the weight decay, the bias corrections and the
    update into the parameter; the only casts are the three of rank-0 step
    and correction factors, never a copy of a full tensor."""
    counts = _adamw_step_counts(fused=True)
    assert counts["cast"] == 3 * 2, counts
    assert sum(counts.values()) <= 24 * 2, counts


def test_foreach_adamw_step_has_no_copies():
    """The foreach step's lerp_, addcmul_ and addcdiv_ (PyTorch's slow
    foreach kernels call them per tensor) write into their states and
    parameters: no cast kernel at all, 13 kernels per parameter."""
    counts = _adamw_step_counts(foreach=True)
    assert counts["cast"] == 0, counts
    assert sum(counts.values()) <= 13 * 2, counts


@pytest.mark.parametrize("name", ["addcmul_", "addcdiv_", "lerp_scalar", "clamp_"])
def test_inplace_ops_run_no_copy(name):
    fn = _INPLACE_OPS[name]
    x, a, b = (make((16, 16), seed=i).to("porta") for i in range(3))
    b = b.abs() + 1
    counts = _kernel_counts(lambda: fn(x, a, b))
    assert counts["cast"] == 0, counts
