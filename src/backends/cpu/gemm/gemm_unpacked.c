/* GEMM without packing, for problems too small to pay for it and for
 * k == 0, where it reduces to C = beta C. Each column of C is scaled by
 * beta, then gets k columns of A added in, each times one element of B:
 * runs along columns, which cpu_sgemm's orientation makes contiguous in
 * the common layouts. */
#ifdef __SSE__
#include <xmmintrin.h>
#endif

#include "gemm_internal.h"

/* Finished columns of C handed to the epilogue at once: about L1's size. */
#define EPILOGUE_FLOATS 4096

/* beta == 0 writes zeros, whatever C held (NaN included). */
static void scale_column(float *c, int64_t stride, int64_t m, float beta) {
    for (int64_t i = 0; i < m; i++) c[i * stride] = beta == 0.0f ? 0.0f : beta * c[i * stride];
}

/* c += alpha a over m elements. */
static void add_scaled(float *c, int64_t c_stride, const float *a, int64_t a_stride, int64_t m,
                       float alpha) {
    int64_t i = 0;
#ifdef __SSE__
    /* Spelled out: -O2 leaves a loop of unknown length scalar. */
    if (c_stride == 1 && a_stride == 1) {
        __m128 scale = _mm_set1_ps(alpha);
        for (; i + 4 <= m; i += 4)
            _mm_storeu_ps(c + i, _mm_add_ps(_mm_loadu_ps(c + i),
                                            _mm_mul_ps(_mm_loadu_ps(a + i), scale)));
    }
#endif
    for (; i < m; i++) c[i * c_stride] += a[i * a_stride] * alpha;
}

void gemm_run_unpacked(const gemm_problem *p) {
    int64_t pending = 0; /* first column not yet given to the epilogue */
    for (int64_t j = 0; j < p->n; j++) {
        float *c = p->c + j * p->c_cs;
        const float *b = p->b + j * p->b_cs;
        scale_column(c, p->c_rs, p->m, p->beta);
        for (int64_t q = 0; q < p->k; q++)
            add_scaled(c, p->c_rs, p->a + q * p->a_cs, p->a_rs, p->m, b[q * p->b_rs]);
        /* Finished columns go in groups: one call for a small C, and
         * cache-sized pieces of a large one (k == 0 can make C any size). */
        bool last = j + 1 == p->n;
        if (p->epilogue && (last || (j + 1 - pending) * p->m >= EPILOGUE_FLOATS)) {
            gemm_finish_block(p, 0, p->m, pending, j + 1 - pending);
            pending = j + 1;
        }
    }
}
