/* multilabel_margin_loss's forward and backward ops, composed from
 * primitives. A sample's targets are the class indices of its target row
 * up to the first -1; each pair of a target t and a non-target class i
 * adds max(0, 1 - (x[t] - x[i])) / C to its loss. */
#include "aten/nn/loss.h"

#include "aten/dispatch/op_reuse.h"
#include "core/status.h"
#include "runtime/tensor.h"

typedef struct {
    int64_t n, c;
} label_shape;

static porta_status *check_shapes(const porta_tensor *x, const porta_tensor *target,
                                  label_shape *shape) {
    char bx[CORE_SHAPE_STR_CAP], bt[CORE_SHAPE_STR_CAP];
    bool ok = (x->rank == 2 && x->sizes[1] != 0) || (x->rank == 1 && x->sizes[0] != 0) ||
              x->rank == 0;
    if (!ok)
        return porta_error(PORTA_ERR_SHAPE,
                           "Expected non-empty vector or matrix with optional 0-dim batch size, "
                           "but got: %s",
                           core_format_shape(bx, sizeof bx, x->rank, x->sizes));
    shape->n = x->rank <= 1 ? 1 : x->sizes[0];
    shape->c = x->rank == 0 ? 1 : x->sizes[x->rank - 1];
    bool consistent = x->rank <= 1 ? target->rank <= 1 && porta_tensor_numel(target) == shape->c
                                   : target->rank == 2 && target->sizes[0] == shape->n &&
                                         target->sizes[1] == shape->c;
    if (!consistent)
        return porta_error(PORTA_ERR_SHAPE, "inconsistent target size: %s for input of size: %s",
                           core_format_shape(bt, sizeof bt, target->rank, target->sizes),
                           core_format_shape(bx, sizeof bx, x->rank, x->sizes));
    if (target->dtype != PORTA_I64)
        return porta_error(PORTA_ERR_DTYPE, "expected scalar type Long but found %s",
                           porta_dtype_name(target->dtype));
    if (!porta_dtype_is_float(x->dtype))
        return porta_error(PORTA_ERR_DTYPE, "\"multilabel_margin_loss_forward_out_frame\" not "
                           "implemented for '%s'", porta_dtype_name(x->dtype));
    return NULL;
}

/* What both directions use, [N, C] or [N, J = C, C]. */
typedef struct {
    porta_tensor *z;         /* [N, J, C] 1 - x[t_j] + x[i] */
    porta_tensor *safe;      /* [N, J] targets, -1 and after replaced by 0 */
    porta_tensor *is_target; /* [N, C] 1 for a target class, compute dtype */
    porta_tensor *active;    /* [N, J, C] 1 where the pair's margin counts */
} label_terms;

static label_terms terms_of(aten_scope *s, const porta_tensor *x, const porta_tensor *target,
                            const label_shape *shape, porta_dtype compute) {
    int64_t matrix[2] = {shape->n, shape->c};
    int64_t pairs[3] = {shape->n, shape->c, shape->c};
    int64_t by_target[3] = {shape->n, shape->c, 1}, by_class[3] = {shape->n, 1, shape->c};
    label_terms t;
    porta_tensor *cx = scope_reshape(s, scope_cast(s, x, compute), 2, matrix);
    porta_tensor *y = scope_reshape(s, scope_contiguous(s, target), 2, matrix);
    if (!s->status) {
        int64_t low = 0, high = 0;
        porta_tensor *lowest = scope_reduce(s, PORTA_REDUCE_MIN, y, NULL, 0, false);
        porta_tensor *highest = scope_reduce(s, PORTA_REDUCE_MAX, y, NULL, 0, false);
        low = scope_read_int(s, lowest);
        high = scope_read_int(s, highest);
        if (!s->status && (low < -1 || high >= shape->c))
            scope_fail(s, porta_error(PORTA_ERR_OUT_OF_RANGE, "target index is out of bounds: got %lld, "
                                      "expected -1 to %lld", (long long)(low < -1 ? low : high),
                                      (long long)(shape->c - 1)));
    }
    /* a target counts while no -1 came before it */
    porta_tensor *ended = scope_binary_number(s, PORTA_EQ, y, -1);
    porta_value scan[3] = {{.kind = PORTA_VALUE_TENSOR, .tensor = scope_cast(s, ended, PORTA_I64)},
                           {.kind = PORTA_VALUE_INT, .i = 1},
                           {.kind = PORTA_VALUE_NONE}};
    porta_tensor *valid = scope_binary_number(
        s, PORTA_EQ, scope_call(s, "cumsum", scan, 3), 0);
    t.safe = scope_where(s, valid, y, scope_binary_number(s, PORTA_MUL, y, 0));
    porta_tensor *valid_f = scope_cast(s, valid, compute);
    porta_tensor *zeros = scope_full(s, x->buffer->device, compute, 2, matrix, 0);
    t.is_target = scope_scatter(s, zeros, 1, t.safe, valid_f, PORTA_SCATTER_AMAX);
    porta_tensor *x_t = scope_gather(s, cx, 1, t.safe);
    t.z = scope_binary(
        s, PORTA_ADD,
        scope_number_binary(s, PORTA_SUB, 1.0, scope_reshape(s, x_t, 3, by_target)),
        scope_reshape(s, cx, 3, by_class));
    porta_tensor *pair = scope_binary(
        s, PORTA_MUL, scope_reshape(s, valid_f, 3, by_target),
        scope_number_binary(s, PORTA_SUB, 1.0, scope_reshape(s, t.is_target, 3, by_class)));
    porta_tensor *positive = scope_cast(s, scope_binary_number(s, PORTA_GT, t.z, 0), compute);
    t.active = scope_expand(s, scope_binary(s, PORTA_MUL, pair, positive), 3, pairs);
    return t;
}

/* multilabel_margin_loss_forward(self, target, reduction) -> (output,
 * is_target) */
static porta_status *multilabel_forward(const porta_value *args, aten_results *results) {
    const porta_tensor *x = args[0].tensor, *target = args[1].tensor;
    int64_t reduction = args[2].i;
    label_shape shape;
    PORTA_TRY(nn_check_reduction("multilabel_margin_loss", reduction));
    PORTA_TRY(check_shapes(x, target, &shape));
    porta_dtype compute = aten_compute_dtype(x->dtype);
    int axes[2] = {1, 2};
    aten_scope s;
    scope_begin(&s);
    label_terms t = terms_of(&s, x, target, &shape, compute);
    porta_tensor *violations = scope_binary(&s, PORTA_MUL, t.z, t.active);
    porta_tensor *per_sample = scope_binary_number(
        &s, PORTA_DIV, scope_reduce(&s, PORTA_REDUCE_SUM, violations, axes, 2, false),
        (double)shape.c);
    porta_tensor *loss = nn_reduce_loss(&s, per_sample, reduction);
    if (reduction == REDUCTION_NONE && target->rank <= 1) loss = scope_reshape(&s, loss, 0, NULL);
    scope_push(&s, results, scope_cast(&s, loss, x->dtype));
    scope_push(&s, results, scope_reshape(&s, scope_cast(&s, t.is_target, x->dtype), target->rank,
                                          target->sizes));
    return scope_end(&s);
}

/* multilabel_margin_loss_backward(grad_output, self, target, reduction,
 * is_target): each counting pair adds 1/C to its class i and -1/C to its
 * target, times the output's gradient (is_target is recomputed with the
 * pairs, so the argument is not read). */
static porta_status *multilabel_backward(const porta_value *args, aten_results *results) {
    const porta_tensor *gy = args[0].tensor, *x = args[1].tensor, *target = args[2].tensor;
    int64_t reduction = args[3].i;
    label_shape shape;
    PORTA_TRY(nn_check_reduction("multilabel_margin_loss_backward", reduction));
    PORTA_TRY(check_shapes(x, target, &shape));
    porta_dtype compute = aten_compute_dtype(x->dtype);
    int over_targets = 1, over_classes = 2;
    int64_t column[2] = {shape.n, 1};
    aten_scope s;
    scope_begin(&s);
    label_terms t = terms_of(&s, x, target, &shape, compute);
    porta_tensor *to_classes = scope_reduce(&s, PORTA_REDUCE_SUM, t.active, &over_targets, 1, false);
    porta_tensor *from_targets = scope_reduce(&s, PORTA_REDUCE_SUM, t.active, &over_classes, 1,
                                              false);
    porta_tensor *grad = scope_scatter(&s, to_classes, 1, t.safe,
                                       scope_unary(&s, PORTA_NEG, from_targets), PORTA_SCATTER_ADD);
    double scale = 1.0 / (double)shape.c;
    if (reduction == REDUCTION_MEAN) scale /= (double)shape.n;
    porta_tensor *g = scope_cast(&s, gy, compute);
    if (reduction == REDUCTION_NONE && porta_tensor_numel(gy) == shape.n)
        g = scope_reshape(&s, g, 2, column);
    grad = scope_binary(&s, PORTA_MUL, scope_binary_number(&s, PORTA_MUL, grad, scale), g);
    scope_push(&s, results, scope_reshape(&s, scope_cast(&s, grad, x->dtype), x->rank, x->sizes));
    return scope_end(&s);
}

static porta_status *multilabel_forward_out(const porta_value *args, aten_results *results) {
    return aten_into_outs(multilabel_forward, args, 3, 2, results);
}
ATEN_OUT_KERNEL(multilabel_backward_out, multilabel_backward, 5)

const aten_op aten_nn_loss_multilabel_margin_ops[] = {
    {"multilabel_margin_loss_forward", "TTi", multilabel_forward},
    {"multilabel_margin_loss_forward.output", "TTiTT", multilabel_forward_out},
    {"multilabel_margin_loss_backward", "TTTiT", multilabel_backward},
    {"multilabel_margin_loss_backward.grad_input", "TTTiTT", multilabel_backward_out},
    {NULL, NULL, NULL},
};
