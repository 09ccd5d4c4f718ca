/* Running sums and products along one dim (cumsum, cumprod), composed of
 * primitives: log2(n) rounds in which every element combines with the one
 * `step` places before it (a shifted copy, padded with the identity), the
 * Hillis-Steele scan. Integers and bool accumulate in int64 as in PyTorch;
 * the half types in float32. */
#include "aten/reduce/common.h"

#include "core/status.h"
#include "runtime/tensor.h"

/* y op (y shifted by `step` along axis, the identity filling the front). */
static porta_status *combine_shifted(porta_binary_op op, double identity, porta_tensor *y,
                                     int axis, int64_t step, porta_tensor **out) {
    int64_t pads[2 * PORTA_MAX_RANK] = {0};
    pads[2 * axis] = step;
    pads[2 * axis + 1] = -step;
    porta_tensor *shifted = NULL;
    PORTA_TRY(porta_pad(y, pads, identity, &shifted));
    porta_status *status = porta_binary(op, y, shifted, out);
    porta_tensor_release(shifted);
    return status;
}

static porta_status *scan(porta_binary_op op, double identity, const char *name,
                          const porta_value *a, aten_results *results) {
    const porta_tensor *self = a[0].tensor;
    reduce_dims dims;
    PORTA_TRY(reduce_dims_of(name, self, &a[1], true, &dims));
    porta_dtype dtype = a[2].kind == PORTA_VALUE_DTYPE       ? a[2].dtype
                        : porta_dtype_is_float(self->dtype) ? self->dtype
                                                            : PORTA_I64;
    porta_tensor *rounded = NULL, *y = NULL, *out = NULL;
    porta_status *status;
    CORE_TRY_GOTO(status, aten_cast(self, dtype, &rounded), done);
    CORE_TRY_GOTO(status,
                   aten_cast(rounded, porta_dtype_is_float(dtype) ? aten_compute_dtype(dtype)
                                                                  : PORTA_I64,
                             &y),
                   done);
    int axis = dims.count ? dims.axes[0] : 0;
    int64_t length = self->rank ? self->sizes[axis] : 1;
    for (int64_t step = 1; step < length; step *= 2) {
        porta_tensor *next = NULL;
        CORE_TRY_GOTO(status, combine_shifted(op, identity, y, axis, step, &next), done);
        porta_tensor_release(y);
        y = next;
    }
    CORE_TRY_GOTO(status, aten_cast(y, dtype, &out), done);
    if (out == self) { /* a rank-0 or one-element input in its own dtype: still a new tensor */
        porta_tensor_release(out);
        out = NULL;
        CORE_TRY_GOTO(status, porta_tensor_empty(self->buffer->device, dtype, self->rank,
                                                  self->sizes, &out),
                       done);
        CORE_TRY_GOTO(status, porta_copy(self, out), copy_failed);
    }
    status = aten_push_tensor(results, out);
    goto done;
copy_failed:
    porta_tensor_release(out);
done:
    porta_tensor_release(rounded);
    porta_tensor_release(y);
    return status;
}

static porta_status *cumsum(const porta_value *a, aten_results *r) {
    return scan(PORTA_ADD, 0.0, "cumsum", a, r);
}
static porta_status *cumprod(const porta_value *a, aten_results *r) {
    return scan(PORTA_MUL, 1.0, "cumprod", a, r);
}

const aten_op aten_reduce_scan_ops[] = {
    {"cumsum", "Tid", cumsum},
    {"cumprod", "Tid", cumprod},
    {NULL, NULL, NULL},
};
