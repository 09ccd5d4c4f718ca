/* Dense matrix multiply kernels of the CPU backend. */
#ifndef PORTA_CPU_GEMM_H
#define PORTA_CPU_GEMM_H

#include <stdint.h>

#include "porta.h"

/* C = A @ B + beta * C for an M x K matrix A and a K x N matrix B, each
 * addressed by element strides (rs: between rows, cs: between columns), so
 * transposed and non-contiguous operands need no copy. beta == 0 ignores C's
 * old contents (NaN included). Reentrant: scratch comes from core_host_alloc
 * per call, and the only failure is running out of memory. */
porta_status *cpu_sgemm(int64_t m, int64_t n, int64_t k,
                        const float *a, int64_t a_rs, int64_t a_cs,
                        const float *b, int64_t b_rs, int64_t b_cs,
                        float beta, float *c, int64_t c_rs, int64_t c_cs);

/* Work done on C while it is still in cache: `fn` is called once for each
 * block of C (rows [row0, row0 + rows) x columns [col0, col0 + cols), in
 * the caller's coordinates) as soon as the block holds its final values,
 * on the thread that computed it. The blocks do not overlap and cover C
 * exactly; several may run at once on different threads. A fused
 * elementwise kernel over the product (bias, activation) is the use. */
typedef void (*cpu_gemm_epilogue_fn)(void *ctx, int64_t row0, int64_t rows, int64_t col0,
                                     int64_t cols);
typedef struct cpu_gemm_epilogue {
    cpu_gemm_epilogue_fn fn;
    void *ctx;
} cpu_gemm_epilogue;

/* cpu_sgemm, then `epilogue` over C block by block (NULL: none). */
porta_status *cpu_sgemm_with_epilogue(int64_t m, int64_t n, int64_t k,
                                      const float *a, int64_t a_rs, int64_t a_cs,
                                      const float *b, int64_t b_rs, int64_t b_cs,
                                      float beta, float *c, int64_t c_rs, int64_t c_cs,
                                      const cpu_gemm_epilogue *epilogue);

#endif
