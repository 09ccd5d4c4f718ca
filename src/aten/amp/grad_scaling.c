/* The two ops torch.amp.GradScaler runs on a device: unscaling gradients
 * while looking for infinities and NaNs, and updating the loss scale. Both
 * compute on the device without reading values to the host, as CUDA does,
 * so a training step under fused eager mode stays recorded; their writes go
 * through copies and in-place primitives, which the trace orders like any
 * in-place op. */
#include "aten/dispatch/scope.h"
#include "aten/reduce/common.h"
#include "core/status.h"
#include "runtime/tensor.h"

/* PyTorch's checks of the scaler's tensors: one element each, and the
 * dtype each must have (`what` names it in the message). */
static porta_status *check_numel_one(const porta_tensor *t, const char *name) {
    if (porta_tensor_numel(t) != 1)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "%s must be a 1-element tensor, but got %lld elements", name,
                           (long long)porta_tensor_numel(t));
    return NULL;
}

static porta_status *check_dtype(const porta_tensor *t, const char *name, porta_dtype dtype,
                                 const char *what) {
    if (t->dtype != dtype)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "%s must be %s tensor, but got %s", name,
                           what, porta_dtype_name(t->dtype));
    return NULL;
}

/* One gradient: found_inf becomes 1 where the gradient holds a value that
 * is not finite (read before scaling, as CUDA does), then the gradient is
 * multiplied by inv_scale in place, in float32 for half types. */
static porta_status *unscale_one(porta_tensor *grad, porta_tensor *found_inf,
                                 const porta_tensor *inv_scale) {
    aten_scope s;
    scope_begin(&s);
    porta_tensor *not_finite = scope_unary(&s, PORTA_LOGICAL_NOT, scope_unary(&s, PORTA_ISFINITE, grad));
    porta_tensor *any = scope_reduce(&s, PORTA_REDUCE_ANY, not_finite, NULL, 0, false);
    porta_tensor *one = scope_full(&s, porta_tensor_device(found_inf), PORTA_F32, 0, NULL, 1);
    scope_ternary_into(&s, PORTA_WHERE, any, one, found_inf, found_inf);
    porta_dtype compute = aten_compute_dtype(grad->dtype);
    porta_tensor *factor = scope_as_dtype(&s, inv_scale, compute);
    if (compute == grad->dtype) {
        scope_binary_into(&s, PORTA_MUL, grad, factor, grad);
    } else {
        porta_tensor *scaled = scope_binary(&s, PORTA_MUL, scope_cast(&s, grad, compute), factor);
        scope_copy(&s, scaled, grad);
    }
    return scope_end(&s);
}

/* _amp_foreach_non_finite_check_and_unscale_(self[], found_inf, inv_scale):
 * every gradient is checked before any is written, so a refused call
 * changes nothing. */
static porta_status *foreach_non_finite_check_and_unscale(const porta_value *a, aten_results *r) {
    (void)r; /* returns () */
    porta_tensor *const *grads = a[0].tensors.items;
    int count = a[0].tensors.count;
    porta_tensor *found_inf = a[1].tensor, *inv_scale = a[2].tensor;
    PORTA_TRY(check_numel_one(inv_scale, "inv_scale"));
    PORTA_TRY(check_numel_one(found_inf, "found_inf"));
    PORTA_TRY(check_dtype(inv_scale, "inv_scale", PORTA_F32, "a float32"));
    PORTA_TRY(check_dtype(found_inf, "found_inf", PORTA_F32, "a float32"));
    for (int i = 0; i < count; i++)
        if (!porta_dtype_is_float(grads[i]->dtype))
            return porta_error(PORTA_ERR_DTYPE,
                               "\"_amp_foreach_non_finite_check_and_unscale\" not implemented for "
                               "'%s': gradient %d must be a floating-point tensor",
                               aten_dtype_label(grads[i]->dtype), i);
    aten_scope s;
    scope_begin(&s);
    porta_tensor *factor = scope_reshape(&s, inv_scale, 0, NULL);
    for (int i = 0; i < count && !s.status; i++) {
        porta_status *status = unscale_one(grads[i], found_inf, factor);
        if (status) scope_fail(&s, status);
    }
    return scope_end(&s);
}

/* _amp_update_scale_(self, growth_tracker, found_inf, growth_factor,
 * backoff_factor, growth_interval), CUDA's rule: after a step with a
 * non-finite gradient the scale is multiplied by backoff_factor and the
 * tracker reset; otherwise the tracker counts the successful step and,
 * when it reaches growth_interval, the scale grows by growth_factor
 * (unless that overflows float32) and the tracker restarts at 0. The
 * products are formed in float64 and rounded once, as the kernels do. */
static porta_status *update_scale(const porta_value *a, aten_results *r) {
    porta_tensor *scale = a[0].tensor, *tracker = a[1].tensor;
    const porta_tensor *found_inf = a[2].tensor;
    double growth_factor = a[3].f, backoff_factor = a[4].f;
    int64_t growth_interval = a[5].i;
    PORTA_TRY(check_numel_one(tracker, "growth_tracker"));
    PORTA_TRY(check_numel_one(scale, "current_scale"));
    PORTA_TRY(check_numel_one(found_inf, "found_inf"));
    PORTA_TRY(check_dtype(tracker, "growth_tracker", PORTA_I32, "an int32"));
    PORTA_TRY(check_dtype(scale, "current_scale", PORTA_F32, "a float32"));
    PORTA_TRY(check_dtype(found_inf, "found_inf", PORTA_F32, "a float32"));
    aten_scope s;
    scope_begin(&s);
    porta_tensor *current = scope_reshape(&s, scale, 0, NULL);
    porta_tensor *wide = scope_cast(&s, current, PORTA_F64);
    porta_tensor *found = scope_binary_number(&s, PORTA_NE, scope_reshape(&s, found_inf, 0, NULL), 0);
    porta_tensor *successful =
        scope_binary_number(&s, PORTA_ADD, scope_cast(&s, scope_reshape(&s, tracker, 0, NULL), PORTA_I64), 1);
    porta_tensor *reached = scope_binary_number(&s, PORTA_EQ, successful, (double)growth_interval);
    porta_tensor *grown = scope_cast(&s, scope_binary_number(&s, PORTA_MUL, wide, growth_factor), PORTA_F32);
    porta_tensor *backed_off = scope_cast(&s, scope_binary_number(&s, PORTA_MUL, wide, backoff_factor), PORTA_F32);
    porta_tensor *kept_growth = scope_where(&s, scope_unary(&s, PORTA_ISFINITE, grown), grown, current);
    porta_tensor *next_scale =
        scope_where(&s, found, backed_off, scope_where(&s, reached, kept_growth, current));
    porta_tensor *next_tracker =
        scope_where_number(&s, scope_binary(&s, PORTA_LOGICAL_OR, found, reached), 0, successful);
    scope_copy(&s, next_tracker, tracker);
    scope_push_into(&s, r, next_scale, scale);
    return scope_end(&s);
}

const aten_op aten_amp_grad_scaling_ops[] = {
    {"_amp_foreach_non_finite_check_and_unscale_", "LTT", foreach_non_finite_check_and_unscale},
    {"_amp_update_scale_", "TTTffi", update_scale},
    {NULL, NULL, NULL},
};
