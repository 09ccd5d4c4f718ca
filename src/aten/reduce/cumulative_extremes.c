/* cummax and cummin: the running extreme along a dim and its index, a
 * log-step scan of primitives, with their out= variants. */
#include "aten/dispatch/op_reuse.h"
#include "aten/dispatch/scope.h"
#include "aten/reduce/common.h"
#include "core/status.h"
#include "runtime/tensor.h"

/* One step of the running-extreme scan: each element combined with the
 * one `shift` places earlier along dim (which holds the extreme of the
 * `shift` elements before it). The later one wins ties, as PyTorch's
 * kernels keep the last index of an extreme, and a NaN beats every number
 * (the later NaN on a tie). Takes over *values and *indices, replacing
 * them with the combined ones. */
static porta_status *scan_step(bool max, int dim, int64_t shift, const porta_tensor *position,
                               porta_tensor **values, porta_tensor **indices) {
    porta_tensor *v = *values, *index = *indices;
    int64_t pads[2 * PORTA_MAX_RANK] = {0};
    pads[2 * dim] = shift;
    pads[2 * dim + 1] = -shift;
    aten_scope s;
    scope_begin(&s);
    porta_tensor *earlier = scope_pad(&s, v, pads, 0), *earlier_index = scope_pad(&s, index, pads, 0);
    porta_tensor *later_wins = scope_binary(&s, max ? PORTA_GE : PORTA_LE, v, earlier);
    if (porta_dtype_is_float(v->dtype)) {
        porta_tensor *earlier_number = scope_unary(&s, PORTA_LOGICAL_NOT, scope_unary(&s, PORTA_ISNAN, earlier));
        later_wins = scope_binary(&s, PORTA_LOGICAL_OR, scope_unary(&s, PORTA_ISNAN, v),
                                  scope_binary(&s, PORTA_LOGICAL_AND, earlier_number, later_wins));
    }
    porta_tensor *first = scope_binary_number(&s, PORTA_LT, position, (double)shift);
    porta_tensor *keep = scope_binary(&s, PORTA_LOGICAL_OR, later_wins, first);
    porta_tensor *next_values = scope_ternary(&s, PORTA_WHERE, keep, v, earlier);
    porta_tensor *next_indices = scope_ternary(&s, PORTA_WHERE, keep, index, earlier_index);
    if (!s.status) {
        porta_tensor_retain(next_values);
        porta_tensor_retain(next_indices);
        porta_tensor_release(v);
        porta_tensor_release(index);
        *values = next_values;
        *indices = next_indices;
    }
    return scope_end(&s);
}

/* cummax/cummin(self, dim): the running extreme along dim and its index,
 * by a scan of log2(n) steps. Bool runs as uint8. (These, not PyTorch's
 * _cummax_helper/_cummin_helper, are registered: the helpers return
 * nothing, which the binding does not return as None yet.) */
static porta_status *cumulative_extreme(bool max, const porta_value *a, aten_results *results) {
    const porta_tensor *self = a[0].tensor;
    int rank = self->rank, dim;
    PORTA_TRY(core_normalize_axis(max ? "cummax" : "cummin", (int)a[1].i, rank ? rank : 1, &dim));
    int view_rank = rank ? rank : 1;
    int64_t one = 1, shape[PORTA_MAX_RANK];
    const int64_t *sizes = rank ? self->sizes : &one;
    int64_t length = sizes[dim];
    for (int d = 0; d < view_rank; d++) shape[d] = d == dim ? length : 1;
    aten_scope s;
    scope_begin(&s);
    porta_device *device = self->buffer->device;
    porta_tensor *v = scope_reshape(&s, self, view_rank, sizes);
    if (self->dtype == PORTA_BOOL) v = scope_cast(&s, v, PORTA_U8);
    porta_tensor *position = scope_reshape(&s, scope_arange(&s, device, length), view_rank, shape);
    porta_tensor *index = scope_contiguous(&s, scope_expand(&s, position, view_rank, sizes));
    if (s.status) return scope_end(&s);
    porta_tensor_retain(v); /* owned by the scan from here */
    porta_tensor_retain(index);
    porta_status *status = NULL;
    for (int64_t shift = 1; !status && shift < length; shift *= 2)
        status = scan_step(max, dim, shift, position, &v, &index);
    scope_hold(&s, NULL, v);
    scope_hold(&s, NULL, index);
    if (status) scope_fail(&s, status);
    scope_push(&s, results, scope_cast(&s, scope_reshape(&s, v, rank, self->sizes), self->dtype));
    scope_push(&s, results, scope_reshape(&s, index, rank, self->sizes));
    return scope_end(&s);
}

static porta_status *cummax(const porta_value *a, aten_results *r) {
    return cumulative_extreme(true, a, r);
}
static porta_status *cummin(const porta_value *a, aten_results *r) {
    return cumulative_extreme(false, a, r);
}
static porta_status *cummax_out(const porta_value *a, aten_results *r) {
    return aten_into_outs(cummax, a, 2, 2, r);
}
static porta_status *cummin_out(const porta_value *a, aten_results *r) {
    return aten_into_outs(cummin, a, 2, 2, r);
}

const aten_op aten_reduce_cumulative_extremes_ops[] = {
    {"cummax", "Ti", cummax},
    {"cummax.out", "TiTT", cummax_out},
    {"cummin", "Ti", cummin},
    {"cummin.out", "TiTT", cummin_out},
    {NULL, NULL, NULL},
};
