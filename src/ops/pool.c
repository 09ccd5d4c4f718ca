/* Eager max pooling: porta_max_pool_indices, each window's argmax as a flat
 * input index (the primitive runs through ops_run_one_input). */
#include <string.h>

#include "core/status.h"
#include "ops/run.h"
#include "runtime/tensor.h"

porta_status *porta_max_pool_indices(const porta_tensor *x, const int64_t *kernel,
                                     const int64_t *stride, const int64_t *padding,
                                     const int64_t *dilation, porta_pool_rounding rounding,
                                     porta_tensor **out) {
    PORTA_TRY(core_check_tensor(x, "x"));
    if (!kernel || !stride || !padding || !dilation || !out)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "max_pool_indices: kernel, stride, padding, dilation and out must "
                           "not be NULL");
    int dims = x->rank - 2;
    if (dims < 1 || dims > 3)
        return porta_error(PORTA_ERR_SHAPE,
                           "max_pool_indices: expected x [N, C, in...] with 1 to 3 spatial "
                           "axes (rank 3 to 5), got rank %d",
                           x->rank);
    ir_prim prim;
    memset(&prim, 0, sizeof prim); /* prims are hashed and compared bytewise */
    prim.kind = PRIM_POOL_MAX;
    prim.op = (int)rounding;
    prim.rank = dims;
    for (int i = 0; i < dims; i++) {
        prim.sizes[i] = kernel[i];
        prim.conv.stride[i] = stride[i];
        prim.conv.padding[i] = padding[i];
        prim.conv.dilation[i] = dilation[i];
    }
    *out = NULL;
    return ops_prim_run(&prim, &x, 1, out);
}
