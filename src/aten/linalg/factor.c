/* The linear-algebra compositions' shared steps (factor.h). */
#include "aten/linalg/factor.h"

#include <stdio.h>
#include <string.h>

#include "aten/reduce/common.h"
#include "core/alloc.h"
#include "core/status.h"
#include "runtime/tensor.h"

porta_tensor *aten_linalg_factor(aten_scope *s, porta_factor_op op, int flags,
                                 const porta_tensor *a, const porta_tensor *b) {
    bool solve = op == PORTA_FACTOR_TRIANGULAR_SOLVE || op == PORTA_FACTOR_LDL_SOLVE;
    if (s->status || !a || (solve && !b)) return NULL;
    porta_tensor *out = NULL;
    porta_status *status = porta_factor(op, flags, a, b, &out); /* before out is read */
    return scope_hold(s, status, out);
}

porta_status *aten_linalg_check_matrix(const char *op, const char *name, const porta_tensor *x) {
    if (x->rank < 2)
        return porta_error(PORTA_ERR_SHAPE,
                           "%s: The input tensor %s must have at least 2 dimensions.", op, name);
    if (x->dtype != PORTA_F32 && x->dtype != PORTA_F64)
        return porta_error(PORTA_ERR_DTYPE,
                           "%s: Expected a floating point or complex tensor as input. Got %s", op,
                           aten_dtype_label(x->dtype));
    return NULL;
}

porta_status *aten_linalg_check_square(const char *op, const char *name, const porta_tensor *x) {
    PORTA_TRY(aten_linalg_check_matrix(op, name, x));
    if (x->sizes[x->rank - 1] != x->sizes[x->rank - 2])
        return porta_error(PORTA_ERR_SHAPE,
                           "%s: %s must be batches of square matrices, but they are %lld by %lld "
                           "matrices",
                           op, name, (long long)x->sizes[x->rank - 2],
                           (long long)x->sizes[x->rank - 1]);
    return NULL;
}

porta_tensor *aten_linalg_transpose(aten_scope *s, const porta_tensor *x) {
    if (!x) return NULL;
    int dims[PORTA_MAX_RANK];
    for (int d = 0; d < x->rank; d++) dims[d] = d;
    dims[x->rank - 2] = x->rank - 1;
    dims[x->rank - 1] = x->rank - 2;
    return scope_permute(s, x, dims);
}

porta_tensor *aten_linalg_column_major(aten_scope *s, const porta_tensor *x) {
    return aten_linalg_transpose(s, scope_contiguous(s, aten_linalg_transpose(s, x)));
}

porta_tensor *aten_linalg_empty(aten_scope *s, const porta_tensor *like, porta_dtype dtype) {
    int64_t zero = 0;
    return like ? scope_full(s, like->buffer->device, dtype, 1, &zero, 0) : NULL;
}

porta_tensor *aten_linalg_rows(aten_scope *s, const porta_tensor *x, int64_t start, int64_t stop) {
    return x ? scope_slice(s, x, x->rank - 2, start, stop, 1) : NULL;
}

porta_tensor *aten_linalg_columns(aten_scope *s, const porta_tensor *x, int64_t start,
                                  int64_t stop) {
    return x ? scope_slice(s, x, x->rank - 1, start, stop, 1) : NULL;
}

porta_tensor *aten_linalg_diagonal(aten_scope *s, const porta_tensor *x) {
    if (!x) return NULL;
    int rank = x->rank - 1;
    int64_t sizes[PORTA_MAX_RANK], strides[PORTA_MAX_RANK];
    for (int d = 0; d < rank - 1; d++) {
        sizes[d] = x->sizes[d];
        strides[d] = x->strides[d];
    }
    int64_t m = x->sizes[x->rank - 2], n = x->sizes[x->rank - 1];
    sizes[rank - 1] = m < n ? m : n;
    strides[rank - 1] = x->strides[x->rank - 2] + x->strides[x->rank - 1];
    return scope_restride(s, x, rank, sizes, strides);
}

static porta_tensor *triangle(aten_scope *s, const char *name, const porta_tensor *x, int64_t k) {
    if (!x) return NULL;
    porta_value args[2] = {{.kind = PORTA_VALUE_TENSOR, .tensor = (porta_tensor *)x},
                           {.kind = PORTA_VALUE_INT, .i = k}};
    return scope_call(s, name, args, 2);
}

porta_tensor *aten_linalg_tril(aten_scope *s, const porta_tensor *x, int64_t k) {
    return triangle(s, "tril", x, k);
}

porta_tensor *aten_linalg_triu(aten_scope *s, const porta_tensor *x, int64_t k) {
    return triangle(s, "triu", x, k);
}

porta_tensor *aten_linalg_eye(aten_scope *s, porta_device *device, porta_dtype dtype, int64_t rows,
                         int64_t cols) {
    int64_t column[2] = {rows, 1};
    porta_tensor *row_index = scope_reshape(s, scope_arange(s, device, rows), 2, column);
    porta_tensor *col_index = scope_arange(s, device, cols);
    return scope_cast(s, scope_binary(s, PORTA_EQ, row_index, col_index), dtype);
}

porta_tensor *aten_linalg_first_failure(aten_scope *s, const porta_tensor *bad) {
    if (!bad) return NULL;
    int axis = bad->rank - 1;
    if (bad->sizes[axis] == 0) {
        int64_t sizes[PORTA_MAX_RANK];
        memcpy(sizes, bad->sizes, sizeof sizes);
        return scope_full(s, bad->buffer->device, PORTA_I32, axis, sizes, 0);
    }
    porta_tensor *first = scope_reduce(s, PORTA_REDUCE_ARGMAX, scope_cast(s, bad, PORTA_I32),
                                       &axis, 1, false);
    porta_tensor *any = scope_reduce(s, PORTA_REDUCE_ANY, bad, &axis, 1, false);
    porta_tensor *info = scope_where_number(s, scope_unary(s, PORTA_LOGICAL_NOT, any), 0,
                                            scope_binary_number(s, PORTA_ADD, first, 1));
    return scope_cast(s, info, PORTA_I32);
}

porta_status *aten_linalg_check_errors(const porta_tensor *info, const char *api, bool is_matrix) {
    int64_t count = porta_tensor_numel(info);
    if (count == 0) return NULL;
    int32_t *values;
    PORTA_TRY(core_host_alloc((size_t)count * sizeof *values, "info", (void **)&values));
    porta_status *status = porta_tensor_to_host(info, values, (size_t)count * sizeof *values);
    int64_t batch = 0;
    while (!status && batch < count && values[batch] == 0) batch++;
    int32_t code = !status && batch < count ? values[batch] : 0;
    core_host_free(values);
    if (status || code == 0) return status;
    char where[64] = "";
    if (!is_matrix) snprintf(where, sizeof where, ": (Batch element %lld)", (long long)batch);
    if (strstr(api, "inv"))
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "%s%s: The diagonal element %d is zero, the inversion could not be "
                           "completed because the input matrix is singular.",
                           api, where, code);
    if (strstr(api, "solve"))
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "%s%s: The solver failed because the input matrix is singular.", api,
                           where);
    if (strstr(api, "cholesky"))
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "%s%s: The factorization could not be completed because the input is "
                           "not positive-definite (the leading minor of order %d is not "
                           "positive-definite).",
                           api, where, code);
    if (strstr(api, "lu_factor"))
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "%s%s: U[%d,%d] is zero and using it on lu_solve would result in a "
                           "division by zero. If you still want to perform the factorization, "
                           "consider calling linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)",
                           api, where, code, code);
    return porta_error(PORTA_ERR_INVALID_ARGUMENT, "%s%s: failed with error code %d.", api, where,
                       code);
}

/* perm [m] of one matrix's pivots [k] (LAPACK's sequential row swaps),
 * inverted in place of `inverse_into` when that is not NULL. */
static porta_status *apply_swaps(const int64_t *pivots, int64_t k, int64_t m, double *perm,
                                 double *inverse_into) {
    for (int64_t i = 0; i < m; i++) perm[i] = (double)i;
    for (int64_t j = 0; j < k && j < m; j++) {
        int64_t other = pivots[j] - 1;
        if (other < 0 || other >= m)
            return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                               "lu_unpack: expected pivots between 1 and %lld, got %lld",
                               (long long)m, (long long)(other + 1));
        double t = perm[j];
        perm[j] = perm[other];
        perm[other] = t;
    }
    if (inverse_into) {
        for (int64_t i = 0; i < m; i++) inverse_into[(int64_t)perm[i]] = (double)i;
        memcpy(perm, inverse_into, (size_t)m * sizeof *perm);
    }
    return NULL;
}

porta_tensor *aten_linalg_pivot_permutation(aten_scope *s, const porta_tensor *pivots, int64_t m,
                                       bool inverse) {
    if (s->status || !pivots) return NULL;
    int64_t k = pivots->sizes[pivots->rank - 1], batch = 1;
    for (int d = 0; d < pivots->rank - 1; d++) batch *= pivots->sizes[d];
    porta_tensor *wide = scope_contiguous(s, scope_cast(s, pivots, PORTA_I64));
    if (!wide) return NULL;
    int64_t *swaps = NULL;
    double *perm = NULL; /* batch * m, then m of scratch for the inverse */
    porta_status *status =
        core_host_alloc((size_t)(batch * k + 1) * sizeof *swaps, "pivots", (void **)&swaps);
    if (!status)
        status = core_host_alloc((size_t)((batch + 1) * m + 1) * sizeof *perm, "permutation",
                                 (void **)&perm);
    if (!status && batch * k > 0)
        status = porta_tensor_to_host(wide, swaps, (size_t)(batch * k) * sizeof *swaps);
    for (int64_t b = 0; !status && b < batch; b++)
        status = apply_swaps(swaps + b * k, k, m, perm + b * m, inverse ? perm + batch * m : NULL);
    porta_tensor *result = NULL;
    if (!status) {
        int64_t sizes[PORTA_MAX_RANK];
        memcpy(sizes, pivots->sizes, sizeof sizes);
        sizes[pivots->rank - 1] = m;
        result = scope_cast(
            s, scope_from_host(s, pivots->buffer->device, pivots->rank, sizes, perm), PORTA_I64);
    }
    core_host_free(swaps);
    core_host_free(perm);
    return status ? scope_fail(s, status) : result;
}
