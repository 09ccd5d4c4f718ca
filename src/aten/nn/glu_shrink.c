/* nn ops composed from primitives that PyTorch has no decomposition for:
 * glu, hardshrink, softshrink, huber_loss and smooth_l1_loss, with their
 * out= variants and the backward ops autograd calls. */
#include "aten/nn/loss.h"
#include "aten/dispatch/scope.h"
#include "aten/dispatch/op_reuse.h"
#include "aten/reduce/common.h"
#include "core/status.h"
#include "core/tensor.h"


static porta_status *check_float(const char *op, const porta_tensor *x) {
    if (porta_dtype_is_float(x->dtype)) return NULL;
    return porta_error(PORTA_ERR_DTYPE, "\"%s\" not implemented for '%s'", op,
                       aten_dtype_label(x->dtype));
}

/* ---- glu ---- */

/* The axis glu halves, which must have an even size. */
static porta_status *glu_axis(const char *op, const porta_tensor *x, int64_t dim, int *axis) {
    if (x->rank == 0)
        return porta_error(PORTA_ERR_SHAPE,
                           "%s: glu does not support scalars because halving size must be even",
                           op);
    PORTA_TRY(porta_normalize_axis(op, (int)dim, x->rank, axis));
    if (x->sizes[*axis] % 2)
        return porta_error(PORTA_ERR_SHAPE,
                           "%s: Halving dimension must be even, but dimension %d is size %lld",
                           op, *axis, (long long)x->sizes[*axis]);
    return check_float(op, x);
}

/* glu(self, dim) = a * sigmoid(b), a and b the halves of self along dim. */
static porta_status *glu(const porta_value *args, aten_results *results) {
    const porta_tensor *x = args[0].tensor;
    int axis;
    PORTA_TRY(glu_axis("glu", x, args[1].i, &axis));
    int64_t half = x->sizes[axis] / 2;
    aten_scope s;
    scope_begin(&s);
    porta_tensor *a = scope_slice(&s, x, axis, 0, half, 1);
    porta_tensor *b = scope_slice(&s, x, axis, half, 2 * half, 1);
    scope_push(&s, results, scope_binary(&s, PORTA_MUL, a, scope_unary(&s, PORTA_SIGMOID, b)));
    return scope_end(&s);
}

/* glu_backward(grad, self, dim): the gradient of a is grad * sigmoid(b),
 * of b grad * a * sigmoid(b) * (1 - sigmoid(b)); the two halves are placed
 * side by side by padding each with zeros where the other goes. */
static porta_status *glu_backward(const porta_value *args, aten_results *results) {
    const porta_tensor *gy = args[0].tensor, *x = args[1].tensor;
    int axis;
    PORTA_TRY(glu_axis("glu_backward", x, args[2].i, &axis));
    int64_t half = x->sizes[axis] / 2;
    int64_t before[2 * PORTA_MAX_RANK] = {0}, after[2 * PORTA_MAX_RANK] = {0};
    after[2 * axis + 1] = half;
    before[2 * axis] = half;
    aten_scope s;
    scope_begin(&s);
    porta_tensor *a = scope_slice(&s, x, axis, 0, half, 1);
    porta_tensor *gate = scope_unary(&s, PORTA_SIGMOID, scope_slice(&s, x, axis, half, 2 * half, 1));
    porta_tensor *grad_a = scope_binary(&s, PORTA_MUL, gy, gate);
    porta_tensor *grad_b = scope_binary(&s, PORTA_MUL, scope_binary(&s, PORTA_MUL, grad_a, a),
                                     scope_unary(&s, PORTA_NEG, scope_binary_number(&s, PORTA_SUB, gate, 1)));
    porta_tensor *both = scope_binary(&s, PORTA_ADD, scope_pad(&s, grad_a, after, 0),
                                   scope_pad(&s, grad_b, before, 0));
    scope_push(&s, results, both);
    return scope_end(&s);
}

/* ---- hardshrink, softshrink ---- */

/* -lambd <= x <= lambd: the band both shrinks zero (NaN is outside it). */
static porta_tensor *in_band(aten_scope *s, const porta_tensor *x, double lambd) {
    return scope_binary(s, PORTA_LOGICAL_AND, scope_binary_number(s, PORTA_GE, x, -lambd),
                     scope_binary_number(s, PORTA_LE, x, lambd));
}

/* x, or 0 (x * 0, keeping x's dtype) inside the band. */
static porta_tensor *zero_in_band(aten_scope *s, const porta_tensor *x, const porta_tensor *kept,
                                  double lambd) {
    return scope_ternary(s, PORTA_WHERE, in_band(s, x, lambd), scope_binary_number(s, PORTA_MUL, kept, 0),
                      kept);
}

/* hardshrink(self, lambd): 0 inside the band, self outside. */
static porta_status *hardshrink(const porta_value *args, aten_results *results) {
    const porta_tensor *x = args[0].tensor;
    PORTA_TRY(check_float("hardshrink_cpu", x));
    aten_scope s;
    scope_begin(&s);
    scope_push(&s, results, zero_in_band(&s, x, x, aten_number(&args[1])));
    return scope_end(&s);
}

/* hardshrink_backward(grad, self, lambd) and softshrink_backward alike:
 * the gradient passes outside the band. */
static porta_status *shrink_backward(const porta_value *args, aten_results *results) {
    const porta_tensor *gy = args[0].tensor, *x = args[1].tensor;
    PORTA_TRY(check_float("shrink_backward_cpu", x));
    aten_scope s;
    scope_begin(&s);
    scope_push(&s, results, zero_in_band(&s, x, gy, aten_number(&args[2])));
    return scope_end(&s);
}

/* softshrink(self, lambd): self moved lambd toward 0, 0 inside the band
 * (self * 0 there, so NaN stays NaN). */
static porta_status *softshrink(const porta_value *args, aten_results *results) {
    const porta_tensor *x = args[0].tensor;
    double lambd = aten_number(&args[1]);
    PORTA_TRY(check_float("softshrink_cpu", x));
    if (lambd < 0)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "softshrink: lambda must be greater or equal to 0, but found to be "
                           "%g.", lambd);
    aten_scope s;
    scope_begin(&s);
    porta_tensor *moved = scope_binary(&s, PORTA_SUB, x,
                                    scope_binary_number(&s, PORTA_MUL, scope_unary(&s, PORTA_SIGN, x), lambd));
    scope_push(&s, results, zero_in_band(&s, x, moved, lambd));
    return scope_end(&s);
}

/* ---- huber_loss, smooth_l1_loss ---- */


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

/* The out= variants. */
ATEN_OUT_KERNEL(glu_out, glu, 2)
ATEN_OUT_KERNEL(glu_backward_out, glu_backward, 3)
ATEN_OUT_KERNEL(hardshrink_out, hardshrink, 2)
ATEN_OUT_KERNEL(softshrink_out, softshrink, 2)
ATEN_OUT_KERNEL(shrink_backward_out, shrink_backward, 3)
ATEN_OUT_KERNEL(huber_loss_out, huber_loss, 4)
ATEN_OUT_KERNEL(huber_loss_backward_out, huber_loss_backward, 5)
ATEN_OUT_KERNEL(smooth_l1_loss_out, smooth_l1_loss, 4)
ATEN_OUT_KERNEL(smooth_l1_loss_backward_out, smooth_l1_loss_backward, 5)

const aten_op aten_nn_more_ops[] = {
    {"glu", "Ti", glu},
    {"glu.out", "TiT", glu_out},
    {"glu_backward", "TTi", glu_backward},
    {"glu_backward.grad_input", "TTiT", glu_backward_out},
    {"hardshrink", "Ts", hardshrink},
    {"hardshrink.out", "TsT", hardshrink_out},
    {"hardshrink_backward", "TTs", shrink_backward},
    {"hardshrink_backward.grad_input", "TTsT", shrink_backward_out},
    {"softshrink", "Ts", softshrink},
    {"softshrink.out", "TsT", softshrink_out},
    {"softshrink_backward", "TTs", shrink_backward},
    {"softshrink_backward.grad_input", "TTsT", shrink_backward_out},
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
