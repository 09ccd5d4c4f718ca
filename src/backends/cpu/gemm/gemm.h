/* Dense matrix multiply kernels of the CPU backend. */
#ifndef PORTA_CPU_GEMM_H
#define PORTA_CPU_GEMM_H

#include <stdint.h>

#include "porta.h"

/* C = A @ B + beta * C for an M x K matrix A and a K x N matrix B, each
 * addressed by element strides (rs: between rows, cs: between columns), so
 * transposed and non-contiguous operands need no copy. beta == 0 ignores C's
 * old contents (NaN included). Reentrant: scratch comes from porta_host_alloc
 * per call, and the only failure is running out of memory. */
porta_status *cpu_sgemm(int64_t m, int64_t n, int64_t k,
                        const float *a, int64_t a_rs, int64_t a_cs,
                        const float *b, int64_t b_rs, int64_t b_cs,
                        float beta, float *c, int64_t c_rs, int64_t c_cs);

#endif
