/* Shape arithmetic on the tensor layout; no device involved. */
#include "core/tensor_layout.h"

#include "core/status.h"

int64_t core_shape_numel(int rank, const int64_t *sizes) {
    int64_t numel = 1;
    for (int i = 0; i < rank; i++)
        if (sizes[i] < 0 || __builtin_mul_overflow(numel, sizes[i], &numel)) return -1;
    return numel;
}

void core_contiguous_strides(int rank, const int64_t *sizes, int64_t *strides) {
    int64_t stride = 1;
    for (int i = rank - 1; i >= 0; i--) {
        strides[i] = stride;
        stride *= sizes[i] > 1 ? sizes[i] : 1;
    }
}

porta_status *core_check_tensor(const porta_tensor *t, const char *arg_name) {
    if (!t)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "expected a tensor for '%s', got NULL",
                           arg_name);
    return NULL;
}

porta_status *core_normalize_axis(const char *op, int axis, int rank, int *out) {
    int extent = rank > 0 ? rank : 1; /* a scalar accepts axis 0 and -1, as in PyTorch */
    if (axis < -extent || axis >= extent)
        return porta_error(PORTA_ERR_OUT_OF_RANGE,
                           "%s: axis %d is out of range for a rank-%d tensor (expected %d..%d)",
                           op, axis, rank, -extent, extent - 1);
    *out = axis < 0 ? axis + extent : axis;
    return NULL;
}
