/* PRIM_SOFTMAX on the CPU: each row (the last axis, contiguous float32) is
 * read from memory once. A row of up to CACHED_ROW elements is normalized
 * while it stays in cache, as PyTorch's CPU kernel does: its maximum;
 * exp(x - max) written to out, its sum, the scale (log_softmax: the sum of
 * exp(x - max) through a stack chunk, then (x - max) - log(sum)). A longer
 * row takes two passes over memory: an online maximum and sum (the sum
 * rescaled when the maximum grows), then the result. The exponential of x
 * - max (never positive) is this file's own vectorized loop; the
 * gradients exponentiate any value through vmath, a block of short rows
 * per call. The loops are 16 floats wide. Rows are split over the thread
 * pool. */
#include <math.h>
#include <string.h>

#include "backends/cpu/cpu_kernels.h"
#include "backends/cpu/threadpool.h"
#include "backends/cpu/vmath.h"
#include "core/status.h"
#include "core/tensor_layout.h"

/* Elements per block of short rows exponentiated in one vmath call
 * (gradients), and per chunk of a long row's online maximum and sum. */
#define BLOCK 4096
/* Rows up to this many elements (256 KiB of x and of out) stay in L2
 * between their passes. */
#define CACHED_ROW (32 * 1024)
/* Elements per task below which threading costs more than it saves. */
#define GRAIN 32768

/* Sixteen floats at a time with the compiler's vector extensions; on
 * x86-64 the loops are built for AVX-512, AVX2 and the baseline and the
 * best the CPU runs is picked at load time (target_clones), elsewhere once
 * for the target. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define WIDE_LOOP __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define WIDE_LOOP
#endif
#define LANES 16
typedef float vec __attribute__((vector_size(LANES * sizeof(float))));
typedef int32_t mask __attribute__((vector_size(LANES * sizeof(float))));
/* vec at any float's alignment, for loads and stores from rows */
typedef float unaligned_vec
    __attribute__((vector_size(LANES * sizeof(float)), aligned(sizeof(float)), may_alias));

/* Macros, not functions: a wide vector passed by value would take an ABI
 * that depends on the ISA of each clone. */
#define LOAD(p) (*(const unaligned_vec *)(p))
#define STORE(p, v) (*(unaligned_vec *)(p) = (v))
#define SPLAT(value) ((vec){0} + (value))
/* The larger of a and b lane by lane, b where either is NaN (as x > m ? x : m). */
#define VMAX(a, b) ((vec)((((a) > (b)) & (mask)(a)) | (~((a) > (b)) & (mask)(b))))

/* The maximum of x[0, n); NaN is skipped, which leaves the row NaN after
 * x - max anyway. */
WIDE_LOOP static float row_max(const float *x, int64_t n) {
    vec m0 = SPLAT(-INFINITY), m1 = m0;
    int64_t i = 0;
    for (; i + 2 * LANES <= n; i += 2 * LANES) {
        m0 = VMAX(LOAD(x + i), m0);
        m1 = VMAX(LOAD(x + i + LANES), m1);
    }
    if (i + LANES <= n) {
        m0 = VMAX(LOAD(x + i), m0);
        i += LANES;
    }
    m0 = VMAX(m0, m1);
    float m = -INFINITY;
    for (int lane = 0; lane < LANES; lane++) m = m0[lane] > m ? m0[lane] : m;
    for (; i < n; i++) m = x[i] > m ? x[i] : m;
    return m;
}

/* sum(x[i]) or, with y, sum(x[i] * y[i]): 32 float lanes over runs of
 * SUM_RUN elements, the runs' totals added in double, so a long row's sum
 * is as accurate as a pairwise one. */
#define SUM_RUN 1024
WIDE_LOOP static float row_sum(const float *x, const float *y, int64_t n) {
    double total = 0;
    int64_t i = 0;
    while (i + 2 * LANES <= n) {
        vec s0 = SPLAT(0), s1 = s0;
        int64_t stop = i + SUM_RUN < n ? i + SUM_RUN : n;
        if (y) {
            for (; i + 2 * LANES <= stop; i += 2 * LANES) {
                s0 += LOAD(x + i) * LOAD(y + i);
                s1 += LOAD(x + i + LANES) * LOAD(y + i + LANES);
            }
        } else {
            for (; i + 2 * LANES <= stop; i += 2 * LANES) {
                s0 += LOAD(x + i);
                s1 += LOAD(x + i + LANES);
            }
        }
        s0 += s1;
        float run = 0;
        for (int lane = 0; lane < LANES; lane++) run += s0[lane];
        total += run;
    }
    for (; i < n; i++) total += x[i] * (y ? y[i] : 1.0f);
    return (float)total;
}

/* out[i] = (x[i] - shift) * scale. */
WIDE_LOOP static void shift_scale(const float *x, float shift, float scale, float *out,
                                  int64_t n) {
    vec vs = SPLAT(shift), vc = SPLAT(scale);
    int64_t i = 0;
    for (; i + LANES <= n; i += LANES) STORE(out + i, (LOAD(x + i) - vs) * vc);
    for (; i < n; i++) out[i] = (x[i] - shift) * scale;
}

/* out[i] = (x[i] - max) - log_sum, rounded in that order: max + log_sum
 * would lose log_sum where it is small beside max. */
WIDE_LOOP static void log_normalize(const float *x, float max, float log_sum, float *out,
                                    int64_t n) {
    vec vm = SPLAT(max), vl = SPLAT(log_sum);
    int64_t i = 0;
    for (; i + LANES <= n; i += LANES) STORE(out + i, (LOAD(x + i) - vm) - vl);
    for (; i < n; i++) out[i] = (x[i] - max) - log_sum;
}

/* out[i] = g[i] - e[i] * total (log_softmax's gradient, e = exp(y), may be
 * out) or y[i] * (g[i] - total) (softmax's). */
WIDE_LOOP static void gradient_row(bool logarithm, const float *g, const float *y, float total,
                                   float *out, int64_t n) {
    vec vt = SPLAT(total);
    int64_t i = 0;
    if (logarithm) {
        for (; i + LANES <= n; i += LANES) STORE(out + i, LOAD(g + i) - LOAD(out + i) * vt);
        for (; i < n; i++) out[i] = g[i] - out[i] * total;
    } else {
        for (; i + LANES <= n; i += LANES) STORE(out + i, LOAD(y + i) * (LOAD(g + i) - vt));
        for (; i < n; i++) out[i] = y[i] * (g[i] - total);
    }
}

/* out[i] = exp(x[i] - shift) for x[i] - shift <= 0 (or NaN): Cephes'
 * expf (round t / ln 2 to k, t - k ln 2 in two parts, a degree-7
 * polynomial, times 2^k), within 1.02 ULP of exp in double with or
 * without fused multiply-adds (every float in [-87.3, 0] checked); t below
 * the smallest normal result gives 0, NaN stays NaN. Written per element
 * for the compiler to vectorize (ternaries become masks), which it does at
 * -O3, with multiply-adds fused where the ISA has them. */
WIDE_LOOP __attribute__((optimize("O3", "fp-contract=fast"))) static void exp_shift(
    const float *x, float shift, float *out, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        float t = x[i] - shift;
        float clamped = t < -87.33654f ? -87.33654f : t;
        float shifted = clamped * 1.44269504088896341f + 12582912.0f;
        float k = shifted - 12582912.0f;
        float r = clamped - k * 0.693359375f - k * -2.12194440e-4f;
        float p = 1.9875691500e-4f;
        p = p * r + 1.3981999507e-3f;
        p = p * r + 8.3334519073e-3f;
        p = p * r + 4.1665795894e-2f;
        p = p * r + 1.6666665459e-1f;
        p = p * r + 5.0000001201e-1f;
        p = p * r * r + r + 1.0f;
        /* unsigned: a NaN lane's bits shift too, and are discarded below */
        union { float f; uint32_t u; } bits = {.f = shifted}, scale;
        scale.u = (bits.u - 0x4B400000u + 127u) << 23;
        float e = p * scale.f;
        out[i] = t != t ? t : t < -87.33654f ? 0.0f : e;
    }
}

/* sum(exp(x[i] - shift)), through a stack chunk. */
static float exp_shift_sum(const float *x, float shift, int64_t n) {
    float chunk[BLOCK];
    double total = 0;
    for (int64_t i = 0; i < n; i += BLOCK) {
        int64_t len = n - i < BLOCK ? n - i : BLOCK;
        exp_shift(x + i, shift, chunk, len);
        total += row_sum(chunk, NULL, len);
    }
    return (float)total;
}

typedef struct softmax_job {
    porta_softmax_op op;
    const float *a, *b;
    float *out;
    int64_t cols;
    const vmath_table *vm;
} softmax_job;

/* Rows [begin, end), each of at most CACHED_ROW elements. */
static void forward_cached(const softmax_job *job, int64_t begin, int64_t end) {
    int64_t cols = job->cols;
    for (int64_t row = begin; row < end; row++) {
        const float *x = job->a + row * cols;
        float *y = job->out + row * cols, m = row_max(x, cols);
        if (job->op == PORTA_LOG_SOFTMAX) {
            log_normalize(x, m, logf(exp_shift_sum(x, m, cols)), y, cols);
        } else {
            exp_shift(x, m, y, cols);
            shift_scale(y, 0.0f, 1.0f / row_sum(y, NULL, cols), y, cols);
        }
    }
}

/* One long row: the online maximum and sum over chunks, then the result. */
static void forward_online(const softmax_job *job, int64_t row) {
    int64_t cols = job->cols;
    const float *x = job->a + row * cols;
    float *y = job->out + row * cols;
    float m = -INFINITY;
    double total = 0;
    for (int64_t i = 0; i < cols; i += BLOCK) {
        int64_t len = cols - i < BLOCK ? cols - i : BLOCK;
        float chunk_max = row_max(x + i, len);
        if (chunk_max > m) {
            total *= exp((double)m - chunk_max);
            m = chunk_max;
        }
        total += exp_shift_sum(x + i, m, len);
    }
    if (job->op == PORTA_LOG_SOFTMAX) {
        log_normalize(x, m, (float)log(total), y, cols);
        return;
    }
    exp_shift(x, m, y, cols);
    shift_scale(y, 0.0f, (float)(1.0 / total), y, cols);
}

/* softmax: out = y * (g - sum(g * y)); log_softmax: out = g - exp(y) *
 * sum(g), exp(y) of a block of rows in one vmath call. */
static void backward_rows(const softmax_job *job, int64_t begin, int64_t end) {
    int64_t cols = job->cols, per_block = cols >= BLOCK ? 1 : BLOCK / cols;
    bool logarithm = job->op == PORTA_LOG_SOFTMAX_BACKWARD;
    for (int64_t first = begin; first < end; first += per_block) {
        int64_t last = first + per_block < end ? first + per_block : end;
        if (logarithm)
            job->vm->exp(job->b + first * cols, job->out + first * cols, (last - first) * cols);
        for (int64_t row = first; row < last; row++) {
            const float *g = job->a + row * cols, *y = job->b + row * cols;
            float *out = job->out + row * cols;
            gradient_row(logarithm, g, y, row_sum(g, logarithm ? NULL : y, cols), out, cols);
        }
    }
}

static void run_rows(void *ctx, int64_t begin, int64_t end, int thread) {
    (void)thread;
    const softmax_job *job = ctx;
    if (job->op == PORTA_SOFTMAX_BACKWARD || job->op == PORTA_LOG_SOFTMAX_BACKWARD)
        backward_rows(job, begin, end);
    else if (job->cols <= CACHED_ROW)
        forward_cached(job, begin, end);
    else
        for (int64_t row = begin; row < end; row++) forward_online(job, row);
}

porta_status *cpu_exec_softmax(const ir_prim *prim, const porta_tensor *const *inputs,
                               int input_count, porta_tensor *out) {
    const porta_tensor *a = inputs[0];
    int64_t numel = porta_tensor_numel(a);
    if (numel == 0) return NULL;
    if (!porta_tensor_is_contiguous(out))
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "cpu: %s: expected a contiguous out tensor, got a strided view",
                           ir_prim_name(prim));
    softmax_job job = {
        .op = (porta_softmax_op)prim->op,
        .a = (const float *)core_tensor_data(a),
        .b = input_count > 1 ? (const float *)core_tensor_data(inputs[1]) : NULL,
        .out = (float *)core_tensor_data(out),
        .cols = a->sizes[a->rank - 1],
        .vm = vmath_f32(),
    };
    int64_t grain = job.cols >= GRAIN ? 1 : GRAIN / job.cols;
    cpu_parallel_for(numel / job.cols, grain, run_rows, &job);
    return NULL;
}
