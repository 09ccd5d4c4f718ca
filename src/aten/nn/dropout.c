/* Dropout aten ops: native_dropout draws its keep-mask from the device's
 * Philox generator (aten_random_fill), so a seed gives the same mask on
 * every backend; native_dropout_backward applies the saved mask. */
#include "aten/dispatch/scope.h"
#include "aten/random/state.h"

#include "core/status.h"
#include "runtime/tensor.h"

/* native_dropout(input, p, train?) -> (output, mask) */
static porta_status *native_dropout(const porta_value *args, aten_results *results) {
    const porta_tensor *x = args[0].tensor;
    double p = aten_number(&args[1]);
    bool train = args[2].kind != PORTA_VALUE_BOOL || args[2].b;
    if (p < 0 || p > 1)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "dropout probability has to be between 0 and 1, but got %g", p);
    if (!porta_dtype_is_float(x->dtype))
        return porta_error(PORTA_ERR_DTYPE, "native_dropout: expected a floating-point input, got %s",
                           porta_dtype_name(x->dtype));
    aten_scope s;
    scope_begin(&s);
    porta_device *device = x->buffer->device;
    if (!train) { /* evaluation: a copy of the input and a mask keeping all */
        scope_push(&s, results, scope_contiguous(&s, x));
        scope_push(&s, results, scope_full(&s, device, PORTA_BOOL, x->rank, x->sizes, 1));
        return scope_end(&s);
    }
    double keep = 1 - p, scale = keep == 0 ? 0 : 1 / keep;
    porta_tensor *uniform = scope_full(&s, device, PORTA_F32, x->rank, x->sizes, 0);
    if (uniform) {
        porta_status *status = aten_random_fill(uniform, false, 0, 1);
        if (status) scope_fail(&s, status);
    }
    porta_tensor *mask = scope_binary_number(&s, PORTA_LT, uniform, keep);
    porta_tensor *kept = scope_binary(&s, PORTA_MUL, x, scope_cast(&s, mask, x->dtype));
    scope_push(&s, results, scope_binary_number(&s, PORTA_MUL, kept, scale));
    scope_push(&s, results, mask);
    return scope_end(&s);
}

/* native_dropout_backward(grad_output, mask, scale) = grad * mask * scale */
static porta_status *native_dropout_backward(const porta_value *args, aten_results *results) {
    const porta_tensor *gy = args[0].tensor, *mask = args[1].tensor;
    if (mask->dtype != PORTA_BOOL)
        return porta_error(PORTA_ERR_DTYPE, "native_dropout_backward: mask should be a bool tensor, got %s",
                           porta_dtype_name(mask->dtype));
    aten_scope s;
    scope_begin(&s);
    porta_tensor *kept = scope_binary(&s, PORTA_MUL, gy, scope_cast(&s, mask, gy->dtype));
    scope_push(&s, results, scope_binary_number(&s, PORTA_MUL, kept, aten_number(&args[2])));
    return scope_end(&s);
}

const aten_op aten_nn_dropout_ops[] = {
    {"native_dropout", "Tfc", native_dropout},
    {"native_dropout_backward", "TTf", native_dropout_backward},
    {NULL, NULL, NULL},
};
