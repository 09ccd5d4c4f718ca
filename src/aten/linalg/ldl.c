/* The LDL^T factorisation of symmetric matrices (Bunch-Kaufman, LAPACK's
 * sytrf/sytrs): linalg_ldl_factor_ex.out and linalg_ldl_solve.out, the
 * kernels of PyTorch's linalg.ldl_factor(_ex) and linalg.ldl_solve. For
 * real matrices hermitian=True is the same factorisation. */
#include <string.h>

#include "aten/dispatch/op_reuse.h"
#include "aten/linalg/factor.h"
#include "core/status.h"
#include "runtime/tensor.h"

/* linalg_ldl_factor_ex(A, *, hermitian=False, check_errors=False) -> (LD, pivots, info) */
static porta_status *ldl_factor_ex(const porta_value *args, aten_results *results) {
    const porta_tensor *a = args[0].tensor;
    PORTA_TRY(aten_linalg_check_square("torch.linalg.ldl_factor_ex", "A", a));
    int64_t n = a->sizes[a->rank - 1];
    aten_scope s;
    scope_begin(&s);
    porta_tensor *packed = aten_linalg_factor(&s, PORTA_FACTOR_LDL, 0, a, NULL);
    porta_tensor *ld = aten_linalg_rows(&s, packed, 0, n);
    /* column-major, as LAPACK leaves it on PyTorch's CPU */
    ld = aten_linalg_column_major(&s, ld);
    int64_t sizes[PORTA_MAX_RANK];
    memcpy(sizes, a->sizes, sizeof sizes);
    porta_tensor *row = scope_contiguous(&s, aten_linalg_rows(&s, packed, n, n + 1));
    porta_tensor *pivots = scope_cast(&s, scope_reshape(&s, row, a->rank - 1, sizes), PORTA_I32);
    /* LAPACK's info: the first 1x1 block of D that is zero */
    porta_tensor *zero = scope_binary_number(&s, PORTA_EQ, aten_linalg_diagonal(&s, ld), 0);
    porta_tensor *single = scope_binary_number(&s, PORTA_GT, pivots, 0);
    porta_tensor *info = aten_linalg_first_failure(&s, scope_binary(&s, PORTA_LOGICAL_AND, zero,
                                                                     single));
    if (args[2].b && !s.status)
        scope_fail(&s, aten_linalg_check_errors(info, "torch.linalg.ldl_factor_ex",
                                                a->rank == 2));
    scope_push(&s, results, ld);
    scope_push(&s, results, pivots);
    scope_push(&s, results, info);
    return scope_end(&s);
}

static porta_status *ldl_factor_ex_out(const porta_value *args, aten_results *results) {
    return aten_into_outs(ldl_factor_ex, args, 3, 3, results);
}

/* linalg_ldl_solve(LD, pivots, B, *, hermitian=False) */
static porta_status *ldl_solve(const porta_value *args, aten_results *results) {
    const porta_tensor *ld = args[0].tensor, *pivots = args[1].tensor, *b = args[2].tensor;
    PORTA_TRY(aten_linalg_check_square("torch.linalg.ldl_solve", "LD", ld));
    PORTA_TRY(aten_linalg_check_matrix("torch.linalg.ldl_solve", "B", b));
    int64_t n = ld->sizes[ld->rank - 1];
    if (pivots->rank != ld->rank - 1 || pivots->sizes[pivots->rank - 1] != n)
        return porta_error(PORTA_ERR_SHAPE,
                           "torch.linalg.ldl_solve: Expected LD.shape[:-1] and pivots.shape to "
                           "be the same");
    aten_scope s;
    scope_begin(&s);
    int64_t sizes[PORTA_MAX_RANK];
    memcpy(sizes, pivots->sizes, sizeof sizes);
    sizes[pivots->rank - 1] = 1;
    sizes[pivots->rank] = n;
    porta_tensor *row = scope_cast(&s, scope_reshape(&s, pivots, pivots->rank + 1, sizes),
                                   ld->dtype);
    porta_tensor *parts[2] = {(porta_tensor *)ld, row};
    porta_value cat_args[2] = {{.kind = PORTA_VALUE_TENSORS, .tensors = {parts, 2}},
                               {.kind = PORTA_VALUE_INT, .i = ld->rank - 2}};
    porta_tensor *packed = row ? scope_call(&s, "cat", cat_args, 2) : NULL;
    porta_tensor *rhs = scope_as_dtype(&s, b, ld->dtype);
    scope_push(&s, results, aten_linalg_factor(&s, PORTA_FACTOR_LDL_SOLVE, 0, packed, rhs));
    return scope_end(&s);
}

static porta_status *ldl_solve_out(const porta_value *args, aten_results *results) {
    return aten_into_outs(ldl_solve, args, 4, 1, results);
}

const aten_op aten_linalg_ldl_ops[] = {
    {"linalg_ldl_factor_ex.out", "TbbTTT", ldl_factor_ex_out},
    {"linalg_ldl_solve.out", "TTTbT", ldl_solve_out},
    {NULL, NULL, NULL},
};
