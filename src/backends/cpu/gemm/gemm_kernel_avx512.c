/* The AVX-512 micro-kernel: a 32 x 12 tile of C held in 24 zmm registers.
 * Each step of k loads one 32-float column of A (two registers) and
 * multiplies it by the 12 values of a row of B, each broadcast from memory
 * into a register that feeds two FMAs: 24 FMAs per 2 vector loads and 12
 * broadcasts keep both FMA pipes busy, in 27 of the 32 registers. */
#include <immintrin.h>

#include "gemm_kernel.h"

#define MR 32
#define NR 12
/* The B sliver comes from L3 on its first use, too slowly for the hardware
 * prefetcher alone; fetching this far ahead (128 steps of k, running into
 * the next sliver near the end) hides that latency. */
#define B_PREFETCH_FLOATS (128 * NR)
/* C is fetched this many steps of k before the end: early enough to hide
 * a miss, late enough that streaming A through L1 does not evict it. */
#define C_PREFETCH_STEPS 64

/* Stores one 32-row column of the tile: masked lanes are neither read nor
 * written, so partial tiles at the matrix edge need no copy. */
static inline void store_column(float *c, __m512 lo, __m512 hi, float beta, __mmask16 mask_lo,
                                __mmask16 mask_hi) {
    if (beta != 0.0f) {
        __m512 vbeta = _mm512_set1_ps(beta);
        lo = _mm512_fmadd_ps(vbeta, _mm512_maskz_loadu_ps(mask_lo, c), lo);
        hi = _mm512_fmadd_ps(vbeta, _mm512_maskz_loadu_ps(mask_hi, c + 16), hi);
    }
    _mm512_mask_storeu_ps(c, mask_lo, lo);
    _mm512_mask_storeu_ps(c + 16, mask_hi, hi);
}

/* One step of k: the tile += a column of A times a row of B. */
static inline void multiply_step(const float *a, const float *b, __m512 lo[NR], __m512 hi[NR]) {
    __m512 a_lo = _mm512_load_ps(a), a_hi = _mm512_load_ps(a + 16);
    _mm_prefetch((const char *)(b + B_PREFETCH_FLOATS), _MM_HINT_T0);
#pragma GCC unroll 12
    for (int j = 0; j < NR; j++) {
        __m512 bj = _mm512_set1_ps(b[j]);
        lo[j] = _mm512_fmadd_ps(a_lo, bj, lo[j]);
        hi[j] = _mm512_fmadd_ps(a_hi, bj, hi[j]);
    }
}

static inline void prefetch_c(const float *c, int64_t ldc, int n) {
    for (int j = 0; j < n; j++) {
        _mm_prefetch((const char *)(c + j * ldc), _MM_HINT_T0);
        _mm_prefetch((const char *)(c + j * ldc + 16), _MM_HINT_T0);
        _mm_prefetch((const char *)(c + j * ldc + 31), _MM_HINT_T0);
    }
}

static void microkernel_32x12(int64_t k, const float *a, const float *b, float beta, float *c,
                              int64_t ldc, int m, int n) {
    __m512 lo[NR], hi[NR];
#pragma GCC unroll 12
    for (int j = 0; j < NR; j++) lo[j] = hi[j] = _mm512_setzero_ps();
    int64_t p = 0;
#pragma GCC unroll 4
    for (; p < k - C_PREFETCH_STEPS; p++, a += MR, b += NR) multiply_step(a, b, lo, hi);
    prefetch_c(c, ldc, n);
#pragma GCC unroll 4
    for (; p < k; p++, a += MR, b += NR) multiply_step(a, b, lo, hi);
    __mmask16 mask_lo = m >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << m) - 1);
    __mmask16 mask_hi = m >= 32 ? (__mmask16)0xFFFF
                        : m > 16 ? (__mmask16)((1u << (m - 16)) - 1)
                                 : (__mmask16)0;
#pragma GCC unroll 12
    for (int j = 0; j < NR; j++)
        if (j < n) store_column(c + j * ldc, lo[j], hi[j], beta, mask_lo, mask_hi);
}

const gemm_kernel gemm_kernel_avx512 = {"avx512", MR, NR, microkernel_32x12};
