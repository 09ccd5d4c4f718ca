/* PRIM_MATMUL on tensor cores: float16 @ float16 and bfloat16 @ bfloat16
 * on devices of compute capability 8.0 and later, accumulated in float32
 * by mma.sync.aligned.m16n8k16 (inline PTX: NVRTC has no mma.h without the
 * toolkit), the result rounded once to the output's dtype with the CPU's
 * rounding. Same contract as the tiled kernel (backends/clc/clk_matmul.c): batch
 * axes already broadcast (stride 0 where repeated), any strides, any M, N
 * and K (edges filled with zeros in shared memory, stores bounds-checked).
 * float32 keeps the tiled kernel: TF32 is off, as PyTorch's default.
 *
 * A block of 128 threads (4 warps, 2 x 2) computes a 64 x 64 block of one
 * batch's output, each warp 32 x 32 of it as 2 x 4 tiles of 16 x 8; depth
 * goes through shared memory 32 at a time. A's slice is kept as rows of
 * depth and B's transposed (columns of depth), so every fragment register
 * is one 32-bit read of two neighbouring depths; rows are padded to 40
 * halves, which puts the 32 lanes of a fragment read on 32 different
 * banks. Fragment layouts are PTX's for m16n8k16 (.row.col). */
#include <stdio.h>

#include "backends/cuda/cu_gemm.h"
#include "backends/clc/clk_kernels.h"
#include "backends/clc/clk_source.h"
#include "backends/cuda/cu_runtime.h"
#include "core/status.h"

#define GEMM_BLOCK 64    /* outputs per block side */
#define GEMM_THREADS 128 /* 4 warps */

static const char gemm_source[] = CLK_COMMON_SOURCE
    "#define GEMM_DEPTH 32\n"
    "#define GEMM_PITCH 40\n"
    /* d += a * b on one 16 x 8 tile, float32 accumulators */
    "template <int BF16> static __device__ inline void gemm_mma(float *d, const uint *a,\n"
    "                                                           const uint *b) {\n"
    "    if (BF16)\n"
    "        asm volatile(\"mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 \"\n"
    "                     \"{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\\n\"\n"
    "                     : \"+f\"(d[0]), \"+f\"(d[1]), \"+f\"(d[2]), \"+f\"(d[3])\n"
    "                     : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"r\"(b[0]),\n"
    "                       \"r\"(b[1]));\n"
    "    else\n"
    "        asm volatile(\"mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 \"\n"
    "                     \"{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\\n\"\n"
    "                     : \"+f\"(d[0]), \"+f\"(d[1]), \"+f\"(d[2]), \"+f\"(d[3])\n"
    "                     : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"r\"(b[0]),\n"
    "                       \"r\"(b[1]));\n"
    "}\n"
    "static __device__ inline uint gemm_pair(const ushort *p) { return *(const uint *)p; }\n"
    /* L: m, n, k, batch rank, blocks along m, a's row and column strides,
     * b's, c's, then per batch dim its size and the three strides */
    "template <int BF16>\n"
    "static __device__ inline void gemm_tc(ushort *c, long c_off, const ushort *a, long a_off,\n"
    "                                      const ushort *b, long b_off, const long *L) {\n"
    "    __shared__ __align__(16) ushort a_tile[64][GEMM_PITCH];\n"
    "    __shared__ __align__(16) ushort b_tile[64][GEMM_PITCH];\n"
    "    long m = L[0], n = L[1], k = L[2];\n"
    "    long a_rs = L[5], a_cs = L[6], b_rs = L[7], b_cs = L[8], c_rs = L[9], c_cs = L[10];\n"
    "    long block_row = blockIdx.y, batch = block_row / L[4];\n"
    "    long row0 = block_row % L[4] * 64, col0 = (long)blockIdx.x * 64;\n"
    "    for (int d = (int)L[3] - 1; d >= 0; d--) {\n"
    "        const long *dim = L + 11 + 4 * d;\n"
    "        long i = batch % dim[0];\n"
    "        batch /= dim[0];\n"
    "        a_off += i * dim[1];\n"
    "        b_off += i * dim[2];\n"
    "        c_off += i * dim[3];\n"
    "    }\n"
    "    int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;\n"
    "    int g = lane >> 2, t = lane & 3;\n"
    "    int warp_row = (warp >> 1) * 32, warp_col = (warp & 1) * 32;\n"
    "    float acc[2][4][4];\n"
    "#pragma unroll\n"
    "    for (int i = 0; i < 2; i++)\n"
    "        for (int j = 0; j < 4; j++)\n"
    "            for (int e = 0; e < 4; e++) acc[i][j][e] = 0.0f;\n"
    "    for (long k0 = 0; k0 < k; k0 += GEMM_DEPTH) {\n"
    /* 2048 elements of each operand, 16 per thread; consecutive threads
     * read consecutive depths of A and consecutive columns of B */
    "        for (int e = 0; e < 16; e++) {\n"
    "            int at = tid + 128 * e;\n"
    "            int r = at >> 5, p = at & 31;\n"
    "            long row = row0 + r, depth = k0 + p;\n"
    "            a_tile[r][p] = row < m && depth < k ? a[a_off + row * a_rs + depth * a_cs] : 0;\n"
    "            int col_in = at & 63, q = at >> 6;\n"
    "            long col = col0 + col_in, depth_b = k0 + q;\n"
    "            b_tile[col_in][q] =\n"
    "                col < n && depth_b < k ? b[b_off + depth_b * b_rs + col * b_cs] : 0;\n"
    "        }\n"
    "        __syncthreads();\n"
    "#pragma unroll\n"
    "        for (int kk = 0; kk < GEMM_DEPTH; kk += 16) {\n"
    "            uint af[2][4], bf[4][2];\n"
    "            for (int i = 0; i < 2; i++) {\n"
    "                int r = warp_row + 16 * i + g;\n"
    "                af[i][0] = gemm_pair(&a_tile[r][kk + 2 * t]);\n"
    "                af[i][1] = gemm_pair(&a_tile[r + 8][kk + 2 * t]);\n"
    "                af[i][2] = gemm_pair(&a_tile[r][kk + 2 * t + 8]);\n"
    "                af[i][3] = gemm_pair(&a_tile[r + 8][kk + 2 * t + 8]);\n"
    "            }\n"
    "            for (int j = 0; j < 4; j++) {\n"
    "                int col = warp_col + 8 * j + g;\n"
    "                bf[j][0] = gemm_pair(&b_tile[col][kk + 2 * t]);\n"
    "                bf[j][1] = gemm_pair(&b_tile[col][kk + 2 * t + 8]);\n"
    "            }\n"
    "            for (int i = 0; i < 2; i++)\n"
    "                for (int j = 0; j < 4; j++) gemm_mma<BF16>(acc[i][j], af[i], bf[j]);\n"
    "        }\n"
    "        __syncthreads();\n"
    "    }\n"
    /* accumulator e of a tile: row g (+8 for e >= 2), column 2t + (e & 1) */
    "#pragma unroll\n"
    "    for (int i = 0; i < 2; i++)\n"
    "        for (int j = 0; j < 4; j++)\n"
    "            for (int e = 0; e < 4; e++) {\n"
    "                long row = row0 + warp_row + 16 * i + g + (e >> 1) * 8;\n"
    "                long col = col0 + warp_col + 8 * j + 2 * t + (e & 1);\n"
    "                if (row >= m || col >= n) continue;\n"
    "                long at = c_off + row * c_rs + col * c_cs;\n"
    "                if (BF16) clk_st_bf16(c, at, acc[i][j][e]);\n"
    "                else clk_st_f16(c, at, acc[i][j][e]);\n"
    "            }\n"
    "}\n"
    "extern \"C\" __global__ void __launch_bounds__(128)\n"
    "gemm_tc_f16(ushort *c, long c_off, const ushort *a, long a_off, const ushort *b,\n"
    "            long b_off, const long *L) {\n"
    "    gemm_tc<0>(c, c_off, a, a_off, b, b_off, L);\n"
    "}\n"
    "extern \"C\" __global__ void __launch_bounds__(128)\n"
    "gemm_tc_bf16(ushort *c, long c_off, const ushort *a, long a_off, const ushort *b,\n"
    "             long b_off, const long *L) {\n"
    "    gemm_tc<1>(c, c_off, a, a_off, b, b_off, L);\n"
    "}\n";

const char *cu_gemm_source(void) { return gemm_source; }

bool cu_gemm_applies(int major, const porta_tensor *const *inputs, int input_count,
                     const porta_tensor *out) {
    if (major < 8 || input_count != 2 || out->rank < 2) return false;
    porta_dtype dtype = out->dtype;
    return (dtype == PORTA_F16 || dtype == PORTA_BF16) && inputs[0]->dtype == dtype &&
           inputs[1]->dtype == dtype;
}

porta_status *cu_gemm_run(porta_device *device, const porta_tensor *const *inputs,
                          porta_tensor *out) {
    const porta_tensor *a = inputs[0], *b = inputs[1];
    if (porta_tensor_numel(out) == 0) return NULL;
    int batch_rank = out->rank - 2;
    int64_t m = out->sizes[batch_rank], n = out->sizes[batch_rank + 1];
    int64_t batches = porta_tensor_numel(out) / (m * n);
    int64_t m_blocks = (m + GEMM_BLOCK - 1) / GEMM_BLOCK;
    int64_t n_blocks = (n + GEMM_BLOCK - 1) / GEMM_BLOCK;
    clk_mem layout_buffer;
    PORTA_TRY(clk_matmul_layout(device, a, b, out, m_blocks, &layout_buffer));
    const char *name = out->dtype == PORTA_BF16 ? "gemm_tc_bf16" : "gemm_tc_f16";
    clk_args args;
    porta_status *status = clk_begin(&cu_launcher, device, gemm_source, name, &args);
    if (!status) {
        clk_arg_tensor(&args, out);
        clk_arg_tensor(&args, a);
        clk_arg_tensor(&args, b);
        clk_arg_buffer(&args, layout_buffer);
        size_t global[2] = {(size_t)n_blocks * GEMM_THREADS, (size_t)(batches * m_blocks)};
        size_t local[2] = {GEMM_THREADS, 1};
        status = clk_launch_2d(&args, global, local);
    }
    clk_release(device, layout_buffer);
    return status ? porta_error_context(status, "tensor-core matmul") : NULL;
}
