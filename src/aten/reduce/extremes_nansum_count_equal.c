/* Reductions PyTorch has beside the common ones: amax/amin into out=,
 * aminmax, nansum, count_nonzero over dims, vdot, equal, addbmm (a batch
 * of matrix products summed into one), and the running extremes behind
 * cummax/cummin. Each lowers to porta_reduce, one matrix product (reusing
 * the registered dot/addmm for their checks) or a log-step scan. */
#include "aten/dispatch/scope.h"
#include "aten/dispatch/op_reuse.h"
#include "aten/reduce/common.h"

#include "core/status.h"
#include "core/tensor.h"

/* amax/amin (reduce.c) by name, for their out= forms: PyTorch wants the
 * out tensor in the input's dtype. */
static porta_status *run_reduction(const char *name, const porta_value *a,
                                   aten_results *results) {
    porta_tensor *out = NULL;
    PORTA_TRY(aten_call_op(name, a, 3, &out));
    return aten_push_tensor(results, out);
}
static porta_status *amax(const porta_value *a, aten_results *r) {
    return run_reduction("amax", a, r);
}
static porta_status *amin(const porta_value *a, aten_results *r) {
    return run_reduction("amin", a, r);
}
static porta_status *check_out_dtype(const porta_tensor *x, const porta_tensor *out) {
    if (x->dtype == out->dtype) return NULL;
    return porta_error(PORTA_ERR_DTYPE,
                       "Expected the dtype for input and out to match, but got %s for input's "
                       "dtype and %s for out's dtype.",
                       aten_dtype_label(x->dtype), aten_dtype_label(out->dtype));
}
static porta_status *amax_out(const porta_value *a, aten_results *r) {
    PORTA_TRY(check_out_dtype(a[0].tensor, a[3].tensor));
    return aten_into_outs(amax, a, 3, 1, r);
}
static porta_status *amin_out(const porta_value *a, aten_results *r) {
    PORTA_TRY(check_out_dtype(a[0].tensor, a[3].tensor));
    return aten_into_outs(amin, a, 3, 1, r);
}

/* aminmax(self, dim=None, keepdim): (min, max) over one dim or all. */
static porta_status *aminmax(const porta_value *a, aten_results *results) {
    const porta_tensor *x = a[0].tensor;
    reduce_dims dims;
    PORTA_TRY(reduce_dims_of("aminmax", x, &a[1], true, &dims));
    if (a[1].kind == PORTA_VALUE_NONE && porta_tensor_numel(x) == 0)
        return porta_error(PORTA_ERR_SHAPE,
                           "aminmax(): cannot compute aminmax over an empty dimension as the "
                           "operation has no identity.");
    PORTA_TRY(reduce_dims_need_elements("aminmax", x, &dims));
    porta_tensor *low = NULL, *high = NULL;
    PORTA_TRY(reduce_over(PORTA_REDUCE_MIN, x, &dims, a[2].b, &low));
    porta_status *status = reduce_over(PORTA_REDUCE_MAX, x, &dims, a[2].b, &high);
    if (status) {
        porta_tensor_release(low);
        return status;
    }
    status = aten_push_tensor(results, low);
    if (status) {
        porta_tensor_release(high);
        return status;
    }
    return aten_push_tensor(results, high);
}
static porta_status *aminmax_out(const porta_value *a, aten_results *r) {
    return aten_into_outs(aminmax, a, 3, 2, r);
}

/* nansum: NaNs count as zero; otherwise sum's dtype rules (integers and
 * bool accumulate in int64, the half types in float32). */
static porta_status *nansum(const porta_value *a, aten_results *results) {
    const porta_tensor *self = a[0].tensor;
    bool given = a[3].kind == PORTA_VALUE_DTYPE;
    porta_dtype input_dtype = given ? a[3].dtype : self->dtype;
    porta_dtype result_dtype =
        porta_dtype_is_float(input_dtype) || given ? input_dtype : PORTA_I64;
    reduce_dims dims;
    PORTA_TRY(reduce_dims_of("nansum", self, &a[1], true, &dims));
    porta_tensor *x = NULL, *nan = NULL, *zero = NULL, *numbers = NULL, *total = NULL,
                 *result = NULL;
    porta_status *status;
    PORTA_TRY_GOTO(status, aten_cast(self, aten_compute_dtype(input_dtype), &x), done);
    if (porta_dtype_is_float(input_dtype)) {
        PORTA_TRY_GOTO(status, porta_unary(PORTA_ISNAN, x, &nan), done);
        PORTA_TRY_GOTO(status, porta_tensor_full(x->buffer->device, x->dtype, 0, NULL, 0, &zero),
                       done);
        PORTA_TRY_GOTO(status, porta_ternary(PORTA_WHERE, nan, zero, x, &numbers), done);
    } else {
        numbers = x;
        porta_tensor_retain(numbers);
    }
    PORTA_TRY_GOTO(status, reduce_over(PORTA_REDUCE_SUM, numbers, &dims, a[2].b, &total), done);
    PORTA_TRY_GOTO(status, aten_cast(total, result_dtype, &result), done);
    status = aten_push_tensor(results, result);
done:
    porta_tensor_release(x);
    porta_tensor_release(nan);
    porta_tensor_release(zero);
    porta_tensor_release(numbers);
    porta_tensor_release(total);
    return status;
}
static porta_status *nansum_out(const porta_value *a, aten_results *r) {
    return aten_into_outs(nansum, a, 4, 1, r);
}

/* count_nonzero(self, dims): int64 counts of elements != 0; an empty list
 * counts over every dim, as sum does. */
static porta_status *count_nonzero(const porta_value *a, aten_results *results) {
    reduce_dims dims;
    PORTA_TRY(reduce_dims_of("count_nonzero", a[0].tensor, &a[1], true, &dims));
    porta_tensor *nonzero = NULL, *count = NULL;
    PORTA_TRY(aten_binary_constant(PORTA_NE, a[0].tensor, 0, &nonzero));
    porta_status *status = reduce_over(PORTA_REDUCE_SUM, nonzero, &dims, false, &count);
    porta_tensor_release(nonzero);
    if (status) return status;
    return aten_push_tensor(results, count);
}

static porta_status *count_nonzero_out(const porta_value *a, aten_results *r) {
    return aten_into_outs(count_nonzero, a, 2, 1, r);
}
/* count_nonzero(self, dim=None): over one dim, or every dim. */
static porta_status *count_nonzero_dim(const porta_value *a, aten_results *results) {
    porta_value args[2] = {a[0], {.kind = PORTA_VALUE_INTS, .ints = {&a[1].i, 1}}};
    if (a[1].kind == PORTA_VALUE_NONE) args[1].ints.count = 0;
    return count_nonzero(args, results);
}
static porta_status *count_nonzero_dim_out(const porta_value *a, aten_results *r) {
    return aten_into_outs(count_nonzero_dim, a, 2, 1, r);
}

/* vdot conjugates its first operand: for the real dtypes porta has, that
 * is dot itself. */
static porta_status *vdot(const porta_value *a, aten_results *results) {
    porta_tensor *out = NULL;
    PORTA_TRY(aten_call_op("dot", a, 2, &out));
    return aten_push_tensor(results, out);
}

static porta_status *vdot_out(const porta_value *a, aten_results *r) {
    return aten_into_outs(vdot, a, 2, 1, r);
}

/* equal: same sizes and every element equal after promotion (NaN is not
 * equal to itself). */
static porta_status *equal(const porta_value *a, aten_results *results) {
    const porta_tensor *x = a[0].tensor, *y = a[1].tensor;
    bool same = x->rank == y->rank;
    for (int d = 0; same && d < x->rank; d++) same = x->sizes[d] == y->sizes[d];
    if (!same || porta_tensor_numel(x) == 0) return aten_push_bool(results, same);
    porta_tensor *matches = NULL, *all = NULL;
    porta_status *status;
    PORTA_TRY_GOTO(status, porta_binary(PORTA_EQ, x, y, &matches), done);
    PORTA_TRY_GOTO(status, porta_reduce(PORTA_REDUCE_ALL, matches, NULL, 0, false, &all), done);
    bool every = false;
    PORTA_TRY_GOTO(status, porta_tensor_to_host(all, &every, sizeof every), done);
    status = aten_push_bool(results, every);
done:
    porta_tensor_release(matches);
    porta_tensor_release(all);
    return status;
}

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
    PORTA_TRY_GOTO(status, porta_permute(b1, batch_inside, &rows), done);
    PORTA_TRY_GOTO(status, porta_reshape(rows, 2, left_sizes, &left), done);
    PORTA_TRY_GOTO(status, porta_reshape(b2, 2, right_sizes, &right), done);
    porta_value addmm_args[5] = {a[0],
                                 {.kind = PORTA_VALUE_TENSOR, .tensor = left},
                                 {.kind = PORTA_VALUE_TENSOR, .tensor = right},
                                 a[3],
                                 a[4]};
    PORTA_TRY_GOTO(status, aten_call_op("addmm", addmm_args, 5, &out), done);
    status = aten_push_tensor(results, out);
done:
    porta_tensor_release(rows);
    porta_tensor_release(left);
    porta_tensor_release(right);
    return status;
}
static porta_status *addbmm_out(const porta_value *a, aten_results *r) {
    return aten_into_outs(addbmm, a, 5, 1, r);
}
/* addbmm_: self must already have the result's shape. */
static porta_status *addbmm_inplace(const porta_value *a, aten_results *results) {
    porta_tensor *self = a[0].tensor;
    aten_results computed = {0};
    porta_status *status = addbmm(a, &computed);
    if (!status) {
        const porta_tensor *sum = computed.items[0].tensor;
        bool same = sum->rank == self->rank;
        for (int d = 0; same && d < self->rank; d++) same = sum->sizes[d] == self->sizes[d];
        char have[PORTA_SHAPE_STR_CAP], want[PORTA_SHAPE_STR_CAP];
        status = same ? porta_copy(sum, self)
                      : porta_error(PORTA_ERR_SHAPE,
                                    "addbmm_: self has shape %s but the result has shape %s",
                                    porta_format_shape(have, sizeof have, self->rank, self->sizes),
                                    porta_format_shape(want, sizeof want, sum->rank, sum->sizes));
    }
    porta_aten_results_free(computed.items, computed.count);
    if (status) return status;
    porta_tensor_retain(self);
    return aten_push_tensor(results, self);
}

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
    aten_scope s = {0};
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
    PORTA_TRY(porta_normalize_axis(max ? "cummax" : "cummin", (int)a[1].i, rank ? rank : 1, &dim));
    int view_rank = rank ? rank : 1;
    int64_t one = 1, shape[PORTA_MAX_RANK];
    const int64_t *sizes = rank ? self->sizes : &one;
    int64_t length = sizes[dim];
    for (int d = 0; d < view_rank; d++) shape[d] = d == dim ? length : 1;
    aten_scope s = {0};
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

const aten_op aten_reduce_extra_ops[] = {
    {"amax.out", "TIbT", amax_out},
    {"amin.out", "TIbT", amin_out},
    {"aminmax", "Tjb", aminmax},
    {"aminmax.out", "TjbTT", aminmax_out},
    {"nansum", "TJbd", nansum},
    {"nansum.out", "TJbdT", nansum_out},
    {"count_nonzero", "Tj", count_nonzero_dim},
    {"count_nonzero.out", "TjT", count_nonzero_dim_out},
    {"count_nonzero.dim_IntList", "TI", count_nonzero},
    {"count_nonzero.dim_IntList_out", "TIT", count_nonzero_out},
    {"vdot", "TT", vdot},
    {"vdot.out", "TTT", vdot_out},
    {"equal", "TT", equal},
    {"addbmm", "TTTss", addbmm},
    {"addbmm.out", "TTTssT", addbmm_out},
    {"addbmm_", "TTTss", addbmm_inplace},
    {"cummax", "Ti", cummax},
    {"cummax.out", "TiTT", cummax_out},
    {"cummin", "Ti", cummin},
    {"cummin.out", "TiTT", cummin_out},
    {NULL, NULL, NULL},
};
