/* var and std with a correction (Bessel's by default), and the pairs
 * var_mean/std_mean: two passes, the mean first, for accuracy. */
#include <math.h>

#include "aten/reduce/common.h"

#include "core/status.h"
#include "core/tensor.h"

/* Writes the variance (or standard deviation) and, when `mean_out` is not
 * NULL, the mean shaped like it. */
static porta_status *moments(const porta_value *a, bool root, porta_tensor **var_out,
                             porta_tensor **mean_out) {
    const porta_tensor *self = a[0].tensor;
    bool keepdim = a[3].b;
    if (!porta_dtype_is_float(self->dtype))
        return porta_error(PORTA_ERR_DTYPE,
                           "std and var only support floating point and complex dtypes");
    reduce_dims dims;
    PORTA_TRY(reduce_dims_of(root ? "std" : "var", self, &a[1], true, &dims));
    double correction = a[2].kind == PORTA_VALUE_NONE ? 1.0 : aten_number(&a[2]);
    double divisor = fmax((double)dims.numel - correction, 0.0);
    porta_tensor *x = NULL, *total = NULL, *mean = NULL, *centered = NULL, *squares = NULL,
                 *spread = NULL, *var = NULL, *result = NULL, *mean_result = NULL;
    porta_status *status;
    PORTA_TRY_GOTO(status, aten_cast(self, aten_compute_dtype(self->dtype), &x), done);
    PORTA_TRY_GOTO(status, reduce_over(PORTA_REDUCE_SUM, x, &dims, true, &total), done);
    PORTA_TRY_GOTO(status, aten_binary_constant(PORTA_DIV, total, (double)dims.numel, &mean),
                   done);
    PORTA_TRY_GOTO(status, porta_binary(PORTA_SUB, x, mean, &centered), done);
    PORTA_TRY_GOTO(status, porta_binary(PORTA_MUL, centered, centered, &squares), done);
    PORTA_TRY_GOTO(status, reduce_over(PORTA_REDUCE_SUM, squares, &dims, keepdim, &spread), done);
    PORTA_TRY_GOTO(status, aten_binary_constant(PORTA_DIV, spread, divisor, &var), done);
    if (root) {
        porta_tensor *deviation = NULL;
        PORTA_TRY_GOTO(status, porta_unary(PORTA_SQRT, var, &deviation), done);
        porta_tensor_release(var);
        var = deviation;
    }
    PORTA_TRY_GOTO(status, aten_cast(var, self->dtype, &result), done);
    if (mean_out) {
        porta_tensor *shaped = NULL;
        PORTA_TRY_GOTO(status, porta_reshape(mean, var->rank, var->sizes, &shaped), done);
        status = aten_cast(shaped, self->dtype, &mean_result);
        porta_tensor_release(shaped);
        if (status) goto done;
        *mean_out = mean_result;
    }
    *var_out = result;
    result = NULL;
done:
    porta_tensor_release(x);
    porta_tensor_release(total);
    porta_tensor_release(mean);
    porta_tensor_release(centered);
    porta_tensor_release(squares);
    porta_tensor_release(spread);
    porta_tensor_release(var);
    porta_tensor_release(result);
    return status;
}

static porta_status *single(const porta_value *a, bool root, aten_results *results) {
    porta_tensor *out = NULL;
    PORTA_TRY(moments(a, root, &out, NULL));
    return aten_push_tensor(results, out);
}

static porta_status *pair(const porta_value *a, bool root, aten_results *results) {
    porta_tensor *out = NULL, *mean = NULL;
    PORTA_TRY(moments(a, root, &out, &mean));
    porta_status *status = aten_push_tensor(results, out);
    if (status) {
        porta_tensor_release(mean);
        return status;
    }
    return aten_push_tensor(results, mean);
}

static porta_status *var(const porta_value *a, aten_results *r) { return single(a, false, r); }
static porta_status *std(const porta_value *a, aten_results *r) { return single(a, true, r); }
static porta_status *var_mean(const porta_value *a, aten_results *r) { return pair(a, false, r); }
static porta_status *std_mean(const porta_value *a, aten_results *r) { return pair(a, true, r); }

const aten_op aten_reduce_moments_ops[] = {
    {"var.correction", "TJSb", var},
    {"std.correction", "TJSb", std},
    {"var_mean.correction", "TJSb", var_mean},
    {"std_mean.correction", "TJSb", std_mean},
    {NULL, NULL, NULL},
};
