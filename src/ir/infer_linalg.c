/* Inference for PRIM_MATMUL, PRIM_CONV, PRIM_CONV_WEIGHT_GRAD and
 * PRIM_CONV_INPUT_GRAD: shape rules of torch.matmul (on operands of rank
 * >= 2), torch.nn.functional.convNd and the gradients of its weight and
 * input. */
#include <string.h>

#include "core/dtype.h"
#include "core/status.h"
#include "ir/infer.h"

static porta_status *infer_matmul(const ir_meta *inputs, int input_count, ir_meta *out) {
    if (input_count != 2)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "matmul: expected 2 inputs, got %d",
                           input_count);
    const ir_meta *a = &inputs[0], *b = &inputs[1];
    char ba[CORE_SHAPE_STR_CAP], bb[CORE_SHAPE_STR_CAP];
    if (a->rank < 2 || b->rank < 2)
        return porta_error(PORTA_ERR_SHAPE,
                           "matmul: expected operands of rank >= 2, got shapes %s and %s",
                           core_format_shape(ba, sizeof ba, a->rank, a->sizes),
                           core_format_shape(bb, sizeof bb, b->rank, b->sizes));
    int64_t k_a = a->sizes[a->rank - 1], k_b = b->sizes[b->rank - 2];
    if (k_a != k_b)
        return porta_error(PORTA_ERR_SHAPE, "matmul: shapes %s and %s cannot be multiplied "
                           "(%lld != %lld)",
                           core_format_shape(ba, sizeof ba, a->rank, a->sizes),
                           core_format_shape(bb, sizeof bb, b->rank, b->sizes),
                           (long long)k_a, (long long)k_b);
    if (a->dtype == PORTA_BOOL || b->dtype == PORTA_BOOL)
        return porta_error(PORTA_ERR_DTYPE,
                           "matmul: expected numeric operands, got %s and %s",
                           porta_dtype_name(a->dtype), porta_dtype_name(b->dtype));
    memset(out, 0, sizeof *out);
    int batch_rank;
    PORTA_TRY(ir_broadcast_shapes("matmul (batch dimensions)", a->rank - 2, a->sizes,
                                     b->rank - 2, b->sizes, &batch_rank, out->sizes));
    out->rank = batch_rank + 2;
    out->sizes[batch_rank] = a->sizes[a->rank - 2];
    out->sizes[batch_rank + 1] = b->sizes[b->rank - 1];
    out->dtype = porta_dtype_promote(a->dtype, b->dtype);
    return NULL;
}

/* Checks one per-axis conv parameter over the spatial axes and zeroes the
 * entries past them, so equal convolutions hash equal. */
static porta_status *check_conv_param(int64_t *values, int spatial, int64_t min,
                                      const char *name) {
    for (int i = 0; i < spatial; i++)
        if (values[i] < min)
            return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                               "conv: %s[%d] must be >= %lld, got %lld", name, i,
                               (long long)min, (long long)values[i]);
    for (int i = spatial; i < PORTA_MAX_RANK; i++) values[i] = 0;
    return NULL;
}

static porta_status *check_conv_shapes(const ir_meta *x, const ir_meta *w,
                                       const ir_meta *bias, int64_t groups) {
    char bx[CORE_SHAPE_STR_CAP], bw[CORE_SHAPE_STR_CAP];
    core_format_shape(bx, sizeof bx, x->rank, x->sizes);
    core_format_shape(bw, sizeof bw, w->rank, w->sizes);
    if (x->rank < 3)
        return porta_error(PORTA_ERR_SHAPE,
                           "conv: expected input [batch, channels, *spatial] of rank >= 3, got "
                           "shape %s",
                           bx);
    if (w->rank != x->rank)
        return porta_error(PORTA_ERR_SHAPE,
                           "conv: expected a weight of rank %d for input %s, got shape %s",
                           x->rank, bx, bw);
    int64_t in_channels = x->sizes[1], out_channels = w->sizes[0];
    if (in_channels % groups != 0 || out_channels % groups != 0)
        return porta_error(PORTA_ERR_SHAPE,
                           "conv: groups %lld must divide both the input channels (%lld) and "
                           "the output channels (%lld)",
                           (long long)groups, (long long)in_channels, (long long)out_channels);
    if (w->sizes[1] * groups != in_channels)
        return porta_error(PORTA_ERR_SHAPE,
                           "conv: weight %s expects %lld input channels (%lld per group x %lld "
                           "groups), but input %s has %lld",
                           bw, (long long)(w->sizes[1] * groups), (long long)w->sizes[1],
                           (long long)groups, bx, (long long)in_channels);
    for (int i = 2; i < w->rank; i++)
        if (w->sizes[i] < 1)
            return porta_error(PORTA_ERR_SHAPE, "conv: weight %s has an empty kernel axis %d",
                               bw, i);
    if (bias && (bias->rank != 1 || bias->sizes[0] != out_channels)) {
        char bb[CORE_SHAPE_STR_CAP];
        return porta_error(PORTA_ERR_SHAPE,
                           "conv: expected a bias of shape [%lld] (one per output channel), "
                           "got %s",
                           (long long)out_channels,
                           core_format_shape(bb, sizeof bb, bias->rank, bias->sizes));
    }
    return NULL;
}

static porta_status *infer_conv(porta_conv_params *params, const ir_meta *inputs,
                                int input_count, ir_meta *out) {
    if (input_count != 2 && input_count != 3)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "conv: expected 2 inputs (x, weight) or 3 (x, weight, bias), got %d",
                           input_count);
    const ir_meta *x = &inputs[0], *w = &inputs[1];
    const ir_meta *bias = input_count == 3 ? &inputs[2] : NULL;
    if (params->groups < 1)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "conv: groups must be >= 1, got %lld",
                           (long long)params->groups);
    PORTA_TRY(check_conv_shapes(x, w, bias, params->groups));
    int spatial = x->rank - 2;
    PORTA_TRY(check_conv_param(params->stride, spatial, 1, "stride"));
    PORTA_TRY(check_conv_param(params->dilation, spatial, 1, "dilation"));
    PORTA_TRY(check_conv_param(params->padding, spatial, 0, "padding"));

    porta_dtype dtype = porta_dtype_promote(x->dtype, w->dtype);
    if (bias) dtype = porta_dtype_promote(dtype, bias->dtype);
    if (!porta_dtype_is_float(dtype))
        return porta_error(PORTA_ERR_DTYPE,
                           "conv: expected floating-point tensors, got input %s and weight %s%s%s",
                           porta_dtype_name(x->dtype), porta_dtype_name(w->dtype),
                           bias ? " and bias " : "", bias ? porta_dtype_name(bias->dtype) : "");

    memset(out, 0, sizeof *out);
    out->dtype = dtype;
    out->rank = x->rank;
    out->sizes[0] = x->sizes[0];
    out->sizes[1] = w->sizes[0];
    for (int i = 0; i < spatial; i++) {
        int64_t size = x->sizes[2 + i], kernel = w->sizes[2 + i];
        int64_t span, padded; /* span: the input extent one kernel application covers */
        if (__builtin_mul_overflow(params->dilation[i], kernel - 1, &span) ||
            __builtin_add_overflow(span, 1, &span) ||
            __builtin_mul_overflow(params->padding[i], 2, &padded) ||
            __builtin_add_overflow(padded, size, &padded))
            return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                               "conv: padding %lld or dilation %lld along spatial axis %d is "
                               "too large",
                               (long long)params->padding[i], (long long)params->dilation[i], i);
        if (padded < span) {
            char bx[CORE_SHAPE_STR_CAP], bw[CORE_SHAPE_STR_CAP];
            return porta_error(PORTA_ERR_SHAPE,
                               "conv: computed output size along spatial axis %d is too small "
                               "(input %s padded to %lld, but kernel %s with dilation %lld "
                               "spans %lld)",
                               i, core_format_shape(bx, sizeof bx, x->rank, x->sizes),
                               (long long)padded,
                               core_format_shape(bw, sizeof bw, w->rank, w->sizes),
                               (long long)params->dilation[i], (long long)span);
        }
        out->sizes[2 + i] = (padded - span) / params->stride[i] + 1;
    }
    return NULL;
}

/* The weight gradient of conv(x, w) for gy, the gradient of its output:
 * w's shape [Cout, Cin/groups, *kernel], once conv(x, w) is found to have
 * gy's shape. */
static porta_status *infer_conv_weight_grad(ir_prim *prim, const ir_meta *inputs,
                                            int input_count, ir_meta *out) {
    if (input_count != 2)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "conv_weight_grad: expected 2 inputs (x, grad_output), got %d",
                           input_count);
    const ir_meta *x = &inputs[0], *gy = &inputs[1];
    char bx[CORE_SHAPE_STR_CAP], bg[CORE_SHAPE_STR_CAP];
    core_format_shape(bx, sizeof bx, x->rank, x->sizes);
    core_format_shape(bg, sizeof bg, gy->rank, gy->sizes);
    if (x->rank < 3 || gy->rank != x->rank || prim->rank != x->rank - 2 ||
        gy->sizes[0] != x->sizes[0])
        return porta_error(PORTA_ERR_SHAPE,
                           "conv_weight_grad: expected x [N, Cin, *spatial], grad_output "
                           "[N, Cout, *out] of the same rank and one kernel size per spatial "
                           "axis, got x %s, grad_output %s and %d kernel sizes",
                           bx, bg, prim->rank);
    int64_t groups = prim->conv.groups;
    if (groups < 1 || gy->sizes[1] % groups != 0)
        return porta_error(PORTA_ERR_SHAPE,
                           "conv_weight_grad: expected groups >= 1 dividing grad_output's %lld "
                           "channels, got %lld",
                           (long long)gy->sizes[1], (long long)groups);
    ir_meta w = {.dtype = x->dtype, .rank = x->rank};
    w.sizes[0] = gy->sizes[1];
    w.sizes[1] = x->sizes[1] / groups;
    for (int i = 0; i < prim->rank; i++) w.sizes[2 + i] = prim->sizes[i];
    for (int i = prim->rank; i < PORTA_MAX_RANK; i++) prim->sizes[i] = 0;
    ir_meta conv_inputs[2] = {*x, w}, y;
    PORTA_TRY(infer_conv(&prim->conv, conv_inputs, 2, &y));
    for (int i = 2; i < y.rank; i++)
        if (y.sizes[i] != gy->sizes[i]) {
            char by[CORE_SHAPE_STR_CAP];
            return porta_error(PORTA_ERR_SHAPE,
                               "conv_weight_grad: grad_output %s does not match the "
                               "convolution's output %s for x %s",
                               bg, core_format_shape(by, sizeof by, y.rank, y.sizes), bx);
        }
    porta_dtype dtype = porta_dtype_promote(x->dtype, gy->dtype);
    if (!porta_dtype_is_float(dtype))
        return porta_error(PORTA_ERR_DTYPE,
                           "conv_weight_grad: expected floating-point tensors, got x %s and "
                           "grad_output %s",
                           porta_dtype_name(x->dtype), porta_dtype_name(gy->dtype));
    *out = w;
    out->dtype = dtype;
    return NULL;
}

/* The input gradient of conv(x, w) for gy, the gradient of its output:
 * x's shape [N, Cin, *in] (in: the prim's sizes), once conv(x, w) is found
 * to have gy's shape. */
static porta_status *infer_conv_input_grad(ir_prim *prim, const ir_meta *inputs,
                                           int input_count, ir_meta *out) {
    if (input_count != 2)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "conv_input_grad: expected 2 inputs (grad_output, weight), got %d",
                           input_count);
    const ir_meta *gy = &inputs[0], *w = &inputs[1];
    char bg[CORE_SHAPE_STR_CAP], bw[CORE_SHAPE_STR_CAP];
    core_format_shape(bg, sizeof bg, gy->rank, gy->sizes);
    core_format_shape(bw, sizeof bw, w->rank, w->sizes);
    if (gy->rank < 3 || w->rank != gy->rank || prim->rank != gy->rank - 2)
        return porta_error(PORTA_ERR_SHAPE,
                           "conv_input_grad: expected grad_output [N, Cout, *out], a weight of "
                           "the same rank and one input size per spatial axis, got "
                           "grad_output %s, weight %s and %d input sizes",
                           bg, bw, prim->rank);
    if (prim->conv.groups < 1)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "conv_input_grad: groups must be >= 1, got %lld",
                           (long long)prim->conv.groups);
    ir_meta x = {.dtype = gy->dtype, .rank = gy->rank};
    x.sizes[0] = gy->sizes[0];
    x.sizes[1] = w->sizes[1] * prim->conv.groups;
    for (int i = 0; i < prim->rank; i++) x.sizes[2 + i] = prim->sizes[i];
    for (int i = prim->rank; i < PORTA_MAX_RANK; i++) prim->sizes[i] = 0;
    ir_meta conv_inputs[2] = {x, *w}, y;
    PORTA_TRY(infer_conv(&prim->conv, conv_inputs, 2, &y));
    for (int i = 1; i < y.rank; i++)
        if (y.sizes[i] != gy->sizes[i]) {
            char bx[CORE_SHAPE_STR_CAP], by[CORE_SHAPE_STR_CAP];
            return porta_error(PORTA_ERR_SHAPE,
                               "conv_input_grad: grad_output %s does not match the "
                               "convolution's output %s for an input %s and weight %s",
                               bg, core_format_shape(by, sizeof by, y.rank, y.sizes),
                               core_format_shape(bx, sizeof bx, x.rank, x.sizes), bw);
        }
    porta_dtype dtype = porta_dtype_promote(gy->dtype, w->dtype);
    if (!porta_dtype_is_float(dtype))
        return porta_error(PORTA_ERR_DTYPE,
                           "conv_input_grad: expected floating-point tensors, got grad_output "
                           "%s and weight %s",
                           porta_dtype_name(gy->dtype), porta_dtype_name(w->dtype));
    *out = x;
    out->dtype = dtype;
    return NULL;
}

porta_status *ir_infer_linalg(ir_prim *prim, const ir_meta *inputs, int input_count,
                                 ir_meta *out) {
    if (prim->kind == PRIM_CONV_INPUT_GRAD)
        return infer_conv_input_grad(prim, inputs, input_count, out);
    if (prim->kind == PRIM_MATMUL) return infer_matmul(inputs, input_count, out);
    if (prim->kind == PRIM_CONV_WEIGHT_GRAD)
        return infer_conv_weight_grad(prim, inputs, input_count, out);
    return infer_conv(&prim->conv, inputs, input_count, out);
}
