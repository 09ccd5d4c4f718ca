/* PRIM_MATMUL in OpenCL C: out[..., M, N] = a[..., M, K] @ b[..., K, N] over
 * batch axes already broadcast (stride 0 where repeated), any strides.
 *
 * A work group of 16 x 16 items computes a 64 x 64 block of one batch's
 * output, each item 4 x 4 outputs (rows ty + 16 i, columns tx + 16 j, so
 * neighbouring items touch neighbouring columns); the depth goes through
 * local memory 16 at a time, A's slice stored transposed so each step reads
 * one row of each tile. Every dtype runs the same kernel with its own
 * accumulator: float for float32 and the 16-bit floats (each product added
 * with one fused multiply-add, the result rounded once to the dtype), double
 * for float64, and wrapping 64-bit integers for integers, truncated to the
 * dtype's width as the CPU does. Devices whose work groups cannot hold
 * 256 items get a kernel with one output per item. */
#include "backends/clc/clk_kernels.h"
#include "backends/clc/clk_source.h"
#include <stdio.h>

#include "core/status.h"

#define MM_BLOCK 64 /* outputs per block side */
#define MM_GROUP 16 /* items per group side: MM_BLOCK / 4 */

/* Layout buffer: m, n, k, batch rank, blocks along m, a's row and column
 * strides, b's, out's; then per batch dim its size and the three tensors'
 * strides. */

/* X(suffix, storage, accumulator, load into the accumulator, multiply-add) */
#define MM_FLOAT_MAC(acc, x, y) acc = fma(x, y, acc)
#define MM_INT_MAC(acc, x, y) acc += (x) * (y)
#define MM_FOR_EACH_DTYPE(X)                                                                 \
    X(u8, uchar, ulong, (ulong)clk_ld_u8, MM_INT_MAC)                                        \
    X(i8, char, ulong, (ulong)clk_ld_i8, MM_INT_MAC)                                         \
    X(i16, short, ulong, (ulong)clk_ld_i16, MM_INT_MAC)                                      \
    X(i32, int, ulong, (ulong)clk_ld_i32, MM_INT_MAC)                                        \
    X(i64, long, ulong, (ulong)clk_ld_i64, MM_INT_MAC)                                       \
    X(f16, ushort, float, clk_ld_f16, MM_FLOAT_MAC)                                          \
    X(bf16, ushort, float, clk_ld_bf16, MM_FLOAT_MAC)                                        \
    X(f32, float, float, clk_ld_f32, MM_FLOAT_MAC)                                           \
    X(f64, double, double, clk_ld_f64, MM_FLOAT_MAC)

/* Integers store through long (wrapping to the width), floats as they are. */
#define MM_STORE_u8(p, i, v) clk_st_u8(p, i, (long)(v))
#define MM_STORE_i8(p, i, v) clk_st_i8(p, i, (long)(v))
#define MM_STORE_i16(p, i, v) clk_st_i16(p, i, (long)(v))
#define MM_STORE_i32(p, i, v) clk_st_i32(p, i, (long)(v))
#define MM_STORE_i64(p, i, v) clk_st_i64(p, i, (long)(v))
#define MM_STORE_f16(p, i, v) clk_st_f16(p, i, v)
#define MM_STORE_bf16(p, i, v) clk_st_bf16(p, i, v)
#define MM_STORE_f32(p, i, v) clk_st_f32(p, i, v)
#define MM_STORE_f64(p, i, v) clk_st_f64(p, i, v)

/* Moves a, b and c to batch `batch` (row-major over the batch dims). */
#define MM_BATCH_OFFSETS_SOURCE                                                              \
    CLK_SOURCE(inline void mm_batch_offsets(__global const long *L, long batch, long *a_off,  \
                                            long *b_off, long *c_off) {                      \
        for (int d = (int)L[3] - 1; d >= 0; d--) {                                           \
            __global const long *dim = L + 11 + 4 * d;                                       \
            long i = batch % dim[0];                                                         \
            batch /= dim[0];                                                                 \
            *a_off += i * dim[1];                                                            \
            *b_off += i * dim[2];                                                            \
            *c_off += i * dim[3];                                                            \
        }                                                                                    \
    })

#define MM_TILED_KERNEL(SFX, T, ACC, LOAD, MAC)                                              \
    CLK_SOURCE(                                                                              \
        __kernel __attribute__((reqd_work_group_size(16, 16, 1))) void mm_tiled_##SFX(       \
            __global T *c, long c_off, __global const T *a, long a_off, __global const T *b,  \
            long b_off, __global const long *L) {                                            \
            long m = L[0], n = L[1], k = L[2];                                               \
            long a_rs = L[5], a_cs = L[6], b_rs = L[7], b_cs = L[8], c_rs = L[9], c_cs = L[10]; \
            int tx = get_local_id(0), ty = get_local_id(1), lid = ty * 16 + tx;              \
            long group_row = get_group_id(1);                                                \
            long row0 = group_row % L[4] * 64, col0 = (long)get_group_id(0) * 64;            \
            mm_batch_offsets(L, group_row / L[4], &a_off, &b_off, &c_off);                   \
            __local ACC a_tile[16][64];                                                      \
            __local ACC b_tile[16][64];                                                      \
            ACC acc[4][4];                                                                   \
            for (int i = 0; i < 4; i++)                                                      \
                for (int j = 0; j < 4; j++) acc[i][j] = 0;                                   \
            for (long k0 = 0; k0 < k; k0 += 16) {                                            \
                for (int e = 0; e < 4; e++) {                                                \
                    int at = lid + 256 * e;                                                  \
                    int r = at / 16, p = at % 16;                                            \
                    long row = row0 + r, depth = k0 + p;                                     \
                    a_tile[p][r] = row < m && depth < k                                      \
                                       ? LOAD(a, a_off + row * a_rs + depth * a_cs)          \
                                       : (ACC)0;                                             \
                    int q = at / 64, col_in = at % 64;                                       \
                    long col = col0 + col_in, depth_b = k0 + q;                              \
                    b_tile[q][col_in] = col < n && depth_b < k                               \
                                            ? LOAD(b, b_off + depth_b * b_rs + col * b_cs)   \
                                            : (ACC)0;                                        \
                }                                                                            \
                barrier(CLK_LOCAL_MEM_FENCE);                                                \
                for (int p = 0; p < 16; p++) {                                               \
                    ACC av[4], bv[4];                                                        \
                    for (int i = 0; i < 4; i++) av[i] = a_tile[p][ty + 16 * i];              \
                    for (int j = 0; j < 4; j++) bv[j] = b_tile[p][tx + 16 * j];              \
                    for (int i = 0; i < 4; i++)                                              \
                        for (int j = 0; j < 4; j++) MAC(acc[i][j], av[i], bv[j]);            \
                }                                                                            \
                barrier(CLK_LOCAL_MEM_FENCE);                                                \
            }                                                                                \
            for (int i = 0; i < 4; i++) {                                                    \
                long row = row0 + ty + 16 * i;                                               \
                for (int j = 0; j < 4; j++) {                                                \
                    long col = col0 + tx + 16 * j;                                           \
                    if (row < m && col < n) MM_STORE_##SFX(c, c_off + row * c_rs + col * c_cs, acc[i][j]); \
                }                                                                            \
            }                                                                                \
        })

/* One output per item, item i = row-major position over (batch, m, n). */
#define MM_SIMPLE_KERNEL(SFX, T, ACC, LOAD, MAC)                                             \
    CLK_SOURCE(__kernel void mm_simple_##SFX(__global T *c, long c_off, __global const T *a,  \
                                             long a_off, __global const T *b, long b_off,    \
                                             __global const long *L, long count) {           \
        long item = get_global_id(0);                                                        \
        if (item >= count) return;                                                           \
        long m = L[0], n = L[1], k = L[2];                                                   \
        long col = item % n, row = item / n % m;                                             \
        mm_batch_offsets(L, item / n / m, &a_off, &b_off, &c_off);                           \
        ACC acc = 0;                                                                         \
        for (long p = 0; p < k; p++)                                                         \
            MAC(acc, LOAD(a, a_off + row * L[5] + p * L[6]), LOAD(b, b_off + p * L[7] + col * L[8])); \
        MM_STORE_##SFX(c, c_off + row * L[9] + col * L[10], acc);                            \
    })

#define MM_KERNELS(SFX, T, ACC, LOAD, MAC)                                                   \
    MM_TILED_KERNEL(SFX, T, ACC, LOAD, MAC) MM_SIMPLE_KERNEL(SFX, T, ACC, LOAD, MAC)

/* One program per dtype: a run builds only the dtypes it uses. */
#define MM_PROGRAM(SFX, T, ACC, LOAD, MAC)                                                   \
    [CLK_DTYPE_##SFX] = CLK_COMMON_SOURCE MM_BATCH_OFFSETS_SOURCE MM_KERNELS(SFX, T, ACC, LOAD, MAC),
static const char *const matmul_sources[PORTA_DTYPE_COUNT] = {MM_FOR_EACH_DTYPE(MM_PROGRAM)};

void clk_matmul_programs(clk_program_visit visit, void *ctx) {
    for (int d = 0; d < PORTA_DTYPE_COUNT; d++)
        if (matmul_sources[d]) visit(ctx, "matmul", matmul_sources[d], true);
}

porta_status *clk_matmul_layout(porta_device *device, const porta_tensor *a,
                               const porta_tensor *b, const porta_tensor *out, int64_t m_blocks,
                               clk_mem *buffer) {
    int batch_rank = out->rank - 2;
    clk_layout layout = {.count = 0};
    clk_push(&layout, out->sizes[batch_rank]);
    clk_push(&layout, out->sizes[batch_rank + 1]);
    clk_push(&layout, a->sizes[batch_rank + 1]);
    clk_push(&layout, batch_rank);
    clk_push(&layout, m_blocks);
    const porta_tensor *operands[3] = {a, b, out};
    for (int t = 0; t < 3; t++) {
        clk_push(&layout, operands[t]->strides[batch_rank]);
        clk_push(&layout, operands[t]->strides[batch_rank + 1]);
    }
    for (int d = 0; d < batch_rank; d++) {
        clk_push(&layout, out->sizes[d]);
        for (int t = 0; t < 3; t++) clk_push(&layout, operands[t]->strides[d]);
    }
    return clk_layout_buffer(device, &layout, buffer);
}

porta_status *clk_exec_matmul(const clk_launcher *launcher, porta_device *device,
                              const ir_prim *prim, const porta_tensor *const *inputs,
                              int input_count, porta_tensor *out) {
    (void)prim;
    if (input_count != 2 || out->rank < 2)
        return porta_error(PORTA_ERR_INTERNAL,
                           "matmul kernel: expected 2 inputs and an out of rank >= 2, got %d "
                           "inputs and rank %d",
                           input_count, out->rank);
    const porta_tensor *a = inputs[0], *b = inputs[1];
    porta_dtype dtype = out->dtype;
    if (dtype == PORTA_BOOL || a->dtype != dtype || b->dtype != dtype)
        return porta_error(PORTA_ERR_DTYPE, "matmul kernel: no kernel for %s @ %s -> %s",
                           porta_dtype_name(a->dtype), porta_dtype_name(b->dtype),
                           porta_dtype_name(dtype));
    PORTA_TRY(clk_check_dtype(device, "matmul", dtype));
    if (porta_tensor_numel(out) == 0) return NULL;

    int batch_rank = out->rank - 2;
    int64_t m = out->sizes[batch_rank], n = out->sizes[batch_rank + 1];
    int64_t batches = porta_tensor_numel(out) / (m * n);
    int64_t m_blocks = (m + MM_BLOCK - 1) / MM_BLOCK, n_blocks = (n + MM_BLOCK - 1) / MM_BLOCK;
    clk_mem layout_buffer;
    PORTA_TRY(clk_matmul_layout(device, a, b, out, m_blocks, &layout_buffer));

    bool tiled = launcher->max_group(device) >= MM_GROUP * MM_GROUP;
    char name[32];
    snprintf(name, sizeof name, "mm_%s_%s", tiled ? "tiled" : "simple",
             clk_dtype_suffix(dtype));
    clk_args args;
    porta_status *status = clk_begin(launcher, device, matmul_sources[dtype], name, &args);
    if (!status) {
        clk_arg_tensor(&args, out);
        clk_arg_tensor(&args, a);
        clk_arg_tensor(&args, b);
        clk_arg_buffer(&args, layout_buffer);
        if (tiled) {
            size_t global[2] = {(size_t)n_blocks * MM_GROUP,
                                (size_t)(batches * m_blocks) * MM_GROUP};
            size_t local[2] = {MM_GROUP, MM_GROUP};
            status = clk_launch_2d(&args, global, local);
        } else {
            clk_arg_long(&args, batches * m * n);
            status = clk_launch(&args, batches * m * n);
        }
    }
    clk_release(device, layout_buffer);
    return status ? porta_error_context(status, "matmul kernel") : NULL;
}
