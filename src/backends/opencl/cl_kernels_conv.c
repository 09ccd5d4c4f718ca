/* PRIM_CONV on OpenCL, for any number of spatial dims: a direct
 * convolution, one item per output element (batch, output channel,
 * position), which adds the products of its group's input channels and
 * kernel taps, skipping taps that land in the padding, onto the bias.
 * Float dtypes; float32 and the 16-bit floats accumulate in float with
 * fused multiply-adds (rounded once to the dtype), float64 in double.
 *
 * x [N, Cin, in...], w [Cout, Cin / groups, kernel...], bias [Cout] and
 * out [N, Cout, out...] may have any strides. */
#include <stdio.h>

#include "backends/opencl/cl_kernels_common.h"
#include "core/status.h"

/* Layout: spatial dims, input and output channels per group, taps per
 * channel (the product of the kernel sizes), output channels, whether a bias
 * is given and its stride; the batch and channel strides of x, w and out;
 * then per spatial dim: out's size and stride, x's size and stride, the
 * kernel's size and w's stride, and the conv's stride, padding and
 * dilation. */
enum { CV_SPATIAL, CV_IN_PER_GROUP, CV_OUT_PER_GROUP, CV_TAPS, CV_OUT_CHANNELS, CV_HAS_BIAS,
       CV_BIAS_STRIDE, CV_X_N, CV_X_C, CV_W_O, CV_W_I, CV_OUT_N, CV_OUT_C, CV_DIMS };
#define CV_PER_DIM 9

#define CV_KERNEL(SFX, T, ACC)                                                               \
    CLK_SOURCE(__kernel void conv_##SFX(__global T *out, long out_off, __global const T *x,  \
                                        long x_off, __global const T *w, long w_off,         \
                                        __global const T *bias, long bias_off,               \
                                        __global const long *L, long count) {                \
        long i = get_global_id(0);                                                           \
        if (i >= count) return;                                                              \
        int spatial = (int)L[0];                                                             \
        __global const long *dims = L + 13;                                                  \
        long rest = i, position[16];                                                         \
        for (int s = spatial - 1; s >= 0; s--) {                                             \
            position[s] = rest % dims[9 * s];                                                \
            rest /= dims[9 * s];                                                             \
            out_off += position[s] * dims[9 * s + 1];                                        \
        }                                                                                    \
        long channel = rest % L[4], batch = rest / L[4];                                     \
        out_off += batch * L[11] + channel * L[12];                                          \
        long in_per_group = L[1], group = channel / L[2];                                    \
        ACC acc = L[5] ? (ACC)clk_ld_##SFX(bias, bias_off + channel * L[6]) : (ACC)0;        \
        x_off += batch * L[7] + group * in_per_group * L[8];                                 \
        w_off += channel * L[9];                                                             \
        for (long c = 0; c < in_per_group; c++) {                                            \
            long x_channel = x_off + c * L[8], w_channel = w_off + c * L[10];                \
            for (long tap = 0; tap < L[3]; tap++) {                                          \
                long tap_rest = tap, x_at = x_channel, w_at = w_channel;                     \
                int inside = 1;                                                              \
                for (int s = spatial - 1; s >= 0; s--) {                                     \
                    __global const long *dim = dims + 9 * s;                                 \
                    long k = tap_rest % dim[4];                                              \
                    tap_rest /= dim[4];                                                      \
                    long at = position[s] * dim[6] - dim[7] + k * dim[8];                    \
                    inside = inside && at >= 0 && at < dim[2];                               \
                    x_at += at * dim[3];                                                     \
                    w_at += k * dim[5];                                                      \
                }                                                                            \
                if (inside) acc = fma((ACC)clk_ld_##SFX(x, x_at), (ACC)clk_ld_##SFX(w, w_at), acc); \
            }                                                                                \
        }                                                                                    \
        clk_st_##SFX(out, out_off, acc);                                                     \
    })

static const char conv_source[] = CLK_COMMON_SOURCE CLK_FOR_EACH_FLOAT(CV_KERNEL);

porta_status *cl_exec_conv(porta_device *device, const porta_prim *prim,
                           const porta_tensor *const *inputs, int input_count, porta_tensor *out) {
    if (input_count != 2 && input_count != 3)
        return porta_error(PORTA_ERR_INTERNAL, "opencl conv: expected 2 or 3 inputs, got %d",
                           input_count);
    const porta_tensor *x = inputs[0], *w = inputs[1];
    const porta_tensor *bias = input_count == 3 ? inputs[2] : NULL;
    if (!porta_dtype_is_float(out->dtype) || x->dtype != out->dtype || w->dtype != out->dtype ||
        (bias && bias->dtype != out->dtype))
        return porta_error(PORTA_ERR_DTYPE, "opencl conv: no kernel for %s input, %s weight to %s",
                           porta_dtype_name(x->dtype), porta_dtype_name(w->dtype),
                           porta_dtype_name(out->dtype));
    PORTA_TRY(clk_check_dtype(device, "conv", out->dtype));
    int spatial = out->rank - 2;
    if (spatial < 0 || x->rank != out->rank || w->rank != out->rank)
        return porta_error(PORTA_ERR_INTERNAL,
                           "opencl conv: x, w and out must share a rank >= 2, got %d, %d, %d",
                           x->rank, w->rank, out->rank);
    int64_t count = porta_tensor_numel(out);
    if (count == 0) return NULL;
    int64_t groups = prim->conv.groups > 0 ? prim->conv.groups : 1;
    int64_t taps = 1;
    for (int s = 0; s < spatial; s++) taps *= w->sizes[2 + s];
    clk_layout layout = {.count = 0};
    clk_push(&layout, spatial);
    clk_push(&layout, w->sizes[1]);
    clk_push(&layout, out->sizes[1] / groups);
    clk_push(&layout, taps);
    clk_push(&layout, out->sizes[1]);
    clk_push(&layout, bias != NULL);
    clk_push(&layout, bias ? bias->strides[0] : 0);
    clk_push(&layout, x->strides[0]);
    clk_push(&layout, x->strides[1]);
    clk_push(&layout, w->strides[0]);
    clk_push(&layout, w->strides[1]);
    clk_push(&layout, out->strides[0]);
    clk_push(&layout, out->strides[1]);
    for (int s = 0; s < spatial; s++) {
        clk_push(&layout, out->sizes[2 + s]);
        clk_push(&layout, out->strides[2 + s]);
        clk_push(&layout, x->sizes[2 + s]);
        clk_push(&layout, x->strides[2 + s]);
        clk_push(&layout, w->sizes[2 + s]);
        clk_push(&layout, w->strides[2 + s]);
        clk_push(&layout, prim->conv.stride[s]);
        clk_push(&layout, prim->conv.padding[s]);
        clk_push(&layout, prim->conv.dilation[s]);
    }
    cl_mem layout_buffer;
    PORTA_TRY(clk_layout_buffer(device, &layout, &layout_buffer));
    char name[16];
    snprintf(name, sizeof name, "conv_%s", clk_dtype_suffix(out->dtype));
    cl_state *state = cl_of(device);
    pthread_mutex_lock(&state->lock);
    cl_kernel kernel;
    porta_status *status = cl_kernel_get(device, conv_source, name, &kernel);
    if (!status) {
        cl_args args = {state, kernel, 0, CL_SUCCESS};
        cl_arg_mem(&args, out);
        cl_arg_mem(&args, x);
        cl_arg_mem(&args, w);
        cl_arg_mem(&args, bias ? bias : w); /* read only when a bias is given */
        cl_arg(&args, sizeof layout_buffer, &layout_buffer);
        cl_arg_long(&args, count);
        status = clk_launch(&args, count);
    }
    pthread_mutex_unlock(&state->lock);
    clk_release(device, layout_buffer);
    return status;
}
