/* var and std with a correction (Bessel's by default), and the pairs
 * var_mean/std_mean: two passes, the mean first, for accuracy. */
#include <math.h>

#include "aten/dispatch/scope.h"
#include "aten/reduce/common.h"

#include "core/status.h"
#include "runtime/tensor.h"

/* Pushes the variance (or standard deviation) and, `with_mean`, the mean
 * shaped like it. */
static porta_status *moments(const porta_value *a, bool root, bool with_mean,
                             aten_results *results) {
    const porta_tensor *self = a[0].tensor;
    bool keepdim = a[3].b;
    if (!porta_dtype_is_float(self->dtype))
        return porta_error(PORTA_ERR_DTYPE,
                           "std and var only support floating point and complex dtypes");
    reduce_dims dims;
    PORTA_TRY(reduce_dims_of(root ? "std" : "var", self, &a[1], true, &dims));
    double correction = a[2].kind == PORTA_VALUE_NONE ? 1.0 : aten_number(&a[2]);
    double divisor = fmax((double)dims.numel - correction, 0.0);
    aten_scope s;
    scope_begin(&s);
    porta_tensor *x = scope_as_dtype(&s, self, aten_compute_dtype(self->dtype));
    porta_tensor *total = scope_reduce(&s, PORTA_REDUCE_SUM, x, dims.axes, dims.count, true);
    porta_tensor *mean = scope_binary_number(&s, PORTA_DIV, total, (double)dims.numel);
    porta_tensor *centered = scope_binary(&s, PORTA_SUB, x, mean);
    porta_tensor *squares = scope_binary(&s, PORTA_MUL, centered, centered);
    porta_tensor *spread =
        scope_reduce(&s, PORTA_REDUCE_SUM, squares, dims.axes, dims.count, keepdim);
    porta_tensor *var = scope_binary_number(&s, PORTA_DIV, spread, divisor);
    if (root) var = scope_unary(&s, PORTA_SQRT, var);
    scope_push(&s, results, scope_as_dtype(&s, var, self->dtype));
    if (with_mean && var) {
        porta_tensor *shaped = scope_reshape(&s, mean, var->rank, var->sizes);
        scope_push(&s, results, scope_as_dtype(&s, shaped, self->dtype));
    }
    return scope_end(&s);
}

static porta_status *var(const porta_value *a, aten_results *r) {
    return moments(a, false, false, r);
}
static porta_status *std(const porta_value *a, aten_results *r) {
    return moments(a, true, false, r);
}
static porta_status *var_mean(const porta_value *a, aten_results *r) {
    return moments(a, false, true, r);
}
static porta_status *std_mean(const porta_value *a, aten_results *r) {
    return moments(a, true, true, r);
}

const aten_op aten_reduce_moments_ops[] = {
    {"var.correction", "TJSb", var},
    {"std.correction", "TJSb", std},
    {"var_mean.correction", "TJSb", var_mean},
    {"std_mean.correction", "TJSb", std_mean},
    {NULL, NULL, NULL},
};
