"""Loss functions: mse_loss and its gradient, composed of libporta ops."""
from .. import _C, _tensors
from ._operands import payloads, scalar_for
from ._registry import register

SUB, MUL, DIV = _C.BINARY["sub"], _C.BINARY["mul"], _C.BINARY["div"]
SUM = _C.REDUCE["sum"]
NONE, MEAN = 0, 1  # torch's Reduction enum; 2 is SUM


@register("mse_loss")
def mse_loss(self, target, reduction=MEAN):
    x, y = payloads(self, target)
    diff = _C.binary(SUB, x, y)
    squared = _C.binary(MUL, diff, diff)
    if reduction == NONE:
        return _tensors.wrap(squared)
    total = _C.reduce(SUM, squared, (), False)
    if reduction == MEAN:
        total = _C.binary(DIV, total, scalar_for(float(self.numel()), total))
    return _tensors.wrap(total)


@register("mse_loss_backward")
def mse_loss_backward(grad_output, self, target, reduction):
    grad, x, y = payloads(grad_output, self, target)
    norm = 2.0 / self.numel() if reduction == MEAN else 2.0
    scaled = _C.binary(MUL, _C.binary(SUB, x, y), scalar_for(norm, x))
    return _tensors.wrap(_C.binary(MUL, scaled, grad))
