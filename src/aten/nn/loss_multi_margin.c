/* multi_margin_loss and its gradient, composed from primitives: PyTorch's
 * CPU kernel refuses float16 and bfloat16, which CUDA's takes, so porta
 * computes them (in float32) rather than falling back. */
#include "aten/nn/loss.h"

#include "core/status.h"
#include "runtime/tensor.h"

/* An input of [N, C] (or [C]), its target of N class indices, and the
 * per-class weight of C. */
typedef struct margin_shape {
    int64_t n, c;
} margin_shape;

static porta_status *check_margin(const char *op, const porta_tensor *x, const porta_tensor *target,
                                  const porta_tensor *weight, double p, int64_t reduction,
                                  margin_shape *shape) {
    char bx[CORE_SHAPE_STR_CAP], bt[CORE_SHAPE_STR_CAP];
    PORTA_TRY(nn_check_reduction(op, reduction));
    if (p != 1 && p != 2)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "%s: only p == 1 and p == 2 supported, got %g",
                           op, p);
    if (!porta_dtype_is_float(x->dtype))
        return porta_error(PORTA_ERR_DTYPE, "%s: not implemented for '%s'", op,
                           porta_dtype_name(x->dtype));
    if (porta_tensor_numel(x) == 0 || x->rank > 2)
        return porta_error(PORTA_ERR_SHAPE,
                           "%s: expected non-empty vector or matrix with optional 0-dim batch "
                           "size, but got: %s",
                           op, core_format_shape(bx, sizeof bx, x->rank, x->sizes));
    shape->n = x->rank <= 1 ? 1 : x->sizes[0];
    shape->c = x->rank == 0 ? 1 : x->sizes[x->rank - 1];
    if (target->rank > 1 || porta_tensor_numel(target) != shape->n)
        return porta_error(PORTA_ERR_SHAPE, "%s: inconsistent target size, expected %lld but got %s",
                           op, (long long)shape->n,
                           core_format_shape(bt, sizeof bt, target->rank, target->sizes));
    if (target->dtype != PORTA_I64)
        return porta_error(PORTA_ERR_DTYPE, "%s: expected an int64 target, got %s", op,
                           porta_dtype_name(target->dtype));
    if (weight && (weight->rank > 1 || porta_tensor_numel(weight) != shape->c))
        return porta_error(PORTA_ERR_SHAPE,
                           "%s: inconsistent weight size, expected %lld but got %s", op,
                           (long long)shape->c,
                           core_format_shape(bt, sizeof bt, weight->rank, weight->sizes));
    return NULL;
}

/* The pieces both directions share, in the compute dtype, as [N, C]:
 * z = margin - x[y] + x (each class's margin violation), whether a class
 * counts (not the target), and each sample's weight[y] / C ([N, 1]). */
typedef struct margin_terms {
    porta_tensor *z, *counts, *scale, *target;
} margin_terms;

static margin_terms margin_terms_of(aten_scope *s, const porta_tensor *x, const porta_tensor *target,
                                    const porta_tensor *weight, double margin,
                                    const margin_shape *shape, porta_dtype compute) {
    int64_t matrix[2] = {shape->n, shape->c}, column[2] = {shape->n, 1}, row[2] = {1, shape->c};
    margin_terms t;
    porta_tensor *cx = scope_reshape(s, scope_cast(s, x, compute), 2, matrix);
    t.target = scope_reshape(s, target, 2, column);
    porta_tensor *picked = scope_gather(s, cx, 1, t.target);
    t.z = scope_binary(s, PORTA_ADD, scope_number_binary(s, PORTA_SUB, margin, picked), cx);
    porta_tensor *classes = scope_reshape(s, scope_arange(s, x->buffer->device, shape->c), 2, row);
    t.counts = scope_binary(s, PORTA_NE, classes, t.target);
    porta_tensor *scale = scope_full(s, x->buffer->device, compute, 2, column, 1.0 / (double)shape->c);
    if (weight) {
        int64_t flat = shape->n;
        porta_tensor *w = scope_cast(s, weight, compute);
        int64_t c = shape->c;
        porta_tensor *per_sample = scope_index_select(s, scope_reshape(s, w, 1, &c), 0,
                                                      scope_reshape(s, target, 1, &flat));
        scale = scope_binary(s, PORTA_MUL, scale, scope_reshape(s, per_sample, 2, column));
    }
    t.scale = scale;
    return t;
}

/* The shape of an unreduced loss: [N], or a scalar for a scalar target. */
static porta_tensor *per_sample_shape(aten_scope *s, porta_tensor *v, const porta_tensor *target) {
    int64_t n = porta_tensor_numel(target);
    return scope_reshape(s, v, target->rank, &n);
}

/* multi_margin_loss(self, target, p, margin, weight?, reduction): per
 * sample, the sum over the other classes of max(0, margin - x[y] +
 * x[j])^p * weight[y] / C. */
static porta_status *multi_margin_loss(const porta_value *args, aten_results *results) {
    const porta_tensor *x = args[0].tensor, *target = args[1].tensor;
    const porta_tensor *weight = args[4].kind == PORTA_VALUE_TENSOR ? args[4].tensor : NULL;
    double p = aten_number(&args[2]), margin = aten_number(&args[3]);
    int64_t reduction = args[5].i;
    margin_shape shape;
    PORTA_TRY(check_margin("multi_margin_loss", x, target, weight, p, reduction, &shape));
    aten_scope s;
    scope_begin_on(&s, x->buffer->device);
    porta_dtype compute = aten_compute_dtype(x->dtype);
    margin_terms t = margin_terms_of(&s, x, target, weight, margin, &shape, compute);
    porta_tensor *h = scope_binary_number(&s, PORTA_MAXIMUM, t.z, 0);
    if (p == 2) h = scope_binary(&s, PORTA_MUL, h, h);
    h = scope_where_number(&s, scope_unary(&s, PORTA_LOGICAL_NOT, t.counts), 0, h);
    int axis = 1;
    porta_tensor *losses = scope_reduce(&s, PORTA_REDUCE_SUM, scope_binary(&s, PORTA_MUL, h, t.scale),
                                        &axis, 1, false);
    porta_tensor *loss = reduction == REDUCTION_NONE ? per_sample_shape(&s, losses, target)
                                                     : nn_reduce_loss(&s, losses, reduction);
    scope_push(&s, results, scope_cast(&s, loss, x->dtype));
    return scope_end(&s);
}

/* multi_margin_loss_backward(grad_output, self, target, p, margin, weight?,
 * reduction): each counted class with a positive violation receives
 * p * z^(p-1) * weight[y] / C times the sample's gradient, and the target
 * class minus their sum. */
static porta_status *multi_margin_loss_backward(const porta_value *args, aten_results *results) {
    const porta_tensor *gy = args[0].tensor, *x = args[1].tensor, *target = args[2].tensor;
    const porta_tensor *weight = args[5].kind == PORTA_VALUE_TENSOR ? args[5].tensor : NULL;
    double p = aten_number(&args[3]), margin = aten_number(&args[4]);
    int64_t reduction = args[6].i;
    margin_shape shape;
    PORTA_TRY(check_margin("multi_margin_loss_backward", x, target, weight, p, reduction, &shape));
    aten_scope s;
    scope_begin_on(&s, x->buffer->device);
    porta_dtype compute = aten_compute_dtype(x->dtype);
    margin_terms t = margin_terms_of(&s, x, target, weight, margin, &shape, compute);
    porta_tensor *active = scope_binary(&s, PORTA_LOGICAL_AND, t.counts,
                                        scope_binary_number(&s, PORTA_GT, t.z, 0));
    porta_tensor *slope = p == 2 ? scope_binary_number(&s, PORTA_MUL, t.z, 2)
                                 : scope_full(&s, x->buffer->device, compute, 0, NULL, 1);
    porta_tensor *coef = scope_binary(&s, PORTA_MUL, scope_binary(&s, PORTA_MUL, slope, scope_cast(&s, active, compute)),
                                      t.scale);
    int64_t column[2] = {shape.n, 1};
    porta_tensor *g = scope_cast(&s, gy, compute);
    if (reduction == REDUCTION_NONE) g = scope_reshape(&s, g, 2, column);
    else if (reduction == REDUCTION_MEAN) g = scope_binary_number(&s, PORTA_DIV, g, (double)shape.n);
    coef = scope_binary(&s, PORTA_MUL, coef, g);
    int axis = 1;
    porta_tensor *total = scope_reduce(&s, PORTA_REDUCE_SUM, coef, &axis, 1, true);
    int64_t row[2] = {1, shape.c};
    porta_tensor *classes = scope_reshape(&s, scope_arange(&s, x->buffer->device, shape.c), 2, row);
    porta_tensor *is_target = scope_binary(&s, PORTA_EQ, classes, t.target);
    porta_tensor *grad = scope_binary(&s, PORTA_SUB, coef,
                                      scope_where(&s, is_target, total, scope_number(&s, compute, 0)));
    scope_push(&s, results, scope_cast(&s, scope_reshape(&s, grad, x->rank, x->sizes), x->dtype));
    return scope_end(&s);
}

const aten_op aten_nn_loss_multi_margin_ops[] = {
    {"multi_margin_loss", "TTssti", multi_margin_loss},
    {"multi_margin_loss_backward", "TTTssti", multi_margin_loss_backward},
    {NULL, NULL, NULL},
};
