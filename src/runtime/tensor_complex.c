/* Complex tensors as views of their components: a complex tensor's memory
 * is interleaved (real, imag) pairs, so the pair view is a tensor of the
 * component dtype with one more axis and every layout number doubled. */
#include <string.h>

#include "core/status.h"
#include "runtime/tensor.h"

porta_status *porta_view_as_real(const porta_tensor *tensor, porta_tensor **out) {
    PORTA_TRY(core_check_tensor(tensor, "view_as_real: tensor"));
    if (!out) return porta_error(PORTA_ERR_INVALID_ARGUMENT, "view_as_real: out is NULL");
    if (!porta_dtype_is_complex(tensor->dtype))
        return porta_error(PORTA_ERR_DTYPE,
                           "view_as_real is only supported for complex tensors, got %s",
                           porta_dtype_name(tensor->dtype));
    if (tensor->rank >= PORTA_MAX_RANK)
        return porta_error(PORTA_ERR_SHAPE,
                           "view_as_real: the pair view of a rank-%d tensor needs rank %d, "
                           "more than the %d porta supports",
                           tensor->rank, tensor->rank + 1, PORTA_MAX_RANK);
    int64_t sizes[PORTA_MAX_RANK], strides[PORTA_MAX_RANK];
    for (int d = 0; d < tensor->rank; d++) {
        sizes[d] = tensor->sizes[d];
        strides[d] = tensor->strides[d] * 2;
    }
    sizes[tensor->rank] = 2;
    strides[tensor->rank] = 1;
    return rt_tensor_wrap(tensor->buffer, porta_dtype_real(tensor->dtype), tensor->rank + 1,
                          sizes, strides, tensor->offset * 2, out);
}

porta_status *porta_view_as_complex(const porta_tensor *tensor, porta_tensor **out) {
    PORTA_TRY(core_check_tensor(tensor, "view_as_complex: tensor"));
    if (!out) return porta_error(PORTA_ERR_INVALID_ARGUMENT, "view_as_complex: out is NULL");
    if (tensor->dtype != PORTA_F32 && tensor->dtype != PORTA_F64)
        return porta_error(PORTA_ERR_DTYPE,
                           "view_as_complex is only supported for float and double tensors, "
                           "but got a tensor of scalar type: %s",
                           porta_dtype_name(tensor->dtype));
    int last = tensor->rank - 1;
    if (last < 0)
        return porta_error(PORTA_ERR_SHAPE,
                           "view_as_complex: Input tensor must have one or more dimensions");
    if (tensor->sizes[last] != 2)
        return porta_error(PORTA_ERR_SHAPE,
                           "view_as_complex: Tensor must have a last dimension of size 2, "
                           "got %lld",
                           (long long)tensor->sizes[last]);
    if (tensor->strides[last] != 1)
        return porta_error(PORTA_ERR_SHAPE,
                           "view_as_complex: Tensor must have a last dimension with stride 1, "
                           "got %lld",
                           (long long)tensor->strides[last]);
    int64_t strides[PORTA_MAX_RANK];
    for (int d = 0; d < last; d++) {
        if (tensor->strides[d] % 2)
            return porta_error(PORTA_ERR_SHAPE,
                               "view_as_complex: Tensor must have a stride divisible by 2 for "
                               "all but last dimension, got stride %lld at dimension %d",
                               (long long)tensor->strides[d], d);
        strides[d] = tensor->strides[d] / 2;
    }
    if (tensor->offset % 2)
        return porta_error(PORTA_ERR_SHAPE,
                           "view_as_complex: Tensor must have a storage_offset divisible by 2, "
                           "got %lld",
                           (long long)tensor->offset);
    return rt_tensor_wrap(tensor->buffer, porta_dtype_complex(tensor->dtype), last,
                          tensor->sizes, strides, tensor->offset / 2, out);
}
