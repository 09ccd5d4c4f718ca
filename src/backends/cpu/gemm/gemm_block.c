/* The two innermost loops: micro-tiles of one packed A block times one
 * packed B panel, and the C layouts the kernels cannot write directly. */
#include "gemm_internal.h"

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* The kernels write C with unit row stride; any other layout goes through a
 * tile on the stack and is merged here. */
static void tile_through_buffer(const gemm_kernel *kernel, int64_t kc, const float *a,
                                const float *b, float beta, float *c, int64_t c_rs,
                                int64_t c_cs, int m, int n) {
    _Alignas(64) float tile[GEMM_MAX_MR * GEMM_MAX_NR];
    kernel->run(kc, a, b, 0.0f, tile, kernel->mr, m, n);
    for (int j = 0; j < n; j++) {
        const float *from = tile + j * kernel->mr;
        float *to = c + j * c_cs;
        if (beta == 0.0f)
            for (int i = 0; i < m; i++) to[i * c_rs] = from[i];
        else
            for (int i = 0; i < m; i++) to[i * c_rs] = from[i] + beta * to[i * c_rs];
    }
}

/* The B sliver is the outer loop so that it stays in L1 while the A block's
 * slivers stream past it from L2. */
void gemm_multiply_block(const gemm_kernel *kernel, int64_t kc, const float *a_pack,
                         const float *b_pack, float beta, float *c, int64_t c_rs, int64_t c_cs,
                         int64_t mc, int64_t nc, const gemm_block_done *done) {
    const int mr = kernel->mr, nr = kernel->nr;
    for (int64_t jr = 0; jr < nc; jr += nr) {
        const float *b = b_pack + jr * kc;
        int n = (int)min64(nr, nc - jr);
        for (int64_t ir = 0; ir < mc; ir += mr) {
            const float *a = a_pack + ir * kc;
            float *tile = c + ir * c_rs + jr * c_cs;
            int m = (int)min64(mr, mc - ir);
            if (c_rs == 1)
                kernel->run(kc, a, b, beta, tile, c_cs, m, n);
            else
                tile_through_buffer(kernel, kc, a, b, beta, tile, c_rs, c_cs, m, n);
        }
        /* The strip (mc x n) is still in L1/L2: the cheapest moment. */
        if (done) gemm_finish_block(done->problem, done->row0, mc, done->col0 + jr, n);
    }
}
