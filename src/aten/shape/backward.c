/* Gradients of shape ops that PyTorch has no composite for. */
#include <string.h>

#include "aten/shape/shape.h"
#include "core/status.h"
#include "runtime/tensor.h"

/* unfold_backward(grad, input_sizes, dim, size, step): element j of every
 * window goes back to input position k * step + j. For a fixed j those
 * positions are distinct, so the gradient is `size` strided adds. */
static porta_status *unfold_backward(const porta_value *args, aten_results *results) {
    const porta_tensor *grad = args[0].tensor;
    int64_t size = args[3].i, step = args[4].i;
    int rank = args[1].ints.count, dim = 0;
    if (rank > PORTA_MAX_RANK || grad->rank != (rank ? rank + 1 : 1) || step <= 0)
        return porta_error(PORTA_ERR_SHAPE,
                           "unfold_backward: a gradient of rank %d does not fit input rank %d",
                           grad->rank, rank);
    PORTA_TRY(aten_wrap_dim(args[2].i, rank, &dim));
    porta_tensor *out = NULL;
    PORTA_TRY(porta_tensor_full(grad->buffer->device, grad->dtype, rank, args[1].ints.items, 0,
                                &out));
    /* A rank-0 input is unfolded as if it had one dim of size 1. */
    int64_t sizes[PORTA_MAX_RANK] = {1}, strides[PORTA_MAX_RANK] = {1};
    if (rank) {
        memcpy(sizes, out->sizes, sizeof sizes);
        memcpy(strides, out->strides, sizeof strides);
    }
    int64_t windows = rank ? grad->sizes[dim] : 1;
    int target_rank = rank ? rank : 1;
    const int64_t *part_sizes = rank ? grad->sizes : sizes, *part_strides = rank ? grad->strides : strides;
    porta_status *status = NULL;
    for (int64_t j = 0; j < size && windows > 0 && !status; j++) {
        int64_t target_sizes[PORTA_MAX_RANK], target_strides[PORTA_MAX_RANK];
        memcpy(target_sizes, sizes, sizeof sizes);
        memcpy(target_strides, strides, sizeof strides);
        target_sizes[dim] = windows;
        target_strides[dim] = strides[dim] * step;
        porta_tensor *target = NULL, *part = NULL;
        status = rt_tensor_restride(out, target_rank, target_sizes, target_strides,
                                       out->offset + j * strides[dim], &target);
        if (!status)
            status = rt_tensor_restride(grad, target_rank, part_sizes, part_strides,
                                           grad->offset + j * grad->strides[grad->rank - 1], &part);
        if (!status) status = porta_binary(PORTA_ADD, target, part, &target);
        porta_tensor_release(target);
        porta_tensor_release(part);
    }
    if (status) {
        porta_tensor_release(out);
        return status;
    }
    return aten_push_tensor(results, out);
}

const aten_op aten_shape_backward_ops[] = {
    {"unfold_backward", "TIiii", unfold_backward},
    {NULL, NULL, NULL},
};
