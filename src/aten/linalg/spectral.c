/* The symmetric eigendecomposition and the SVD: _linalg_eigh from EIGH,
 * _linalg_svd from SVD (of A^T for wide matrices), with full_matrices'
 * extra columns from a Householder QR of the thin factor. */
#include <string.h>

#include "aten/linalg/factor.h"
#include "core/status.h"
#include "runtime/tensor.h"

/* Row `row` of packed [..., r, n] as [..., n]. */
static porta_tensor *row_vector(aten_scope *s, const porta_tensor *packed, int64_t row) {
    if (!packed) return NULL;
    int64_t sizes[PORTA_MAX_RANK];
    memcpy(sizes, packed->sizes, sizeof sizes);
    sizes[packed->rank - 2] = packed->sizes[packed->rank - 1];
    porta_tensor *one = scope_contiguous(s, aten_linalg_rows(s, packed, row, row + 1));
    return scope_reshape(s, one, packed->rank - 1, sizes);
}

/* _linalg_eigh(A, UPLO="L", compute_v=True) -> (eigenvalues, eigenvectors) */
static porta_status *linalg_eigh(const porta_value *args, aten_results *results) {
    const porta_tensor *a = args[0].tensor;
    const char *uplo = args[1].kind == PORTA_VALUE_STRING ? args[1].string : "L";
    PORTA_TRY(aten_linalg_check_square("linalg.eigh", "A", a));
    if (strcmp(uplo, "L") && strcmp(uplo, "U") && strcmp(uplo, "l") && strcmp(uplo, "u"))
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "Expected UPLO argument to be 'L' or 'U', but got %s", uplo);
    int64_t n = a->sizes[a->rank - 1];
    aten_scope s;
    scope_begin(&s);
    /* the lower triangle of A^T is the upper one of A */
    bool upper = uplo[0] == 'U' || uplo[0] == 'u';
    const porta_tensor *source = upper ? aten_linalg_transpose(&s, a) : a;
    porta_tensor *packed = aten_linalg_factor(&s, PORTA_FACTOR_EIGH, 0, source, NULL);
    scope_push(&s, results, row_vector(&s, packed, 0));
    scope_push(&s, results, args[2].b ? scope_contiguous(&s, aten_linalg_rows(&s, packed, 1, n + 1))
                                      : aten_linalg_empty(&s, a, a->dtype));
    return scope_end(&s);
}

/* The orthonormal [..., m, m] whose first k columns are u [..., m, k]
 * (orthonormal columns): Q of u's Householder QR supplies the rest. */
static porta_tensor *complete_basis(aten_scope *s, const porta_tensor *u) {
    if (!u) return NULL;
    int64_t m = u->sizes[u->rank - 2], k = u->sizes[u->rank - 1];
    if (k == m) return (porta_tensor *)u;
    porta_tensor *packed = aten_linalg_factor(s, PORTA_FACTOR_QR, 0, u, NULL);
    porta_tensor *v = aten_linalg_rows(s, packed, 0, m);
    porta_tensor *tau = row_vector(s, aten_linalg_columns(s, packed, 0, k), m);
    porta_tensor *q = aten_linalg_householder_product(s, scope_contiguous(s, v), tau, m);
    porta_value parts[1];
    porta_tensor *items[2] = {(porta_tensor *)u, aten_linalg_columns(s, q, k, m)};
    if (!items[1]) return NULL;
    parts[0] = (porta_value){.kind = PORTA_VALUE_TENSORS, .tensors = {items, 2}};
    porta_value args[2] = {parts[0], {.kind = PORTA_VALUE_INT, .i = u->rank - 1}};
    return scope_call(s, "cat", args, 2);
}

void aten_linalg_svd(aten_scope *s, const porta_tensor *a, bool full, porta_tensor **u,
                     porta_tensor **values, porta_tensor **vh) {
    *u = *values = *vh = NULL;
    if (!a || s->status) return;
    int64_t m = a->sizes[a->rank - 2], n = a->sizes[a->rank - 1];
    bool wide = m < n;
    int64_t rows = wide ? n : m, k = wide ? m : n; /* of the tall matrix factored */
    const porta_tensor *tall = wide ? aten_linalg_transpose(s, a) : a;
    porta_tensor *packed = aten_linalg_factor(s, PORTA_FACTOR_SVD, 0, tall, NULL);
    *values = row_vector(s, packed, rows);
    porta_tensor *left = aten_linalg_rows(s, packed, 0, rows);                /* [rows, k] */
    porta_tensor *right = aten_linalg_rows(s, packed, rows + 1, rows + 1 + k); /* [k, k] */
    if (full) left = complete_basis(s, scope_contiguous(s, left));
    /* tall = left diag(S) right^T; for a wide A, A = right diag(S) left^T */
    *u = scope_contiguous(s, wide ? right : left);
    *vh = scope_contiguous(s, aten_linalg_transpose(s, wide ? left : right));
}

/* _linalg_svd(A, full_matrices=False, compute_uv=True, driver=None) -> (U, S, Vh) */
static porta_status *linalg_svd(const porta_value *args, aten_results *results) {
    const porta_tensor *a = args[0].tensor;
    bool compute_uv = args[2].b;
    PORTA_TRY(aten_linalg_check_matrix("linalg.svd", "A", a));
    aten_scope s;
    scope_begin(&s);
    porta_tensor *u, *values, *vh;
    aten_linalg_svd(&s, a, args[1].b && compute_uv, &u, &values, &vh);
    scope_push(&s, results, compute_uv ? u : aten_linalg_empty(&s, a, a->dtype));
    scope_push(&s, results, values);
    scope_push(&s, results, compute_uv ? vh : aten_linalg_empty(&s, a, a->dtype));
    return scope_end(&s);
}

const aten_op aten_linalg_spectral_ops[] = {
    {"_linalg_eigh", "Trb", linalg_eigh},
    {"_linalg_svd", "Tbbr", linalg_svd},
    {NULL, NULL, NULL},
};
