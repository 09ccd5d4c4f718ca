"""Matrix products: porta_matmul, with addmm's scaling done by libporta."""
from .. import _C, _tensors
from ._operands import payloads, scalar_for
from ._registry import register

MUL, ADD, FMA = _C.BINARY["mul"], _C.BINARY["add"], _C.TERNARY["fma"]


def _matmul(a, b, expected_rank, name):
    _tensors.check_same_device(a, b)
    for operand in (a, b):
        if operand.dim() != expected_rank:
            raise RuntimeError(f"{name}: expected {expected_rank}D tensors, "
                               f"got {operand.dim()}D")
    return _C.matmul(_tensors.unwrap(a), _tensors.unwrap(b))


@register("mm")
def mm(self, mat2):
    return _tensors.wrap(_matmul(self, mat2, 2, "mm"))


@register("bmm")
def bmm(self, mat2):
    return _tensors.wrap(_matmul(self, mat2, 3, "bmm"))


@register("addmm")
def addmm(self, mat1, mat2, beta=1, alpha=1):
    _tensors.check_same_device(self, mat1, mat2)
    product = _matmul(mat1, mat2, 2, "addmm")
    if alpha != 1:
        product = _C.binary(MUL, product, scalar_for(alpha, product))
    if beta == 0:  # PyTorch ignores self then, NaNs included
        return _tensors.wrap(product)
    bias, = payloads(self)
    if beta == 1:
        return _tensors.wrap(_C.binary(ADD, product, bias))
    return _tensors.wrap(_C.ternary(FMA, bias, scalar_for(beta, bias), product))
