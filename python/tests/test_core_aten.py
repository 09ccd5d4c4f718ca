"""Core ATen coverage: which overloads porta runs with its own kernels."""
import pytest
import torch
import torch.nn.functional as F

import core_aten
import torch_porta
from aten_compare import make


def test_core_aten_is_covered():
    coverage = core_aten.coverage()
    # every overload has a porta kernel or is decomposed by PyTorch everywhere
    assert coverage["missing"] == []
    assert coverage["native"] + len(coverage["decomposed"]) == coverage["total"]


def composite_ops_with_porta_kernels():
    return sorted(name for name in torch_porta._C.aten_ops()
                  if torch._C._dispatch_has_kernel_for_dispatch_key(
                      f"aten::{name}", "CompositeImplicitAutograd"))


def test_composite_ops_are_left_to_pytorch():
    """A porta kernel for a CompositeImplicitAutograd op would hide the
    decomposition autograd differentiates. The two backward ops porta runs
    natively are differentiated by formulas that do not call them again."""
    assert composite_ops_with_porta_kernels() == ["mish_backward", "silu_backward"]


@pytest.mark.parametrize("activation", [F.silu, F.mish])
def test_second_derivatives_of_natively_run_backward_ops(activation):
    grads = {}
    for device in ("cpu", "porta"):
        x = make((5, 4)).to(device).requires_grad_()
        (first,) = torch.autograd.grad(activation(x).sum(), x, create_graph=True)
        (second,) = torch.autograd.grad((first * first).sum(), x)
        grads[device] = second.cpu()
    torch.testing.assert_close(grads["porta"], grads["cpu"])
