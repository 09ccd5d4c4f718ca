/* Matrix products: mm, bmm, mv, dot, and the scaled sums addmm, baddbmm,
 * addmv (beta * self + alpha * product). Each checks ranks, sizes and
 * dtypes as PyTorch does (porta_matmul itself broadcasts batches, which
 * these ops do not), then runs porta_matmul. */
#include "aten/dispatch/op_reuse.h"
#include "aten/reduce/common.h"

#include "core/status.h"
#include "runtime/tensor.h"

static porta_status *check_rank(const porta_tensor *t, int rank, const char *message) {
    if (t->rank != rank) return porta_error(PORTA_ERR_SHAPE, "%s", message);
    return NULL;
}

/* A number where a matrix belongs (a CPU scalar passed along) is a rank
 * error, like any tensor of the wrong rank. */
static porta_status *check_tensors(const porta_value *a, int count, const char *name) {
    for (int i = 0; i < count; i++)
        if (a[i].kind != PORTA_VALUE_TENSOR)
            return porta_error(PORTA_ERR_SHAPE, "%s: argument %d must be a tensor, got a number",
                               name, i);
    return NULL;
}

static porta_status *check_multipliable(const char *name, const porta_tensor *a,
                                        const porta_tensor *b) {
    if (a->dtype == PORTA_BOOL)
        return porta_error(PORTA_ERR_DTYPE, "\"%s\" not implemented for 'Bool'", name);
    if (a->dtype != b->dtype)
        return porta_error(PORTA_ERR_DTYPE,
                           "%s: expected both operands to have the same dtype, but got %s and %s",
                           name, aten_dtype_label(a->dtype), aten_dtype_label(b->dtype));
    return NULL;
}

/* a [n, k] @ b [k, m]. */
static porta_status *matrix_product(const porta_tensor *a, const porta_tensor *b,
                                    porta_tensor **out) {
    PORTA_TRY(check_rank(a, 2, "self must be a matrix"));
    PORTA_TRY(check_rank(b, 2, "mat2 must be a matrix"));
    if (a->sizes[1] != b->sizes[0])
        return porta_error(PORTA_ERR_SHAPE,
                           "mat1 and mat2 shapes cannot be multiplied (%lldx%lld and %lldx%lld)",
                           (long long)a->sizes[0], (long long)a->sizes[1],
                           (long long)b->sizes[0], (long long)b->sizes[1]);
    PORTA_TRY(check_multipliable("mm", a, b));
    return porta_matmul(a, b, out);
}

/* a [B, n, k] @ b [B, k, m]. */
static porta_status *batch_product(const porta_tensor *a, const porta_tensor *b,
                                   porta_tensor **out) {
    PORTA_TRY(check_rank(a, 3, "batch1 must be a 3D tensor"));
    PORTA_TRY(check_rank(b, 3, "batch2 must be a 3D tensor"));
    if (b->sizes[0] != a->sizes[0] || b->sizes[1] != a->sizes[2])
        return porta_error(PORTA_ERR_SHAPE,
                           "Expected size for first two dimensions of batch2 tensor to be: "
                           "[%lld, %lld] but got: [%lld, %lld].",
                           (long long)a->sizes[0], (long long)a->sizes[2],
                           (long long)b->sizes[0], (long long)b->sizes[1]);
    PORTA_TRY(check_multipliable("bmm", a, b));
    return porta_matmul(a, b, out);
}

/* a [n, k] @ v [k] -> [n], as a matrix product with v as one column. */
static porta_status *matrix_vector_product(const porta_tensor *a, const porta_tensor *v,
                                           porta_tensor **out) {
    if (a->rank != 2 || v->rank != 1)
        return porta_error(PORTA_ERR_SHAPE, "vector + matrix @ vector expected, got %d, %d",
                           a->rank, v->rank);
    if (a->sizes[1] != v->sizes[0])
        return porta_error(PORTA_ERR_SHAPE, "size mismatch, mat (%lldx%lld), vec (%lld)",
                           (long long)a->sizes[0], (long long)a->sizes[1],
                           (long long)v->sizes[0]);
    PORTA_TRY(check_multipliable("mv", a, v));
    int64_t column_sizes[2] = {v->sizes[0], 1};
    porta_tensor *column = NULL, *product = NULL;
    PORTA_TRY(porta_reshape(v, 2, column_sizes, &column));
    porta_status *status = porta_matmul(a, column, &product);
    if (!status) status = porta_reshape(product, 1, a->sizes, out);
    porta_tensor_release(column);
    porta_tensor_release(product);
    return status;
}

/* Whether `self` expands to `sizes` (trailing alignment, 1 stretches). */
static porta_status *check_expands(const porta_tensor *self, int rank, const int64_t *sizes) {
    bool fits = self->rank <= rank;
    for (int i = 0; fits && i < self->rank; i++) {
        int64_t have = self->sizes[self->rank - 1 - i], want = sizes[rank - 1 - i];
        fits = have == want || have == 1;
    }
    if (fits) return NULL;
    char from[CORE_SHAPE_STR_CAP], to[CORE_SHAPE_STR_CAP];
    return porta_error(PORTA_ERR_SHAPE, "the tensor of shape %s cannot be expanded to %s",
                       core_format_shape(from, sizeof from, self->rank, self->sizes),
                       core_format_shape(to, sizeof to, rank, sizes));
}

/* beta * self + alpha * product; with beta 0 self is ignored, NaNs and
 * all, as in PyTorch. Takes over `product`. */
static porta_status *scaled_sum(const porta_value *self, porta_tensor *product,
                                const porta_value *beta, const porta_value *alpha,
                                aten_results *results) {
    porta_tensor *bias = NULL, *scaled = NULL, *factor = NULL, *out = NULL;
    porta_status *status = NULL;
    double b = aten_number(beta), a = aten_number(alpha);
    CORE_TRY_GOTO(status, aten_operand(self, product->buffer->device, product->dtype, &bias),
                   done);
    CORE_TRY_GOTO(status, check_expands(bias, product->rank, product->sizes), done);
    if (bias->dtype != product->dtype)
        CORE_TRY_GOTO(status,
                       porta_error(PORTA_ERR_DTYPE,
                                   "self and mat2 must have the same dtype, but got %s and %s",
                                   aten_dtype_label(bias->dtype),
                                   aten_dtype_label(product->dtype)),
                       done);
    if (a != 1.0) {
        CORE_TRY_GOTO(status, aten_binary_constant(PORTA_MUL, product, a, &scaled), done);
        porta_tensor_release(product);
        product = scaled;
        scaled = NULL;
    }
    if (b == 0.0) {
        out = product;
        product = NULL;
    } else if (b == 1.0) {
        CORE_TRY_GOTO(status, porta_binary(PORTA_ADD, product, bias, &out), done);
    } else {
        CORE_TRY_GOTO(status,
                       porta_tensor_full(bias->buffer->device, bias->dtype, 0, NULL, b, &factor),
                       done);
        CORE_TRY_GOTO(status, porta_ternary(PORTA_FMA, bias, factor, product, &out), done);
    }
    status = aten_push_tensor(results, out);
done:
    porta_tensor_release(bias);
    porta_tensor_release(product);
    porta_tensor_release(factor);
    return status;
}

static porta_status *mm(const porta_value *a, aten_results *r) {
    PORTA_TRY(check_tensors(&a[0], 2, "mm"));
    porta_tensor *out = NULL;
    PORTA_TRY(matrix_product(a[0].tensor, a[1].tensor, &out));
    return aten_push_tensor(r, out);
}

static porta_status *bmm(const porta_value *a, aten_results *r) {
    PORTA_TRY(check_tensors(&a[0], 2, "bmm"));
    porta_tensor *out = NULL;
    PORTA_TRY(batch_product(a[0].tensor, a[1].tensor, &out));
    return aten_push_tensor(r, out);
}

static porta_status *mv(const porta_value *a, aten_results *r) {
    PORTA_TRY(check_tensors(&a[0], 2, "mv"));
    porta_tensor *out = NULL;
    PORTA_TRY(matrix_vector_product(a[0].tensor, a[1].tensor, &out));
    return aten_push_tensor(r, out);
}

static porta_status *dot(const porta_value *a, aten_results *r) {
    PORTA_TRY(check_tensors(a, 2, "dot"));
    const porta_tensor *x = a[0].tensor, *y = a[1].tensor;
    if (x->rank != 1 || y->rank != 1)
        return porta_error(PORTA_ERR_SHAPE, "1D tensors expected, but got %dD and %dD tensors",
                           x->rank, y->rank);
    if (x->sizes[0] != y->sizes[0])
        return porta_error(PORTA_ERR_SHAPE,
                           "inconsistent tensor size, expected tensor [%lld] and src [%lld] to "
                           "have the same number of elements, but got %lld and %lld elements "
                           "respectively",
                           (long long)x->sizes[0], (long long)y->sizes[0],
                           (long long)x->sizes[0], (long long)y->sizes[0]);
    PORTA_TRY(check_multipliable("dot", x, y));
    int64_t row_sizes[2] = {1, x->sizes[0]};
    porta_tensor *row = NULL, *product = NULL, *out = NULL;
    porta_status *status;
    CORE_TRY_GOTO(status, porta_reshape(x, 2, row_sizes, &row), done);
    CORE_TRY_GOTO(status, matrix_vector_product(row, y, &product), done);
    CORE_TRY_GOTO(status, porta_reshape(product, 0, NULL, &out), done);
    status = aten_push_tensor(r, out);
done:
    porta_tensor_release(row);
    porta_tensor_release(product);
    return status;
}

static porta_status *addmm(const porta_value *a, aten_results *r) {
    PORTA_TRY(check_tensors(&a[1], 2, "addmm"));
    porta_tensor *product = NULL;
    PORTA_TRY(matrix_product(a[1].tensor, a[2].tensor, &product));
    return scaled_sum(&a[0], product, &a[3], &a[4], r);
}

static porta_status *baddbmm(const porta_value *a, aten_results *r) {
    PORTA_TRY(check_tensors(&a[1], 2, "baddbmm"));
    porta_tensor *product = NULL;
    PORTA_TRY(batch_product(a[1].tensor, a[2].tensor, &product));
    return scaled_sum(&a[0], product, &a[3], &a[4], r);
}

static porta_status *addmv(const porta_value *a, aten_results *r) {
    PORTA_TRY(check_tensors(&a[1], 2, "addmv"));
    porta_tensor *product = NULL;
    PORTA_TRY(matrix_vector_product(a[1].tensor, a[2].tensor, &product));
    return scaled_sum(&a[0], product, &a[3], &a[4], r);
}

ATEN_OUT_KERNEL(mm_out, mm, 2)
ATEN_OUT_KERNEL(bmm_out, bmm, 2)
ATEN_OUT_KERNEL(addmm_out, addmm, 5)

const aten_op aten_linalg_products_ops[] = {
    {"mm", "TT", mm},
    {"mm.out", "TTT", mm_out},
    {"bmm", "TT", bmm},
    {"bmm.out", "TTT", bmm_out},
    {"mv", "TT", mv},
    {"dot", "TT", dot},
    {"addmm", "TTTss", addmm},
    {"addmm.out", "TTTssT", addmm_out},
    {"baddbmm", "TTTss", baddbmm},
    {"addmv", "TTTss", addmv},
    {NULL, NULL, NULL},
};
