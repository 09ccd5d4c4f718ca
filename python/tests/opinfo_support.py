"""Running PyTorch's OpInfo database on porta against the CPU.

Each OpInfo of torch.testing._internal.common_methods_invocations.op_db is
run on its float32 samples (op.sample_inputs on the CPU, each tensor then
copied to porta): the forward results are compared with the CPU's at
torch.testing.assert_close's default tolerances, and where the op supports
autograd, the gradients of the sum of its floating outputs with respect to
its floating inputs. The outcome per OpInfo is

  "pass"      every sample matches and no op fell back to the CPU;
  "fallback"  every sample matches, but some op ran through the fallback;
  "fail"      a sample differs or raises on porta (but not on the CPU);
  "skip"      nothing to compare (random ops, no float32 samples, huge ones).
"""
import warnings

import torch
import torch.utils._pytree as pytree

import torch_porta

# Samples bigger than this are skipped (recorded), to bound the runtime.
MAX_SAMPLE_ELEMENTS = 1 << 16
MAX_SAMPLES = 12
# Ops whose results are random numbers: no CPU reference to compare with.
_RANDOM_WORDS = ("rand", "normal", "bernoulli", "multinomial", "uniform", "dropout",
                 "exponential", "cauchy", "geometric", "log_normal", "poisson")


def opinfo_key(op):
    return f"{op.name}.{op.variant_test_name}" if op.variant_test_name else op.name


def opinfos():
    from torch.testing._internal.common_methods_invocations import op_db
    return sorted(op_db, key=opinfo_key)


def _to_porta(value):
    if isinstance(value, torch.Tensor) and value.device.type == "cpu":
        moved = value.detach().to("porta")
        return moved.requires_grad_() if value.requires_grad else moved
    return value


def _porta_kwargs(kwargs):
    """The sample's kwargs with tensors on porta, and a factory's device="cpu"
    made "porta"."""
    kwargs = pytree.tree_map(_to_porta, kwargs)
    if "device" in kwargs:
        kwargs["device"] = "porta"
    return kwargs


def _floating_leaves(tree):
    return [t for t in pytree.tree_leaves(tree)
            if isinstance(t, torch.Tensor) and t.requires_grad and t.is_leaf]


def _summed_output(result):
    total = None
    for t in pytree.tree_leaves(result):
        if isinstance(t, torch.Tensor) and t.requires_grad and t.dtype.is_floating_point:
            part = t.sum()
            total = part if total is None else total + part
    return total


def _grads(result, inputs):
    total = _summed_output(result)
    if total is None or not inputs:
        return None
    return torch.autograd.grad(total, inputs, allow_unused=True)


def _compare(got, expected, what, values=True):
    got_leaves, expected_leaves = pytree.tree_leaves(got), pytree.tree_leaves(expected)
    if len(got_leaves) != len(expected_leaves):
        raise AssertionError(f"{what}: {len(got_leaves)} results on porta, "
                             f"{len(expected_leaves)} on the CPU")
    for g, e in zip(got_leaves, expected_leaves):
        if isinstance(e, torch.Tensor):
            if not isinstance(g, torch.Tensor) or g.device.type != "porta":
                raise AssertionError(f"{what}: expected a porta tensor, got {g!r:.60}")
            if not values:  # uninitialized memory: only the metadata is defined
                if (g.shape, g.dtype, g.stride()) != (e.shape, e.dtype, e.stride()):
                    raise AssertionError(f"{what}: {g.shape} {g.dtype} {g.stride()} on porta, "
                                         f"{e.shape} {e.dtype} {e.stride()} on the CPU")
                continue
            torch.testing.assert_close(g.detach().cpu(), e.detach(), equal_nan=True,
                                       msg=lambda m: f"{what}: {m}")
        elif isinstance(e, float) and isinstance(g, float):
            torch.testing.assert_close(g, e, equal_nan=True)
        elif g != e:
            raise AssertionError(f"{what}: {g!r} on porta, {e!r} on the CPU")


def _run_sample(op, sample, backward):
    """Raises on a mismatch; returns False when the CPU itself rejects it."""
    args = (sample.input, *sample.args)
    try:
        expected = op(*args, **sample.kwargs)
        expected_grads = _grads(expected, _floating_leaves(args)) if backward else None
    except Exception:
        return False  # not a valid call: nothing to compare
    porta_args = pytree.tree_map(_to_porta, args)
    got = op(*porta_args, **_porta_kwargs(sample.kwargs))
    _compare(got, expected, "forward", values="empty" not in op.name)
    if expected_grads is not None:
        _compare(_grads(got, _floating_leaves(porta_args)), expected_grads, "backward")
    return True


def _numel(sample):
    return sum(t.numel() for t in pytree.tree_leaves((sample.input, sample.args, sample.kwargs))
               if isinstance(t, torch.Tensor))


def run_opinfo(op):
    """{"status": ..., "fallbacks": [...], "reason": ...} for one OpInfo."""
    key = opinfo_key(op)
    if any(word in key for word in _RANDOM_WORDS):
        return {"status": "skip", "reason": "random numbers: no CPU reference"}
    if torch.float32 not in op.supported_dtypes("cpu"):
        return {"status": "skip", "reason": "no float32 on the CPU"}
    backward = op.supports_autograd
    torch.manual_seed(0)
    samples = list(op.sample_inputs("cpu", torch.float32, requires_grad=backward))
    ran, skipped_big = 0, 0
    torch_porta.reset_metrics()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for sample in samples:
                if ran == MAX_SAMPLES:
                    break
                if _numel(sample) > MAX_SAMPLE_ELEMENTS:
                    skipped_big += 1
                    continue
                ran += _run_sample(op, sample, backward)
    except Exception as error:
        return {"status": "fail", "fallbacks": sorted(torch_porta.metrics()["fallbacks"]),
                "reason": f"{type(error).__name__}: {str(error).strip().splitlines()[0][:300]}"}
    fallbacks = sorted(torch_porta.metrics()["fallbacks"])
    if not ran:
        reason = f"{skipped_big} samples over {MAX_SAMPLE_ELEMENTS} elements" if skipped_big \
            else "no sample the CPU accepts"
        return {"status": "skip", "reason": reason}
    result = {"status": "fallback" if fallbacks else "pass", "samples": ran}
    if fallbacks:
        result["fallbacks"] = fallbacks
    if skipped_big:
        result["skipped_big_samples"] = skipped_big
    return result


def core_aten_coverage():
    """{"total", "native", "missing"}: the Core ATen overloads (torch.Tag.core)
    and which of them have a porta kernel (libporta's or a glue kernel; the
    fallback does not count)."""
    core = []
    for full_name in torch._C._dispatch_get_all_op_names():
        if not full_name.startswith("aten::"):
            continue
        packet, _, overload = full_name[len("aten::"):].partition(".")
        op = getattr(getattr(torch.ops.aten, packet, None), overload or "default", None)
        if op is not None and torch.Tag.core in op.tags:
            core.append(full_name)
    missing = sorted(name for name in core
                     if not torch._C._dispatch_has_kernel_for_dispatch_key(name, "PrivateUse1"))
    return {"total": len(core), "native": len(core) - len(missing), "missing": missing}
