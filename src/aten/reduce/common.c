/* Dims, casts and constants for the reduction family. */
#include "aten/reduce/common.h"

#include "core/status.h"
#include "runtime/tensor.h"

porta_status *reduce_dims_of(const char *op, const porta_tensor *x, const porta_value *dim,
                             bool empty_is_all, reduce_dims *out) {
    bool listed[PORTA_MAX_RANK] = {false};
    int rank = x->rank, count = 0;
    bool all = dim->kind == PORTA_VALUE_NONE ||
               (dim->kind == PORTA_VALUE_INTS && dim->ints.count == 0 && empty_is_all);
    if (!all) {
        int n = dim->kind == PORTA_VALUE_INTS ? dim->ints.count : 1;
        for (int i = 0; i < n; i++) {
            int64_t d = dim->kind == PORTA_VALUE_INTS ? dim->ints.items[i] : dim->i;
            int extent = rank > 0 ? rank : 1;
            if (d < -extent || d >= extent)
                return porta_error(PORTA_ERR_OUT_OF_RANGE,
                                   "Dimension out of range (expected to be in range of [%d, %d], "
                                   "but got %lld)",
                                   -extent, extent - 1, (long long)d);
            int axis = (int)(d < 0 ? d + extent : d);
            if (rank > 0 && listed[axis])
                return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                                   "%s: dim %d appears multiple times in the list of dims", op,
                                   axis);
            if (rank > 0) listed[axis] = true;
        }
    }
    out->numel = 1;
    for (int axis = 0; axis < rank; axis++) {
        if (!all && !listed[axis]) continue;
        out->axes[count++] = axis;
        out->numel *= x->sizes[axis];
    }
    out->count = count;
    return NULL;
}

porta_status *reduce_dims_need_elements(const char *op, const porta_tensor *x,
                                        const reduce_dims *dims) {
    for (int i = 0; i < dims->count; i++)
        if (x->sizes[dims->axes[i]] == 0) {
            char shape[CORE_SHAPE_STR_CAP];
            return porta_error(PORTA_ERR_OUT_OF_RANGE,
                               "%s(): Expected reduction dim %d to have non-zero size (input "
                               "shape %s).",
                               op, dims->axes[i],
                               core_format_shape(shape, sizeof shape, x->rank, x->sizes));
        }
    return NULL;
}

porta_status *reduce_over(porta_reduce_op op, const porta_tensor *x, const reduce_dims *dims,
                          bool keepdim, porta_tensor **out) {
    return porta_reduce(op, x, dims->axes, dims->count, keepdim, out);
}

const char *aten_dtype_label(porta_dtype dtype) {
    static const char *const labels[PORTA_DTYPE_COUNT] = {
        "Bool", "Byte", "Char", "Short", "Int", "Long", "Half", "BFloat16", "Float", "Double",
        "ComplexFloat", "ComplexDouble"};
    return (unsigned)dtype < PORTA_DTYPE_COUNT ? labels[dtype] : "invalid dtype";
}

porta_status *aten_check_float(const char *kernel, const porta_tensor *x) {
    if (porta_dtype_is_float(x->dtype)) return NULL;
    return porta_error(PORTA_ERR_DTYPE, "\"%s\" not implemented for '%s'", kernel,
                       aten_dtype_label(x->dtype));
}

porta_status *aten_cast(const porta_tensor *x, porta_dtype dtype, porta_tensor **out) {
    if (x->dtype == dtype) {
        porta_tensor_retain((porta_tensor *)x);
        *out = (porta_tensor *)x;
        return NULL;
    }
    porta_tensor *cast = NULL;
    PORTA_TRY(porta_cast(x, dtype, &cast));
    *out = cast;
    return NULL;
}

porta_status *aten_binary_constant(porta_binary_op op, const porta_tensor *x, double value,
                                   porta_tensor **out) {
    porta_tensor *constant = NULL;
    PORTA_TRY(porta_tensor_full(x->buffer->device, x->dtype, 0, NULL, value, &constant));
    porta_status *status = porta_binary(op, x, constant, out);
    porta_tensor_release(constant);
    return status;
}

