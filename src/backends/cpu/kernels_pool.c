/* PRIM_POOL_MAX on the CPU: one pass over the windows, PyTorch's CPU loop
 * per window (ir/prim.h): start at the window's first position inside the
 * input, then walk its positions in row-major order and take a value that
 * is greater than the best so far or NaN. Nothing is allocated; a window's
 * values are read where they lie, at any strides. Windows wholly inside the
 * input (all but the borders) read their taps through a table of offsets
 * made once per call, without a branch per tap; the others clip their taps
 * to the input. Rows of outputs (the last spatial axis) are split over the
 * pool when there is enough work. */
#include <string.h>

#include "backends/cpu/cpu_kernels.h"
#include "backends/cpu/threadpool.h"
#include "core/dtype.h"
#include "core/status.h"
#include "core/tensor_layout.h"

/* Window positions per task below which threading costs more than it saves. */
#define GRAIN 65536
#define SPATIAL 3
/* Windows of more taps take the clipped loop everywhere: per window, the
 * loop's own cost is small beside theirs. */
#define MAX_TAPS 64

/* Every geometry as 3 spatial axes (d, h, w): fewer axes lead with size 1. */
typedef struct pool_job {
    int64_t n, c;
    int64_t in[SPATIAL], out[SPATIAL], kernel[SPATIAL], stride[SPATIAL], padding[SPATIAL],
        dilation[SPATIAL];
    int64_t x_strides[2 + SPATIAL], out_strides[2 + SPATIAL];
    /* the outputs along w whose windows lie inside the input along w */
    int64_t inner_w_begin, inner_w_end;
    /* a whole window's taps in row-major order: offsets in x from its
     * first tap, and flat input index from its first tap's */
    int taps;
    int64_t tap_offset[MAX_TAPS], tap_flat[MAX_TAPS];
    const char *x;
    int64_t *indices;
} pool_job;

/* The taps of a window along one axis that lie inside the input: from
 * *first, `dilation` apart, below `end`. Returns whether none was clipped. */
static inline bool window_span(const pool_job *job, int axis, int64_t o, int64_t *first,
                               int64_t *end) {
    int64_t start = o * job->stride[axis] - job->padding[axis];
    int64_t stop = start + (job->kernel[axis] - 1) * job->dilation[axis] + 1;
    bool whole = start >= 0 && stop <= job->in[axis];
    while (start < 0) start += job->dilation[axis];
    *first = start;
    *end = stop < job->in[axis] ? stop : job->in[axis];
    return whole;
}

/* POOL_ROWS(name, type, value_t, LOAD, SELECT) makes name(): rows of
 * outputs, (n, c, od, oh) fixed and ow running. Whole windows choose
 * through masks, not branches, which random data would mispredict half of
 * the time: SELECT(take, a, b) is take (0 or 1) ? a : b on value_t's bits. `v != v` is NaN for floats and
 * always false for integers. A window with no tap inside the input (a large
 * dilation past the padding) reads nothing and keeps the index where its
 * first tap would be, as PyTorch's loop does. */
#define POOL_ROWS(name, type, value_t, LOAD, SELECT)                                               \
    /* A window that may be clipped: taps from (d0, h0, w0) below (d1, h1, w1). */          \
    static int64_t name##_clipped(const pool_job *job, const type *x, int64_t d0, int64_t d1, \
                                  int64_t h0, int64_t h1, int64_t w0, int64_t w1) {           \
        const int64_t *xs = job->x_strides;                                                   \
        int64_t best_at = (d0 * job->in[1] + h0) * job->in[2] + w0;                           \
        if (d0 >= d1 || h0 >= h1 || w0 >= w1) return best_at;                                 \
        value_t best = LOAD(x + d0 * xs[2] + h0 * xs[3] + w0 * xs[4]);                        \
        for (int64_t d = d0; d < d1; d += job->dilation[0])                                   \
            for (int64_t h = h0; h < h1; h += job->dilation[1]) {                             \
                const type *line = x + d * xs[2] + h * xs[3];                                 \
                int64_t at = (d * job->in[1] + h) * job->in[2];                               \
                for (int64_t w = w0; w < w1; w += job->dilation[2]) {                         \
                    value_t v = LOAD(line + w * xs[4]);                                       \
                    if (v > best || v != v) {                                                 \
                        best = v;                                                             \
                        best_at = at + w;                                                     \
                    }                                                                         \
                }                                                                             \
            }                                                                                 \
        return best_at;                                                                       \
    }                                                                                         \
    /* Whole windows along w, outputs [begin, end) of a row whose windows   \
     * start on line `line` (d and h applied) at flat index line_at; `taps` \
     * is a constant where the caller inlines it. */                          \
    static inline __attribute__((always_inline)) void name##_whole(                           \
        const pool_job *job, const type *line, int64_t line_at, int64_t *out, int64_t begin,  \
        int64_t end, int taps) {                                                              \
        int64_t x_step = job->x_strides[4], out_step = job->out_strides[4];                   \
        for (int64_t ow = begin; ow < end; ow++) {                                            \
            int64_t w = ow * job->stride[2] - job->padding[2];                                \
            const type *window = line + w * x_step;                                           \
            value_t best = LOAD(window);                                                      \
            int64_t best_at = 0;                                                              \
            for (int k = 1; k < taps; k++) {                                                  \
                value_t v = LOAD(window + job->tap_offset[k]);                                \
                int take = (v > best) | (v != v);                                             \
                best = SELECT(take, v, best);                                                 \
                best_at ^= (job->tap_flat[k] ^ best_at) & -(int64_t)take;                     \
            }                                                                                 \
            out[ow * out_step] = line_at + w + best_at;                                       \
        }                                                                                     \
    }                                                                                         \
    static void name(void *ctx, int64_t begin, int64_t end, int thread) {                    \
        (void)thread;                                                                         \
        const pool_job *job = ctx;                                                            \
        const int64_t *xs = job->x_strides, *os = job->out_strides;                           \
        for (int64_t row = begin; row < end; row++) {                                         \
            int64_t oh = row % job->out[1], od = row / job->out[1] % job->out[0];             \
            int64_t plane = row / job->out[1] / job->out[0];                                  \
            int64_t c = plane % job->c, n = plane / job->c;                                   \
            const type *x = (const type *)job->x + n * xs[0] + c * xs[1];                     \
            int64_t *out = job->indices + n * os[0] + c * os[1] + od * os[2] + oh * os[3];    \
            int64_t d0, d1, h0, h1, w0, w1;                                                   \
            bool whole = window_span(job, 0, od, &d0, &d1);                                   \
            whole = window_span(job, 1, oh, &h0, &h1) && whole && job->taps > 0;              \
            int64_t inner_begin = whole ? job->inner_w_begin : job->out[2];                   \
            int64_t inner_end = whole ? job->inner_w_end : job->out[2];                       \
            for (int64_t ow = 0; ow < job->out[2]; ow++) {                                    \
                if (ow == inner_begin) {                                                      \
                    const type *line = x + d0 * xs[2] + h0 * xs[3];                           \
                    int64_t line_at = (d0 * job->in[1] + h0) * job->in[2];                    \
                    if (job->taps == 4) /* 2x2, the most common window */                     \
                        name##_whole(job, line, line_at, out, ow, inner_end, 4);              \
                    else                                                                      \
                        name##_whole(job, line, line_at, out, ow, inner_end, job->taps);      \
                    ow = inner_end - 1;                                                       \
                    continue;                                                                 \
                }                                                                             \
                window_span(job, 2, ow, &w0, &w1);                                            \
                out[ow * os[4]] = name##_clipped(job, x, d0, d1, h0, h1, w0, w1);             \
            }                                                                                 \
        }                                                                                     \
    }

static inline int64_t select_int(int take, int64_t a, int64_t b) {
    return b ^ ((a ^ b) & -(int64_t)take);
}

static inline float select_f32(int take, float a, float b) {
    uint32_t x, y;
    memcpy(&x, &a, sizeof x);
    memcpy(&y, &b, sizeof y);
    y ^= (x ^ y) & -(uint32_t)take;
    memcpy(&b, &y, sizeof b);
    return b;
}

static inline double select_f64(int take, double a, double b) {
    uint64_t x, y;
    memcpy(&x, &a, sizeof x);
    memcpy(&y, &b, sizeof y);
    y ^= (x ^ y) & -(uint64_t)take;
    memcpy(&b, &y, sizeof b);
    return b;
}

#define LOAD_PLAIN(p) (*(p))
#define LOAD_F16(p) core_f16_to_f32(*(p))
#define LOAD_BF16(p) core_bf16_to_f32(*(p))

POOL_ROWS(rows_u8, uint8_t, int64_t, LOAD_PLAIN, select_int)
POOL_ROWS(rows_i8, int8_t, int64_t, LOAD_PLAIN, select_int)
POOL_ROWS(rows_i16, int16_t, int64_t, LOAD_PLAIN, select_int)
POOL_ROWS(rows_i32, int32_t, int64_t, LOAD_PLAIN, select_int)
POOL_ROWS(rows_i64, int64_t, int64_t, LOAD_PLAIN, select_int)
POOL_ROWS(rows_f16, uint16_t, float, LOAD_F16, select_f32)
POOL_ROWS(rows_bf16, uint16_t, float, LOAD_BF16, select_f32)
POOL_ROWS(rows_f32, float, float, LOAD_PLAIN, select_f32)
POOL_ROWS(rows_f64, double, double, LOAD_PLAIN, select_f64)

static const cpu_range_fn row_kernels[PORTA_DTYPE_COUNT] = {
    [PORTA_U8] = rows_u8,     [PORTA_I8] = rows_i8,     [PORTA_I16] = rows_i16,
    [PORTA_I32] = rows_i32,   [PORTA_I64] = rows_i64,   [PORTA_F16] = rows_f16,
    [PORTA_BF16] = rows_bf16, [PORTA_F32] = rows_f32,   [PORTA_F64] = rows_f64,
};

porta_status *cpu_exec_pool(const ir_prim *prim, const porta_tensor *const *inputs,
                            int input_count, porta_tensor *out) {
    const porta_tensor *x = input_count == 1 ? inputs[0] : NULL;
    cpu_range_fn rows = x && (unsigned)x->dtype < PORTA_DTYPE_COUNT ? row_kernels[x->dtype] : NULL;
    if (!rows || out->dtype != PORTA_I64 || x->rank != prim->rank + 2 || out->rank != x->rank)
        return porta_error(PORTA_ERR_INTERNAL,
                           "pool_max kernel: expected one non-bool input of rank %d and an "
                           "int64 out, got %d inputs",
                           prim->rank + 2, input_count);
    pool_job job = {.n = x->sizes[0], .c = x->sizes[1], .x = core_tensor_data(x),
                    .indices = (int64_t *)core_tensor_data(out)};
    int lead = SPATIAL - prim->rank;
    for (int a = 0; a < 2; a++) {
        job.x_strides[a] = x->strides[a];
        job.out_strides[a] = out->strides[a];
    }
    for (int a = 0; a < SPATIAL; a++) {
        bool unit = a < lead;
        int from = a - lead;
        job.in[a] = unit ? 1 : x->sizes[2 + from];
        job.out[a] = unit ? 1 : out->sizes[2 + from];
        job.kernel[a] = unit ? 1 : prim->sizes[from];
        job.stride[a] = unit ? 1 : prim->conv.stride[from];
        job.padding[a] = unit ? 0 : prim->conv.padding[from];
        job.dilation[a] = unit ? 1 : prim->conv.dilation[from];
        job.x_strides[2 + a] = unit ? 0 : x->strides[2 + from];
        job.out_strides[2 + a] = unit ? 0 : out->strides[2 + from];
    }
    /* whole windows along w: start >= 0 and last tap < in */
    int64_t reach = (job.kernel[2] - 1) * job.dilation[2];
    job.inner_w_begin = (job.padding[2] + job.stride[2] - 1) / job.stride[2];
    int64_t last = job.in[2] - 1 - reach + job.padding[2];
    job.inner_w_end = last < 0 ? 0 : last / job.stride[2] + 1;
    if (job.inner_w_end > job.out[2]) job.inner_w_end = job.out[2];
    if (job.inner_w_begin >= job.inner_w_end) job.inner_w_begin = job.inner_w_end = job.out[2];
    int64_t volume = job.kernel[0] * job.kernel[1] * job.kernel[2];
    job.taps = volume <= MAX_TAPS ? (int)volume : 0;
    for (int k = 0; k < job.taps; k++) {
        int64_t kw = k % job.kernel[2], kh = k / job.kernel[2] % job.kernel[1],
                kd = k / job.kernel[2] / job.kernel[1];
        int64_t d = kd * job.dilation[0], h = kh * job.dilation[1], w = kw * job.dilation[2];
        job.tap_offset[k] = d * job.x_strides[2] + h * job.x_strides[3] + w * job.x_strides[4];
        job.tap_flat[k] = (d * job.in[1] + h) * job.in[2] + w;
    }
    int64_t row_count = job.n * job.c * job.out[0] * job.out[1];
    if (row_count == 0 || job.out[2] == 0) return NULL;
    int64_t per_row = job.out[2] * job.kernel[0] * job.kernel[1] * job.kernel[2];
    cpu_parallel_for(row_count, GRAIN / per_row + 1, rows, &job);
    return NULL;
}
