/* huber_loss and smooth_l1_loss (quadratic near zero, linear beyond),
 * composed from primitives as PyTorch has no decomposition for them, with
 * their out= variants and the backward ops autograd calls. */
#include "aten/nn/loss.h"
#include "aten/dispatch/scope.h"
#include "aten/dispatch/op_reuse.h"
#include "core/status.h"
#include "runtime/tensor.h"

/* The per-element loss of both: with z = |self - target|, a quadratic
 * `quadratic_scale` * z^2 below `width`, linear `linear_scale` * (z -
 * width / 2) above (huber: 1/2 and delta; smooth_l1: 1 / (2 beta) and 1). */
static porta_status *robust_loss(const char *op, const porta_value *args, double width,
                                 double quadratic_scale, double linear_scale,
                                 aten_results *results) {
    const porta_tensor *x = args[0].tensor, *target = args[1].tensor;
    PORTA_TRY(nn_check_reduction(op, args[2].i));
    aten_scope s;
    scope_begin(&s);
    porta_tensor *z = scope_unary(&s, PORTA_ABS, scope_binary(&s, PORTA_SUB, x, target));
    porta_tensor *linear = scope_binary_number(&s, PORTA_MUL, scope_binary_number(&s, PORTA_SUB, z, width / 2),
                                               linear_scale);
    porta_tensor *losses = linear;
    if (width > 0) {
        porta_tensor *quadratic = scope_binary_number(&s, PORTA_MUL, scope_binary(&s, PORTA_MUL, z, z),
                                                      quadratic_scale);
        losses = scope_ternary(&s, PORTA_WHERE, scope_binary_number(&s, PORTA_LT, z, width), quadratic, linear);
    }
    scope_push(&s, results, nn_reduce_loss(&s, losses, args[2].i));
    return scope_end(&s);
}

static porta_status *huber_loss(const porta_value *args, aten_results *results) {
    double delta = args[3].f;
    if (delta <= 0)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "huber_loss does not support non-positive values for delta, got %g.",
                           delta);
    return robust_loss("huber_loss", args, delta, 0.5, delta, results);
}

static porta_status *smooth_l1_loss(const porta_value *args, aten_results *results) {
    double beta = args[3].f;
    if (beta < 0)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "smooth_l1_loss does not support negative values for beta, got %g.",
                           beta);
    return robust_loss("smooth_l1_loss", args, beta, beta > 0 ? 0.5 / beta : 0, 1, results);
}

/* The gradient of both: d = self - target, -slope below -width, slope
 * above width, d * slope / width between (huber: slope delta; smooth_l1:
 * slope 1), times grad and 1/numel for a mean. The CPU kernels' bounds are
 * inclusive, so d == 0 with width 0 takes the lower branch. */
static porta_status *robust_loss_backward(const char *op, const porta_value *args, double width,
                                          double slope, aten_results *results) {
    const porta_tensor *gy = args[0].tensor, *x = args[1].tensor, *target = args[2].tensor;
    int64_t reduction = args[3].i;
    PORTA_TRY(nn_check_reduction(op, reduction));
    aten_scope s;
    scope_begin(&s);
    porta_tensor *d = scope_binary(&s, PORTA_SUB, x, target);
    porta_tensor *inner = width > 0 ? scope_binary_number(&s, PORTA_MUL, d, slope / width)
                                    : scope_binary_number(&s, PORTA_MUL, d, 0);
    porta_tensor *upper = scope_ternary(&s, PORTA_WHERE, scope_binary_number(&s, PORTA_GE, d, width),
                                     scope_full(&s, x->buffer->device, x->dtype, 0, NULL, slope), inner);
    porta_tensor *grad = scope_ternary(&s, PORTA_WHERE, scope_binary_number(&s, PORTA_LE, d, -width),
                                    scope_full(&s, x->buffer->device, x->dtype, 0, NULL, -slope), upper);
    if (reduction == REDUCTION_MEAN)
        grad = scope_binary_number(&s, PORTA_DIV, grad, (double)porta_tensor_numel(d));
    scope_push(&s, results, scope_binary(&s, PORTA_MUL, grad, gy));
    return scope_end(&s);
}

static porta_status *huber_loss_backward(const porta_value *args, aten_results *results) {
    return robust_loss_backward("huber_loss_backward", args, args[4].f, args[4].f, results);
}

static porta_status *smooth_l1_loss_backward(const porta_value *args, aten_results *results) {
    return robust_loss_backward("smooth_l1_loss_backward", args, args[4].f, 1, results);
}
ATEN_OUT_KERNEL(huber_loss_out, huber_loss, 4)
ATEN_OUT_KERNEL(huber_loss_backward_out, huber_loss_backward, 5)
ATEN_OUT_KERNEL(smooth_l1_loss_out, smooth_l1_loss, 4)
ATEN_OUT_KERNEL(smooth_l1_loss_backward_out, smooth_l1_loss_backward, 5)

const aten_op aten_nn_loss_huber_smooth_l1_ops[] = {
    {"huber_loss", "TTif", huber_loss},
    {"huber_loss.out", "TTifT", huber_loss_out},
    {"huber_loss_backward", "TTTif", huber_loss_backward},
    {"huber_loss_backward.out", "TTTifT", huber_loss_backward_out},
    {"smooth_l1_loss", "TTif", smooth_l1_loss},
    {"smooth_l1_loss.out", "TTifT", smooth_l1_loss_out},
    {"smooth_l1_loss_backward", "TTTif", smooth_l1_loss_backward},
    {"smooth_l1_loss_backward.grad_input", "TTTifT", smooth_l1_loss_backward_out},
    {NULL, NULL, NULL},
};
