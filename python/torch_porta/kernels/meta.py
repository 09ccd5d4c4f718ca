"""Meta kernels for the native porta ops that PyTorch gives none, so that
torch.compile can trace them with fake tensors. Without one, a porta kernel
given a fake tensor's meta storage raises NotImplementedError (buffer_of in
native/buffers.cpp) and FakeTensorMode falls back to running the real kernel
on zeros; for a porta tensor that fallback fails itself (making the zeros
reaches a porta kernel with a meta storage again), so geqrf, which PyTorch
gives no Meta kernel, needs its own. Registered only where PyTorch has no
Meta kernel of its own."""
import torch


def _register_meta(overload, kernel):
    name = f"aten::{overload}"
    if not torch._C._dispatch_has_kernel_for_dispatch_key(name, "Meta"):
        torch.library.impl(name, "Meta")(kernel)


def _geqrf(a):
    """geqrf(A) -> (a, tau): a column-major like A, as LAPACK leaves it."""
    m, n = a.shape[-2], a.shape[-1]
    packed = a.new_empty(a.shape[:-2] + (n, m)).mT
    return packed, a.new_empty(a.shape[:-2] + (min(m, n),))


_register_meta("geqrf", _geqrf)
