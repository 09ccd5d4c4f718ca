/* PRIM_CONV_WEIGHT_GRAD in OpenCL C, for any number of spatial dims: one
 * item per element of the weight's gradient gw [Cout, Cin / groups,
 * kernel...], summing gy[n, co, o] * x[n, group's channel ci, o * stride -
 * padding + tap * dilation] over the batch and the output positions o
 * (taps that read padding add nothing). Float dtypes; float32 and the
 * 16-bit floats accumulate in float, float64 in double.
 *
 * x [N, Cin, in...], gy [N, Cout, out...] and gw may have any strides. */
#include "backends/clc/clk_conv_layout.h"
#include "backends/clc/clk_kernels.h"
#include "backends/clc/clk_source.h"
#include "core/status.h"

/* Layout: spatial dims, input and output channels per group, taps per
 * channel, the batch size, positions per image; the batch and channel
 * strides of x and gy, gw's output- and input-channel strides; then per
 * spatial dim: gy's size and stride, x's size and stride, the kernel's size
 * and gw's stride, and the conv's stride, padding and dilation. */

#define CWG_KERNEL(SFX, T, ACC)                                                                \
    CLK_SOURCE(__kernel void conv_weight_grad_##SFX(                                          \
        __global T *out, long out_off, __global const T *x, long x_off, __global const T *gy, \
        long gy_off, __global const long *L, long count) {                                    \
        long i = get_global_id(0);                                                            \
        if (i >= count) return;                                                               \
        int spatial = (int)L[0];                                                              \
        __global const long *dims = L + 16;                                                   \
        long rest = i, tap[16];                                                               \
        for (int s = spatial - 1; s >= 0; s--) {                                              \
            tap[s] = rest % dims[9 * s + 4];                                                  \
            rest /= dims[9 * s + 4];                                                          \
            out_off += tap[s] * dims[9 * s + 5];                                              \
        }                                                                                     \
        long ci = rest % L[1], co = rest / L[1];                                              \
        out_off += co * L[10] + ci * L[11];                                                   \
        x_off += (co / L[2] * L[1] + ci) * L[7];                                              \
        gy_off += co * L[9];                                                                  \
        ACC acc = (ACC)0;                                                                     \
        for (long n = 0; n < L[4]; n++) {                                                     \
            for (long p = 0; p < L[5]; p++) {                                                 \
                long p_rest = p, x_at = x_off + n * L[6], gy_at = gy_off + n * L[8];          \
                int inside = 1;                                                               \
                for (int s = spatial - 1; s >= 0; s--) {                                      \
                    __global const long *dim = dims + 9 * s;                                  \
                    long o = p_rest % dim[0];                                                 \
                    p_rest /= dim[0];                                                         \
                    gy_at += o * dim[1];                                                      \
                    long at = o * dim[6] - dim[7] + tap[s] * dim[8];                          \
                    inside = inside && at >= 0 && at < dim[2];                                \
                    x_at += at * dim[3];                                                      \
                }                                                                             \
                if (inside)                                                                   \
                    acc = fma((ACC)clk_ld_##SFX(x, x_at), (ACC)clk_ld_##SFX(gy, gy_at), acc); \
            }                                                                                 \
        }                                                                                     \
        clk_st_##SFX(out, out_off, acc);                                                      \
    })

static const char weight_grad_source[] = CLK_COMMON_SOURCE CLK_FOR_EACH_FLOAT(CWG_KERNEL);

void clk_conv_weight_grad_programs(clk_program_visit visit, void *ctx) {
    visit(ctx, "conv_weight_grad", weight_grad_source, true);
}

porta_status *clk_exec_conv_weight_grad(const clk_launcher *launcher, porta_device *device,
                                        const ir_prim *prim, const porta_tensor *const *inputs,
                                        int input_count, porta_tensor *out) {
    if (input_count != 2)
        return porta_error(PORTA_ERR_INTERNAL,
                           "conv_weight_grad kernel: expected 2 inputs (x, grad_output), got %d",
                           input_count);
    const porta_tensor *x = inputs[0], *gy = inputs[1];
    if (!porta_dtype_is_float(out->dtype) || x->dtype != out->dtype || gy->dtype != out->dtype)
        return porta_error(PORTA_ERR_DTYPE,
                           "conv_weight_grad kernel: no kernel for %s input, %s grad_output to %s",
                           porta_dtype_name(x->dtype), porta_dtype_name(gy->dtype),
                           porta_dtype_name(out->dtype));
    PORTA_TRY(clk_check_dtype(device, "conv_weight_grad", out->dtype));
    int spatial = out->rank - 2;
    if (spatial < 1 || x->rank != out->rank || gy->rank != out->rank)
        return porta_error(PORTA_ERR_INTERNAL,
                           "conv_weight_grad kernel: x, grad_output and out must share a rank "
                           ">= 3, got %d, %d, %d",
                           x->rank, gy->rank, out->rank);
    int64_t count = porta_tensor_numel(out);
    if (count == 0) return NULL;
    int64_t groups = prim->conv.groups > 0 ? prim->conv.groups : 1;
    int64_t taps = 1, positions = 1;
    for (int s = 0; s < spatial; s++) {
        taps *= out->sizes[2 + s];
        positions *= gy->sizes[2 + s];
    }
    clk_layout layout = {.count = 0};
    clk_push(&layout, spatial);
    clk_push(&layout, out->sizes[1]);
    clk_push(&layout, out->sizes[0] / groups);
    clk_push(&layout, taps);
    clk_push(&layout, x->sizes[0]);
    clk_push(&layout, positions);
    clk_push(&layout, x->strides[0]);
    clk_push(&layout, x->strides[1]);
    clk_push(&layout, gy->strides[0]);
    clk_push(&layout, gy->strides[1]);
    clk_push(&layout, out->strides[0]);
    clk_push(&layout, out->strides[1]);
    for (int pad = 12; pad < 16; pad++) clk_push(&layout, 0); /* dims start at 16 */
    clk_push_conv_axes(&layout, prim, spatial, gy, x, out);
    return clk_launch_conv_grad(launcher, device, weight_grad_source, "conv_weight_grad", out, x,
                                gy, &layout, count);
}
