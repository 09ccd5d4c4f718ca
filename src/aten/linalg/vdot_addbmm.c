/* vdot and addbmm (a batch of matrix products summed into one), each one
 * matrix product run by the registered dot/addmm (reusing their checks),
 * with their out= and in-place variants. */
#include "aten/dispatch/op_reuse.h"
#include "core/status.h"
#include "runtime/tensor.h"

/* vdot conjugates its first operand: for the real dtypes porta has, that
 * is dot itself. */
static porta_status *vdot(const porta_value *a, aten_results *results) {
    porta_tensor *out = NULL;
    PORTA_TRY(aten_call_op("dot", a, 2, &out));
    return aten_push_tensor(results, out);
}

ATEN_OUT_KERNEL(vdot_out, vdot, 2)
/* addbmm(self, batch1 [B, n, m], batch2 [B, m, p], beta, alpha): the sum
 * over the batch of the products is one product of batch1 laid out as
 * [n, B * m] and batch2 as [B * m, p], run by addmm. */
static porta_status *addbmm(const porta_value *a, aten_results *results) {
    for (int i = 1; i <= 2; i++)
        if (a[i].kind != PORTA_VALUE_TENSOR || a[i].tensor->rank != 3)
            return porta_error(PORTA_ERR_SHAPE, "batch%d must be a 3D tensor", i);
    const porta_tensor *b1 = a[1].tensor, *b2 = a[2].tensor;
    if (b1->sizes[0] != b2->sizes[0])
        return porta_error(PORTA_ERR_SHAPE,
                           "batch1 and batch2 must have same number of batches, got %lld and %lld",
                           (long long)b1->sizes[0], (long long)b2->sizes[0]);
    if (b1->sizes[2] != b2->sizes[1])
        return porta_error(PORTA_ERR_SHAPE, "Incompatible matrix sizes for bmm (%lldx%lld and %lldx%lld)",
                           (long long)b1->sizes[1], (long long)b1->sizes[2],
                           (long long)b2->sizes[1], (long long)b2->sizes[2]);
    int64_t inner = b1->sizes[0] * b1->sizes[2];
    int64_t left_sizes[2] = {b1->sizes[1], inner}, right_sizes[2] = {inner, b2->sizes[2]};
    static const int batch_inside[3] = {1, 0, 2};
    porta_tensor *rows = NULL, *left = NULL, *right = NULL, *out = NULL;
    porta_status *status;
    CORE_TRY_GOTO(status, porta_permute(b1, batch_inside, &rows), done);
    CORE_TRY_GOTO(status, porta_reshape(rows, 2, left_sizes, &left), done);
    CORE_TRY_GOTO(status, porta_reshape(b2, 2, right_sizes, &right), done);
    porta_value addmm_args[5] = {a[0],
                                 {.kind = PORTA_VALUE_TENSOR, .tensor = left},
                                 {.kind = PORTA_VALUE_TENSOR, .tensor = right},
                                 a[3],
                                 a[4]};
    CORE_TRY_GOTO(status, aten_call_op("addmm", addmm_args, 5, &out), done);
    status = aten_push_tensor(results, out);
done:
    porta_tensor_release(rows);
    porta_tensor_release(left);
    porta_tensor_release(right);
    return status;
}
ATEN_OUT_KERNEL(addbmm_out, addbmm, 5)
/* addbmm_: self must already have the result's shape. */
static porta_status *addbmm_inplace(const porta_value *a, aten_results *results) {
    porta_tensor *self = a[0].tensor;
    aten_results computed = {0};
    porta_status *status = addbmm(a, &computed);
    if (!status) {
        const porta_tensor *sum = computed.items[0].tensor;
        bool same = sum->rank == self->rank;
        for (int d = 0; same && d < self->rank; d++) same = sum->sizes[d] == self->sizes[d];
        char have[CORE_SHAPE_STR_CAP], want[CORE_SHAPE_STR_CAP];
        status = same ? porta_copy(sum, self)
                      : porta_error(PORTA_ERR_SHAPE,
                                    "addbmm_: self has shape %s but the result has shape %s",
                                    core_format_shape(have, sizeof have, self->rank, self->sizes),
                                    core_format_shape(want, sizeof want, sum->rank, sum->sizes));
    }
    porta_aten_results_free(computed.items, computed.count);
    if (status) return status;
    porta_tensor_retain(self);
    return aten_push_tensor(results, self);
}

const aten_op aten_linalg_vdot_addbmm_ops[] = {
    {"vdot", "TT", vdot},
    {"vdot.out", "TTT", vdot_out},
    {"addbmm", "TTTss", addbmm},
    {"addbmm.out", "TTTssT", addbmm_out},
    {"addbmm_", "TTTss", addbmm_inplace},
    {NULL, NULL, NULL},
};
