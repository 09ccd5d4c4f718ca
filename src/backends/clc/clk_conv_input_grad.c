/* PRIM_CONV_INPUT_GRAD in OpenCL C, for any number of spatial dims: one
 * item per element of the input's gradient gx [N, Cin, in...], summing
 * gy[n, co, o] * w[co, ci, tap] over its group's output channels co and
 * the kernel taps that read it, o being the output position whose tap
 * lands on it (o * stride - padding + tap * dilation = its position; taps
 * that no position reaches add nothing). Float dtypes; float32 and the
 * 16-bit floats accumulate in float, float64 in double.
 *
 * gy [N, Cout, out...], w [Cout, Cin / groups, kernel...] and gx may have
 * any strides. */
#include "backends/clc/clk_conv_layout.h"
#include "backends/clc/clk_kernels.h"
#include "backends/clc/clk_source.h"
#include "core/status.h"

/* Layout: spatial dims, input and output channels per group, taps per
 * channel, input channels; the batch and channel strides of gx, gy and w;
 * then per spatial dim: gx's size and stride, gy's size and stride, the
 * kernel's size and w's stride, and the conv's stride, padding and
 * dilation. */

#define CIG_KERNEL(SFX, T, ACC)                                                                \
    CLK_SOURCE(__kernel void conv_input_grad_##SFX(                                           \
        __global T *out, long out_off, __global const T *gy, long gy_off, __global const T *w, \
        long w_off, __global const long *L, long count) {                                     \
        long i = get_global_id(0);                                                            \
        if (i >= count) return;                                                               \
        int spatial = (int)L[0];                                                              \
        __global const long *dims = L + 16;                                                   \
        long rest = i, position[16];                                                          \
        for (int s = spatial - 1; s >= 0; s--) {                                              \
            position[s] = rest % dims[9 * s];                                                 \
            rest /= dims[9 * s];                                                              \
            out_off += position[s] * dims[9 * s + 1];                                         \
        }                                                                                     \
        long channel = rest % L[4], batch = rest / L[4];                                      \
        out_off += batch * L[5] + channel * L[6];                                             \
        long group = channel / L[1], ci = channel % L[1];                                     \
        gy_off += batch * L[7] + group * L[2] * L[8];                                         \
        w_off += group * L[2] * L[9] + ci * L[10];                                            \
        ACC acc = (ACC)0;                                                                     \
        for (long tap = 0; tap < L[3]; tap++) {                                               \
            long tap_rest = tap, gy_at = gy_off, w_at = w_off;                                \
            int reached = 1;                                                                  \
            for (int s = spatial - 1; s >= 0; s--) {                                          \
                __global const long *dim = dims + 9 * s;                                      \
                long k = tap_rest % dim[4];                                                   \
                tap_rest /= dim[4];                                                           \
                long at = position[s] + dim[7] - k * dim[8];                                  \
                long o = at / dim[6];                                                         \
                reached = reached && at >= 0 && at % dim[6] == 0 && o < dim[2];               \
                gy_at += o * dim[3];                                                          \
                w_at += k * dim[5];                                                           \
            }                                                                                 \
            if (!reached) continue;                                                           \
            for (long co = 0; co < L[2]; co++)                                                \
                acc = fma((ACC)clk_ld_##SFX(gy, gy_at + co * L[8]),                           \
                          (ACC)clk_ld_##SFX(w, w_at + co * L[9]), acc);                       \
        }                                                                                     \
        clk_st_##SFX(out, out_off, acc);                                                      \
    })

static const char input_grad_source[] = CLK_COMMON_SOURCE CLK_FOR_EACH_FLOAT(CIG_KERNEL);

void clk_conv_input_grad_programs(clk_program_visit visit, void *ctx) {
    visit(ctx, "conv_input_grad", input_grad_source, true);
}

porta_status *clk_exec_conv_input_grad(const clk_launcher *launcher, porta_device *device,
                                       const ir_prim *prim, const porta_tensor *const *inputs,
                                       int input_count, porta_tensor *out) {
    if (input_count != 2)
        return porta_error(PORTA_ERR_INTERNAL,
                           "conv_input_grad kernel: expected 2 inputs (grad_output, weight), "
                           "got %d",
                           input_count);
    const porta_tensor *gy = inputs[0], *w = inputs[1];
    if (!porta_dtype_is_float(out->dtype) || gy->dtype != out->dtype || w->dtype != out->dtype)
        return porta_error(PORTA_ERR_DTYPE,
                           "conv_input_grad kernel: no kernel for %s grad_output, %s weight to %s",
                           porta_dtype_name(gy->dtype), porta_dtype_name(w->dtype),
                           porta_dtype_name(out->dtype));
    PORTA_TRY(clk_check_dtype(device, "conv_input_grad", out->dtype));
    int spatial = out->rank - 2;
    if (spatial < 1 || gy->rank != out->rank || w->rank != out->rank)
        return porta_error(PORTA_ERR_INTERNAL,
                           "conv_input_grad kernel: grad_output, weight and out must share a "
                           "rank >= 3, got %d, %d, %d",
                           gy->rank, w->rank, out->rank);
    int64_t count = porta_tensor_numel(out);
    if (count == 0) return NULL;
    int64_t groups = prim->conv.groups > 0 ? prim->conv.groups : 1;
    int64_t taps = 1;
    for (int s = 0; s < spatial; s++) taps *= w->sizes[2 + s];
    clk_layout layout = {.count = 0};
    clk_push(&layout, spatial);
    clk_push(&layout, w->sizes[1]);
    clk_push(&layout, w->sizes[0] / groups);
    clk_push(&layout, taps);
    clk_push(&layout, out->sizes[1]);
    clk_push(&layout, out->strides[0]);
    clk_push(&layout, out->strides[1]);
    clk_push(&layout, gy->strides[0]);
    clk_push(&layout, gy->strides[1]);
    clk_push(&layout, w->strides[0]);
    clk_push(&layout, w->strides[1]);
    for (int pad = 11; pad < 16; pad++) clk_push(&layout, 0); /* dims start at 16 */
    clk_push_conv_axes(&layout, prim, spatial, out, gy, w);
    return clk_launch_conv_grad(launcher, device, input_grad_source, "conv_input_grad", out, gy, w,
                                &layout, count);
}
