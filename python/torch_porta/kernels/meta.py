"""Meta kernels for the native porta ops that PyTorch gives none, so that
torch.compile can trace them with fake tensors (on the CPU, PyTorch runs
the real kernel on zeros instead, which a porta tensor cannot stand in
for). Registered only where PyTorch has no Meta kernel of its own."""
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
