/* Pairwise p-norm distances: _cdist_forward (every row of x1 against every
 * row of x2, batch axes broadcast) and _pdist_forward (every pair i < j of
 * rows of one matrix), with their backward ops. Both form the differences
 * of the row pairs by broadcasting (cdist) or index_select (pdist), then
 * reduce them with the norm; the gradients follow PyTorch's per-p formulas.
 * A Euclidean cdist that PyTorch would compute with a matrix product does so
 * here too, with the same augmented matrices. */
#include <math.h>
#include <stdlib.h>

#include "aten/dispatch/scope.h"
#include "aten/reduce/common.h"
#include "core/status.h"
#include "runtime/tensor.h"
#include "ir/infer.h"

/* The p-norm of diff over its last axis (dropped). */
static porta_tensor *pair_norm(aten_scope *s, const porta_tensor *diff, double p) {
    if (!diff) return NULL;
    int axis[1] = {diff->rank - 1};
    if (p == 0)
        return scope_reduce(s, PORTA_REDUCE_SUM,
                         scope_cast(s, scope_binary_number(s, PORTA_NE, diff, 0), diff->dtype), axis, 1,
                         false);
    porta_tensor *magnitude = scope_unary(s, PORTA_ABS, diff);
    if (isinf(p)) return scope_reduce(s, PORTA_REDUCE_MAX, magnitude, axis, 1, false);
    if (p == 1) return scope_reduce(s, PORTA_REDUCE_SUM, magnitude, axis, 1, false);
    if (p == 2)
        return scope_unary(s, PORTA_SQRT, scope_reduce(s, PORTA_REDUCE_SUM,
                                                 scope_binary(s, PORTA_MUL, diff, diff), axis, 1,
                                                 false));
    porta_tensor *powered = scope_binary_number(s, PORTA_POW, magnitude, p);
    return scope_binary_number(s, PORTA_POW, scope_reduce(s, PORTA_REDUCE_SUM, powered, axis, 1, false),
                               1 / p);
}

/* The gradient of each pair's distance with respect to its difference,
 * times grad: diff [..., M], dist and grad [..., 1]. */
static porta_tensor *pair_grad(aten_scope *s, const porta_tensor *diff, const porta_tensor *dist,
                               const porta_tensor *grad, double p) {
    if (!diff || !dist || !grad) return NULL;
    porta_tensor *zero = scope_full(s, diff->buffer->device, diff->dtype, 0, NULL, 0);
    if (p == 0) return scope_binary(s, PORTA_MUL, diff, zero);
    porta_tensor *sign = scope_unary(s, PORTA_SIGN, diff);
    if (p == 1) return scope_binary(s, PORTA_MUL, sign, grad);
    porta_tensor *magnitude = scope_unary(s, PORTA_ABS, diff);
    if (isinf(p)) {
        porta_tensor *at_max = scope_cast(s, scope_binary(s, PORTA_EQ, magnitude, dist), diff->dtype);
        return scope_binary(s, PORTA_MUL, scope_binary(s, PORTA_MUL, sign, grad), at_max);
    }
    porta_tensor *scaled = scope_binary(s, PORTA_DIV, grad, scope_binary_number(s, PORTA_POW, dist, p - 1));
    porta_tensor *value, *vanishes = scope_binary_number(s, PORTA_EQ, dist, 0);
    if (p < 2) {
        value = scope_binary(s, PORTA_MUL, scope_binary(s, PORTA_MUL, sign,
                                                  scope_binary_number(s, PORTA_POW, magnitude, p - 1)),
                          scaled);
        if (p < 1)
            vanishes = scope_binary(s, PORTA_LOGICAL_OR, vanishes, scope_binary_number(s, PORTA_EQ, diff, 0));
    } else if (p == 2) {
        value = scope_binary(s, PORTA_MUL, diff, scaled);
    } else {
        value = scope_binary(s, PORTA_MUL, scope_binary(s, PORTA_MUL, diff,
                                                  scope_binary_number(s, PORTA_POW, magnitude, p - 2)),
                          scaled);
    }
    return scope_ternary(s, PORTA_WHERE, vanishes, zero, value);
}

static porta_status *check_p(const char *op, double p) {
    if (p >= 0) return NULL;
    return porta_error(PORTA_ERR_INVALID_ARGUMENT, "%s only supports non-negative p values, "
                                                   "got %g", op, p);
}

/* PyTorch's CPU kernels take float32 and float64. */
static porta_status *check_dtype(const char *op, const porta_tensor *x) {
    if (!porta_dtype_is_float(x->dtype))
        return porta_error(PORTA_ERR_DTYPE, "%s only supports floating-point dtypes, X1 got: %s",
                           op, aten_dtype_label(x->dtype));
    if (x->dtype != PORTA_F32 && x->dtype != PORTA_F64)
        return porta_error(PORTA_ERR_UNSUPPORTED, "\"%s\" not implemented for '%s'", op,
                           aten_dtype_label(x->dtype));
    return NULL;
}

/* cdist's operands brought to one batch shape: x1 [B..., P, M] and x2
 * [B..., R, M] expanded, with the broadcast batch shape. */
typedef struct cdist_operands {
    porta_tensor *x1, *x2; /* held by the scope */
    int batch_rank;
    int64_t batch[PORTA_MAX_RANK];
    int64_t p_rows, r_rows, columns;
} cdist_operands;

static porta_status *cdist_check(const porta_tensor *x1, const porta_tensor *x2, double p) {
    PORTA_TRY(check_dtype("cdist", x1));
    PORTA_TRY(check_p("cdist", p));
    if (x1->rank < 2 || x2->rank < 2)
        return porta_error(PORTA_ERR_SHAPE, "cdist only supports at least 2D tensors, X%d got: %dD",
                           x1->rank < 2 ? 1 : 2, x1->rank < 2 ? x1->rank : x2->rank);
    if (x1->rank >= PORTA_MAX_RANK || x2->rank >= PORTA_MAX_RANK) /* pairs add an axis */
        return porta_error(PORTA_ERR_UNSUPPORTED, "cdist: porta takes ranks up to %d, got %d and %d",
                           PORTA_MAX_RANK - 1, x1->rank, x2->rank);
    if (x1->sizes[x1->rank - 1] != x2->sizes[x2->rank - 1])
        return porta_error(PORTA_ERR_SHAPE,
                           "X1 and X2 must have the same number of columns. X1: %lld X2: %lld",
                           (long long)x1->sizes[x1->rank - 1], (long long)x2->sizes[x2->rank - 1]);
    if (x1->dtype != x2->dtype)
        return porta_error(PORTA_ERR_DTYPE, "cdist: expected X1 and X2 of one dtype, got %s and %s",
                           aten_dtype_label(x1->dtype), aten_dtype_label(x2->dtype));
    return NULL;
}

static void cdist_expand(aten_scope *s, const porta_tensor *x1, const porta_tensor *x2,
                         cdist_operands *o) {
    porta_status *status = ir_broadcast_shapes("cdist", x1->rank - 2, x1->sizes, x2->rank - 2,
                                                  x2->sizes, &o->batch_rank, o->batch);
    if (status) {
        scope_fail(s, status);
        return;
    }
    o->p_rows = x1->sizes[x1->rank - 2];
    o->r_rows = x2->sizes[x2->rank - 2];
    o->columns = x1->sizes[x1->rank - 1];
    int64_t sizes[PORTA_MAX_RANK];
    for (int d = 0; d < o->batch_rank; d++) sizes[d] = o->batch[d];
    sizes[o->batch_rank] = o->p_rows;
    sizes[o->batch_rank + 1] = o->columns;
    o->x1 = scope_expand(s, x1, o->batch_rank + 2, sizes);
    sizes[o->batch_rank] = o->r_rows;
    o->x2 = scope_expand(s, x2, o->batch_rank + 2, sizes);
}

/* Every difference x1[..., i, :] - x2[..., j, :]: [B..., P, R, M]. */
static porta_tensor *cdist_differences(aten_scope *s, const cdist_operands *o) {
    int rank = o->batch_rank + 3;
    int64_t sizes[PORTA_MAX_RANK];
    for (int d = 0; d < o->batch_rank; d++) sizes[d] = o->batch[d];
    sizes[rank - 3] = o->p_rows;
    sizes[rank - 2] = 1;
    sizes[rank - 1] = o->columns;
    porta_tensor *a = scope_reshape(s, o->x1, rank, sizes);
    sizes[rank - 3] = 1;
    sizes[rank - 2] = o->r_rows;
    porta_tensor *b = scope_reshape(s, o->x2, rank, sizes);
    return scope_binary(s, PORTA_SUB, a, b);
}

/* sqrt(max(0, |a|^2 - 2 a.b + |b|^2)) as one product of augmented matrices
 * [-2 x1, |x1|^2, 1] @ [x2, 1, |x2|^2]^T, as PyTorch's _euclidean_dist. */
static porta_tensor *euclidean_by_matmul(aten_scope *s, const cdist_operands *o) {
    int rank = o->batch_rank + 2, last[1] = {rank - 1};
    int64_t pads[2 * PORTA_MAX_RANK] = {0};
    porta_tensor *augmented[2];
    for (int k = 0; k < 2; k++) {
        porta_tensor *x = k ? o->x2 : o->x1;
        porta_tensor *squares = scope_reduce(s, PORTA_REDUCE_SUM, scope_binary(s, PORTA_MUL, x, x), last,
                                             1, true);
        porta_tensor *ones = scope_binary_number(s, PORTA_ADD, scope_binary_number(s, PORTA_MUL, squares, 0), 1);
        porta_tensor *scaled = k ? x : scope_binary_number(s, PORTA_MUL, x, -2);
        /* [scaled, first, second] from three padded pieces; adding zeros is exact */
        porta_tensor *first = k ? ones : squares, *second = k ? squares : ones;
        pads[2 * rank - 2] = 0, pads[2 * rank - 1] = 2;
        porta_tensor *sum = scope_pad(s, scaled, pads, 0);
        pads[2 * rank - 2] = o->columns, pads[2 * rank - 1] = 1;
        sum = scope_binary(s, PORTA_ADD, sum, scope_pad(s, first, pads, 0));
        pads[2 * rank - 2] = o->columns + 1, pads[2 * rank - 1] = 0;
        augmented[k] = scope_binary(s, PORTA_ADD, sum, scope_pad(s, second, pads, 0));
    }
    int dims[PORTA_MAX_RANK];
    for (int d = 0; d < rank; d++) dims[d] = d;
    dims[rank - 2] = rank - 1;
    dims[rank - 1] = rank - 2;
    porta_tensor *product = scope_matmul(s, augmented[0], scope_permute(s, augmented[1], dims));
    return scope_unary(s, PORTA_SQRT, scope_binary_number(s, PORTA_MAXIMUM, product, 0));
}

/* _cdist_forward(x1, x2, p, compute_mode?) */
static porta_status *cdist_forward(const porta_value *args, aten_results *results) {
    const porta_tensor *x1 = args[0].tensor, *x2 = args[1].tensor;
    double p = args[2].f;
    int64_t mode = args[3].kind == PORTA_VALUE_INT ? args[3].i : 0;
    PORTA_TRY(cdist_check(x1, x2, p));
    aten_scope s;
    scope_begin(&s);
    cdist_operands o = {0};
    cdist_expand(&s, x1, x2, &o);
    porta_tensor *dist = NULL;
    int64_t sizes[PORTA_MAX_RANK];
    for (int d = 0; d < o.batch_rank; d++) sizes[d] = o.batch[d];
    sizes[o.batch_rank] = o.p_rows;
    sizes[o.batch_rank + 1] = o.r_rows;
    bool by_matmul = p == 2 && (mode == 1 || (mode == 0 && (o.p_rows > 25 || o.r_rows > 25)));
    if (s.status) {
        dist = NULL;
    } else if (o.columns == 0 || o.p_rows == 0 || o.r_rows == 0) {
        dist = scope_full(&s, x1->buffer->device, x1->dtype, o.batch_rank + 2, sizes, 0);
    } else if (by_matmul) {
        dist = euclidean_by_matmul(&s, &o);
    } else {
        dist = pair_norm(&s, cdist_differences(&s, &o), p);
    }
    scope_push(&s, results, dist);
    return scope_end(&s);
}

/* _cdist_backward(grad, x1, x2, p, cdist): x1's gradient in the broadcast
 * batch shape (autograd sums it down to x1's). */
static porta_status *cdist_backward(const porta_value *args, aten_results *results) {
    const porta_tensor *grad = args[0].tensor, *x1 = args[1].tensor, *x2 = args[2].tensor,
                       *dist = args[4].tensor;
    double p = args[3].f;
    PORTA_TRY(cdist_check(x1, x2, p));
    aten_scope s;
    scope_begin(&s);
    cdist_operands o = {0};
    cdist_expand(&s, x1, x2, &o);
    int rank = o.batch_rank + 2;
    porta_tensor *out;
    if (!o.x1) {
        out = NULL;
    } else if (o.columns == 0 || o.p_rows == 0 || o.r_rows == 0) {
        out = scope_full(&s, x1->buffer->device, x1->dtype, rank, o.x1->sizes, 0);
    } else {
        int64_t column[PORTA_MAX_RANK];
        for (int d = 0; d < rank; d++) column[d] = d < o.batch_rank ? o.batch[d] : 0;
        column[rank - 2] = o.p_rows;
        column[rank - 1] = o.r_rows;
        column[rank] = 1;
        porta_tensor *g = scope_reshape(&s, scope_expand(&s, grad, rank, column), rank + 1, column);
        porta_tensor *d = scope_reshape(&s, scope_expand(&s, dist, rank, column), rank + 1, column);
        int pairs_axis[1] = {rank - 1};
        out = scope_reduce(&s, PORTA_REDUCE_SUM, pair_grad(&s, cdist_differences(&s, &o), d, g, p),
                           pairs_axis, 1, false);
    }
    scope_push(&s, results, out);
    return scope_end(&s);
}

/* The row pairs i < j of an n-row matrix in PyTorch's order, as two int64
 * [count] index tensors. */
static void row_pairs(aten_scope *s, porta_device *device, int64_t n, porta_tensor **first,
                      porta_tensor **second) {
    *first = *second = NULL;
    if (s->status) return;
    int64_t count = n * (n - 1) / 2, at = 0;
    double *rows = malloc((size_t)(count ? 2 * count : 1) * sizeof *rows);
    if (!rows) {
        scope_fail(s, porta_error(PORTA_ERR_OUT_OF_MEMORY, "pdist: no memory for %lld pairs",
                                  (long long)count));
        return;
    }
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = i + 1; j < n; j++, at++) {
            rows[at] = (double)i;
            rows[count + at] = (double)j;
        }
    *first = scope_cast(s, scope_from_host(s, device, 1, &count, rows), PORTA_I64);
    *second = scope_cast(s, scope_from_host(s, device, 1, &count, rows + count), PORTA_I64);
    free(rows);
}

static porta_status *pdist_check(const porta_tensor *x, double p) {
    PORTA_TRY(check_dtype("pdist", x));
    PORTA_TRY(check_p("pdist", p));
    if (x->rank != 2)
        return porta_error(PORTA_ERR_SHAPE, "pdist only supports 2D tensors, got: %dD", x->rank);
    return NULL;
}

/* _pdist_forward(self, p) */
static porta_status *pdist_forward(const porta_value *args, aten_results *results) {
    const porta_tensor *x = args[0].tensor;
    double p = args[1].f;
    PORTA_TRY(pdist_check(x, p));
    int64_t n = x->sizes[0], count = n > 1 ? n * (n - 1) / 2 : 0;
    aten_scope s;
    scope_begin(&s);
    porta_tensor *dist;
    if (count == 0 || x->sizes[1] == 0) {
        dist = scope_full(&s, x->buffer->device, x->dtype, 1, &count, 0);
    } else {
        porta_tensor *first, *second;
        row_pairs(&s, x->buffer->device, n, &first, &second);
        dist = pair_norm(&s, scope_binary(&s, PORTA_SUB, scope_index_select(&s, x, 0, first),
                                          scope_index_select(&s, x, 0, second)),
                         p);
    }
    scope_push(&s, results, dist);
    return scope_end(&s);
}

/* _pdist_backward(grad, self, p, pdist): each pair's gradient added to its
 * first row and subtracted from its second. */
static porta_status *pdist_backward(const porta_value *args, aten_results *results) {
    const porta_tensor *grad = args[0].tensor, *x = args[1].tensor, *dist = args[3].tensor;
    double p = args[2].f;
    PORTA_TRY(pdist_check(x, p));
    int64_t n = x->sizes[0], columns = x->sizes[1], count = n > 1 ? n * (n - 1) / 2 : 0;
    aten_scope s;
    scope_begin(&s);
    porta_device *device = x->buffer->device;
    porta_tensor *out = scope_full(&s, device, x->dtype, 2, x->sizes, 0);
    if (count > 0 && columns > 0) {
        porta_tensor *first, *second;
        row_pairs(&s, device, n, &first, &second);
        int64_t column[2] = {count, 1}, spread[2] = {count, columns};
        porta_tensor *diff = scope_binary(&s, PORTA_SUB, scope_index_select(&s, x, 0, first),
                                          scope_index_select(&s, x, 0, second));
        porta_tensor *g = pair_grad(&s, diff, scope_reshape(&s, dist, 2, column),
                                    scope_reshape(&s, grad, 2, column), p);
        porta_tensor *to_first = scope_expand(&s, scope_reshape(&s, first, 2, column), 2, spread);
        porta_tensor *to_second = scope_expand(&s, scope_reshape(&s, second, 2, column), 2, spread);
        out = scope_scatter(&s, out, 0, to_first, g, PORTA_SCATTER_ADD);
        out = scope_scatter(&s, out, 0, to_second, scope_unary(&s, PORTA_NEG, g), PORTA_SCATTER_ADD);
    }
    scope_push(&s, results, out);
    return scope_end(&s);
}

const aten_op aten_nn_distance_ops[] = {
    {"_cdist_backward", "TTTfT", cdist_backward},
    {"_cdist_forward", "TTfj", cdist_forward},
    {"_pdist_backward", "TTfT", pdist_backward},
    {"_pdist_forward", "Tf", pdist_forward},
    {NULL, NULL, NULL},
};
