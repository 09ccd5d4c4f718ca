/* Vector norms: linalg_vector_norm and the norm overloads that share its
 * meaning. ord 0 counts non-zeros, 1 sums magnitudes, 2 is Euclidean,
 * +-inf take the largest/smallest magnitude, any other p is
 * sum(|x|^p)^(1/p). */
#include <math.h>

#include "aten/dispatch/scope.h"
#include "aten/reduce/common.h"

#include "core/status.h"
#include "runtime/tensor.h"

/* The norm of magnitudes |x| (x already in the compute dtype). */
static porta_tensor *norm_of(aten_scope *s, const porta_tensor *x, double ord,
                             const reduce_dims *dims, bool keepdim) {
    if (!x) return NULL;
    if (ord == 0.0) { /* |x|^0 with 0^0 = 0: the count of non-zeros */
        porta_tensor *nonzero = scope_binary_number(s, PORTA_NE, x, 0.0);
        return scope_reduce(s, PORTA_REDUCE_SUM, scope_as_dtype(s, nonzero, x->dtype), dims->axes,
                            dims->count, keepdim);
    }
    porta_tensor *magnitude = scope_unary(s, PORTA_ABS, x);
    if (isinf(ord))
        return scope_reduce(s, ord > 0 ? PORTA_REDUCE_MAX : PORTA_REDUCE_MIN, magnitude,
                            dims->axes, dims->count, keepdim);
    if (ord == 1.0)
        return scope_reduce(s, PORTA_REDUCE_SUM, magnitude, dims->axes, dims->count, keepdim);
    porta_tensor *powered = ord == 2.0 ? scope_binary(s, PORTA_MUL, magnitude, magnitude)
                                       : scope_binary_number(s, PORTA_POW, magnitude, ord);
    porta_tensor *total =
        scope_reduce(s, PORTA_REDUCE_SUM, powered, dims->axes, dims->count, keepdim);
    return ord == 2.0 ? scope_unary(s, PORTA_SQRT, total)
                      : scope_binary_number(s, PORTA_POW, total, 1.0 / ord);
}

/* The checks and casts of linalg_vector_norm around norm_of. */
static porta_status *vector_norm(const porta_tensor *self, double ord, const porta_value *dim,
                                 bool keepdim, const porta_value *dtype,
                                 aten_results *results) {
    if (!porta_dtype_is_float(self->dtype))
        return porta_error(PORTA_ERR_DTYPE,
                           "linalg.vector_norm: Expected a floating point or complex tensor as "
                           "input. Got %s",
                           aten_dtype_label(self->dtype));
    porta_dtype result_dtype = self->dtype;
    if (dtype->kind == PORTA_VALUE_DTYPE) {
        if (porta_dtype_promote(self->dtype, dtype->dtype) != dtype->dtype)
            return porta_error(PORTA_ERR_DTYPE,
                               "linalg.vector_norm: the dtype of the input (%s) should be "
                               "convertible without narrowing to the specified dtype (%s)",
                               aten_dtype_label(self->dtype), aten_dtype_label(dtype->dtype));
        result_dtype = dtype->dtype;
    }
    reduce_dims dims;
    PORTA_TRY(reduce_dims_of("linalg.vector_norm", self, dim, true, &dims));
    if (ord < 0.0 || isinf(ord))
        for (int i = 0; i < dims.count; i++)
            if (self->sizes[dims.axes[i]] == 0)
                return porta_error(PORTA_ERR_SHAPE,
                                   "linalg.vector_norm cannot compute the %g norm on an empty "
                                   "tensor because the operation does not have an identity",
                                   ord);
    aten_scope s;
    scope_begin(&s);
    porta_tensor *x = scope_as_dtype(&s, self, aten_compute_dtype(result_dtype));
    porta_tensor *norm = norm_of(&s, x, ord, &dims, keepdim);
    scope_push(&s, results, scope_as_dtype(&s, norm, result_dtype));
    return scope_end(&s);
}

static const porta_value every_dim = {.kind = PORTA_VALUE_NONE};

static porta_status *linalg_vector_norm(const porta_value *a, aten_results *r) {
    return vector_norm(a[0].tensor, aten_number(&a[1]), &a[2], a[3].b, &a[4], r);
}

static porta_status *norm_dim(const porta_value *a, aten_results *r) {
    double p = a[1].kind == PORTA_VALUE_NONE ? 2.0 : aten_number(&a[1]);
    return vector_norm(a[0].tensor, p, &a[2], a[3].b, &every_dim, r);
}

static porta_status *norm_all(const porta_value *a, aten_results *r) {
    return vector_norm(a[0].tensor, aten_number(&a[1]), &every_dim, false, &every_dim, r);
}

const aten_op aten_reduce_norm_ops[] = {
    {"linalg_vector_norm", "TsJbd", linalg_vector_norm},
    {"norm.ScalarOpt_dim", "TSIb", norm_dim},
    {"norm.Scalar", "Ts", norm_all},
    {NULL, NULL, NULL},
};
