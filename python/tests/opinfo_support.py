"""Running PyTorch's OpInfo database on porta against the CPU.

Each OpInfo of torch.testing._internal.common_methods_invocations.op_db is
run on every sample of one dtype (float32 unless told float64, bfloat16 or
complex64; op.sample_inputs on the CPU; each tensor then
copied to porta with its strides, storage offset and whole storage, and the
sample's device made porta, as if the samples were made on porta the way
PyTorch's device tests make them). The forward results (after the sample's
output_process_fn_grad, as test_compare_cpu does) are compared with the
CPU's, and where the op supports autograd, the gradients of the sum of its
floating and complex outputs (weighted by fixed pseudo-random numbers)
with respect to its floating and complex inputs. The outcome per
OpInfo is

  "pass"        every sample matches and no op fell back to the CPU;
  "fallback"    every sample matches, but some op ran through the fallback;
  "fail"        a sample differs or raises on porta (but not on the CPU);
  "unsupported" a sample needs what porta lacks by design (complex32 or
                uint16/32/64 dtypes, sparse layouts), the others match;
  "random"      a sample's result depends on the random stream, which is
                porta's own (dropout, random projections), the others match;
  "skip"        nothing to compare (random ops, no samples of the dtype, huge ones).

A result matches when it is within torch.testing.assert_close's tolerances
for its dtype; or, by the float64 rule (for float32, bfloat16 and complex64
results), when its largest error from the sample computed in float64
(complex128) on the CPU exceeds the CPU result's own by no more than the
dtype's default tolerances at the result's magnitude; or within the
loosest tolerance for the dtype the OpInfo itself declares for its tests on the
CPU, CUDA or every device (MPS ones are left out: MPS computes float32 with
fast math). The float64 rule follows PyTorch's TestDecomp, which holds an
implementation composed differently (as porta's aten ops are) to being as
accurate as the CPU kernel rather than equal to it: float32 sums in another
order differ by some ulps of their terms. The report counts, per OpInfo,
the results that needed the float64 rule or the OpInfo's tolerance.
"""
import re
import warnings

import torch
import torch.utils._pytree as pytree
from torch.testing._internal.common_device_type import precisionOverride, toleranceOverride
from torch.testing._internal.opinfo.core import DecorateInfo

import torch_porta

# Samples bigger than this are skipped (recorded), to bound the runtime.
MAX_SAMPLE_ELEMENTS = 1 << 16
# OpInfos whose results are random numbers, porta's own stream's: nothing
# to compare them with.
_RANDOM_GENERATORS = ("bernoulli", "cauchy", "exponential", "geometric", "log_normal",
                      "multinomial", "normal", "normal.in_place", "normal.number_mean",
                      "rand_like", "randint", "randint_like", "randn", "randn_like", "uniform")
# OpInfos that draw random numbers inside the op, with the reason.
_RANDOM_OPINFOS = {
    "svd_lowrank": "projects the matrix onto torch.randn columns drawn inside the op",
}
_MASK_REASON = "draws a dropout mask from the random stream, which is porta's own"
# Dropout OpInfos and their default `training`: random when training with
# 0 < p < 1 (p = 0 keeps everything, p = 1 nothing).
_DROPOUTS = {"nn.functional.dropout": True, "nn.functional.dropout2d": True,
             "nn.functional.dropout3d": True, "nn.functional.alpha_dropout": False,
             "nn.functional.feature_alpha_dropout.with_train": False,
             "nn.functional.feature_alpha_dropout.without_train": False}
# OpInfos whose randomness comes in through an argument: the same
# _random_samples (N, C, spatial axes) on both devices removes it.
_RANDOM_SAMPLES_AXES = {"nn.functional.fractional_max_pool2d": 2,
                        "nn.functional.fractional_max_pool3d": 3}
# OpInfos that need what porta lacks by design, with the reason.
_UNSUPPORTED_OPINFOS = {
    "linalg.eig": "the general (nonsymmetric) eigen solver porta lacks",
    "linalg.eigvals": "the general (nonsymmetric) eigen solver porta lacks",
}
# Arguments that PyTorch requires on the CPU whatever the device (CUDA
# raises the same error): position in (input, *args) per OpInfo.
_CPU_ARGUMENTS = {"tensor_split": (1,)}  # tensor_indices_or_sections
# Dtypes porta does not have.
_MISSING_DTYPES = (torch.complex32, torch.uint16, torch.uint32, torch.uint64)
# torch.testing.assert_close's defaults
_DEFAULT_TOLERANCES = {torch.float32: {"rtol": 1.3e-6, "atol": 1e-5},
                       torch.float64: {"rtol": 1e-7, "atol": 1e-7},
                       torch.bfloat16: {"rtol": 1.6e-2, "atol": 1e-5},
                       torch.complex64: {"rtol": 1.3e-6, "atol": 1e-5}}
_DEFAULT_TOLERANCE = _DEFAULT_TOLERANCES[torch.float32]
DTYPES = {str(d).removeprefix("torch."): d for d in _DEFAULT_TOLERANCES}
# The dtype of the float64 rule's reference for results of each dtype.
_REFERENCE_DTYPES = {torch.float32: torch.float64, torch.bfloat16: torch.float64,
                     torch.complex64: torch.complex128}


class _NotComparable(Exception):
    """A sample porta cannot run by design (status, reason)."""

    def __init__(self, status, reason):
        super().__init__(reason)
        self.status, self.reason = status, reason


def opinfo_key(op):
    return f"{op.name}.{op.variant_test_name}" if op.variant_test_name else op.name


def opinfos():
    from torch.testing._internal.common_methods_invocations import op_db
    return sorted(op_db, key=opinfo_key)


def tolerance(op, dtype=torch.float32):
    """{"rtol", "atol"[, "from"]}: the dtype's default tolerances, or the
    largest atol and rtol for the dtype of the toleranceOverrides (and atol
    of the precisionOverrides) the OpInfo declares for the CPU, CUDA or every
    device, and where they come from."""
    best, sources = dict(_DEFAULT_TOLERANCES[dtype]), []
    for info in op.decorators:
        if not isinstance(info, DecorateInfo):
            info = DecorateInfo(info)
        if info.device_type not in (None, "cpu", "cuda") or info.active_if is False:
            continue
        for decorator in info.decorators:
            if not isinstance(decorator, (precisionOverride, toleranceOverride)) or \
                    dtype not in decorator.d:
                continue
            tol = decorator.d[dtype]
            atol, rtol = (tol, 0.0) if isinstance(decorator, precisionOverride) else tol
            if atol > best["atol"] or rtol > best["rtol"]:
                best = {"rtol": max(best["rtol"], rtol), "atol": max(best["atol"], atol)}
                sources.append(f"{info.cls_name}.{info.test_name} ({info.device_type or 'any'})")
    if sources:
        best["from"] = ", ".join(sources)
    return best


def _same_layout(value, device, dtype):
    """value on device in dtype with the same strides and offset into a copy
    of its whole storage: ops such as as_strided read outside the tensor's
    own elements."""
    value = value.detach()
    if value.layout == torch.strided:
        count = value.untyped_storage().nbytes() // value.element_size()
        storage = torch.empty(0, dtype=value.dtype).set_(value.untyped_storage(), 0, (count,), (1,))
        moved = storage.to(device, dtype).as_strided(value.shape, value.stride(),
                                                     value.storage_offset()).detach()
    else:
        moved = value.to(device, dtype)
    return moved


def _to_porta(value):
    if not isinstance(value, torch.Tensor) or value.device.type != "cpu":
        return value
    moved = _same_layout(value, "porta", value.dtype)
    return moved.requires_grad_() if value.requires_grad else moved


def _to_device(value):
    """The sample's device (the CPU it was made for, named by a string or a
    torch.device) is porta on porta."""
    if isinstance(value, torch.device) and value.type == "cpu":
        return torch.device("porta")
    if isinstance(value, str) and value == "cpu":
        return "porta"
    return _to_porta(value)


def _porta_args(op, args):
    kept = _CPU_ARGUMENTS.get(opinfo_key(op), ())
    return tuple(a if i in kept else pytree.tree_map(_to_device, a) for i, a in enumerate(args))


def _porta_kwargs(kwargs):
    """The sample's kwargs with tensors on porta, and a factory's device="cpu"
    made "porta"."""
    kwargs = pytree.tree_map(_to_device, kwargs)
    if "device" in kwargs:
        kwargs["device"] = "porta"
    return kwargs


def _floating_leaves(tree):
    return [t for t in pytree.tree_leaves(tree)
            if isinstance(t, torch.Tensor) and t.requires_grad and t.is_leaf]


def _weighted_output(result):
    """The sum of the floating outputs, each weighted elementwise by fixed
    pseudo-random numbers (the same on both devices and in float64): a
    plain sum would hide gradients that only a varying upstream gradient
    exercises (normalizations', softmax's)."""
    total = None
    for i, t in enumerate(pytree.tree_leaves(result)):
        if isinstance(t, torch.Tensor) and t.requires_grad and \
                (t.dtype.is_floating_point or t.dtype.is_complex):
            real = torch.view_as_real(t.resolve_conj().resolve_neg()) if t.dtype.is_complex else t
            weights = torch.randn(real.shape, generator=torch.Generator().manual_seed(i),
                                  dtype=torch.float64).to(t.device, real.dtype)
            part = (real * weights).sum()
            total = part if total is None else total + part
    return total


def _grads(result, inputs):
    total = _weighted_output(result)
    if total is None or not inputs:
        return None
    return torch.autograd.grad(total, inputs, allow_unused=True)


def _as_accurate(got, expected, reference):
    """The float64 rule: got's largest error from the float64 (complex128)
    result exceeds the CPU's own by no more than the dtype's default
    tolerance at the result's magnitude (float32 sums in another order
    differ by some ulps of their terms, however small the element they add
    up to)."""
    if reference is None or reference.shape != expected.shape or not expected.numel():
        return False
    wide = _REFERENCE_DTYPES[expected.dtype]
    reference = reference.detach().to(wide)
    got_error = (got.to(wide) - reference).abs().nan_to_num(0).max()
    cpu_error = (expected.detach().to(wide) - reference).abs().nan_to_num(0).max()
    scale = reference.abs().nan_to_num(0, 0, 0).max()
    default = _DEFAULT_TOLERANCES[expected.dtype]
    slack = default["atol"] + default["rtol"] * scale
    same_nans = torch.equal(got.isnan(), expected.detach().isnan())
    return same_nans and bool(got_error <= cpu_error + slack)


def _leaf(reference, i):
    references = reference() if reference else None
    return pytree.tree_leaves(references)[i] if references is not None else None


def _compare_tensor(got, expected, what, tol, reference, notes):
    """Counts in notes the results that needed the float64 rule or the
    OpInfo's tolerance (tried in that order: the rule is the stricter)."""
    got = got.detach().cpu()
    try:
        torch.testing.assert_close(got, expected.detach(), equal_nan=True,
                                   msg=lambda m: f"{what}: {m}")
        return
    except AssertionError:
        if expected.dtype in _REFERENCE_DTYPES and _as_accurate(got, expected, reference()):
            notes["as_accurate_as_cpu"] = notes.get("as_accurate_as_cpu", 0) + 1
            return
        if "from" not in tol:
            raise
    torch.testing.assert_close(got, expected.detach(), equal_nan=True, rtol=tol["rtol"],
                               atol=tol["atol"], msg=lambda m: f"{what}: {m}")
    notes["within_opinfo_tolerance"] = notes.get("within_opinfo_tolerance", 0) + 1


def _compare(got, expected, what, tol, reference=None, values=True, notes=None):
    """reference() gives the float64 results (same structure), lazily."""
    got_leaves, expected_leaves = pytree.tree_leaves(got), pytree.tree_leaves(expected)
    if len(got_leaves) != len(expected_leaves):
        raise AssertionError(f"{what}: {len(got_leaves)} results on porta, "
                             f"{len(expected_leaves)} on the CPU")
    for i, (g, e) in enumerate(zip(got_leaves, expected_leaves)):
        if isinstance(e, torch.Tensor):
            if not isinstance(g, torch.Tensor) or g.device.type != "porta":
                raise AssertionError(f"{what}: expected a porta tensor, got {g!r:.60}")
            if not values:  # uninitialized memory: only the metadata is defined
                if (g.shape, g.dtype, g.stride()) != (e.shape, e.dtype, e.stride()):
                    raise AssertionError(f"{what}: {g.shape} {g.dtype} {g.stride()} on porta, "
                                         f"{e.shape} {e.dtype} {e.stride()} on the CPU")
                continue
            _compare_tensor(g, e, what, tol, lambda: _leaf(reference, i), notes)
        elif isinstance(e, float) and isinstance(g, float):
            torch.testing.assert_close(g, e, equal_nan=True)
        elif g != e:
            raise AssertionError(f"{what}: {g!r} on porta, {e!r} on the CPU")


def _random_sample(key, sample):
    """Why the sample's result depends on the random stream, or None."""
    if key in _RANDOM_OPINFOS:
        return _RANDOM_OPINFOS[key]
    if key in _DROPOUTS:
        p = sample.kwargs.get("p", 0.5)
        if sample.kwargs.get("training", _DROPOUTS[key]) and 0 < p < 1:
            return f"training with p = {p} {_MASK_REASON}"
    if key == "nn.functional.rrelu" and sample.kwargs.get("training", False) and \
            sample.kwargs.get("lower", 1 / 8) < sample.kwargs.get("upper", 1 / 3):
        return "training draws the negative slopes from the random stream, which is porta's own"
    if key == "nn.functional.scaled_dot_product_attention" and \
            sample.kwargs.get("dropout_p", 0.0) > 0:
        return f"dropout_p > 0 {_MASK_REASON}"
    if key == "nn.functional.multi_head_attention_forward" and sample.args[9] > 0 and \
            sample.kwargs.get("training", True):
        return f"dropout_p > 0 in training {_MASK_REASON}"
    return None


def _not_comparable(op, sample, expected):
    """Raises _NotComparable when porta cannot run the sample by design."""
    reason = _random_sample(opinfo_key(op), sample)
    if reason:
        raise _NotComparable("random", reason)
    for t in pytree.tree_leaves((sample.input, sample.args, sample.kwargs, expected)):
        if isinstance(t, torch.Tensor) and t.dtype in _MISSING_DTYPES:
            raise _NotComparable("unsupported", f"porta has no dtype {t.dtype}")
        if isinstance(t, torch.Tensor) and t.layout != torch.strided:
            raise _NotComparable("unsupported", f"porta tensors are strided, not {t.layout}")


def _derandomized(op, sample):
    """The sample with its random numbers passed in (fractional max pooling's
    _random_samples), so that both devices use the same."""
    axes = _RANDOM_SAMPLES_AXES.get(opinfo_key(op))
    if axes is None:
        return sample
    x = sample.input
    batch = 1 if x.dim() == axes + 1 else x.shape[0]
    sample.kwargs["_random_samples"] = torch.rand(batch, x.shape[-axes - 1], axes, dtype=x.dtype)
    return sample


def _widened(value):
    """A tensor of the float64 rule's dtypes in its reference dtype."""
    if isinstance(value, torch.Tensor) and value.dtype in _REFERENCE_DTYPES:
        wide = _REFERENCE_DTYPES[value.dtype]
        return _same_layout(value, "cpu", wide).requires_grad_(value.requires_grad)
    return value


def _run(op, sample, args, kwargs, backward):
    """(the op's result, it after output_process_fn_grad, the gradients)."""
    result = op(*args, **kwargs)
    processed = sample.output_process_fn_grad(result)
    grads = _grads(processed, _floating_leaves(args)) if backward else None
    return result, processed, grads


def _run_sample(op, sample, backward, tol, notes):
    """Raises on a mismatch; returns False when the CPU itself rejects it."""
    sample = _derandomized(op, sample)
    args = (sample.input, *sample.args)
    leaves = pytree.tree_leaves((args, sample.kwargs))
    if not any(isinstance(v, (torch.Tensor, torch.device)) or
               (isinstance(v, str) and v == "cpu") for v in leaves) \
            and "device" not in sample.kwargs:
        return False  # a factory on the default device: nothing runs on porta
    try:
        result, expected, expected_grads = _run(op, sample, args, sample.kwargs, backward)
    except Exception:
        return False  # not a valid call: nothing to compare
    _not_comparable(op, sample, result)
    reference_cache = []

    def reference(part):
        if not reference_cache:
            try:
                reference_cache.append(_run(op, sample, pytree.tree_map(_widened, args),
                                            pytree.tree_map(_widened, sample.kwargs), backward))
            except Exception:
                reference_cache.append((None, None, None))
        return reference_cache[0][part]

    porta_args = _porta_args(op, args)
    try:
        got = sample.output_process_fn_grad(op(*porta_args, **_porta_kwargs(sample.kwargs)))
    except TypeError as error:  # an intermediate in a dtype porta lacks
        missing = re.fullmatch(r"porta does not support dtype (torch\.\w+)", str(error))
        if missing and missing[1] in map(str, _MISSING_DTYPES):
            raise _NotComparable("unsupported", f"porta has no dtype {missing[1]}") from error
        raise
    _compare(got, expected, "forward", tol, lambda: reference(1), values="empty" not in op.name,
             notes=notes)
    if expected_grads is not None:
        _compare(_grads(got, _floating_leaves(porta_args)), expected_grads, "backward", tol,
                 lambda: reference(2), notes=notes)
    return True


def _numel(sample):
    return sum(t.numel() for t in pytree.tree_leaves((sample.input, sample.args, sample.kwargs))
               if isinstance(t, torch.Tensor))


def run_opinfo(op, dtype=torch.float32):
    """{"status": ..., "fallbacks": [...], "reason": ...} for one OpInfo's
    samples of `dtype`."""
    key = opinfo_key(op)
    if key in _RANDOM_GENERATORS:
        return {"status": "random", "reason": "its results are random numbers, drawn from "
                                              "porta's own random stream: nothing to compare"}
    if dtype not in op.supported_dtypes("cpu"):
        return {"status": "skip", "reason": f"no {dtype} on the CPU"}
    if key in _UNSUPPORTED_OPINFOS:
        return {"status": "unsupported", "reason": f"needs {_UNSUPPORTED_OPINFOS[key]}"}
    backward = op.supports_autograd and dtype in op.supported_backward_dtypes("cpu")
    tol = tolerance(op, dtype)
    torch.manual_seed(0)
    samples = list(op.sample_inputs("cpu", dtype, requires_grad=backward))
    ran, skipped_big, not_comparable, notes = 0, 0, {}, {}
    torch_porta.reset_metrics()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for sample in samples:
                if _numel(sample) > MAX_SAMPLE_ELEMENTS:
                    skipped_big += 1
                    continue
                try:
                    ran += _run_sample(op, sample, backward, tol, notes)
                except _NotComparable as reason:
                    not_comparable.setdefault(reason.status, {}).setdefault(reason.reason, 0)
                    not_comparable[reason.status][reason.reason] += 1
    except Exception as error:
        message = re.sub(r"\s+", " ", str(error).strip())[:300]
        return {"status": "fail", "fallbacks": sorted(torch_porta.metrics()["fallbacks"]),
                "reason": f"{type(error).__name__}: {message}"}
    fallbacks = sorted(torch_porta.metrics()["fallbacks"])
    result = {"samples": ran}
    for status in ("unsupported", "random"):
        if status in not_comparable:
            reasons = not_comparable[status]
            result.update(status=status, reason="; ".join(
                f"{count} samples: {why}" for why, count in reasons.items()))
            break
    else:
        if not ran:
            reason = f"{skipped_big} samples over {MAX_SAMPLE_ELEMENTS} elements" \
                if skipped_big else "no sample that runs on porta and that the CPU accepts"
            return {"status": "skip", "reason": reason}
        result["status"] = "fallback" if fallbacks else "pass"
    if notes.get("within_opinfo_tolerance"):
        result["tolerance"] = tol
    result.update(notes)
    if fallbacks:
        result["fallbacks"] = fallbacks
    if skipped_big:
        result["skipped_big_samples"] = skipped_big
    return result

