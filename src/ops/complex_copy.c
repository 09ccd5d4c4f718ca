/* Copies, casts and fills that involve a complex tensor. No backend has
 * complex kernels: a complex tensor is its (real, imag) pairs, so each of
 * these becomes real copies and fills on the pair view (porta_view_as_real)
 * or on one component of it. */
#include "ops/complex_copy.h"

#include "core/status.h"
#include "runtime/tensor.h"

/* One component (0 real, 1 imaginary) of complex x: a view of the
 * component dtype with x's sizes. */
static porta_status *component(const porta_tensor *x, int part, porta_tensor **out) {
    porta_tensor *pairs;
    PORTA_TRY(porta_view_as_real(x, &pairs));
    porta_status *status = rt_tensor_restride(pairs, x->rank, pairs->sizes, pairs->strides,
                                              pairs->offset + part, out);
    porta_tensor_release(pairs);
    return status;
}

/* src (already broadcast to dst's shape) into dst, at least one complex. */
static porta_status *copy_broadcast(const porta_tensor *src, porta_tensor *dst) {
    bool from_complex = porta_dtype_is_complex(src->dtype);
    bool to_complex = porta_dtype_is_complex(dst->dtype);
    porta_tensor *from = NULL, *to = NULL;
    porta_status *status = NULL;
    if (from_complex && to_complex) { /* pair to pair, casting the components */
        status = porta_view_as_real(src, &from);
        if (!status) status = porta_view_as_real(dst, &to);
        if (!status) status = porta_copy(from, to);
    } else if (to_complex) { /* a real value: the imaginary part is 0 */
        status = component(dst, 0, &to);
        if (!status) status = porta_copy(src, to);
        porta_tensor_release(to);
        to = NULL;
        if (!status) status = component(dst, 1, &to);
        if (!status) status = porta_fill(to, 0.0);
    } else if (dst->dtype == PORTA_BOOL) { /* true where either part is nonzero */
        porta_tensor *nonzero = NULL;
        status = component(src, 0, &from);
        if (!status) status = component(src, 1, &to);
        if (!status) status = porta_binary(PORTA_LOGICAL_OR, from, to, &nonzero);
        if (!status) status = porta_copy(nonzero, dst);
        porta_tensor_release(nonzero);
    } else { /* to another real dtype: the real part, as PyTorch's casts */
        status = component(src, 0, &from);
        if (!status) status = porta_copy(from, dst);
    }
    porta_tensor_release(from);
    porta_tensor_release(to);
    return status;
}

porta_status *ops_complex_copy(const porta_tensor *src, porta_tensor *dst) {
    porta_tensor *view;
    porta_status *status = ops_broadcast_to(src, dst->rank, dst->sizes, &view);
    if (status) return porta_error_context(status, "copy");
    status = copy_broadcast(view, dst);
    porta_tensor_release(view);
    return status;
}

porta_status *ops_complex_fill(porta_tensor *dst, double value) {
    porta_tensor *part;
    PORTA_TRY(component(dst, 0, &part));
    porta_status *status = porta_fill(part, value);
    porta_tensor_release(part);
    if (status) return status;
    PORTA_TRY(component(dst, 1, &part));
    status = porta_fill(part, 0.0);
    porta_tensor_release(part);
    return status;
}

porta_status *ops_complex_cast(const porta_tensor *x, porta_dtype dtype, porta_tensor **out) {
    if (*out) return ops_complex_copy(x, *out);
    porta_tensor *result;
    PORTA_TRY(porta_tensor_empty(x->buffer->device, dtype, x->rank, x->sizes, &result));
    porta_status *status = ops_complex_copy(x, result);
    if (status) {
        porta_tensor_release(result);
        return status;
    }
    *out = result;
    return NULL;
}

porta_status *ops_check_not_complex(const char *op, const porta_tensor *const *inputs,
                                    int input_count, const porta_tensor *out) {
    for (int i = -1; i < input_count; i++) {
        const porta_tensor *t = i < 0 ? out : inputs[i];
        if (t && porta_dtype_is_complex(t->dtype))
            return porta_error(PORTA_ERR_DTYPE, "%s: not implemented for %s on porta", op,
                               porta_dtype_name(t->dtype));
    }
    return NULL;
}
