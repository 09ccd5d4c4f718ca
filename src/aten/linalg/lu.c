/* LU with partial pivoting and what PyTorch builds on it: linalg_lu_factor_ex,
 * linalg_lu, lu_unpack, linalg_lu_solve, _linalg_solve_ex (solve, inv),
 * _linalg_det and _linalg_slogdet. The LU factorisation packs L\U and the
 * pivots in one tensor; solves are a row permutation and two triangular
 * solves. */
#include <string.h>

#include "aten/linalg/factor.h"
#include "core/status.h"
#include "ir/infer.h"
#include "runtime/tensor.h"

typedef struct lu_parts {
    porta_tensor *lu;     /* [..., m, n] */
    porta_tensor *pivots; /* int32 [..., min(m, n)] */
    porta_tensor *info;   /* int32 [...] */
} lu_parts;

static lu_parts lu_factor(aten_scope *s, const porta_tensor *a) {
    if (!a) return (lu_parts){NULL, NULL, NULL};
    int64_t m = a->sizes[a->rank - 2], n = a->sizes[a->rank - 1], k = m < n ? m : n;
    porta_tensor *packed = aten_linalg_factor(s, PORTA_FACTOR_LU, 0, a, NULL);
    /* column-major, as LAPACK leaves it on PyTorch's CPU */
    porta_tensor *lu = aten_linalg_rows(s, packed, 0, m);
    lu_parts parts = {
        .lu = aten_linalg_column_major(s, lu),
    };
    int64_t sizes[PORTA_MAX_RANK];
    memcpy(sizes, a->sizes, sizeof sizes);
    sizes[a->rank - 2] = k;
    porta_tensor *row = aten_linalg_columns(s, aten_linalg_rows(s, packed, m, m + 1), 0, k);
    parts.pivots = scope_cast(s, scope_reshape(s, row, a->rank - 1, sizes), PORTA_I32);
    porta_tensor *diagonal = aten_linalg_diagonal(s, parts.lu);
    parts.info = aten_linalg_first_failure(s, scope_binary_number(s, PORTA_EQ, diagonal, 0));
    return parts;
}

/* linalg_lu_factor_ex(A, *, pivot=True, check_errors=False) -> (LU, pivots, info) */
static porta_status *linalg_lu_factor_ex(const porta_value *args, aten_results *results) {
    const porta_tensor *a = args[0].tensor;
    PORTA_TRY(aten_linalg_check_matrix("torch.lu_factor", "A", a));
    if (!args[1].b)
        return porta_error(PORTA_ERR_UNSUPPORTED,
                           "linalg.lu_factor: LU without pivoting is not implemented on the CPU");
    aten_scope s;
    scope_begin(&s);
    lu_parts parts = lu_factor(&s, a);
    if (args[2].b && !s.status)
        scope_fail(&s, aten_linalg_check_errors(parts.info, "torch.linalg.lu_factor_ex",
                                           a->rank == 2));
    scope_push(&s, results, parts.lu);
    scope_push(&s, results, parts.pivots);
    scope_push(&s, results, parts.info);
    return scope_end(&s);
}

/* The permutation matrix P [..., m, m] of perm (A = P L U). */
static porta_tensor *permutation_matrix(aten_scope *s, const porta_tensor *perm, int64_t m,
                                        porta_dtype dtype) {
    if (!perm) return NULL;
    int64_t sizes[PORTA_MAX_RANK], column[2] = {m, 1};
    memcpy(sizes, perm->sizes, sizeof sizes);
    sizes[perm->rank - 1] = 1;
    sizes[perm->rank] = m;
    porta_tensor *row_of = scope_reshape(s, perm, perm->rank + 1, sizes);
    porta_tensor *rows = scope_reshape(s, scope_arange(s, perm->buffer->device, m), 2, column);
    return scope_cast(s, scope_binary(s, PORTA_EQ, rows, row_of), dtype);
}

/* P, L, U of a packed LU [..., m, n] and its pivots. */
static void unpack(aten_scope *s, const porta_tensor *lu, const porta_tensor *pivots,
                   bool unpack_data, bool unpack_pivots, aten_results *results) {
    int64_t m = lu->sizes[lu->rank - 2], n = lu->sizes[lu->rank - 1], k = m < n ? m : n;
    porta_tensor *p = aten_linalg_empty(s, lu, lu->dtype);
    if (unpack_pivots) {
        porta_tensor *perm = aten_linalg_pivot_permutation(s, pivots, m, false);
        p = permutation_matrix(s, perm, m, lu->dtype);
    }
    porta_tensor *l = aten_linalg_empty(s, lu, lu->dtype), *u = aten_linalg_empty(s, lu, lu->dtype);
    if (unpack_data) {
        porta_tensor *eye = aten_linalg_eye(s, lu->buffer->device, lu->dtype, m, k);
        porta_tensor *below = aten_linalg_tril(s, aten_linalg_columns(s, lu, 0, k), -1);
        l = scope_binary(s, PORTA_ADD, below, eye);
        u = aten_linalg_triu(s, aten_linalg_rows(s, lu, 0, k), 0);
    }
    scope_push(s, results, p);
    scope_push(s, results, l);
    scope_push(s, results, u);
}

/* linalg_lu(A, *, pivot=True) -> (P, L, U) */
static porta_status *linalg_lu(const porta_value *args, aten_results *results) {
    const porta_tensor *a = args[0].tensor;
    PORTA_TRY(aten_linalg_check_matrix("linalg.lu", "A", a));
    if (!args[1].b)
        return porta_error(PORTA_ERR_UNSUPPORTED,
                           "linalg.lu: LU without pivoting is not implemented on the CPU");
    aten_scope s;
    scope_begin(&s);
    lu_parts parts = lu_factor(&s, a);
    unpack(&s, parts.lu, parts.pivots, true, true, results);
    return scope_end(&s);
}

/* lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True) -> (P, L, U) */
static porta_status *lu_unpack(const porta_value *args, aten_results *results) {
    const porta_tensor *lu = args[0].tensor;
    PORTA_TRY(aten_linalg_check_matrix("torch.lu_unpack", "LU_data", lu));
    aten_scope s;
    scope_begin(&s);
    unpack(&s, lu, args[1].tensor, args[2].b, args[3].b, results);
    return scope_end(&s);
}

/* x [..., r, c] broadcast to the batch axes `batch` [batch_rank]. */
static porta_tensor *with_batch(aten_scope *s, const porta_tensor *x, int batch_rank,
                                const int64_t *batch) {
    if (!x) return NULL;
    int64_t sizes[PORTA_MAX_RANK];
    memcpy(sizes, batch, (size_t)batch_rank * sizeof *sizes);
    sizes[batch_rank] = x->sizes[x->rank - 2];
    sizes[batch_rank + 1] = x->sizes[x->rank - 1];
    return scope_expand(s, x, batch_rank + 2, sizes);
}

/* Rows of b [..., n, k] reordered: row i of the result is row index[..., i]. */
static porta_tensor *permute_rows(aten_scope *s, const porta_tensor *b, const porta_tensor *index) {
    if (!b || !index) return NULL;
    int64_t sizes[PORTA_MAX_RANK];
    memcpy(sizes, index->sizes, sizeof sizes);
    sizes[index->rank] = 1;
    porta_tensor *column = scope_reshape(s, index, index->rank + 1, sizes);
    return scope_gather(s, b, b->rank - 2, scope_expand(s, column, b->rank, b->sizes));
}

/* X with A X = B (adjoint: A^T X = B) for A = P L U given as LU, pivots. */
static porta_tensor *lu_solve_left(aten_scope *s, const porta_tensor *lu,
                                   const porta_tensor *pivots, const porta_tensor *b,
                                   bool adjoint) {
    if (!lu || !pivots || !b) return NULL;
    int64_t n = lu->sizes[lu->rank - 1];
    int batch_rank;
    int64_t batch[PORTA_MAX_RANK];
    porta_status *status = ir_broadcast_shapes("linalg.lu_solve", lu->rank - 2, lu->sizes,
                                               b->rank - 2, b->sizes, &batch_rank, batch);
    if (status) return scope_fail(s, status);
    porta_tensor *b_b = with_batch(s, b, batch_rank, batch);
    int64_t pivot_sizes[PORTA_MAX_RANK];
    memcpy(pivot_sizes, batch, sizeof pivot_sizes);
    pivot_sizes[batch_rank] = pivots->sizes[pivots->rank - 1];
    porta_tensor *pivots_b = scope_expand(s, pivots, batch_rank + 1, pivot_sizes);
    porta_tensor *perm = aten_linalg_pivot_permutation(s, pivots_b, n, adjoint);
    if (!adjoint) { /* L U X = P^T B */
        porta_tensor *y = aten_linalg_factor(s, PORTA_FACTOR_TRIANGULAR_SOLVE,
                                        PORTA_FACTOR_UNIT_DIAGONAL, lu,
                                        permute_rows(s, b_b, perm));
        return aten_linalg_factor(s, PORTA_FACTOR_TRIANGULAR_SOLVE, PORTA_FACTOR_UPPER, lu, y);
    }
    /* U^T L^T P^T X = B */
    porta_tensor *lu_t = aten_linalg_transpose(s, lu);
    porta_tensor *y = aten_linalg_factor(s, PORTA_FACTOR_TRIANGULAR_SOLVE, 0, lu_t, b_b);
    porta_tensor *z = aten_linalg_factor(s, PORTA_FACTOR_TRIANGULAR_SOLVE,
                                    PORTA_FACTOR_UPPER | PORTA_FACTOR_UNIT_DIAGONAL, lu_t, y);
    return permute_rows(s, z, perm);
}

static porta_tensor *lu_solve(aten_scope *s, const porta_tensor *lu, const porta_tensor *pivots,
                              const porta_tensor *b, bool left, bool adjoint) {
    if (left) return lu_solve_left(s, lu, pivots, b, adjoint);
    /* X A = B is A^T X^T = B^T */
    porta_tensor *xt = lu_solve_left(s, lu, pivots, aten_linalg_transpose(s, b), !adjoint);
    return scope_contiguous(s, aten_linalg_transpose(s, xt));
}

/* linalg_lu_solve(LU, pivots, B, *, left=True, adjoint=False) */
static porta_status *linalg_lu_solve(const porta_value *args, aten_results *results) {
    const porta_tensor *lu = args[0].tensor, *b = args[2].tensor;
    PORTA_TRY(aten_linalg_check_square("linalg.lu_solve", "LU", lu));
    PORTA_TRY(aten_linalg_check_matrix("linalg.lu_solve", "B", b));
    aten_scope s;
    scope_begin(&s);
    porta_tensor *b_cast = scope_as_dtype(&s, b, lu->dtype);
    scope_push(&s, results, lu_solve(&s, lu, args[1].tensor, b_cast, args[3].b, args[4].b));
    return scope_end(&s);
}

/* PyTorch's linalg_solve_is_vector_rhs: B is a vector (or a batch of them). */
static bool vector_rhs(const porta_tensor *a, const porta_tensor *b) {
    if (b->rank == 1) return true;
    if (b->rank != a->rank - 1) return false;
    for (int d = 0; d < b->rank; d++)
        if (b->sizes[d] != a->sizes[d]) return false;
    return true;
}

/* _linalg_solve_ex(A, B, *, left=True, check_errors=False) -> (result, LU, pivots, info) */
static porta_status *linalg_solve_ex(const porta_value *args, aten_results *results) {
    const porta_tensor *a = args[0].tensor, *b = args[1].tensor;
    bool left = args[2].b;
    PORTA_TRY(aten_linalg_check_square("linalg.solve", "A", a));
    if (b->dtype != a->dtype)
        return porta_error(PORTA_ERR_DTYPE,
                           "linalg.solve: Expected A and B to have the same dtype, but found A "
                           "of type %s and B of type %s instead",
                           porta_dtype_name(a->dtype), porta_dtype_name(b->dtype));
    bool vector = vector_rhs(a, b);
    aten_scope s;
    scope_begin(&s);
    lu_parts parts = lu_factor(&s, a);
    porta_tensor *rhs = (porta_tensor *)b;
    if (vector) {
        int64_t sizes[PORTA_MAX_RANK];
        memcpy(sizes, b->sizes, sizeof sizes);
        sizes[b->rank] = 1;
        if (!left) {
            sizes[b->rank - 1] = 1;
            sizes[b->rank] = b->sizes[b->rank - 1];
        }
        rhs = scope_reshape(&s, b, b->rank + 1, sizes);
    } else if (b->rank < 2) {
        scope_fail(&s, porta_error(PORTA_ERR_SHAPE,
                                   "linalg.solve: The input tensor B must have at least 2 "
                                   "dimensions."));
    }
    porta_tensor *x = lu_solve(&s, parts.lu, parts.pivots, rhs, left, false);
    if (vector && x) {
        int64_t sizes[PORTA_MAX_RANK];
        memcpy(sizes, x->sizes, sizeof sizes);
        if (!left) sizes[x->rank - 2] = x->sizes[x->rank - 1];
        x = scope_reshape(&s, x, x->rank - 1, sizes);
    }
    if (args[3].b && !s.status)
        scope_fail(&s, aten_linalg_check_errors(parts.info, "torch.linalg.solve_ex", a->rank == 2));
    scope_push(&s, results, x);
    scope_push(&s, results, parts.lu);
    scope_push(&s, results, parts.pivots);
    scope_push(&s, results, parts.info);
    return scope_end(&s);
}

/* linalg_inv_ex(A, *, check_errors=False) -> (inverse, info): A X = I */
static porta_status *linalg_inv_ex(const porta_value *args, aten_results *results) {
    const porta_tensor *a = args[0].tensor;
    PORTA_TRY(aten_linalg_check_square("linalg.inv", "A", a));
    int64_t n = a->sizes[a->rank - 1];
    aten_scope s;
    scope_begin(&s);
    lu_parts parts = lu_factor(&s, a);
    porta_tensor *eye = aten_linalg_eye(&s, a->buffer->device, a->dtype, n, n);
    porta_tensor *inverse = lu_solve(&s, parts.lu, parts.pivots, eye, true, false);
    if (args[1].b && !s.status)
        scope_fail(&s, aten_linalg_check_errors(parts.info, "linalg.inv_ex", a->rank == 2));
    scope_push(&s, results, inverse);
    scope_push(&s, results, parts.info);
    return scope_end(&s);
}

/* -1 where the pivots swap an odd number of rows, else 1 (in dtype). */
static porta_tensor *permutation_sign(aten_scope *s, const porta_tensor *pivots,
                                      porta_dtype dtype) {
    if (!pivots) return NULL;
    int64_t k = pivots->sizes[pivots->rank - 1];
    porta_tensor *positions = scope_binary_number(s, PORTA_ADD,
                                                  scope_arange(s, pivots->buffer->device, k), 1);
    porta_tensor *moved = scope_binary(s, PORTA_NE, scope_cast(s, pivots, PORTA_I64), positions);
    int axis = pivots->rank - 1;
    porta_tensor *count = scope_reduce(s, PORTA_REDUCE_SUM, scope_cast(s, moved, PORTA_I64),
                                       &axis, 1, false);
    porta_tensor *odd = scope_binary_number(s, PORTA_REMAINDER, count, 2);
    /* 1 - 2 * odd */
    porta_tensor *sign = scope_number_binary(s, PORTA_SUB, 1,
                                             scope_binary_number(s, PORTA_MUL, odd, 2));
    return scope_cast(s, sign, dtype);
}

/* The LU that _linalg_det and _linalg_slogdet return, as PyTorch's CPU
 * does: of A^T when A is row-major (LAPACK reads it as A^T without a copy;
 * the backward formulas rely on it), else of A. */
static lu_parts determinant_lu(aten_scope *s, const porta_tensor *a) {
    return lu_factor(s, porta_tensor_is_contiguous(a) ? aten_linalg_transpose(s, a) : a);
}

/* _linalg_det(A) -> (det, LU, pivots) */
static porta_status *linalg_det(const porta_value *args, aten_results *results) {
    const porta_tensor *a = args[0].tensor;
    PORTA_TRY(aten_linalg_check_square("linalg.det", "A", a));
    aten_scope s;
    scope_begin(&s);
    lu_parts parts = determinant_lu(&s, a);
    int axis = a->rank - 2;
    porta_tensor *product = scope_reduce(&s, PORTA_REDUCE_PROD, aten_linalg_diagonal(&s, parts.lu),
                                         &axis, 1, false);
    porta_tensor *det = scope_binary(&s, PORTA_MUL, product,
                                     permutation_sign(&s, parts.pivots, a->dtype));
    scope_push(&s, results, det);
    scope_push(&s, results, parts.lu);
    scope_push(&s, results, parts.pivots);
    return scope_end(&s);
}

/* _linalg_slogdet(A) -> (sign, logabsdet, LU, pivots) */
static porta_status *linalg_slogdet(const porta_value *args, aten_results *results) {
    const porta_tensor *a = args[0].tensor;
    PORTA_TRY(aten_linalg_check_square("linalg.slogdet", "A", a));
    aten_scope s;
    scope_begin(&s);
    lu_parts parts = determinant_lu(&s, a);
    int axis = a->rank - 2;
    porta_tensor *diagonal = aten_linalg_diagonal(&s, parts.lu);
    porta_tensor *signs = scope_reduce(&s, PORTA_REDUCE_PROD, scope_unary(&s, PORTA_SIGN, diagonal),
                                       &axis, 1, false);
    porta_tensor *sign = scope_binary(&s, PORTA_MUL, signs,
                                      permutation_sign(&s, parts.pivots, a->dtype));
    porta_tensor *logabs = scope_reduce(
        &s, PORTA_REDUCE_SUM, scope_unary(&s, PORTA_LOG, scope_unary(&s, PORTA_ABS, diagonal)),
        &axis, 1, false);
    scope_push(&s, results, sign);
    scope_push(&s, results, logabs);
    scope_push(&s, results, parts.lu);
    scope_push(&s, results, parts.pivots);
    return scope_end(&s);
}

const aten_op aten_linalg_lu_ops[] = {
    {"linalg_lu_factor_ex", "Tbb", linalg_lu_factor_ex},
    {"linalg_lu", "Tb", linalg_lu},
    {"lu_unpack", "TTbb", lu_unpack},
    {"linalg_lu_solve", "TTTbb", linalg_lu_solve},
    {"_linalg_solve_ex", "TTbb", linalg_solve_ex},
    {"linalg_inv_ex", "Tb", linalg_inv_ex},
    {"_linalg_det", "T", linalg_det},
    {"_linalg_slogdet", "T", linalg_slogdet},
    {NULL, NULL, NULL},
};
