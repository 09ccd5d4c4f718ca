/* softmax, log_softmax and their gradients, logsumexp. Each shifts by the
 * maximum so exp never overflows, and computes the half types in float32
 * as PyTorch's CPU kernels do. */
#include "aten/reduce/common.h"

#include "core/status.h"
#include "runtime/tensor.h"

static porta_status *check_float(const char *name, porta_dtype dtype) {
    if (!porta_dtype_is_float(dtype))
        return porta_error(PORTA_ERR_DTYPE, "\"%s\" not implemented for '%s'", name,
                           aten_dtype_label(dtype));
    return NULL;
}

/* out = op(a, b) written over out, a tensor this file made. */
static porta_status *binary_over(porta_binary_op op, const porta_tensor *a, const porta_tensor *b,
                                 porta_tensor *out) {
    return porta_binary(op, a, b, &out);
}

static porta_status *unary_over(porta_unary_op op, porta_tensor *x) {
    return porta_unary(op, x, &x);
}

/* With m the maximum along the axis and e = exp(x - m): softmax = e /
 * sum(e), into `out` (x's shape), e written there and the quotient over
 * it; log_softmax = (x - m) - log(sum(e)), x - m written to `out` and e to
 * `scratch` (x's shape too). Five passes, a reduction in two of them: the
 * composition for devices without the softmax primitive, and for other
 * axes and dtypes. */
static porta_status *normalize(const porta_tensor *x, int axis, porta_tensor *out,
                               porta_tensor *scratch) {
    porta_tensor *max = NULL, *total = NULL;
    porta_status *status;
    porta_tensor *e = scratch ? scratch : out;
    CORE_TRY_GOTO(status, porta_reduce(PORTA_REDUCE_MAX, x, &axis, 1, true, &max), done);
    CORE_TRY_GOTO(status, binary_over(PORTA_SUB, x, max, out), done);
    CORE_TRY_GOTO(status, porta_unary(PORTA_EXP, out, &e), done);
    CORE_TRY_GOTO(status, porta_reduce(PORTA_REDUCE_SUM, e, &axis, 1, true, &total), done);
    if (scratch) {
        CORE_TRY_GOTO(status, unary_over(PORTA_LOG, total), done);
        status = binary_over(PORTA_SUB, out, total, out);
    } else {
        CORE_TRY_GOTO(status, unary_over(PORTA_RECIPROCAL, total), done);
        status = binary_over(PORTA_MUL, out, total, out);
    }
done:
    porta_tensor_release(max);
    porta_tensor_release(total);
    return status;
}

/* Elements per block of rows: the block of x and of the result stay in the
 * threads' L2 caches through normalize's five passes, which over the whole
 * of a large tensor would each go to memory. */
#define BLOCK_ELEMENTS (128 * 1024)

/* Blocks of `outer` indices [start, stop) of x, out and scratch (whose
 * first block is used for every block), or NULL for those given NULL. */
static porta_status *normalize_block(const porta_tensor *x, int axis, int outer, int64_t start,
                                     int64_t stop, porta_tensor *out, porta_tensor *scratch) {
    porta_tensor *x_block = NULL, *out_block = NULL, *scratch_block = NULL;
    porta_status *status = porta_slice(x, outer, start, stop, 1, &x_block);
    if (!status) status = porta_slice(out, outer, start, stop, 1, &out_block);
    if (!status && scratch) status = porta_slice(scratch, outer, 0, stop - start, 1, &scratch_block);
    if (!status) status = normalize(x_block, axis, out_block, scratch_block);
    porta_tensor_release(x_block);
    porta_tensor_release(out_block);
    porta_tensor_release(scratch_block);
    return status;
}

/* normalize over blocks of an outer dim (one before `axis`, so each block
 * is whole rows), or at once when the tensor is small or has none; the
 * scratch log_softmax needs is one block's. */
static porta_status *normalize_blocked(const porta_tensor *x, int axis, bool logarithm,
                                       porta_tensor *out) {
    int outer = 0;
    while (outer < axis && x->sizes[outer] == 1) outer++;
    int64_t numel = porta_tensor_numel(x);
    bool blocked = outer < axis && numel > 2 * BLOCK_ELEMENTS;
    int64_t step = x->sizes[outer];
    if (blocked) {
        int64_t per_index = numel / x->sizes[outer];
        step = per_index >= BLOCK_ELEMENTS ? 1 : BLOCK_ELEMENTS / per_index;
    }
    porta_tensor *scratch = NULL;
    if (logarithm) {
        int64_t sizes[PORTA_MAX_RANK];
        for (int d = 0; d < x->rank; d++) sizes[d] = x->sizes[d];
        if (x->rank > 0) sizes[outer] = step;
        PORTA_TRY(porta_tensor_empty(x->buffer->device, x->dtype, x->rank, sizes, &scratch));
    }
    porta_status *status = NULL;
    if (!blocked) status = normalize(x, axis, out, scratch);
    for (int64_t start = 0; blocked && start < x->sizes[outer] && !status; start += step) {
        int64_t stop = start + step < x->sizes[outer] ? start + step : x->sizes[outer];
        status = normalize_block(x, axis, outer, start, stop, out, scratch);
    }
    porta_tensor_release(scratch);
    return status;
}

/* Over the last axis of float32 rows on a device that has the kernel, one
 * primitive reads each row once (porta_softmax); otherwise normalize_blocked. */
static porta_status *softmax_of(const porta_value *a, bool logarithm, aten_results *results) {
    const porta_tensor *self = a[0].tensor;
    const char *name = logarithm ? "log_softmax" : "softmax";
    if (a[2].b)
        return porta_error(PORTA_ERR_UNSUPPORTED,
                           "%s with half to float conversion is not supported on CPU", name);
    reduce_dims dims;
    PORTA_TRY(reduce_dims_of(name, self, &a[1], true, &dims));
    porta_tensor *out = NULL;
    if (porta_tensor_numel(self) == 0) { /* nothing to normalize, whatever the dtype */
        PORTA_TRY(porta_tensor_empty(self->buffer->device, self->dtype, self->rank, self->sizes,
                                     &out));
        return aten_push_tensor(results, out);
    }
    PORTA_TRY(check_float(name, self->dtype));
    int axis = dims.count ? dims.axes[0] : 0;
    porta_tensor *x = NULL, *y = NULL;
    porta_status *status;
    CORE_TRY_GOTO(status, aten_cast(self, aten_compute_dtype(self->dtype), &x), done);
    porta_softmax_op op = logarithm ? PORTA_LOG_SOFTMAX : PORTA_SOFTMAX;
    if (axis == x->rank - 1 && porta_softmax_runs(op, x, NULL)) {
        CORE_TRY_GOTO(status, porta_softmax(op, x, NULL, &y), done);
    } else {
        CORE_TRY_GOTO(status,
                       porta_tensor_empty(x->buffer->device, x->dtype, x->rank, x->sizes, &y),
                       done);
        CORE_TRY_GOTO(status, normalize_blocked(x, axis, logarithm, y), done);
    }
    CORE_TRY_GOTO(status, aten_cast(y, self->dtype, &out), done);
    status = aten_push_tensor(results, out);
done:
    porta_tensor_release(x);
    porta_tensor_release(y);
    return status;
}

static porta_status *softmax(const porta_value *a, aten_results *r) {
    return softmax_of(a, false, r);
}
static porta_status *log_softmax(const porta_value *a, aten_results *r) {
    return softmax_of(a, true, r);
}

/* softmax: grad_in = y * (g - sum(g * y));
 * log_softmax: grad_in = g - exp(y) * sum(g). Over the last axis of
 * contiguous float32 rows, on a device that has the kernel, in one
 * primitive (porta_softmax); otherwise composed. */
static porta_status *softmax_grad(const porta_value *a, bool logarithm, aten_results *results) {
    if (a[0].kind != PORTA_VALUE_TENSOR || a[1].kind != PORTA_VALUE_TENSOR)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "softmax_backward: grad_output and output must be tensors");
    const porta_value *operands[2] = {&a[0], &a[1]};
    porta_dtype dtype = aten_compute_dtype(aten_result_type(operands, 2));
    PORTA_TRY(check_float(logarithm ? "log_softmax_backward" : "softmax_backward", dtype));
    reduce_dims dims;
    PORTA_TRY(reduce_dims_of("softmax_backward", a[1].tensor, &a[2], true, &dims));
    int axis = dims.count ? dims.axes[0] : 0;
    porta_tensor *g = NULL, *y = NULL, *weighted = NULL, *total = NULL, *scale = NULL,
                 *grad = NULL, *out = NULL;
    porta_status *status;
    CORE_TRY_GOTO(status, aten_cast(a[0].tensor, dtype, &g), done);
    CORE_TRY_GOTO(status, aten_cast(a[1].tensor, dtype, &y), done);
    porta_softmax_op op = logarithm ? PORTA_LOG_SOFTMAX_BACKWARD : PORTA_SOFTMAX_BACKWARD;
    if (axis == y->rank - 1 && porta_softmax_runs(op, g, y)) {
        CORE_TRY_GOTO(status, porta_softmax(op, g, y, &grad), done);
    } else if (logarithm) {
        CORE_TRY_GOTO(status, porta_reduce(PORTA_REDUCE_SUM, g, &axis, 1, true, &total), done);
        CORE_TRY_GOTO(status, porta_unary(PORTA_EXP, y, &scale), done);
        CORE_TRY_GOTO(status, porta_binary(PORTA_MUL, scale, total, &weighted), done);
        CORE_TRY_GOTO(status, porta_binary(PORTA_SUB, g, weighted, &grad), done);
    } else {
        CORE_TRY_GOTO(status, porta_binary(PORTA_MUL, g, y, &weighted), done);
        CORE_TRY_GOTO(status, porta_reduce(PORTA_REDUCE_SUM, weighted, &axis, 1, true, &total),
                       done);
        CORE_TRY_GOTO(status, porta_binary(PORTA_SUB, g, total, &scale), done);
        CORE_TRY_GOTO(status, porta_binary(PORTA_MUL, y, scale, &grad), done);
    }
    CORE_TRY_GOTO(status, aten_cast(grad, a[3].dtype, &out), done);
    status = aten_push_tensor(results, out);
done:
    porta_tensor_release(g);
    porta_tensor_release(y);
    porta_tensor_release(weighted);
    porta_tensor_release(total);
    porta_tensor_release(scale);
    porta_tensor_release(grad);
    return status;
}

static porta_status *softmax_backward(const porta_value *a, aten_results *r) {
    return softmax_grad(a, false, r);
}
static porta_status *log_softmax_backward(const porta_value *a, aten_results *r) {
    return softmax_grad(a, true, r);
}

/* log(sum(exp(x))) = m + log(sum(exp(x - m))) with m the maximum, or 0
 * where the maximum is infinite (x - m would be NaN there). Integers are
 * computed in the default float dtype. */
static porta_status *logsumexp(const porta_value *a, aten_results *results) {
    const porta_tensor *self = a[0].tensor;
    bool keepdim = a[2].b;
    reduce_dims dims;
    PORTA_TRY(reduce_dims_of("logsumexp", self, &a[1], true, &dims));
    porta_dtype dtype = porta_dtype_is_float(self->dtype) ? self->dtype : PORTA_F32;
    porta_tensor *x = NULL, *zero = NULL, *max = NULL, *infinite = NULL, *shift = NULL, *shifted = NULL,
                 *exps = NULL, *total = NULL, *logs = NULL, *kept_shift = NULL, *sum = NULL,
                 *out = NULL;
    porta_status *status;
    CORE_TRY_GOTO(status, aten_cast(self, aten_compute_dtype(dtype), &x), done);
    CORE_TRY_GOTO(status, porta_tensor_full(x->buffer->device, x->dtype, 0, NULL, 0.0, &zero),
                   done);
    if (dims.numel > 0) {
        CORE_TRY_GOTO(status, reduce_over(PORTA_REDUCE_MAX, x, &dims, true, &max), done);
        CORE_TRY_GOTO(status, porta_unary(PORTA_ISINF, max, &infinite), done);
        CORE_TRY_GOTO(status, porta_ternary(PORTA_WHERE, infinite, zero, max, &shift), done);
    } else { /* no maximum to take: the sum of no exponentials is 0 */
        porta_tensor_retain(zero);
        shift = zero;
    }
    CORE_TRY_GOTO(status, porta_binary(PORTA_SUB, x, shift, &shifted), done);
    CORE_TRY_GOTO(status, porta_unary(PORTA_EXP, shifted, &exps), done);
    CORE_TRY_GOTO(status, reduce_over(PORTA_REDUCE_SUM, exps, &dims, keepdim, &total), done);
    CORE_TRY_GOTO(status, porta_unary(PORTA_LOG, total, &logs), done);
    CORE_TRY_GOTO(status, porta_reshape(shift, keepdim || !max ? shift->rank : logs->rank,
                                         keepdim || !max ? shift->sizes : logs->sizes,
                                         &kept_shift),
                   done);
    CORE_TRY_GOTO(status, porta_binary(PORTA_ADD, logs, kept_shift, &sum), done);
    CORE_TRY_GOTO(status, aten_cast(sum, dtype, &out), done);
    status = aten_push_tensor(results, out);
done:
    porta_tensor_release(x);
    porta_tensor_release(zero);
    porta_tensor_release(max);
    porta_tensor_release(infinite);
    porta_tensor_release(shift);
    porta_tensor_release(shifted);
    porta_tensor_release(exps);
    porta_tensor_release(total);
    porta_tensor_release(logs);
    porta_tensor_release(kept_shift);
    porta_tensor_release(sum);
    return status;
}

const aten_op aten_reduce_softmax_ops[] = {
    {"_softmax", "Tib", softmax},
    {"_log_softmax", "Tib", log_softmax},
    {"_softmax_backward_data", "TTid", softmax_backward},
    {"_log_softmax_backward_data", "TTid", log_softmax_backward},
    {"logsumexp", "TIb", logsumexp},
    {NULL, NULL, NULL},
};
