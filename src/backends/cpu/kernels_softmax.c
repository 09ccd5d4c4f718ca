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

/* Four floats at a time with the compiler's vector extensions: SSE on the
 * x86-64 baseline, NEON elsewhere, and plain code where neither. */
typedef float vec4 __attribute__((vector_size(16)));
typedef int32_t mask4 __attribute__((vector_size(16)));

static vec4 load4(const float *p) {
    vec4 v;
    memcpy(&v, p, sizeof v);
    return v;
}

static void store4(float *p, vec4 v) { memcpy(p, &v, sizeof v); }

static vec4 splat4(float value) { return (vec4){value, value, value, value}; }

/* The larger of a and b lane by lane, b where either is NaN (as x > m ? x : m). */
static vec4 max4(vec4 a, vec4 b) {
    mask4 greater = a > b;
    return (vec4)((greater & (mask4)a) | (~greater & (mask4)b));
}

/* The maximum of x[0, n); NaN lanes are skipped, which leaves the result
 * NaN after x - max anyway. */
static float row_max(const float *x, int64_t n) {
    vec4 m0 = splat4(-INFINITY), m1 = m0, m2 = m0, m3 = m0;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        m0 = max4(load4(x + i), m0);
        m1 = max4(load4(x + i + 4), m1);
        m2 = max4(load4(x + i + 8), m2);
        m3 = max4(load4(x + i + 12), m3);
    }
    m0 = max4(max4(m0, m1), max4(m2, m3));
    float m = -INFINITY;
    for (int lane = 0; lane < 4; lane++) m = m0[lane] > m ? m0[lane] : m;
    for (; i < n; i++) m = x[i] > m ? x[i] : m;
    return m;
}

/* sum(x[i]) or, with y, sum(x[i] * y[i]), in 16 float lanes. */
static float row_sum(const float *x, const float *y, int64_t n) {
    vec4 s0 = splat4(0), s1 = s0, s2 = s0, s3 = s0;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        vec4 one = splat4(1);
        s0 += load4(x + i) * (y ? load4(y + i) : one);
        s1 += load4(x + i + 4) * (y ? load4(y + i + 4) : one);
        s2 += load4(x + i + 8) * (y ? load4(y + i + 8) : one);
        s3 += load4(x + i + 12) * (y ? load4(y + i + 12) : one);
    }
    s0 = (s0 + s1) + (s2 + s3);
    float s = (s0[0] + s0[1]) + (s0[2] + s0[3]);
    for (; i < n; i++) s += x[i] * (y ? y[i] : 1.0f);
    return s;
}

/* out[i] = (x[i] - shift) * scale. */
static void shift_scale(const float *x, float shift, float scale, float *out, int64_t n) {
    vec4 vs = splat4(shift), vc = splat4(scale);
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) store4(out + i, (load4(x + i) - vs) * vc);
    for (; i < n; i++) out[i] = (x[i] - shift) * scale;
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
            float total = row_sum(g, logarithm ? NULL : y, cols);
            vec4 vt = splat4(total);
            int64_t i = 0;
            if (logarithm) {
                for (; i + 4 <= cols; i += 4)
                    store4(out + i, load4(g + i) - load4(out + i) * vt);
                for (; i < cols; i++) out[i] = g[i] - out[i] * total;
            } else {
                for (; i + 4 <= cols; i += 4)
                    store4(out + i, load4(y + i) * (load4(g + i) - vt));
                for (; i < cols; i++) out[i] = y[i] * (g[i] - total);
            }
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
