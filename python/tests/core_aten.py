"""How much of PyTorch's Core ATen op set (the overloads tagged
torch.Tag.core) porta covers, and how."""
import torch


def _overload(full_name):
    packet, _, overload = full_name[len("aten::"):].partition(".")
    return getattr(getattr(torch.ops.aten, packet, None), overload or "default", None)


def coverage():
    """{"total", "native", "decomposed", "missing"}: Core ATen overloads with
    a porta kernel (libporta's or a glue kernel; the CPU fallback does not
    count); those PyTorch itself defines as compositions of other ops
    (CompositeImplicitAutograd: no device has a kernel for them, PyTorch
    decomposes them on every device); and the rest, which fall back."""
    core = []
    for full_name in torch._C._dispatch_get_all_op_names():
        op = _overload(full_name) if full_name.startswith("aten::") else None
        if op is not None and torch.Tag.core in op.tags:
            core.append(full_name)
    native = [n for n in core if torch._C._dispatch_has_kernel_for_dispatch_key(n, "PrivateUse1")]
    decomposed = [n for n in core if n not in native and
                  torch._C._dispatch_has_kernel_for_dispatch_key(n, "CompositeImplicitAutograd")]
    missing = sorted(set(core) - set(native) - set(decomposed))
    return {"total": len(core), "native": len(native), "decomposed": sorted(decomposed),
            "missing": missing}
