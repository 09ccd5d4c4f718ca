/* Cholesky and triangular solves: linalg_cholesky_ex and cholesky from the
 * CHOLESKY factorisation (info from its diagonal), cholesky_solve's helper
 * and cholesky_inverse as two triangular solves, linalg_solve_triangular
 * and triangular_solve from TRIANGULAR_SOLVE (right-hand and transposed
 * variants through transposed views). */
#include "aten/linalg/factor.h"
#include "core/status.h"
#include "runtime/tensor.h"

/* X with op(a) X = b, op(a) = a or a^T; a lower or upper as stored. */
static porta_tensor *solve_left(aten_scope *s, const porta_tensor *a, const porta_tensor *b,
                                bool upper, bool transpose, bool unit) {
    const porta_tensor *coefficient = transpose ? aten_linalg_transpose(s, a) : a;
    int flags = ((upper != transpose) ? PORTA_FACTOR_UPPER : 0) |
                (unit ? PORTA_FACTOR_UNIT_DIAGONAL : 0);
    return aten_linalg_factor(s, PORTA_FACTOR_TRIANGULAR_SOLVE, flags, coefficient, b);
}

/* The lower factor L (a = L L^T) and info of a batch of matrices. */
static porta_tensor *cholesky_lower(aten_scope *s, const porta_tensor *a, porta_tensor **info) {
    porta_tensor *lower = aten_linalg_factor(s, PORTA_FACTOR_CHOLESKY, 0, a, NULL);
    porta_tensor *diagonal = aten_linalg_diagonal(s, lower);
    porta_tensor *positive = scope_binary_number(s, PORTA_GT, diagonal, 0);
    *info = aten_linalg_first_failure(s, scope_unary(s, PORTA_LOGICAL_NOT, positive));
    return lower;
}

static porta_status *cholesky_common(const porta_value *args, const char *api, bool check,
                                     bool push_info, aten_results *results) {
    const porta_tensor *a = args[0].tensor;
    bool upper = args[1].b;
    PORTA_TRY(aten_linalg_check_square(api, "A", a));
    aten_scope s;
    scope_begin(&s);
    porta_tensor *info;
    porta_tensor *lower = cholesky_lower(&s, a, &info);
    porta_tensor *factor = upper ? scope_contiguous(&s, aten_linalg_transpose(&s, lower)) : lower;
    if (check && !s.status) scope_fail(&s, aten_linalg_check_errors(info, api, a->rank == 2));
    scope_push(&s, results, factor);
    if (push_info) scope_push(&s, results, info);
    return scope_end(&s);
}

/* linalg_cholesky_ex(A, *, upper=False, check_errors=False) -> (L, info) */
static porta_status *linalg_cholesky_ex(const porta_value *args, aten_results *results) {
    return cholesky_common(args, "linalg.cholesky_ex", args[2].b, true, results);
}

/* cholesky(A, upper=False): the deprecated spelling, which always checks. */
static porta_status *cholesky(const porta_value *args, aten_results *results) {
    return cholesky_common(args, "cholesky", true, false, results);
}

/* X with A X = B for A = L L^T (or U^T U when upper), the factor given. */
static porta_tensor *cholesky_solve_with(aten_scope *s, const porta_tensor *b,
                                         const porta_tensor *factor, bool upper) {
    porta_tensor *y = solve_left(s, factor, b, upper, upper, false);
    return solve_left(s, factor, y, upper, !upper, false);
}

/* _cholesky_solve_helper(B, factor, upper): cholesky_solve after its
 * broadcasting. */
static porta_status *cholesky_solve_helper(const porta_value *args, aten_results *results) {
    const porta_tensor *b = args[0].tensor, *factor = args[1].tensor;
    PORTA_TRY(aten_linalg_check_square("cholesky_solve", "A", factor));
    PORTA_TRY(aten_linalg_check_matrix("cholesky_solve", "B", b));
    aten_scope s;
    scope_begin(&s);
    scope_push(&s, results, cholesky_solve_with(&s, b, factor, args[2].b));
    return scope_end(&s);
}

/* cholesky_inverse(factor, upper=False): A^-1 for A = L L^T. */
static porta_status *cholesky_inverse(const porta_value *args, aten_results *results) {
    const porta_tensor *factor = args[0].tensor;
    PORTA_TRY(aten_linalg_check_square("cholesky_inverse", "A", factor));
    int64_t n = factor->sizes[factor->rank - 1];
    aten_scope s;
    scope_begin(&s);
    porta_tensor *eye = aten_linalg_eye(&s, factor->buffer->device, factor->dtype, n, n);
    scope_push(&s, results, cholesky_solve_with(&s, eye, factor, args[1].b));
    return scope_end(&s);
}

static porta_tensor *solve_triangular(aten_scope *s, const porta_tensor *a, const porta_tensor *b,
                                      bool upper, bool left, bool unit) {
    if (left) return solve_left(s, a, b, upper, false, unit);
    /* X A = B is A^T X^T = B^T */
    porta_tensor *xt = solve_left(s, a, aten_linalg_transpose(s, b), upper, true, unit);
    return scope_contiguous(s, aten_linalg_transpose(s, xt));
}

/* The operands in their promoted dtype, checked as PyTorch checks them. */
static porta_status *solve_operands(aten_scope *s, const char *op, const porta_tensor *a,
                                    const porta_tensor *b, porta_tensor **a_out,
                                    porta_tensor **b_out) {
    PORTA_TRY(aten_linalg_check_square(op, "A", a));
    PORTA_TRY(aten_linalg_check_matrix(op, "B", b));
    porta_dtype dtype = porta_dtype_promote(a->dtype, b->dtype);
    *a_out = scope_as_dtype(s, a, dtype);
    *b_out = scope_as_dtype(s, b, dtype);
    return NULL;
}

/* linalg_solve_triangular(A, B, *, upper, left=True, unitriangular=False) */
static porta_status *linalg_solve_triangular(const porta_value *args, aten_results *results) {
    aten_scope s;
    scope_begin(&s);
    porta_tensor *a, *b;
    PORTA_TRY(solve_operands(&s, "linalg.solve_triangular", args[0].tensor, args[1].tensor, &a,
                             &b));
    scope_push(&s, results, solve_triangular(&s, a, b, args[2].b, args[3].b, args[4].b));
    return scope_end(&s);
}

/* triangular_solve(B, A, upper=True, transpose=False, unitriangular=False)
 * -> (solution, cloned_coefficient: A broadcast to the batch) */
static porta_status *triangular_solve(const porta_value *args, aten_results *results) {
    aten_scope s;
    scope_begin(&s);
    porta_tensor *a, *b;
    PORTA_TRY(solve_operands(&s, "triangular_solve", args[1].tensor, args[0].tensor, &a, &b));
    porta_tensor *x = solve_left(&s, a, b, args[2].b, args[3].b, args[4].b);
    porta_tensor *coefficient = NULL;
    if (x) {
        int64_t sizes[PORTA_MAX_RANK];
        for (int d = 0; d < x->rank - 2; d++) sizes[d] = x->sizes[d];
        sizes[x->rank - 2] = a->sizes[a->rank - 2];
        sizes[x->rank - 1] = a->sizes[a->rank - 1];
        coefficient = scope_contiguous(&s, scope_expand(&s, a, x->rank, sizes));
    }
    scope_push(&s, results, x);
    scope_push(&s, results, coefficient);
    return scope_end(&s);
}

const aten_op aten_linalg_cholesky_triangular_ops[] = {
    {"linalg_cholesky_ex", "Tbb", linalg_cholesky_ex},
    {"cholesky", "Tb", cholesky},
    {"_cholesky_solve_helper", "TTb", cholesky_solve_helper},
    {"cholesky_inverse", "Tb", cholesky_inverse},
    {"linalg_solve_triangular", "TTbbb", linalg_solve_triangular},
    {"triangular_solve", "TTbbb", triangular_solve},
    {NULL, NULL, NULL},
};
