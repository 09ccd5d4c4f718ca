/* Loss aten ops: mse_loss, nll_loss (1-D/2-D and the 2d form over
 * [N, C, H, W]), binary_cross_entropy, soft_margin_loss and their
 * gradients. */
#include "aten/nn/loss.h"

#include "core/status.h"
#include "runtime/tensor.h"

porta_status *nn_check_reduction(const char *op, int64_t reduction) {
    if (reduction < REDUCTION_NONE || reduction > REDUCTION_SUM)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "%s: %lld is not a valid reduction", op,
                           (long long)reduction);
    return NULL;
}

/* Sum or mean of per-element losses, or them unreduced. */
porta_tensor *nn_reduce_loss(aten_scope *s, porta_tensor *losses, int64_t reduction) {
    if (reduction == REDUCTION_NONE || !losses) return losses;
    double count = (double)porta_tensor_numel(losses);
    porta_tensor *sum = scope_reduce(s, PORTA_REDUCE_SUM, losses, NULL, 0, false);
    return reduction == REDUCTION_MEAN ? scope_binary_number(s, PORTA_DIV, sum, count) : sum;
}

/* mse_loss(self, target, reduction) */
static porta_status *mse_loss(const porta_value *args, aten_results *results) {
    const porta_tensor *x = args[0].tensor, *target = args[1].tensor;
    int64_t reduction = args[2].i;
    PORTA_TRY(nn_check_reduction("mse_loss", reduction));
    aten_scope s;
    scope_begin(&s);
    porta_tensor *diff = scope_binary(&s, PORTA_SUB, x, target);
    scope_push(&s, results, nn_reduce_loss(&s, scope_binary(&s, PORTA_MUL, diff, diff), reduction));
    return scope_end(&s);
}

/* mse_loss_backward(grad_output, self, target, reduction):
 * grad * 2 (self - target), divided by the element count for a mean. */
static porta_status *mse_loss_backward(const porta_value *args, aten_results *results) {
    const porta_tensor *gy = args[0].tensor, *x = args[1].tensor, *target = args[2].tensor;
    int64_t reduction = args[3].i;
    PORTA_TRY(nn_check_reduction("mse_loss_backward", reduction));
    double norm = reduction == REDUCTION_MEAN ? 2.0 / (double)porta_tensor_numel(x) : 2.0;
    aten_scope s;
    scope_begin(&s);
    porta_tensor *scaled = scope_binary_number(&s, PORTA_MUL, scope_binary(&s, PORTA_SUB, x, target), norm);
    scope_push(&s, results, scope_binary(&s, PORTA_MUL, scaled, gy));
    return scope_end(&s);
}

/* ---- nll_loss ---- */

/* The class axis of an nll_loss input and the checks PyTorch makes:
 * target has the input's shape without the class axis, int64 or uint8. */
static porta_status *check_nll(const char *op, const porta_tensor *x, const porta_tensor *target,
                               const porta_tensor *weight, int *class_axis) {
    char bx[CORE_SHAPE_STR_CAP], bt[CORE_SHAPE_STR_CAP];
    if (!porta_dtype_is_float(x->dtype))
        return porta_error(PORTA_ERR_DTYPE, "%s: expected a floating-point input, got %s", op,
                           porta_dtype_name(x->dtype));
    if (target->dtype != PORTA_I64 && target->dtype != PORTA_U8)
        return porta_error(PORTA_ERR_DTYPE,
                           "%s: expected target dtype to be Long or Byte, but got %s", op,
                           porta_dtype_name(target->dtype));
    int axis = x->rank == 1 ? 0 : 1;
    bool ok = x->rank >= 1 && target->rank == x->rank - 1;
    for (int i = 0, j = 0; ok && i < x->rank; i++)
        if (i != axis) ok = x->sizes[i] == target->sizes[j++];
    if (!ok)
        return porta_error(PORTA_ERR_SHAPE, "%s: input %s does not match target %s", op,
                           core_format_shape(bx, sizeof bx, x->rank, x->sizes),
                           core_format_shape(bt, sizeof bt, target->rank, target->sizes));
    if (weight && weight->dtype != x->dtype)
        return porta_error(PORTA_ERR_DTYPE, "%s: expected weight of dtype %s, but found %s", op,
                           porta_dtype_name(x->dtype), porta_dtype_name(weight->dtype));
    if (weight && (weight->rank != 1 || weight->sizes[0] != x->sizes[axis]))
        return porta_error(PORTA_ERR_SHAPE,
                           "%s: weight tensor should be defined either for all %lld classes or "
                           "no classes but got weight tensor of shape %s",
                           op, (long long)x->sizes[axis],
                           core_format_shape(bt, sizeof bt, weight->rank, weight->sizes));
    *class_axis = axis;
    return NULL;
}

/* The targets as gather indices along the class axis (ignored ones point
 * at class 0) and each target's weight (0 when ignored), both shaped like
 * the input with the class axis of size 1. Fails like PyTorch on a target
 * out of range. */
static void nll_targets(aten_scope *s, const porta_tensor *x, const porta_tensor *target,
                        const porta_tensor *weight, int axis, int64_t ignore_index,
                        porta_tensor **index, porta_tensor **weights) {
    int64_t sizes[PORTA_MAX_RANK];
    for (int i = 0, j = 0; i < x->rank; i++) sizes[i] = i == axis ? 1 : target->sizes[j++];
    porta_tensor *t = scope_reshape(s, scope_cast(s, target, PORTA_I64), x->rank, sizes);
    porta_tensor *ignored = scope_binary_number(s, PORTA_EQ, t, (double)ignore_index);
    porta_tensor *zero = scope_full(s, x->buffer->device, PORTA_I64, 0, NULL, 0);
    *index = scope_ternary(s, PORTA_WHERE, ignored, zero, t);
    porta_tensor *bad = scope_reduce(
        s, PORTA_REDUCE_ANY,
        scope_binary(s, PORTA_LOGICAL_OR, scope_binary_number(s, PORTA_LT, *index, 0),
                     scope_binary_number(s, PORTA_GE, *index, (double)x->sizes[axis])),
        NULL, 0, false);
    bool out_of_range = false;
    if (bad) {
        porta_status *status = porta_tensor_to_host(bad, &out_of_range, sizeof out_of_range);
        if (status) scope_fail(s, status);
    }
    if (out_of_range) {
        scope_fail(s, porta_error(PORTA_ERR_OUT_OF_RANGE, "Target is out of bounds: expected "
                                                       "classes in [0, %lld) or ignore_index %lld",
                               (long long)x->sizes[axis], (long long)ignore_index));
        return;
    }
    porta_dtype compute = aten_compute_dtype(x->dtype);
    int64_t count = porta_tensor_numel(target);
    porta_tensor *chosen =
        weight ? scope_reshape(s, scope_gather(s, scope_cast(s, weight, compute), 0,
                                               scope_reshape(s, *index, 1, &count)),
                            x->rank, sizes)
               : scope_full(s, x->buffer->device, compute, x->rank, sizes, 1);
    *weights = scope_ternary(s, PORTA_WHERE, ignored, scope_full(s, x->buffer->device, compute, 0, NULL, 0),
                             chosen);
}

/* nll_loss_forward / nll_loss2d_forward(self, target, weight?, reduction,
 * ignore_index) -> (output, total_weight) */
static porta_status *nll_loss_forward(const porta_value *args, aten_results *results) {
    const porta_tensor *x = args[0].tensor, *target = args[1].tensor;
    const porta_tensor *weight = args[2].kind == PORTA_VALUE_TENSOR ? args[2].tensor : NULL;
    int64_t reduction = args[3].i;
    int axis;
    PORTA_TRY(nn_check_reduction("nll_loss", reduction));
    PORTA_TRY(check_nll("nll_loss", x, target, weight, &axis));
    aten_scope s;
    scope_begin(&s);
    porta_tensor *index = NULL, *weights = NULL;
    nll_targets(&s, x, target, weight, axis, args[4].i, &index, &weights);
    porta_dtype compute = aten_compute_dtype(x->dtype);
    porta_tensor *picked = scope_gather(&s, scope_cast(&s, x, compute), axis, index);
    porta_tensor *losses = scope_unary(&s, PORTA_NEG, scope_binary(&s, PORTA_MUL, picked, weights));
    porta_tensor *total = scope_reduce(&s, PORTA_REDUCE_SUM, weights, NULL, 0, false);
    porta_tensor *output;
    if (reduction == REDUCTION_NONE) {
        output = scope_reshape(&s, losses, target->rank, target->sizes);
        if (x->rank > 1) total = scope_full(&s, x->buffer->device, compute, 0, NULL, 0);
    } else {
        output = scope_reduce(&s, PORTA_REDUCE_SUM, losses, NULL, 0, false);
        if (reduction == REDUCTION_MEAN) output = scope_binary(&s, PORTA_DIV, output, total);
    }
    scope_push(&s, results, scope_cast(&s, output, x->dtype));
    scope_push(&s, results, scope_cast(&s, total, x->dtype));
    return scope_end(&s);
}

/* nll_loss_backward / nll_loss2d_backward(grad_output, self, target,
 * weight?, reduction, ignore_index, total_weight): -weight * grad at each
 * target class, zero elsewhere. */
static porta_status *nll_loss_backward(const porta_value *args, aten_results *results) {
    const porta_tensor *gy = args[0].tensor, *x = args[1].tensor, *target = args[2].tensor;
    const porta_tensor *weight = args[3].kind == PORTA_VALUE_TENSOR ? args[3].tensor : NULL;
    int64_t reduction = args[4].i;
    int axis;
    PORTA_TRY(nn_check_reduction("nll_loss_backward", reduction));
    PORTA_TRY(check_nll("nll_loss_backward", x, target, weight, &axis));
    aten_scope s;
    scope_begin(&s);
    porta_tensor *index = NULL, *weights = NULL;
    nll_targets(&s, x, target, weight, axis, args[5].i, &index, &weights);
    porta_dtype compute = aten_compute_dtype(x->dtype);
    porta_tensor *g = scope_cast(&s, gy, compute);
    if (reduction == REDUCTION_NONE && g)
        g = scope_reshape(&s, g, weights ? weights->rank : 0, weights ? weights->sizes : NULL);
    if (reduction == REDUCTION_MEAN)
        g = scope_binary(&s, PORTA_DIV, g, scope_cast(&s, args[6].tensor, compute));
    porta_tensor *share = scope_unary(&s, PORTA_NEG, scope_binary(&s, PORTA_MUL, weights, g));
    porta_tensor *zeros = scope_full(&s, x->buffer->device, compute, x->rank, x->sizes, 0);
    porta_tensor *gx = scope_scatter(&s, zeros, axis, index, share, PORTA_SCATTER_NONE);
    scope_push(&s, results, scope_cast(&s, gx, x->dtype));
    return scope_end(&s);
}

/* ---- binary_cross_entropy ---- */

/* Fails like PyTorch when some probability lies outside [0, 1]. */
static void check_probabilities(aten_scope *s, const porta_tensor *x) {
    porta_tensor *outside = scope_reduce(
        s, PORTA_REDUCE_ANY,
        scope_binary(s, PORTA_LOGICAL_OR, scope_binary_number(s, PORTA_LT, x, 0),
                     scope_binary_number(s, PORTA_GT, x, 1)),
        NULL, 0, false);
    bool bad = false;
    if (outside) {
        porta_status *status = porta_tensor_to_host(outside, &bad, sizeof bad);
        if (status) scope_fail(s, status);
    }
    if (bad)
        scope_fail(s, porta_error(PORTA_ERR_INVALID_ARGUMENT,
                                  "binary_cross_entropy: all elements of input should be between "
                                  "0 and 1"));
}

static porta_status *check_bce(const porta_tensor *x, const porta_tensor *target,
                               const porta_tensor *weight, int64_t reduction) {
    PORTA_TRY(nn_check_reduction("binary_cross_entropy", reduction));
    char bx[CORE_SHAPE_STR_CAP], bt[CORE_SHAPE_STR_CAP];
    bool same = x->rank == target->rank;
    for (int i = 0; same && i < x->rank; i++) same = x->sizes[i] == target->sizes[i];
    if (!same)
        return porta_error(PORTA_ERR_SHAPE,
                           "binary_cross_entropy: using a target size %s that is different to "
                           "the input size %s is not allowed",
                           core_format_shape(bt, sizeof bt, target->rank, target->sizes),
                           core_format_shape(bx, sizeof bx, x->rank, x->sizes));
    if (!porta_dtype_is_float(x->dtype) || target->dtype != x->dtype ||
        (weight && weight->dtype != x->dtype))
        return porta_error(PORTA_ERR_DTYPE,
                           "binary_cross_entropy: expected input, target and weight of one "
                           "floating-point dtype, got %s and %s",
                           porta_dtype_name(x->dtype), porta_dtype_name(target->dtype));
    return NULL;
}

/* binary_cross_entropy(self, target, weight?, reduction):
 * -w (t log x + (1 - t) log(1 - x)), each log clamped at -100 as PyTorch
 * does so that 0 * log 0 stays finite. */
static porta_status *binary_cross_entropy(const porta_value *args, aten_results *results) {
    const porta_tensor *x = args[0].tensor, *target = args[1].tensor;
    const porta_tensor *weight = args[2].kind == PORTA_VALUE_TENSOR ? args[2].tensor : NULL;
    int64_t reduction = args[3].i;
    PORTA_TRY(check_bce(x, target, weight, reduction));
    aten_scope s;
    scope_begin(&s);
    check_probabilities(&s, x);
    porta_dtype compute = aten_compute_dtype(x->dtype);
    porta_tensor *cx = scope_cast(&s, x, compute), *ct = scope_cast(&s, target, compute);
    porta_tensor *log_x = scope_binary_number(&s, PORTA_MAXIMUM, scope_unary(&s, PORTA_LOG, cx), -100);
    porta_tensor *one_minus = scope_binary_number(&s, PORTA_SUB, scope_unary(&s, PORTA_NEG, cx), -1);
    porta_tensor *log_rest = scope_binary_number(&s, PORTA_MAXIMUM, scope_unary(&s, PORTA_LOG, one_minus), -100);
    porta_tensor *t_rest = scope_binary_number(&s, PORTA_SUB, scope_unary(&s, PORTA_NEG, ct), -1);
    porta_tensor *losses = scope_unary(&s, PORTA_NEG,
                                    scope_binary(&s, PORTA_ADD, scope_binary(&s, PORTA_MUL, ct, log_x),
                                                 scope_binary(&s, PORTA_MUL, t_rest, log_rest)));
    if (weight) losses = scope_binary(&s, PORTA_MUL, losses, scope_cast(&s, weight, compute));
    scope_push(&s, results, scope_cast(&s, nn_reduce_loss(&s, losses, reduction), x->dtype));
    return scope_end(&s);
}

/* binary_cross_entropy_backward(grad_output, self, target, weight?,
 * reduction): w (x - t) / max(x (1 - x), 1e-12) * grad. */
static porta_status *binary_cross_entropy_backward(const porta_value *args,
                                                   aten_results *results) {
    const porta_tensor *gy = args[0].tensor, *x = args[1].tensor, *target = args[2].tensor;
    const porta_tensor *weight = args[3].kind == PORTA_VALUE_TENSOR ? args[3].tensor : NULL;
    int64_t reduction = args[4].i;
    PORTA_TRY(check_bce(x, target, weight, reduction));
    aten_scope s;
    scope_begin(&s);
    porta_dtype compute = aten_compute_dtype(x->dtype);
    porta_tensor *cx = scope_cast(&s, x, compute), *ct = scope_cast(&s, target, compute);
    porta_tensor *one_minus = scope_binary_number(&s, PORTA_SUB, scope_unary(&s, PORTA_NEG, cx), -1);
    porta_tensor *denominator =
        scope_binary_number(&s, PORTA_MAXIMUM, scope_binary(&s, PORTA_MUL, cx, one_minus), 1e-12);
    porta_tensor *grad = scope_binary(&s, PORTA_MUL, scope_cast(&s, gy, compute),
                                   scope_binary(&s, PORTA_DIV, scope_binary(&s, PORTA_SUB, cx, ct),
                                                denominator));
    if (weight) grad = scope_binary(&s, PORTA_MUL, grad, scope_cast(&s, weight, compute));
    if (reduction == REDUCTION_MEAN)
        grad = scope_binary_number(&s, PORTA_DIV, grad, (double)porta_tensor_numel(x));
    scope_push(&s, results, scope_cast(&s, grad, x->dtype));
    return scope_end(&s);
}

/* ---- soft_margin_loss ---- */

/* PyTorch writes the loss into a tensor of self's shape and dtype: target
 * must broadcast to that shape, and self must be floating point. */
static porta_status *check_soft_margin(const char *op, const porta_tensor *x,
                                       const porta_tensor *target, int64_t reduction) {
    PORTA_TRY(nn_check_reduction(op, reduction));
    if (!porta_dtype_is_float(x->dtype))
        return porta_error(PORTA_ERR_DTYPE,
                           "%s: result type Float can't be cast to the desired output type %s",
                           op, porta_dtype_name(x->dtype));
    bool fits = target->rank <= x->rank;
    for (int i = 1; fits && i <= target->rank; i++) {
        int64_t t = target->sizes[target->rank - i];
        fits = t == 1 || t == x->sizes[x->rank - i];
    }
    if (!fits) {
        char bx[CORE_SHAPE_STR_CAP], bt[CORE_SHAPE_STR_CAP];
        return porta_error(PORTA_ERR_SHAPE,
                           "%s: target of shape %s doesn't broadcast to the input's shape %s", op,
                           core_format_shape(bt, sizeof bt, target->rank, target->sizes),
                           core_format_shape(bx, sizeof bx, x->rank, x->sizes));
    }
    return NULL;
}

/* soft_margin_loss(self, target, reduction): log1p(exp(-self * target)),
 * in the order PyTorch's kernel rounds it. */
static porta_status *soft_margin_loss(const porta_value *args, aten_results *results) {
    const porta_tensor *x = args[0].tensor, *target = args[1].tensor;
    int64_t reduction = args[2].i;
    PORTA_TRY(check_soft_margin("soft_margin_loss", x, target, reduction));
    aten_scope s;
    scope_begin(&s);
    porta_dtype compute = aten_compute_dtype(x->dtype);
    porta_tensor *margin = scope_binary(&s, PORTA_MUL, scope_unary(&s, PORTA_NEG, scope_cast(&s, x, compute)),
                                        scope_cast(&s, target, compute));
    porta_tensor *losses = scope_unary(&s, PORTA_LOG1P, scope_unary(&s, PORTA_EXP, margin));
    scope_push(&s, results, scope_cast(&s, nn_reduce_loss(&s, losses, reduction), x->dtype));
    return scope_end(&s);
}

/* soft_margin_loss_backward(grad_output, self, target, reduction):
 * -norm * target * z / (1 + z) * grad with z = exp(-target * self), norm
 * 1/numel for a mean. */
static porta_status *soft_margin_loss_backward(const porta_value *args, aten_results *results) {
    const porta_tensor *gy = args[0].tensor, *x = args[1].tensor, *target = args[2].tensor;
    int64_t reduction = args[3].i;
    PORTA_TRY(check_soft_margin("soft_margin_loss_backward", x, target, reduction));
    double norm = reduction == REDUCTION_MEAN ? 1.0 / (double)porta_tensor_numel(x) : 1.0;
    aten_scope s;
    scope_begin(&s);
    porta_dtype compute = aten_compute_dtype(x->dtype);
    porta_tensor *ct = scope_cast(&s, target, compute);
    porta_tensor *z = scope_unary(&s, PORTA_EXP, scope_binary(&s, PORTA_MUL, scope_unary(&s, PORTA_NEG, ct),
                                                       scope_cast(&s, x, compute)));
    porta_tensor *grad = scope_binary_number(&s, PORTA_MUL, scope_binary(&s, PORTA_MUL, ct, z), -norm);
    grad = scope_binary(&s, PORTA_DIV, grad, scope_binary_number(&s, PORTA_ADD, z, 1));
    grad = scope_binary(&s, PORTA_MUL, grad, scope_cast(&s, gy, compute));
    scope_push(&s, results, scope_cast(&s, grad, x->dtype));
    return scope_end(&s);
}

const aten_op aten_nn_loss_ops[] = {
    {"binary_cross_entropy", "TTti", binary_cross_entropy},
    {"binary_cross_entropy_backward", "TTTti", binary_cross_entropy_backward},
    {"mse_loss", "TTi", mse_loss},
    {"mse_loss_backward", "TTTi", mse_loss_backward},
    {"nll_loss2d_backward", "TTTtiiT", nll_loss_backward},
    {"nll_loss2d_forward", "TTtii", nll_loss_forward},
    {"nll_loss_backward", "TTTtiiT", nll_loss_backward},
    {"nll_loss_forward", "TTtii", nll_loss_forward},
    {"soft_margin_loss", "TTi", soft_margin_loss},
    {"soft_margin_loss_backward", "TTTi", soft_margin_loss_backward},
    {NULL, NULL, NULL},
};
