/* The AVX2 micro-kernel: a 16 x 6 tile of C held in 12 ymm registers, one
 * 16-float column of A (two registers) and one broadcast value of B at a
 * time, which fills the 16 registers AVX2 has. */
#include <immintrin.h>

#include "gemm_kernel.h"

#define MR 16
#define NR 6

/* AVX2 masked loads and stores take the mask as a vector of lanes. */
static inline __m256i lane_mask(int lanes) {
    __m256i index = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(lanes), index);
}

static inline void store_column(float *c, __m256 lo, __m256 hi, float beta, __m256i mask_lo,
                                __m256i mask_hi) {
    if (beta != 0.0f) {
        __m256 vbeta = _mm256_set1_ps(beta);
        lo = _mm256_fmadd_ps(vbeta, _mm256_maskload_ps(c, mask_lo), lo);
        hi = _mm256_fmadd_ps(vbeta, _mm256_maskload_ps(c + 8, mask_hi), hi);
    }
    _mm256_maskstore_ps(c, mask_lo, lo);
    _mm256_maskstore_ps(c + 8, mask_hi, hi);
}

static void microkernel_16x6(int64_t k, const float *a, const float *b, float beta, float *c,
                             int64_t ldc, int m, int n) {
    __m256 lo[NR], hi[NR];
#pragma GCC unroll 6
    for (int j = 0; j < NR; j++) lo[j] = hi[j] = _mm256_setzero_ps();
    for (int j = 0; j < n; j++) {
        _mm_prefetch((const char *)(c + j * ldc), _MM_HINT_T0);
        _mm_prefetch((const char *)(c + j * ldc + 15), _MM_HINT_T0);
    }
#pragma GCC unroll 4
    for (int64_t p = 0; p < k; p++) {
        __m256 a_lo = _mm256_load_ps(a), a_hi = _mm256_load_ps(a + 8);
#pragma GCC unroll 6
        for (int j = 0; j < NR; j++) {
            __m256 bj = _mm256_broadcast_ss(b + j);
            lo[j] = _mm256_fmadd_ps(a_lo, bj, lo[j]);
            hi[j] = _mm256_fmadd_ps(a_hi, bj, hi[j]);
        }
        a += MR;
        b += NR;
    }
    __m256i mask_lo = lane_mask(m), mask_hi = lane_mask(m - 8);
#pragma GCC unroll 6
    for (int j = 0; j < NR; j++)
        if (j < n) store_column(c + j * ldc, lo[j], hi[j], beta, mask_lo, mask_hi);
}

const gemm_kernel gemm_kernel_avx2 = {"avx2", MR, NR, microkernel_16x6};
