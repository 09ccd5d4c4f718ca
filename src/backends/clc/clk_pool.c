/* PRIM_POOL_MAX in OpenCL C: one item per output, PyTorch's CPU loop over
 * its window (ir/prim.h): from the window's first tap inside the input, in
 * row-major order, a value greater than the best so far or NaN takes its
 * place. Every geometry runs as 3 spatial axes, fewer axes leading with
 * size 1. */
#include <stdio.h>

#include "backends/clc/clk_kernels.h"
#include "backends/clc/clk_source.h"
#include "core/status.h"

#define SPATIAL 3

/* Layout: N, C; x's and out's strides (N, C, d, h, w); then per spatial
 * axis its input size, output size, kernel, stride, padding and dilation. */
#define POOL_COMMON_SOURCE                                                                   \
    CLK_SOURCE(inline void pool_span(__global const long *L, int axis, long o, long *first,  \
                                     long *end) {                                            \
        __global const long *g = L + 12 + 6 * axis;                                          \
        long start = o * g[3] - g[4];                                                        \
        long stop = start + (g[2] - 1) * g[5] + 1;                                           \
        while (start < 0) start += g[5];                                                     \
        *first = start;                                                                      \
        *end = stop < g[0] ? stop : g[0];                                                    \
    })

/* NAN_TEST(v): whether v is NaN (integers never are). */
#define POOL_KERNEL(SFX, T, V, NAN_TEST)                                                     \
    CLK_SOURCE(__kernel void pool_max_##SFX(__global long *out, long out_off,                \
                                           __global const T *x, long x_off,                  \
                                           __global const long *L, long count) {             \
        long e = get_global_id(0);                                                           \
        if (e >= count) return;                                                              \
        long ow = e % L[25], oh = e / L[25] % L[19], od = e / L[25] / L[19] % L[13];         \
        long plane = e / L[25] / L[19] / L[13], c = plane % L[1], n = plane / L[1];          \
        long base = x_off + n * L[2] + c * L[3];                                             \
        long d0, d1, h0, h1, w0, w1;                                                         \
        pool_span(L, 0, od, &d0, &d1);                                                       \
        pool_span(L, 1, oh, &h0, &h1);                                                       \
        pool_span(L, 2, ow, &w0, &w1);                                                       \
        long best_at = (d0 * L[18] + h0) * L[24] + w0;                                       \
        if (d0 < d1 && h0 < h1 && w0 < w1) {                                                 \
            V best = clk_ld_##SFX(x, base + d0 * L[4] + h0 * L[5] + w0 * L[6]);              \
            for (long d = d0; d < d1; d += L[17])                                            \
                for (long h = h0; h < h1; h += L[23])                                        \
                    for (long w = w0; w < w1; w += L[29]) {                                  \
                        V v = clk_ld_##SFX(x, base + d * L[4] + h * L[5] + w * L[6]);        \
                        if (v > best || NAN_TEST(v)) {                                       \
                            best = v;                                                        \
                            best_at = (d * L[18] + h) * L[24] + w;                           \
                        }                                                                    \
                    }                                                                        \
        }                                                                                    \
        out[out_off + n * L[7] + c * L[8] + od * L[9] + oh * L[10] + ow * L[11]] = best_at;  \
    })

#define POOL_NEVER_NAN(v) 0
#define POOL_IS_NAN(v) (v != v)

static const char pool_source[] =
    CLK_COMMON_SOURCE POOL_COMMON_SOURCE POOL_KERNEL(u8, uchar, long, POOL_NEVER_NAN)
    POOL_KERNEL(i8, char, long, POOL_NEVER_NAN) POOL_KERNEL(i16, short, long, POOL_NEVER_NAN)
    POOL_KERNEL(i32, int, long, POOL_NEVER_NAN) POOL_KERNEL(i64, long, long, POOL_NEVER_NAN)
    POOL_KERNEL(f16, ushort, float, POOL_IS_NAN) POOL_KERNEL(bf16, ushort, float, POOL_IS_NAN)
    POOL_KERNEL(f32, float, float, POOL_IS_NAN) POOL_KERNEL(f64, double, double, POOL_IS_NAN);

void clk_pool_programs(clk_program_visit visit, void *ctx) {
    visit(ctx, "pool", pool_source, true);
}

porta_status *clk_exec_pool(const clk_launcher *launcher, porta_device *device,
                            const ir_prim *prim, const porta_tensor *const *inputs,
                            int input_count, porta_tensor *out) {
    const porta_tensor *x = input_count == 1 ? inputs[0] : NULL;
    if (!x || x->dtype == PORTA_BOOL || out->dtype != PORTA_I64 || x->rank != prim->rank + 2 ||
        out->rank != x->rank)
        return porta_error(PORTA_ERR_INTERNAL,
                           "pool_max kernel: expected one non-bool input of rank %d and an "
                           "int64 out, got %d inputs",
                           prim->rank + 2, input_count);
    PORTA_TRY(clk_check_dtype(device, "pool_max", x->dtype));
    int64_t count = porta_tensor_numel(out);
    if (count == 0) return NULL;
    clk_layout layout = {.count = 0};
    clk_push(&layout, x->sizes[0]);
    clk_push(&layout, x->sizes[1]);
    int lead = SPATIAL - prim->rank;
    for (int t = 0; t < 2; t++) {
        const porta_tensor *tensor = t ? out : x;
        clk_push(&layout, tensor->strides[0]);
        clk_push(&layout, tensor->strides[1]);
        for (int a = 0; a < SPATIAL; a++)
            clk_push(&layout, a < lead ? 0 : tensor->strides[2 + a - lead]);
    }
    for (int a = 0; a < SPATIAL; a++) {
        bool unit = a < lead;
        int from = a - lead;
        clk_push(&layout, unit ? 1 : x->sizes[2 + from]);
        clk_push(&layout, unit ? 1 : out->sizes[2 + from]);
        clk_push(&layout, unit ? 1 : prim->sizes[from]);
        clk_push(&layout, unit ? 1 : prim->conv.stride[from]);
        clk_push(&layout, unit ? 0 : prim->conv.padding[from]);
        clk_push(&layout, unit ? 1 : prim->conv.dilation[from]);
    }
    clk_mem layout_buffer;
    PORTA_TRY(clk_layout_buffer(device, &layout, &layout_buffer));
    char name[24];
    snprintf(name, sizeof name, "pool_max_%s", clk_dtype_suffix(x->dtype));
    clk_args args;
    porta_status *status = clk_begin(launcher, device, pool_source, name, &args);
    if (!status) {
        clk_arg_tensor(&args, out);
        clk_arg_tensor(&args, x);
        clk_arg_buffer(&args, layout_buffer);
        clk_arg_long(&args, count);
        status = clk_launch(&args, count);
    }
    clk_release(device, layout_buffer);
    return status;
}
