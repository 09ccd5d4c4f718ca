"""Elementwise arithmetic and activations, computed by libporta.

porta_binary / porta_unary do PyTorch's broadcasting and type promotion;
`alpha` (a + alpha * b) is one fused multiply-add, as PyTorch's CPU kernels
compute it.
"""
from .. import _C, _tensors
from ._operands import payloads, scalar_for
from ._registry import register

NEG, EXP = _C.UNARY["neg"], _C.UNARY["exp"]
ADD, SUB, MUL, DIV = (_C.BINARY[name] for name in ("add", "sub", "mul", "div"))
MAXIMUM, GT = _C.BINARY["maximum"], _C.BINARY["gt"]
WHERE, FMA = _C.TERNARY["where"], _C.TERNARY["fma"]


def _with_alpha(op, self, other, alpha, out=None):
    a, b = payloads(self, other)
    if alpha == 1:
        return _C.binary(op, a, b, out)
    step = scalar_for(-alpha if op == SUB else alpha, b)
    return _C.ternary(FMA, b, step, a, out)


@register("add.out")
def add_out(self, other, alpha=1, out=None):
    _tensors.check_same_device(self, other, out)
    _with_alpha(ADD, self, other, alpha, _tensors.unwrap(out))
    return out


@register("div.Tensor", "div.Scalar")
def div(self, other):
    return _tensors.wrap(_C.binary(DIV, *payloads(self, other)))


@register("neg")
def neg(self):
    return _tensors.wrap(_C.unary(NEG, _tensors.unwrap(self)))


@register("exp")
def exp(self):
    return _tensors.wrap(_C.unary(EXP, _tensors.unwrap(self)))


@register("relu")
def relu(self):
    x, = payloads(self)
    return _tensors.wrap(_C.binary(MAXIMUM, x, scalar_for(0, x)))


@register("threshold_backward")
def threshold_backward(grad_output, self, threshold):
    # grad where self > threshold, else 0 (the gradient of relu for 0).
    grad, x = payloads(grad_output, self)
    keep = _C.binary(GT, x, scalar_for(threshold, x))
    return _tensors.wrap(_C.ternary(WHERE, keep, grad, scalar_for(0, grad)))
