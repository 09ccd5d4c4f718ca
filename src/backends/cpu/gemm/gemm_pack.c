/* Packing operands into the sliver layout the micro-kernels stream through.
 * Two layouts are common enough to deserve fast paths: slivers contiguous in
 * the source (copy each column) and slivers across contiguous source rows
 * (transpose 4 x 4 blocks); any other strides take a plain gather. */
#ifdef __SSE__
#include <xmmintrin.h>
#endif

#include <stdbool.h>

#include "gemm_internal.h"

#define SHORT_RUN_FLOATS 1024
#define PREFETCH_COLUMNS 8

/* Rows past the matrix edge only feed results the kernels discard, but
 * must not be uninitialized memory: garbage could be a slow denormal. */
static void zero_pad(float *dst, int rows, int64_t kc, int width) {
    for (int64_t p = 0; p < kc; p++)
        for (int i = rows; i < width; i++) dst[p * width + i] = 0.0f;
}

/* The compiler leaves a copy of run-time length scalar at -O2. */
static inline void copy_floats(float *to, const float *from, int count) {
    int i = 0;
#ifdef __SSE__
    for (; i + 4 <= count; i += 4) _mm_storeu_ps(to + i, _mm_loadu_ps(from + i));
#endif
    for (; i < count; i++) to[i] = from[i];
}

/* Source rows run along the slivers (row_stride == 1): every sliver's
 * column p is a piece of the source's column p. Walking p outermost reads
 * each source column once from start to end, a run the hardware
 * prefetchers follow (one column at a time measured fastest: the source is
 * often read from memory only this once). Runs of a few hundred floats end
 * before the prefetchers get going, so for them the columns a few steps
 * ahead are requested explicitly. */
static void pack_columns(float *dst, const float *src, int64_t col_stride, int64_t rows,
                         int64_t kc, int width) {
    int64_t sliver_floats = (int64_t)width * kc;
    bool prefetch = rows <= SHORT_RUN_FLOATS;
    for (int64_t p = 0; p < kc; p++) {
        const float *from = src + p * col_stride;
        if (prefetch && p + PREFETCH_COLUMNS < kc)
            for (int64_t i = 0; i < rows; i += 16)
                __builtin_prefetch(from + PREFETCH_COLUMNS * col_stride + i);
        for (int64_t r = 0; r < rows; r += width) {
            int count = rows - r < width ? (int)(rows - r) : width;
            copy_floats(dst + r / width * sliver_floats + p * width, from + r, count);
        }
    }
    int tail = (int)(rows % width);
    if (tail) zero_pad(dst + rows / width * sliver_floats, tail, kc, width);
}

static void pack_gather(float *dst, const float *src, int64_t row_stride, int64_t col_stride,
                        int row_begin, int row_end, int64_t p_begin, int64_t kc, int width) {
    for (int64_t p = p_begin; p < kc; p++)
        for (int i = row_begin; i < row_end; i++)
            dst[p * width + i] = src[i * row_stride + p * col_stride];
}

/* Source rows are contiguous (col_stride == 1): each sliver column takes one
 * element from each of `rows` rows, so transpose 4 x 4 blocks in registers
 * instead of gathering element by element. */
static void pack_transpose(float *dst, const float *src, int64_t row_stride, int rows, int64_t kc,
                           int width) {
    int full_rows = 0;
    int64_t full_kc = 0;
#ifdef __SSE__
    full_rows = rows / 4 * 4;
    full_kc = kc / 4 * 4;
    for (int i = 0; i < full_rows; i += 4) {
        const float *r0 = src + i * row_stride, *r1 = r0 + row_stride;
        const float *r2 = r1 + row_stride, *r3 = r2 + row_stride;
        for (int64_t p = 0; p < full_kc; p += 4) {
            __m128 x0 = _mm_loadu_ps(r0 + p), x1 = _mm_loadu_ps(r1 + p);
            __m128 x2 = _mm_loadu_ps(r2 + p), x3 = _mm_loadu_ps(r3 + p);
            _MM_TRANSPOSE4_PS(x0, x1, x2, x3);
            float *to = dst + p * width + i;
            _mm_storeu_ps(to, x0);
            _mm_storeu_ps(to + width, x1);
            _mm_storeu_ps(to + 2 * width, x2);
            _mm_storeu_ps(to + 3 * width, x3);
        }
    }
#endif
    /* The columns past the last block of 4, then the rows past it. */
    pack_gather(dst, src, row_stride, 1, 0, full_rows, full_kc, kc, width);
    pack_gather(dst, src, row_stride, 1, full_rows, rows, 0, kc, width);
    zero_pad(dst, rows, kc, width);
}

void gemm_pack(float *dst, const float *src, int64_t row_stride, int64_t col_stride,
               int64_t rows, int64_t kc, int width) {
    if (row_stride == 1 || rows == 1) {
        pack_columns(dst, src, col_stride, rows, kc, width);
        return;
    }
    for (int64_t r = 0; r < rows; r += width) {
        int sliver_rows = rows - r < width ? (int)(rows - r) : width;
        const float *from = src + r * row_stride;
        if (col_stride == 1) {
            pack_transpose(dst, from, row_stride, sliver_rows, kc, width);
        } else {
            pack_gather(dst, from, row_stride, col_stride, 0, sliver_rows, 0, kc, width);
            zero_pad(dst, sliver_rows, kc, width);
        }
        dst += (int64_t)width * kc;
    }
}
