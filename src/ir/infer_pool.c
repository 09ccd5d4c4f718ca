/* Inference for the max pooling primitive: x [N, C, in...] with 1 to 3
 * spatial axes, any dtype but bool, and PyTorch's checks of the window
 * geometry; the result is int64 [N, C, out...]. */
#include "core/status.h"
#include "ir/infer.h"

#define POOL_MAX_SPATIAL 3

int64_t ir_pooled_size(int64_t in, int64_t kernel, int64_t padding, int64_t stride,
                       int64_t dilation, bool ceil_mode) {
    int64_t span = in + 2 * padding - dilation * (kernel - 1) - 1 + (ceil_mode ? stride - 1 : 0);
    int64_t out = (span >= 0 ? span / stride : -((-span + stride - 1) / stride)) + 1;
    /* the last window must start inside the input or its left padding */
    if (ceil_mode && (out - 1) * stride >= in + padding) out--;
    return out;
}

porta_status *ir_infer_pool(ir_prim *prim, const ir_meta *inputs, int input_count,
                            ir_meta *out) {
    const char *op = ir_prim_name(prim);
    if (input_count != 1)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "%s: expected 1 input, got %d", op,
                           input_count);
    int dims = prim->rank;
    const ir_meta *x = &inputs[0];
    if (dims < 1 || dims > POOL_MAX_SPATIAL)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "%s: expected 1 to %d spatial axes, got %d", op, POOL_MAX_SPATIAL,
                           dims);
    if (x->rank != dims + 2)
        return porta_error(PORTA_ERR_SHAPE,
                           "%s: expected an input [N, C, %d spatial sizes] of rank %d, got "
                           "rank %d",
                           op, dims, dims + 2, x->rank);
    if (x->dtype == PORTA_BOOL)
        return porta_error(PORTA_ERR_DTYPE, "%s: expected a number dtype, got bool", op);
    if (prim->op != PORTA_POOL_FLOOR && prim->op != PORTA_POOL_CEIL)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "%s: expected rounding 0 (floor) or 1 (ceil), got %d", op, prim->op);
    *out = *x;
    out->dtype = PORTA_I64;
    for (int i = 0; i < dims; i++)
        if (x->sizes[2 + i] < 1)
            return porta_error(PORTA_ERR_SHAPE,
                               "%s: expected spatial sizes >= 1, got %lld on spatial axis %d",
                               op, (long long)x->sizes[2 + i], i);
    for (int i = 0; i < dims; i++) {
        int64_t kernel = prim->sizes[i], stride = prim->conv.stride[i],
                padding = prim->conv.padding[i], dilation = prim->conv.dilation[i];
        if (kernel < 1 || stride < 1 || dilation < 1 || padding < 0 || padding > kernel / 2)
            return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                               "%s: expected kernel, stride and dilation >= 1 and padding in "
                               "[0, kernel / 2] on axis %d, got kernel %lld, stride %lld, "
                               "padding %lld, dilation %lld",
                               op, i, (long long)kernel, (long long)stride, (long long)padding,
                               (long long)dilation);
        out->sizes[2 + i] = ir_pooled_size(x->sizes[2 + i], kernel, padding, stride, dilation,
                                           prim->op == PORTA_POOL_CEIL);
        if (out->sizes[2 + i] < 1)
            return porta_error(PORTA_ERR_SHAPE,
                               "%s: input size %lld on spatial axis %d is too small for the "
                               "window (output size %lld)",
                               op, (long long)x->sizes[2 + i], i, (long long)out->sizes[2 + i]);
    }
    return NULL;
}
