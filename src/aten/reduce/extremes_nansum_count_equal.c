/* Reductions PyTorch has beside the common ones: amax/amin into out=,
 * aminmax, nansum, count_nonzero over dims and equal. Each lowers to
 * porta_reduce. */
#include "aten/dispatch/op_reuse.h"
#include "aten/reduce/common.h"

#include "core/status.h"
#include "runtime/tensor.h"

/* amax/amin (reduce/reduce.c) by name, for their out= forms: PyTorch wants the
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
    CORE_TRY_GOTO(status, aten_cast(self, aten_compute_dtype(input_dtype), &x), done);
    if (porta_dtype_is_float(input_dtype)) {
        CORE_TRY_GOTO(status, porta_unary(PORTA_ISNAN, x, &nan), done);
        CORE_TRY_GOTO(status, porta_tensor_full(x->buffer->device, x->dtype, 0, NULL, 0, &zero),
                       done);
        CORE_TRY_GOTO(status, porta_ternary(PORTA_WHERE, nan, zero, x, &numbers), done);
    } else {
        numbers = x;
        porta_tensor_retain(numbers);
    }
    CORE_TRY_GOTO(status, reduce_over(PORTA_REDUCE_SUM, numbers, &dims, a[2].b, &total), done);
    CORE_TRY_GOTO(status, aten_cast(total, result_dtype, &result), done);
    status = aten_push_tensor(results, result);
done:
    porta_tensor_release(x);
    porta_tensor_release(nan);
    porta_tensor_release(zero);
    porta_tensor_release(numbers);
    porta_tensor_release(total);
    return status;
}
ATEN_OUT_KERNEL(nansum_out, nansum, 4)

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

ATEN_OUT_KERNEL(count_nonzero_out, count_nonzero, 2)
/* count_nonzero(self, dim=None): over one dim, or every dim. */
static porta_status *count_nonzero_dim(const porta_value *a, aten_results *results) {
    porta_value args[2] = {a[0], {.kind = PORTA_VALUE_INTS, .ints = {&a[1].i, 1}}};
    if (a[1].kind == PORTA_VALUE_NONE) args[1].ints.count = 0;
    return count_nonzero(args, results);
}
ATEN_OUT_KERNEL(count_nonzero_dim_out, count_nonzero_dim, 2)

/* equal: same sizes and every element equal after promotion (NaN is not
 * equal to itself). */
static porta_status *equal(const porta_value *a, aten_results *results) {
    const porta_tensor *x = a[0].tensor, *y = a[1].tensor;
    bool same = x->rank == y->rank;
    for (int d = 0; same && d < x->rank; d++) same = x->sizes[d] == y->sizes[d];
    if (!same || porta_tensor_numel(x) == 0) return aten_push_bool(results, same);
    porta_tensor *matches = NULL, *all = NULL;
    porta_status *status;
    CORE_TRY_GOTO(status, porta_binary(PORTA_EQ, x, y, &matches), done);
    CORE_TRY_GOTO(status, porta_reduce(PORTA_REDUCE_ALL, matches, NULL, 0, false, &all), done);
    bool every = false;
    CORE_TRY_GOTO(status, porta_tensor_to_host(all, &every, sizeof every), done);
    status = aten_push_bool(results, every);
done:
    porta_tensor_release(matches);
    porta_tensor_release(all);
    return status;
}

const aten_op aten_reduce_extremes_nansum_count_equal_ops[] = {
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
    {"equal", "TT", equal},
    {NULL, NULL, NULL},
};
