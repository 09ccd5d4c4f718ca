/* Inference for the factorisation primitive: float32 or float64 matrices
 * batched over leading axes, a result packed as porta_factor_op describes. */
#include "core/status.h"
#include "core/tensor_layout.h"
#include "ir/infer.h"

static porta_status *check_matrix(const char *op, const char *name, const ir_meta *x) {
    if (x->rank < 2)
        return porta_error(PORTA_ERR_SHAPE,
                           "%s: expected %s to have at least 2 dimensions, but it has %d", op,
                           name, x->rank);
    if (x->dtype != PORTA_F32 && x->dtype != PORTA_F64)
        return porta_error(PORTA_ERR_DTYPE, "%s: expected %s of dtype float32 or float64, got %s",
                           op, name, porta_dtype_name(x->dtype));
    return NULL;
}

static porta_status *check_square(const char *op, const char *name, const ir_meta *x) {
    int64_t rows = x->sizes[x->rank - 2], cols = x->sizes[x->rank - 1];
    if (rows != cols)
        return porta_error(PORTA_ERR_SHAPE,
                           "%s: A must be batches of square matrices, but %s has shape %lld x %lld",
                           op, name, (long long)rows, (long long)cols);
    return NULL;
}

/* a x = b: the batch axes broadcast, x has b's matrix shape. */
static porta_status *infer_solve(const char *op, const ir_meta *inputs, ir_meta *out) {
    const ir_meta *a = &inputs[0], *b = &inputs[1];
    PORTA_TRY(check_matrix(op, "b", b));
    if (a->dtype != b->dtype)
        return porta_error(PORTA_ERR_DTYPE, "%s: expected a and b of one dtype, got %s and %s",
                           op, porta_dtype_name(a->dtype), porta_dtype_name(b->dtype));
    int64_t n = a->sizes[a->rank - 1];
    if (b->sizes[b->rank - 2] != n)
        return porta_error(PORTA_ERR_SHAPE,
                           "%s: expected b with %lld rows to match a %lld x %lld, got %lld", op,
                           (long long)n, (long long)n, (long long)n,
                           (long long)b->sizes[b->rank - 2]);
    int rank;
    int64_t sizes[PORTA_MAX_RANK];
    PORTA_TRY(ir_broadcast_shapes(op, a->rank - 2, a->sizes, b->rank - 2, b->sizes, &rank,
                                  sizes));
    sizes[rank] = n;
    sizes[rank + 1] = b->sizes[b->rank - 1];
    out->dtype = a->dtype;
    out->rank = rank + 2;
    for (int i = 0; i < out->rank; i++) out->sizes[i] = sizes[i];
    return NULL;
}

porta_status *ir_infer_factor(ir_prim *prim, const ir_meta *inputs, int input_count,
                              ir_meta *out) {
    const char *op = ir_prim_name(prim);
    if ((unsigned)prim->op >= PORTA_FACTOR_OP_COUNT)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "factor: expected an op below %d, got %d", PORTA_FACTOR_OP_COUNT,
                           prim->op);
    int expected = ir_prim_input_count(prim);
    if (input_count != expected)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "%s: expected %d input%s, got %d", op,
                           expected, expected == 1 ? "" : "s", input_count);
    int allowed = prim->op == PORTA_FACTOR_TRIANGULAR_SOLVE
                      ? PORTA_FACTOR_UPPER | PORTA_FACTOR_UNIT_DIAGONAL
                      : 0;
    if (prim->axis & ~allowed)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "%s: expected flags within %d, got %d", op,
                           allowed, prim->axis);
    const ir_meta *a = &inputs[0];
    PORTA_TRY(check_matrix(op, "A", a));
    *out = *a;
    int64_t m = a->sizes[a->rank - 2], n = a->sizes[a->rank - 1];
    switch ((porta_factor_op)prim->op) {
    case PORTA_FACTOR_CHOLESKY: return check_square(op, "A", a);
    case PORTA_FACTOR_TRIANGULAR_SOLVE:
        PORTA_TRY(check_square(op, "A", a));
        return infer_solve(op, inputs, out);
    case PORTA_FACTOR_LU:
    case PORTA_FACTOR_QR: out->sizes[a->rank - 2] = m + 1; return NULL;
    case PORTA_FACTOR_EIGH:
        PORTA_TRY(check_square(op, "A", a));
        out->sizes[a->rank - 2] = n + 1;
        return NULL;
    case PORTA_FACTOR_SVD:
        if (m < n)
            return porta_error(PORTA_ERR_SHAPE,
                               "%s: expected at least as many rows as columns, got %lld x %lld",
                               op, (long long)m, (long long)n);
        out->sizes[a->rank - 2] = m + n + 1;
        return NULL;
    case PORTA_FACTOR_LDL:
        PORTA_TRY(check_square(op, "A", a));
        out->sizes[a->rank - 2] = n + 1;
        return NULL;
    case PORTA_FACTOR_LDL_SOLVE:
        if (m != n + 1)
            return porta_error(PORTA_ERR_SHAPE,
                               "%s: expected LDL's packed [n + 1, n] result, got %lld x %lld", op,
                               (long long)m, (long long)n);
        return infer_solve(op, inputs, out);
    case PORTA_FACTOR_OP_COUNT: break;
    }
    return NULL;
}
