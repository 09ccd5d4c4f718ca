/* PRIM_FACTOR on the CPU: each batch item's matrices are read (any strides,
 * float32 or float64) into double scratch, factored by factor_dense.c and
 * written packed into out; the batch items are split over the threads. */
#include <string.h>

#include "backends/cpu/cpu_kernels.h"
#include "backends/cpu/factor_dense.h"
#include "backends/cpu/threadpool.h"
#include "core/alloc.h"
#include "core/status.h"
#include "core/tensor_layout.h"

typedef struct factor_job {
    const ir_prim *prim;
    const porta_tensor *a, *b, *out;
    int64_t m, n, k;          /* a [m, n]; b [n, k] (triangular solve) */
    int64_t out_rows, out_cols;
    size_t scratch_per_thread; /* doubles */
    double *scratch;
} factor_job;

/* The element offset of batch item `item` of t (row-major over its batch
 * axes, which are out's). */
static int64_t batch_offset(const porta_tensor *t, int64_t item) {
    int64_t offset = 0;
    for (int d = t->rank - 3; d >= 0; d--) {
        offset += item % t->sizes[d] * t->strides[d];
        item /= t->sizes[d];
    }
    return offset;
}

static void load(const porta_tensor *t, int64_t item, double *dst) {
    int64_t rows = t->sizes[t->rank - 2], cols = t->sizes[t->rank - 1];
    int64_t rs = t->strides[t->rank - 2], cs = t->strides[t->rank - 1];
    int64_t base = batch_offset(t, item);
    if (t->dtype == PORTA_F64) {
        const double *p = (const double *)core_tensor_data(t) + base;
        for (int64_t i = 0; i < rows; i++)
            for (int64_t j = 0; j < cols; j++) dst[i * cols + j] = p[i * rs + j * cs];
    } else {
        const float *p = (const float *)core_tensor_data(t) + base;
        for (int64_t i = 0; i < rows; i++)
            for (int64_t j = 0; j < cols; j++) dst[i * cols + j] = p[i * rs + j * cs];
    }
}

static void store(const porta_tensor *t, int64_t item, const double *src) {
    int64_t rows = t->sizes[t->rank - 2], cols = t->sizes[t->rank - 1];
    int64_t rs = t->strides[t->rank - 2], cs = t->strides[t->rank - 1];
    int64_t base = batch_offset(t, item);
    if (t->dtype == PORTA_F64) {
        double *p = (double *)core_tensor_data(t) + base;
        for (int64_t i = 0; i < rows; i++)
            for (int64_t j = 0; j < cols; j++) p[i * rs + j * cs] = src[i * cols + j];
    } else {
        float *p = (float *)core_tensor_data(t) + base;
        for (int64_t i = 0; i < rows; i++)
            for (int64_t j = 0; j < cols; j++) p[i * rs + j * cs] = (float)src[i * cols + j];
    }
}

static void factor_one(const factor_job *job, int64_t item, double *a, double *w) {
    int64_t m = job->m, n = job->n;
    load(job->a, item, a);
    switch ((porta_factor_op)job->prim->op) {
    case PORTA_FACTOR_CHOLESKY:
        memcpy(w, a, (size_t)(n * n) * sizeof *w);
        cpu_factor_cholesky(w, n);
        break;
    case PORTA_FACTOR_LU: /* the pivots in row m */
        memcpy(w, a, (size_t)(m * n) * sizeof *w);
        memset(w + m * n, 0, (size_t)n * sizeof *w);
        cpu_factor_lu(w, m, n, w + m * n);
        break;
    case PORTA_FACTOR_QR: /* tau in row m */
        memcpy(w, a, (size_t)(m * n) * sizeof *w);
        memset(w + m * n, 0, (size_t)n * sizeof *w);
        cpu_factor_qr(w, m, n, w + m * n);
        break;
    case PORTA_FACTOR_TRIANGULAR_SOLVE:
        load(job->b, item, w);
        cpu_factor_triangular_solve(a, n, w, job->k, job->prim->axis & PORTA_FACTOR_UPPER,
                                job->prim->axis & PORTA_FACTOR_UNIT_DIAGONAL);
        break;
    case PORTA_FACTOR_EIGH: cpu_factor_eigh(a, n, w, w + n); break;
    case PORTA_FACTOR_SVD:
        cpu_factor_svd(a, m, n, w + m * n, w + (m + 1) * n);
        memcpy(w, a, (size_t)(m * n) * sizeof *w);
        break;
    case PORTA_FACTOR_LDL:
        memcpy(w, a, (size_t)(n * n) * sizeof *w);
        memset(w + n * n, 0, (size_t)n * sizeof *w);
        cpu_factor_ldl(w, n, w + n * n);
        break;
    case PORTA_FACTOR_LDL_SOLVE: /* a holds [n + 1, n]: LD, then the pivots */
        load(job->b, item, w);
        cpu_factor_ldl_solve(a, a + n * n, n, w, job->k);
        break;
    case PORTA_FACTOR_OP_COUNT: break;
    }
    store(job->out, item, w);
}

static void factor_items(void *ctx, int64_t begin, int64_t end, int thread) {
    const factor_job *job = ctx;
    double *a = job->scratch + (size_t)thread * job->scratch_per_thread;
    double *w = a + job->m * job->n;
    for (int64_t item = begin; item < end; item++) factor_one(job, item, a, w);
}

porta_status *cpu_exec_factor(const ir_prim *prim, const porta_tensor *const *inputs,
                              int input_count, porta_tensor *out) {
    const porta_tensor *a = inputs[0];
    if (out->dtype != PORTA_F32 && out->dtype != PORTA_F64)
        return porta_error(PORTA_ERR_INTERNAL, "cpu factor: expected a float32 or float64 out");
    factor_job job = {
        .prim = prim,
        .a = a,
        .b = input_count > 1 ? inputs[1] : NULL,
        .out = out,
        .m = a->sizes[a->rank - 2],
        .n = a->sizes[a->rank - 1],
        .out_rows = out->sizes[out->rank - 2],
        .out_cols = out->sizes[out->rank - 1],
    };
    job.k = job.b ? job.b->sizes[job.b->rank - 1] : 0;
    if (porta_tensor_numel(out) == 0) return NULL;
    int64_t items = porta_tensor_numel(out) / (job.out_rows * job.out_cols);
    job.scratch_per_thread = (size_t)(job.m * job.n + job.out_rows * job.out_cols);
    int threads = cpu_thread_count();
    if (threads > items) threads = (int)items;
    void *scratch;
    PORTA_TRY(core_host_alloc((size_t)threads * job.scratch_per_thread * sizeof(double),
                              "factorisation scratch", &scratch));
    job.scratch = scratch;
    cpu_parallel_for(items, (items + threads - 1) / threads, factor_items, &job);
    core_host_free(scratch);
    return NULL;
}
