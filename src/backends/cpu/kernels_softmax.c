/* PRIM_SOFTMAX on the CPU: each row (the last axis, contiguous float32) is
 * read from memory once. A row of up to CACHED_ROW elements is normalized
 * while it stays in cache: its maximum, then x - max written to out and
 * exponentiated there (vmath), then the sum and the scale, as PyTorch's
 * CPU kernel does. Short rows go side by side: a block of rows is
 * exponentiated in one vmath call. A longer row takes two passes over
 * memory: an online maximum and sum (the sum rescaled when the maximum
 * grows), then the result. Rows are split over the thread pool. */
#include <math.h>
#include <string.h>

#include "backends/cpu/cpu_kernels.h"
#include "backends/cpu/threadpool.h"
#include "backends/cpu/vmath.h"
#include "core/status.h"
#include "core/tensor_layout.h"

/* Elements exponentiated per vmath call: a block of short rows, or a chunk
 * of a long one (on the stack: 16 KiB). */
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
#define WIDE_LOOP __attribute__((target_clones("avx512f", "avx2", "default")))
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

/* sum(exp(x[i])) over chunks through a stack buffer. */
static float exp_sum(const vmath_table *vm, const float *x, int64_t n) {
    float chunk[BLOCK];
    float s = 0;
    for (int64_t i = 0; i < n; i += BLOCK) {
        int64_t len = n - i < BLOCK ? n - i : BLOCK;
        vm->exp(x + i, chunk, len);
        s += row_sum(chunk, NULL, len);
    }
    return s;
}

typedef struct softmax_job {
    porta_softmax_op op;
    const float *a, *b;
    float *out;
    int64_t cols;
    const vmath_table *vm;
} softmax_job;

/* Rows [begin, end) of a row of at most CACHED_ROW elements, BLOCK elements
 * (or one row) at a time. */
static void forward_cached(const softmax_job *job, int64_t begin, int64_t end) {
    int64_t cols = job->cols, per_block = cols >= BLOCK ? 1 : BLOCK / cols;
    bool logarithm = job->op == PORTA_LOG_SOFTMAX;
    for (int64_t first = begin; first < end; first += per_block) {
        int64_t last = first + per_block < end ? first + per_block : end;
        float *out = job->out + first * cols;
        for (int64_t row = first; row < last; row++) {
            const float *x = job->a + row * cols;
            shift_scale(x, row_max(x, cols), 1.0f, job->out + row * cols, cols);
        }
        if (!logarithm) job->vm->exp(out, out, (last - first) * cols);
        for (int64_t row = first; row < last; row++) {
            float *y = job->out + row * cols;
            if (logarithm)
                shift_scale(y, logf(exp_sum(job->vm, y, cols)), 1.0f, y, cols);
            else
                shift_scale(y, 0.0f, 1.0f / row_sum(y, NULL, cols), y, cols);
        }
    }
}

/* One long row: the online maximum and sum over chunks, then the result. */
static void forward_online(const softmax_job *job, int64_t row) {
    int64_t cols = job->cols;
    const float *x = job->a + row * cols;
    float *y = job->out + row * cols;
    float chunk[BLOCK];
    float m = -INFINITY;
    double s = 0;
    for (int64_t i = 0; i < cols; i += BLOCK) {
        int64_t len = cols - i < BLOCK ? cols - i : BLOCK;
        float chunk_max = row_max(x + i, len);
        if (chunk_max > m) {
            s *= exp((double)m - chunk_max);
            m = chunk_max;
        }
        shift_scale(x + i, m, 1.0f, chunk, len);
        job->vm->exp(chunk, chunk, len);
        s += row_sum(chunk, NULL, len);
    }
    if (job->op == PORTA_LOG_SOFTMAX) {
        shift_scale(x, m, 1.0f, y, cols);
        shift_scale(y, (float)log(s), 1.0f, y, cols);
        return;
    }
    shift_scale(x, m, 1.0f, y, cols);
    job->vm->exp(y, y, cols);
    shift_scale(y, 0.0f, (float)(1.0 / s), y, cols);
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
