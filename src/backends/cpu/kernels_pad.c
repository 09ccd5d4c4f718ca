/* PRIM_PAD on the CPU: one pass over out, row by row. Each row of out's
 * innermost dimension is either wholly padding (it lies outside x in an outer
 * dimension), or padding, then a run copied from x, then padding. Elements
 * are moved as bytes, so one loop serves every dtype of a given size. */
#include <string.h>

#include "backends/cpu/cpu_kernels.h"
#include "backends/cpu/threadpool.h"
#include "core/dtype.h"

/* Elements per task below which threading costs more than it saves. */
#define GRAIN 32768

/* Out's layout against x's: out coordinate o on dim d is x coordinate
 * o - before[d], when that lies in [0, x_sizes[d]). */
typedef struct pad_job {
    int rank; /* >= 1 */
    int64_t sizes[PORTA_MAX_RANK];
    int64_t x_sizes[PORTA_MAX_RANK];
    int64_t before[PORTA_MAX_RANK];
    int64_t out_strides[PORTA_MAX_RANK];
    int64_t x_strides[PORTA_MAX_RANK];
    char *out;
    const char *x;
    size_t elem;
    unsigned char value[8]; /* the pad value in out's dtype */
} pad_job;

/* Drops unpadded size-1 dims and merges an unpadded dim into the dim
 * outside it when both tensors step through the pair as through one dim:
 * padding on the outer dim then scales by the inner size. */
static void simplify(pad_job *job) {
    int rank = 0;
    for (int d = 0; d < job->rank; d++) {
        bool unpadded = job->before[d] == 0 && job->sizes[d] == job->x_sizes[d];
        if (unpadded && job->sizes[d] == 1) continue;
        int64_t n = job->sizes[d];
        int prev = rank - 1;
        if (unpadded && prev >= 0 && job->out_strides[prev] == job->out_strides[d] * n &&
            job->x_strides[prev] == job->x_strides[d] * n) {
            job->sizes[prev] *= n;
            job->x_sizes[prev] *= n;
            job->before[prev] *= n;
            job->out_strides[prev] = job->out_strides[d];
            job->x_strides[prev] = job->x_strides[d];
            continue;
        }
        job->sizes[rank] = n;
        job->x_sizes[rank] = job->x_sizes[d];
        job->before[rank] = job->before[d];
        job->out_strides[rank] = job->out_strides[d];
        job->x_strides[rank] = job->x_strides[d];
        rank++;
    }
    if (rank == 0) { /* a single element */
        job->sizes[0] = job->x_sizes[0] = 1;
        job->before[0] = job->out_strides[0] = job->x_strides[0] = 0;
        rank = 1;
    }
    job->rank = rank;
}

static inline int64_t clamp(int64_t v, int64_t low, int64_t high) {
    return v < low ? low : v > high ? high : v;
}

/* The loops below take `elem` as a constant once inlined into pad_row_sized's
 * callers, so each memcpy becomes a single load or store. */
static inline __attribute__((always_inline)) void fill_run(char *out, int64_t stride,
                                                           int64_t count, const void *value,
                                                           size_t elem) {
    int64_t step = stride * (int64_t)elem;
    if (stride == 1 && elem == 1) {
        memset(out, *(const unsigned char *)value, (size_t)count);
        return;
    }
    for (int64_t i = 0; i < count; i++) memcpy(out + i * step, value, elem);
}

static inline __attribute__((always_inline)) void copy_run(char *out, int64_t out_stride,
                                                           const char *x, int64_t x_stride,
                                                           int64_t count, size_t elem) {
    if (out_stride == 1 && x_stride == 1) {
        memcpy(out, x, (size_t)count * elem);
        return;
    }
    int64_t out_step = out_stride * (int64_t)elem, x_step = x_stride * (int64_t)elem;
    for (int64_t i = 0; i < count; i++) memcpy(out + i * out_step, x + i * x_step, elem);
}

/* One row of out's innermost dim; x_row is NULL when the row lies outside x
 * in an outer dim, else x's element for out coordinate `before` of the row. */
static inline __attribute__((always_inline)) void pad_row_sized(const pad_job *job, char *out_row,
                                                                const char *x_row, size_t elem) {
    int inner = job->rank - 1;
    int64_t n = job->sizes[inner], os = job->out_strides[inner];
    int64_t lo = n, hi = n;
    if (x_row) {
        lo = clamp(job->before[inner], 0, n);
        hi = clamp(job->before[inner] + job->x_sizes[inner], lo, n);
    }
    int64_t step = os * (int64_t)elem;
    fill_run(out_row, os, lo, job->value, elem);
    if (hi > lo) {
        int64_t xs = job->x_strides[inner];
        const char *from = x_row + (lo - job->before[inner]) * xs * (int64_t)elem;
        copy_run(out_row + lo * step, os, from, xs, hi - lo, elem);
    }
    fill_run(out_row + hi * step, os, n - hi, job->value, elem);
}

static void pad_row(const pad_job *job, char *out_row, const char *x_row) {
    switch (job->elem) {
    case 1: pad_row_sized(job, out_row, x_row, 1); break;
    case 2: pad_row_sized(job, out_row, x_row, 2); break;
    case 4: pad_row_sized(job, out_row, x_row, 4); break;
    default: pad_row_sized(job, out_row, x_row, 8); break;
    }
}

static void pad_rows(void *ctx, int64_t begin, int64_t end, int thread) {
    (void)thread;
    const pad_job *job = ctx;
    int outer = job->rank - 1;
    int64_t idx[PORTA_MAX_RANK];
    int64_t rest = begin;
    for (int d = outer - 1; d >= 0; d--) {
        idx[d] = rest % job->sizes[d];
        rest /= job->sizes[d];
    }
    int64_t elem = (int64_t)job->elem;
    for (int64_t row = begin; row < end; row++) {
        int64_t out_off = 0, x_off = 0;
        bool inside = true;
        for (int d = 0; d < outer; d++) {
            int64_t xi = idx[d] - job->before[d];
            inside = inside && xi >= 0 && xi < job->x_sizes[d];
            out_off += idx[d] * job->out_strides[d];
            x_off += xi * job->x_strides[d];
        }
        pad_row(job, job->out + out_off * elem, inside ? job->x + x_off * elem : NULL);
        for (int d = outer - 1; d >= 0 && ++idx[d] == job->sizes[d]; d--) idx[d] = 0;
    }
}

porta_status *cpu_exec_pad(const ir_prim *prim, const porta_tensor *const *inputs,
                           int input_count, porta_tensor *out) {
    (void)input_count;
    const porta_tensor *x = inputs[0];
    int64_t numel = core_shape_numel(out->rank, out->sizes);
    if (numel == 0) return NULL;
    pad_job job;
    memset(&job, 0, sizeof job);
    job.rank = out->rank;
    for (int d = 0; d < out->rank; d++) {
        job.sizes[d] = out->sizes[d];
        job.x_sizes[d] = x->sizes[d];
        job.before[d] = prim->pads[2 * d];
        job.out_strides[d] = out->strides[d];
        job.x_strides[d] = x->strides[d];
    }
    job.out = core_tensor_data(out);
    job.x = core_tensor_data(x);
    job.elem = porta_dtype_size(out->dtype);
    core_store_from_double(out->dtype, job.value, prim->value);
    simplify(&job);
    int64_t row_length = job.sizes[job.rank - 1];
    int64_t rows = numel / row_length;
    int64_t grain = row_length >= GRAIN ? 1 : GRAIN / row_length;
    cpu_parallel_for(rows, grain, pad_rows, &job);
    return NULL;
}
