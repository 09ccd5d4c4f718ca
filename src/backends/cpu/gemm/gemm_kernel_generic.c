/* The portable micro-kernel: plain C the compiler vectorizes with the
 * baseline instruction set, for CPUs without AVX2. */
#include "gemm_kernel.h"

#define MR 8
#define NR 4

static void microkernel_8x4(int64_t k, const float *a, const float *b, float beta, float *c,
                            int64_t ldc, int m, int n) {
    float acc[NR][MR] = {{0.0f}};
    for (int64_t p = 0; p < k; p++, a += MR, b += NR)
        for (int j = 0; j < NR; j++)
            for (int i = 0; i < MR; i++) acc[j][i] += a[i] * b[j];
    for (int j = 0; j < n; j++) {
        float *column = c + j * ldc;
        if (beta == 0.0f)
            for (int i = 0; i < m; i++) column[i] = acc[j][i];
        else
            for (int i = 0; i < m; i++) column[i] = acc[j][i] + beta * column[i];
    }
}

const gemm_kernel gemm_kernel_generic = {"generic", MR, NR, microkernel_8x4};
