/* linalg_lstsq.out (linalg_lstsq's kernel): the minimum-norm least-squares
 * solution through the SVD (singular values at most rcond times the largest
 * dropped), with the outputs PyTorch's CPU drivers define: the rank for
 * gelsy, gelsd and gelss, the singular values for gelsd and gelss, the
 * squared residuals for every driver but gelsy when m > n and each matrix
 * has full rank (gels assumes it). */
#include <float.h>
#include <string.h>

#include "aten/dispatch/op_reuse.h"
#include "aten/linalg/factor.h"
#include "core/status.h"
#include "runtime/tensor.h"

/* x with a unit axis inserted before position `axis` (negative from the end). */
static porta_tensor *unsqueeze(aten_scope *s, const porta_tensor *x, int axis) {
    if (!x) return NULL;
    int at = axis < 0 ? x->rank + 1 + axis : axis;
    int64_t sizes[PORTA_MAX_RANK];
    for (int d = 0, k = 0; d <= x->rank; d++) sizes[d] = d == at ? 1 : x->sizes[k++];
    return scope_reshape(s, x, x->rank + 1, sizes);
}

/* x without its axis `axis` of size 1. */
static porta_tensor *squeeze(aten_scope *s, const porta_tensor *x, int axis) {
    if (!x) return NULL;
    int at = axis < 0 ? x->rank + axis : axis;
    int64_t sizes[PORTA_MAX_RANK];
    for (int d = 0, k = 0; d < x->rank; d++)
        if (d != at) sizes[k++] = x->sizes[d];
    return scope_reshape(s, x, x->rank - 1, sizes);
}

/* linalg_lstsq(A, B, rcond=None, *, driver=None) -> (solution, residuals,
 * rank, singular_values) */
static porta_status *lstsq(const porta_value *args, aten_results *results) {
    const porta_tensor *a = args[0].tensor, *b = args[1].tensor;
    const char *driver = args[3].kind == PORTA_VALUE_STRING ? args[3].string : "gelsy";
    PORTA_TRY(aten_linalg_check_matrix("torch.linalg.lstsq", "A", a));
    if (strcmp(driver, "gels") && strcmp(driver, "gelsy") && strcmp(driver, "gelsd") &&
        strcmp(driver, "gelss"))
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "torch.linalg.lstsq: parameter `driver` should be one of (gels, "
                           "gelsy, gelsd, gelss)");
    if (b->dtype != a->dtype)
        return porta_error(PORTA_ERR_DTYPE,
                           "torch.linalg.lstsq: Expected input and other to have the same dtype, "
                           "but got input's dtype %s and other's dtype %s",
                           porta_dtype_name(a->dtype), porta_dtype_name(b->dtype));
    int64_t m = a->sizes[a->rank - 2], n = a->sizes[a->rank - 1], k = m < n ? m : n;
    bool vector = b->rank == a->rank - 1;
    if (!vector && b->sizes[b->rank - 2] != m)
        return porta_error(PORTA_ERR_SHAPE,
                           "torch.linalg.lstsq: input.size(-2) should match other.size(-2)");
    double rcond = args[2].kind == PORTA_VALUE_NONE
                       ? (a->dtype == PORTA_F32 ? FLT_EPSILON : DBL_EPSILON) *
                             (double)(m > n ? m : n)
                       : (args[2].kind == PORTA_VALUE_INT ? (double)args[2].i : args[2].f);
    aten_scope s;
    scope_begin(&s);
    porta_tensor *rhs = vector ? unsqueeze(&s, b, -1) : (porta_tensor *)b;
    porta_tensor *u, *values, *vh;
    aten_linalg_svd(&s, a, false, &u, &values, &vh);
    int last = a->rank - 2; /* the values' axis */
    porta_tensor *largest = scope_reduce(&s, PORTA_REDUCE_MAX, values, &last, 1, true);
    porta_tensor *kept = k ? scope_binary(&s, PORTA_GT, values,
                                          scope_binary_number(&s, PORTA_MUL, largest, rcond))
                           : NULL;
    porta_tensor *inverse = k ? scope_where_number(&s, scope_unary(&s, PORTA_LOGICAL_NOT, kept),
                                                   0, scope_unary(&s, PORTA_RECIPROCAL, values))
                              : values;
    /* X = V diag(1 / s) U^T B */
    porta_tensor *projected = scope_matmul(&s, aten_linalg_transpose(&s, u), rhs);
    porta_tensor *scaled = scope_binary(&s, PORTA_MUL, projected, unsqueeze(&s, inverse, -1));
    porta_tensor *solution = scope_matmul(&s, aten_linalg_transpose(&s, vh), scaled);
    bool ranked = strcmp(driver, "gels") != 0;
    porta_tensor *rank = NULL;
    if (ranked)
        rank = k ? scope_reduce(&s, PORTA_REDUCE_SUM, scope_cast(&s, kept, PORTA_I64), &last, 1,
                                false)
                 : scope_full(&s, a->buffer->device, PORTA_I64, a->rank - 2, a->sizes, 0);
    bool full_rank = true;
    if (rank && m > n && strcmp(driver, "gelsy")) {
        porta_tensor *lowest = scope_reduce(&s, PORTA_REDUCE_MIN, rank, NULL, 0, false);
        full_rank = porta_tensor_numel(rank) == 0 || scope_read_int(&s, lowest) == n;
    }
    porta_tensor *residuals = aten_linalg_empty(&s, a, a->dtype);
    if (m > n && strcmp(driver, "gelsy") && full_rank) {
        porta_tensor *error = scope_binary(&s, PORTA_SUB, scope_matmul(&s, a, solution), rhs);
        int rows = a->rank - 2;
        porta_tensor *squares = scope_binary(&s, PORTA_MUL, error, error);
        /* [..., k]; [..., 1] for a vector B, as PyTorch keeps it */
        residuals = scope_reduce(&s, PORTA_REDUCE_SUM, squares, &rows, 1, false);
    }
    bool with_values = !strcmp(driver, "gelsd") || !strcmp(driver, "gelss");
    scope_push(&s, results, vector ? squeeze(&s, solution, -1) : solution);
    scope_push(&s, results, residuals);
    scope_push(&s, results, ranked ? rank : aten_linalg_empty(&s, a, PORTA_I64));
    scope_push(&s, results, with_values ? values : aten_linalg_empty(&s, a, a->dtype));
    return scope_end(&s);
}

static porta_status *lstsq_out(const porta_value *args, aten_results *results) {
    return aten_into_outs(lstsq, args, 4, 4, results);
}

const aten_op aten_linalg_lstsq_ops[] = {
    {"linalg_lstsq.out", "TTgrTTTT", lstsq_out},
    {NULL, NULL, NULL},
};
