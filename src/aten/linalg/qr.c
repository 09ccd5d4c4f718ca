/* Householder QR and what uses its reflectors: geqrf (the QR factorisation
 * as LAPACK packs it), linalg_householder_product (orgqr), ormqr and
 * linalg_qr in its three modes. */
#include <string.h>

#include "aten/linalg/factor.h"
#include "core/status.h"
#include "runtime/tensor.h"

/* q - tau_j v_j (v_j^T q): reflector j applied to q, in a scope of its
 * own, so a long product does not fill the caller's; a new reference. */
static porta_status *reflect(const porta_tensor *reflectors, const porta_tensor *tau, int64_t j,
                             const porta_tensor *q, porta_tensor **out) {
    aten_scope s;
    scope_begin(&s);
    int64_t sizes[PORTA_MAX_RANK];
    memcpy(sizes, tau->sizes, sizeof sizes);
    sizes[tau->rank - 1] = 1;
    sizes[tau->rank] = 1;
    porta_tensor *vj = aten_linalg_columns(&s, reflectors, j, j + 1);
    porta_tensor *tj = scope_reshape(&s, scope_slice(&s, tau, tau->rank - 1, j, j + 1, 1),
                                     tau->rank + 1, sizes);
    porta_tensor *w = scope_matmul(&s, aten_linalg_transpose(&s, vj), q);
    porta_tensor *update = scope_matmul(&s, scope_binary(&s, PORTA_MUL, vj, tj), w);
    porta_tensor *next = scope_binary(&s, PORTA_SUB, q, update);
    if (next) porta_tensor_retain(next);
    porta_status *status = scope_end(&s);
    *out = status ? NULL : next;
    if (status && next) porta_tensor_release(next);
    return status;
}

porta_tensor *aten_linalg_householder_product(aten_scope *s, const porta_tensor *v,
                                         const porta_tensor *tau, int64_t columns) {
    if (!v || !tau) return NULL;
    int64_t m = v->sizes[v->rank - 2], k = tau->sizes[tau->rank - 1];
    if (k > v->sizes[v->rank - 1]) k = v->sizes[v->rank - 1];
    porta_device *device = v->buffer->device;
    porta_tensor *unit = aten_linalg_eye(s, device, v->dtype, m, v->sizes[v->rank - 1]);
    porta_tensor *reflectors = scope_binary(s, PORTA_ADD, aten_linalg_tril(s, v, -1), unit);
    int64_t sizes[PORTA_MAX_RANK];
    memcpy(sizes, v->sizes, sizeof sizes);
    sizes[v->rank - 1] = columns;
    porta_tensor *q = scope_contiguous(
        s, scope_expand(s, aten_linalg_eye(s, device, v->dtype, m, columns), v->rank, sizes));
    if (!q || !reflectors) return NULL;
    porta_tensor_retain(q);
    /* Q = H_1 (H_2 (... (H_k I))): the reflectors from the last */
    for (int64_t j = k - 1; j >= 0; j--) {
        porta_tensor *next;
        porta_status *status = reflect(reflectors, tau, j, q, &next);
        porta_tensor_release(q);
        if (status) return scope_fail(s, status);
        q = next;
    }
    return scope_hold(s, NULL, q);
}

/* geqrf's (a, tau) of x [..., m, n]. */
static void geqrf_parts(aten_scope *s, const porta_tensor *x, porta_tensor **a,
                        porta_tensor **tau) {
    int64_t m = x->sizes[x->rank - 2], n = x->sizes[x->rank - 1], k = m < n ? m : n;
    porta_tensor *packed = aten_linalg_factor(s, PORTA_FACTOR_QR, 0, x, NULL);
    /* column-major, as LAPACK leaves it on PyTorch's CPU */
    porta_tensor *rows = aten_linalg_rows(s, packed, 0, m);
    *a = aten_linalg_column_major(s, rows);
    int64_t sizes[PORTA_MAX_RANK];
    memcpy(sizes, x->sizes, sizeof sizes);
    sizes[x->rank - 2] = k;
    porta_tensor *row = aten_linalg_columns(s, aten_linalg_rows(s, packed, m, m + 1), 0, k);
    *tau = scope_reshape(s, scope_contiguous(s, row), x->rank - 1, sizes);
}

/* geqrf(A) -> (a, tau) */
static porta_status *geqrf(const porta_value *args, aten_results *results) {
    PORTA_TRY(aten_linalg_check_matrix("geqrf", "input", args[0].tensor));
    aten_scope s;
    scope_begin(&s);
    porta_tensor *a, *tau;
    geqrf_parts(&s, args[0].tensor, &a, &tau);
    scope_push(&s, results, a);
    scope_push(&s, results, tau);
    return scope_end(&s);
}

/* aten_linalg_householder_product(input, tau) */
static porta_status *householder_product(const porta_value *args, aten_results *results) {
    const porta_tensor *v = args[0].tensor, *tau = args[1].tensor;
    PORTA_TRY(aten_linalg_check_matrix("torch.linalg.householder_product", "input", v));
    if (v->sizes[v->rank - 2] < v->sizes[v->rank - 1])
        return porta_error(PORTA_ERR_SHAPE,
                           "torch.linalg.householder_product: input.shape[-2] must be greater "
                           "than or equal to input.shape[-1]");
    if (tau->rank < 1 || tau->sizes[tau->rank - 1] > v->sizes[v->rank - 1])
        return porta_error(PORTA_ERR_SHAPE,
                           "torch.linalg.householder_product: input.shape[-1] must be greater "
                           "than or equal to tau.shape[-1]");
    aten_scope s;
    scope_begin(&s);
    porta_tensor *tau_cast = scope_as_dtype(&s, tau, v->dtype);
    scope_push(&s, results,
               aten_linalg_householder_product(&s, v, tau_cast, v->sizes[v->rank - 1]));
    return scope_end(&s);
}

/* ormqr(input, tau, other, left=True, transpose=False): op(Q) other or
 * other op(Q), Q [m, m] from input's reflectors. */
static porta_status *ormqr(const porta_value *args, aten_results *results) {
    const porta_tensor *v = args[0].tensor, *tau = args[1].tensor, *c = args[2].tensor;
    bool left = args[3].b, transpose = args[4].b;
    PORTA_TRY(aten_linalg_check_matrix("torch.ormqr", "input", v));
    PORTA_TRY(aten_linalg_check_matrix("torch.ormqr", "other", c));
    aten_scope s;
    scope_begin(&s);
    porta_tensor *q = aten_linalg_householder_product(&s, v, scope_as_dtype(&s, tau, v->dtype),
                                                 v->sizes[v->rank - 2]);
    porta_tensor *op_q = transpose ? aten_linalg_transpose(&s, q) : q;
    porta_tensor *other = scope_as_dtype(&s, c, v->dtype);
    scope_push(&s, results, left ? scope_matmul(&s, op_q, other) : scope_matmul(&s, other, op_q));
    return scope_end(&s);
}

/* linalg_qr(A, mode='reduced') -> (Q, R) */
static porta_status *linalg_qr(const porta_value *args, aten_results *results) {
    const porta_tensor *x = args[0].tensor;
    const char *mode = args[1].kind == PORTA_VALUE_STRING ? args[1].string : "reduced";
    PORTA_TRY(aten_linalg_check_matrix("linalg.qr", "A", x));
    bool complete = !strcmp(mode, "complete"), r_only = !strcmp(mode, "r");
    if (!complete && !r_only && strcmp(mode, "reduced"))
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "qr received unrecognized mode '%s' but expected one of 'reduced' "
                           "(default), 'r', or 'complete'",
                           mode);
    int64_t m = x->sizes[x->rank - 2], n = x->sizes[x->rank - 1], k = m < n ? m : n;
    aten_scope s;
    scope_begin(&s);
    porta_tensor *a, *tau;
    geqrf_parts(&s, x, &a, &tau);
    porta_tensor *r = aten_linalg_triu(&s, complete ? a : aten_linalg_rows(&s, a, 0, k), 0);
    porta_tensor *q;
    if (r_only)
        q = aten_linalg_empty(&s, x, x->dtype);
    else
        q = aten_linalg_householder_product(&s, a, tau, complete ? m : k);
    scope_push(&s, results, q);
    scope_push(&s, results, r);
    return scope_end(&s);
}

const aten_op aten_linalg_qr_ops[] = {
    {"geqrf", "T", geqrf},
    {"linalg_householder_product", "TT", householder_product},
    {"ormqr", "TTTbb", ormqr},
    {"linalg_qr", "Tr", linalg_qr},
    {NULL, NULL, NULL},
};
