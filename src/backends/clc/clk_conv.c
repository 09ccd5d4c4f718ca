/* PRIM_CONV in OpenCL C, for any number of spatial dims.
 *
 * For group g the output is the matrix product W_g [Cout / groups, depth]
 * @ col [depth, N * positions], where depth runs over (input channel,
 * kernel tap) and col holds the input element each tap reads (0 in the
 * padding). That product is computed as an implicit GEMM, tiled as the
 * matmul kernel is: a work group of 16 x 16 items computes 64 output
 * channels x 64 columns, each item 4 x 4, the depth going through local
 * memory 16 at a time, and col's elements are read straight from x as the
 * tiles are loaded (never stored whole). Each item loads one column of col's
 * tile, so its column's batch and position are worked out once.
 *
 * With few output channels per group (depthwise convolutions) most of a
 * 64-channel block would be idle, so those run a direct kernel, one item
 * per output element. Float dtypes; float32 and the 16-bit floats
 * accumulate in float with fused multiply-adds onto the bias (rounded once
 * to the dtype), float64 in double.
 *
 * x [N, Cin, in...], w [Cout, Cin / groups, kernel...], bias [Cout] and
 * out [N, Cout, out...] may have any strides. */
#include <stdio.h>

#include "backends/clc/clk_conv_layout.h"
#include "backends/clc/clk_kernels.h"
#include "backends/clc/clk_source.h"
#include "core/status.h"

/* Output channels per group below which the direct kernel runs. */
#define CV_GEMM_MIN_CHANNELS 16

/* Layout: spatial dims, input and output channels per group, taps per
 * channel (the product of the kernel sizes), output channels, whether a bias
 * is given and its stride; the batch and channel strides of x, w and out;
 * the batch size, positions per image and depth (input channels per group
 * times taps); then per spatial dim: out's size and stride, x's size and
 * stride, the kernel's size and w's stride, and the conv's stride, padding
 * and dilation. */

#define CV_DIRECT_KERNEL(SFX, T, ACC)                                                               \
    CLK_SOURCE(__kernel void conv_##SFX(__global T *out, long out_off, __global const T *x,  \
                                        long x_off, __global const T *w, long w_off,         \
                                        __global const T *bias, long bias_off,               \
                                        __global const long *L, long count) {                \
        long i = get_global_id(0);                                                           \
        if (i >= count) return;                                                              \
        int spatial = (int)L[0];                                                             \
        __global const long *dims = L + 16;                                                  \
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

#define CV_GEMM_KERNEL(SFX, T, ACC)                                                          \
    CLK_SOURCE(                                                                              \
        __kernel __attribute__((reqd_work_group_size(16, 16, 1))) void conv_gemm_##SFX(      \
            __global T *out, long out_off, __global const T *x, long x_off,                  \
            __global const T *w, long w_off, __global const T *bias, long bias_off,          \
            __global const long *L) {                                                        \
            int spatial = (int)L[0];                                                         \
            long in_per_group = L[1], out_per_group = L[2], taps = L[3];                     \
            long positions = L[14], depth = L[15], columns = L[13] * positions;              \
            __global const long *dims = L + 16;                                              \
            int tx = get_local_id(0), ty = get_local_id(1), lid = ty * 16 + tx;              \
            long blocks = (out_per_group + 63) / 64, group_row = get_group_id(1);            \
            long group = group_row / blocks, co0 = group_row % blocks * 64;                  \
            long p0 = (long)get_group_id(0) * 64;                                            \
            /* this item's column of col's tiles: its image and window origin */            \
            int col_in = lid % 64;                                                           \
            long p = p0 + col_in;                                                            \
            int column_ok = p < columns;                                                     \
            long position = column_ok ? p % positions : 0;                                   \
            long x_column = x_off + (column_ok ? p / positions : 0) * L[7] +                 \
                            group * in_per_group * L[8];                                     \
            long origin[14];                                                                 \
            for (int s = spatial - 1; s >= 0; s--) {                                         \
                __global const long *dim = dims + 9 * s;                                     \
                origin[s] = position % dim[0] * dim[6] - dim[7];                             \
                position /= dim[0];                                                          \
            }                                                                                \
            __local ACC a_tile[16][64];                                                      \
            __local ACC b_tile[16][64];                                                      \
            ACC acc[4][4];                                                                   \
            for (int i = 0; i < 4; i++) {                                                    \
                long co = co0 + ty + 16 * i;                                                 \
                ACC start = L[5] && co < out_per_group                                       \
                                ? (ACC)clk_ld_##SFX(bias, bias_off + (group * out_per_group + co) * L[6]) \
                                : (ACC)0;                                                    \
                for (int j = 0; j < 4; j++) acc[i][j] = start;                               \
            }                                                                                \
            for (long k0 = 0; k0 < depth; k0 += 16) {                                        \
                /* W: rows co0 + lid / 16 + 16 e, depth k0 + lid % 16 */                     \
                long r = k0 + lid % 16, w_r = 0;                                             \
                int r_ok = r < depth;                                                        \
                if (r_ok) {                                                                  \
                    long tap = r % taps;                                                     \
                    w_r = r / taps * L[10];                                                  \
                    for (int s = spatial - 1; s >= 0; s--) {                                 \
                        w_r += tap % dims[9 * s + 4] * dims[9 * s + 5];                      \
                        tap /= dims[9 * s + 4];                                              \
                    }                                                                        \
                }                                                                            \
                for (int e = 0; e < 4; e++) {                                                \
                    int row = lid / 16 + 16 * e;                                             \
                    long co = co0 + row;                                                     \
                    a_tile[lid % 16][row] =                                                  \
                        r_ok && co < out_per_group                                           \
                            ? (ACC)clk_ld_##SFX(w, w_off + (group * out_per_group + co) * L[9] + w_r) \
                            : (ACC)0;                                                        \
                }                                                                            \
                /* col: depth rows lid / 64 + 4 e, this item's column */                    \
                for (int e = 0; e < 4; e++) {                                                \
                    int q = lid / 64 + 4 * e;                                                \
                    long rr = k0 + q;                                                        \
                    ACC v = 0;                                                               \
                    if (column_ok && rr < depth) {                                           \
                        long tap = rr % taps, at = x_column + rr / taps * L[8];              \
                        int inside = 1;                                                      \
                        for (int s = spatial - 1; s >= 0; s--) {                             \
                            __global const long *dim = dims + 9 * s;                         \
                            long where = origin[s] + tap % dim[4] * dim[8];                  \
                            tap /= dim[4];                                                   \
                            inside = inside && where >= 0 && where < dim[2];                 \
                            at += where * dim[3];                                            \
                        }                                                                    \
                        if (inside) v = (ACC)clk_ld_##SFX(x, at);                            \
                    }                                                                        \
                    b_tile[q][col_in] = v;                                                   \
                }                                                                            \
                barrier(CLK_LOCAL_MEM_FENCE);                                                \
                for (int k = 0; k < 16; k++) {                                               \
                    ACC av[4], bv[4];                                                        \
                    for (int i = 0; i < 4; i++) av[i] = a_tile[k][ty + 16 * i];              \
                    for (int j = 0; j < 4; j++) bv[j] = b_tile[k][tx + 16 * j];              \
                    for (int i = 0; i < 4; i++)                                              \
                        for (int j = 0; j < 4; j++) acc[i][j] = fma(av[i], bv[j], acc[i][j]); \
                }                                                                            \
                barrier(CLK_LOCAL_MEM_FENCE);                                                \
            }                                                                                \
            for (int j = 0; j < 4; j++) {                                                    \
                long column = p0 + tx + 16 * j;                                              \
                if (column >= columns) continue;                                             \
                long rest = column % positions;                                              \
                long at = out_off + column / positions * L[11];                              \
                for (int s = spatial - 1; s >= 0; s--) {                                     \
                    at += rest % dims[9 * s] * dims[9 * s + 1];                              \
                    rest /= dims[9 * s];                                                     \
                }                                                                            \
                for (int i = 0; i < 4; i++) {                                                \
                    long co = co0 + ty + 16 * i;                                             \
                    if (co < out_per_group)                                                  \
                        clk_st_##SFX(out, at + (group * out_per_group + co) * L[12], acc[i][j]); \
                }                                                                            \
            }                                                                                \
        })

#define CV_KERNELS(SFX, T, ACC) CV_DIRECT_KERNEL(SFX, T, ACC) CV_GEMM_KERNEL(SFX, T, ACC)

static const char conv_source[] = CLK_COMMON_SOURCE CLK_FOR_EACH_FLOAT(CV_KERNELS);

void clk_conv_programs(clk_program_visit visit, void *ctx) {
    visit(ctx, "conv", conv_source, true);
}

porta_status *clk_exec_conv(const clk_launcher *launcher, porta_device *device,
                            const ir_prim *prim, const porta_tensor *const *inputs,
                            int input_count, porta_tensor *out) {
    if (input_count != 2 && input_count != 3)
        return porta_error(PORTA_ERR_INTERNAL, "conv kernel: expected 2 or 3 inputs, got %d",
                           input_count);
    const porta_tensor *x = inputs[0], *w = inputs[1];
    const porta_tensor *bias = input_count == 3 ? inputs[2] : NULL;
    if (!porta_dtype_is_float(out->dtype) || x->dtype != out->dtype || w->dtype != out->dtype ||
        (bias && bias->dtype != out->dtype))
        return porta_error(PORTA_ERR_DTYPE, "conv kernel: no kernel for %s input, %s weight to %s",
                           porta_dtype_name(x->dtype), porta_dtype_name(w->dtype),
                           porta_dtype_name(out->dtype));
    PORTA_TRY(clk_check_dtype(device, "conv", out->dtype));
    int spatial = out->rank - 2;
    if (spatial < 0 || x->rank != out->rank || w->rank != out->rank)
        return porta_error(PORTA_ERR_INTERNAL,
                           "conv kernel: x, w and out must share a rank >= 2, got %d, %d, %d",
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
    int64_t positions = 1;
    for (int s = 0; s < spatial; s++) positions *= out->sizes[2 + s];
    clk_push(&layout, out->sizes[0]);
    clk_push(&layout, positions);
    clk_push(&layout, w->sizes[1] * taps);
    clk_push_conv_axes(&layout, prim, spatial, out, x, w);
    clk_mem layout_buffer;
    PORTA_TRY(clk_layout_buffer(device, &layout, &layout_buffer));
    int64_t out_per_group = out->sizes[1] / groups;
    bool gemm = out_per_group >= CV_GEMM_MIN_CHANNELS && launcher->max_group(device) >= 256;
    char name[32];
    snprintf(name, sizeof name, "conv_%s%s", gemm ? "gemm_" : "", clk_dtype_suffix(out->dtype));
    clk_args args;
    porta_status *status = clk_begin(launcher, device, conv_source, name, &args);
    if (!status) {
        clk_arg_tensor(&args, out);
        clk_arg_tensor(&args, x);
        clk_arg_tensor(&args, w);
        clk_arg_tensor(&args, bias ? bias : w); /* read only when a bias is given */
        clk_arg_buffer(&args, layout_buffer);
        if (gemm) {
            size_t global[2] = {(size_t)((out->sizes[0] * positions + 63) / 64) * 16,
                                (size_t)(groups * ((out_per_group + 63) / 64)) * 16};
            size_t local[2] = {16, 16};
            status = clk_launch_2d(&args, global, local);
        } else {
            clk_arg_long(&args, count);
            status = clk_launch(&args, count);
        }
    }
    clk_release(device, layout_buffer);
    return status;
}
