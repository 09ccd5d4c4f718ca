/* PRIM_MATMUL on the CPU: out[..., M, N] = a[..., M, K] @ b[..., K, N] over
 * batch axes the op layer has already broadcast (stride 0 where repeated).
 *
 *  float32           cpu_sgemm per batch, strides passed straight through.
 *  float16/bfloat16  each batch converted to float32, cpu_sgemm, rounded back.
 *  float64, integers a cache-blocked kernel of this file, accumulating in
 *                    double or in wrapping 64-bit integers.
 *
 * Many small batches run in parallel, one whole GEMM per task; otherwise the
 * GEMM threads itself. */
#include <stdatomic.h>
#include <string.h>

#include "backends/cpu/cpu_kernels.h"
#include "backends/cpu/gemm/gemm.h"
#include "backends/cpu/threadpool.h"
#include "core/alloc.h"
#include "core/dtype.h"
#include "core/status.h"

/* Multiply-adds below which a GEMM (or a task of several) is not worth
 * handing to another thread. */
#define TASK_WORK (1 << 17)
/* Per-batch work below which batches, not the GEMM, are threaded. */
#define SMALL_GEMM_WORK (1 << 21)
/* Half precision: float32 copies of A and C go a panel of rows at a time,
 * about this many floats, yet never so few rows that sgemm runs thin. */
#define PANEL_FLOATS (1 << 20)
#define MIN_PANEL_ROWS 64

/* Blocking of the float64/integer kernel: an MR x NR register tile, A packed
 * MC x KC (stays in L2) and B packed KC x NC. */
#define MR 4 /* multiply_f64 is written out for 4 x 4 */
#define NR 4
#define MC 64
#define KC 256
#define NC 128

typedef struct matrix {
    const char *data; /* element 0 of batch 0 */
    int64_t rs, cs;   /* element strides between rows and columns */
    int64_t batch_strides[PORTA_MAX_RANK];
} matrix;

typedef struct matmul_job {
    porta_dtype dtype;
    size_t elem;
    int64_t m, n, k;
    int batch_rank;
    int64_t batch_sizes[PORTA_MAX_RANK];
    int64_t batch_count;
    matrix a, b, c;
    void *scratch;         /* per-thread scratch, scratch_stride bytes each */
    size_t scratch_stride;
    int64_t m_tiles, n_tiles; /* float64/integer work items per batch */
    int64_t panel_rows;       /* half precision: rows of A widened at a time */
    _Atomic(porta_status *) error; /* the first failure of any task */
} matmul_job;

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

/* m * n * k multiply-adds, saturating: only compared against thresholds. */
static int64_t gemm_work(int64_t m, int64_t n, int64_t k) {
    int64_t mn, mnk;
    if (__builtin_mul_overflow(m, n, &mn) || __builtin_mul_overflow(mn, k, &mnk)) return INT64_MAX;
    return mnk;
}

static void record_error(matmul_job *job, porta_status *status) {
    porta_status *none = NULL;
    if (status && !atomic_compare_exchange_strong(&job->error, &none, status))
        porta_status_free(status);
}

/* Element 0 of batch `index` (row-major over the batch axes) of each matrix. */
static void batch_pointers(const matmul_job *job, int64_t index, const char **a, const char **b,
                           char **c) {
    int64_t oa = 0, ob = 0, oc = 0;
    for (int d = job->batch_rank - 1; d >= 0; d--) {
        int64_t i = index % job->batch_sizes[d];
        index /= job->batch_sizes[d];
        oa += i * job->a.batch_strides[d];
        ob += i * job->b.batch_strides[d];
        oc += i * job->c.batch_strides[d];
    }
    int64_t e = (int64_t)job->elem;
    *a = job->a.data + oa * e;
    *b = job->b.data + ob * e;
    *c = (char *)job->c.data + oc * e;
}

/* ---- float32: cpu_sgemm ---- */

static porta_status *sgemm_batch(const matmul_job *job, int64_t index) {
    const char *a, *b;
    char *c;
    batch_pointers(job, index, &a, &b, &c);
    return cpu_sgemm(job->m, job->n, job->k, (const float *)a, job->a.rs, job->a.cs,
                     (const float *)b, job->b.rs, job->b.cs, 0.0f, (float *)c, job->c.rs,
                     job->c.cs);
}

/* ---- float16/bfloat16: through float32 ---- */

static void widen(porta_dtype dtype, const char *src, int64_t rs, int64_t cs, int64_t rows,
                  int64_t cols, float *dst) {
    for (int64_t i = 0; i < rows; i++) {
        const uint16_t *row = (const uint16_t *)src + i * rs;
        float *out = dst + i * cols;
        if (dtype == PORTA_F16)
            for (int64_t j = 0; j < cols; j++) out[j] = core_f16_to_f32(row[j * cs]);
        else
            for (int64_t j = 0; j < cols; j++) out[j] = core_bf16_to_f32(row[j * cs]);
    }
}

static void narrow(porta_dtype dtype, const float *src, int64_t rows, int64_t cols, char *dst,
                   int64_t rs, int64_t cs) {
    for (int64_t i = 0; i < rows; i++) {
        const float *in = src + i * cols;
        uint16_t *row = (uint16_t *)dst + i * rs;
        if (dtype == PORTA_F16)
            for (int64_t j = 0; j < cols; j++) row[j * cs] = core_f32_to_f16(in[j]);
        else
            for (int64_t j = 0; j < cols; j++) row[j * cs] = core_f32_to_bf16(in[j]);
    }
}

/* B is widened whole, A and C a panel of rows at a time, so the scratch of
 * a tall (folded) product stays near the size of B. */
static porta_status *half_batch(const matmul_job *job, int64_t index, int thread) {
    const char *a, *b;
    char *c;
    batch_pointers(job, index, &a, &b, &c);
    float *b32 = (float *)((char *)job->scratch + (size_t)thread * job->scratch_stride);
    float *a32 = b32 + job->k * job->n;
    float *c32 = a32 + job->panel_rows * job->k;
    widen(job->dtype, b, job->b.rs, job->b.cs, job->k, job->n, b32);
    int64_t e = (int64_t)job->elem;
    for (int64_t i0 = 0; i0 < job->m; i0 += job->panel_rows) {
        int64_t rows = min64(job->panel_rows, job->m - i0);
        widen(job->dtype, a + i0 * job->a.rs * e, job->a.rs, job->a.cs, rows, job->k, a32);
        PORTA_TRY(cpu_sgemm(rows, job->n, job->k, a32, job->k, 1, b32, job->n, 1, 0.0f, c32,
                            job->n, 1));
        narrow(job->dtype, c32, rows, job->n, c + i0 * job->c.rs * e, job->c.rs, job->c.cs);
    }
    return NULL;
}

/* Runs every batch through sgemm_batch or half_batch. */
static porta_status *one_batch(matmul_job *job, int64_t index, int thread) {
    return job->dtype == PORTA_F32 ? sgemm_batch(job, index) : half_batch(job, index, thread);
}

static void batch_range(void *ctx, int64_t begin, int64_t end, int thread) {
    matmul_job *job = ctx;
    for (int64_t i = begin; i < end && !atomic_load(&job->error); i++)
        record_error(job, one_batch(job, i, thread));
}

static porta_status *run_through_sgemm(matmul_job *job) {
    int64_t work = gemm_work(job->m, job->n, job->k);
    bool thread_batches = job->batch_count > 1 && work < SMALL_GEMM_WORK;
    int threads = thread_batches ? (int)min64(cpu_thread_count(), job->batch_count) : 1;
    if (job->dtype != PORTA_F32) {
        job->panel_rows = min64(job->m, max64(MIN_PANEL_ROWS, PANEL_FLOATS / (job->k + job->n)));
        job->scratch_stride =
            (size_t)(job->k * job->n + job->panel_rows * (job->k + job->n)) * sizeof(float);
        job->scratch_stride = (job->scratch_stride + 63) / 64 * 64;
        PORTA_TRY(core_host_alloc(job->scratch_stride * (size_t)threads,
                                   "float32 copies of half-precision matmul operands",
                                   &job->scratch));
    }
    if (thread_batches) {
        int64_t grain = work ? TASK_WORK / work + 1 : job->batch_count;
        cpu_parallel_for(job->batch_count, grain, batch_range, job);
    } else {
        /* One batch at a time, each one threaded inside sgemm. */
        for (int64_t i = 0; i < job->batch_count && !atomic_load(&job->error); i++)
            record_error(job, one_batch(job, i, 0));
    }
    core_host_free(job->scratch);
    return atomic_exchange(&job->error, NULL);
}

/* ---- float64 and integers: a blocked kernel on 8-byte accumulators ---- */

/* How one accumulator type packs operands, multiplies register tiles and
 * stores them; double for float64, wrapping uint64_t for integers. */
typedef struct accumulator_ops {
    /* Packs rows x kc of a matrix (element strides rs, cs) into slivers of
     * `width` rows, zero-padded: sliver s holds, per column p, the width
     * elements of rows s*width.. . */
    void (*pack)(porta_dtype dtype, const char *src, int64_t rs, int64_t cs, int64_t rows,
                 int64_t kc, int width, void *dst);
    /* tile[MR][NR] = a sliver (kc x MR) times b sliver (kc x NR). */
    void (*multiply)(int64_t kc, const void *a, const void *b, void *tile);
    /* Writes (or adds, after the first depth step) m x n of a tile into C. */
    void (*store)(porta_dtype dtype, const void *tile, int m, int n, bool accumulate, char *c,
                  int64_t rs, int64_t cs);
} accumulator_ops;

static int64_t load_integer(porta_dtype dtype, const char *p) {
    switch (dtype) {
    case PORTA_U8: return *(const uint8_t *)p;
    case PORTA_I8: return *(const int8_t *)p;
    case PORTA_I16: return *(const int16_t *)p;
    case PORTA_I32: return *(const int32_t *)p;
    default: return *(const int64_t *)p;
    }
}

/* Two's-complement wrap to the dtype's width, as PyTorch's integer matmul. */
static void store_integer(porta_dtype dtype, char *p, uint64_t v) {
    switch (dtype) {
    case PORTA_U8: *(uint8_t *)p = (uint8_t)v; break;
    case PORTA_I8: *(uint8_t *)p = (uint8_t)v; break;
    case PORTA_I16: *(uint16_t *)p = (uint16_t)v; break;
    case PORTA_I32: *(uint32_t *)p = (uint32_t)v; break;
    default: *(uint64_t *)p = v; break;
    }
}

static void pack_f64(porta_dtype dtype, const char *src, int64_t rs, int64_t cs, int64_t rows,
                     int64_t kc, int width, void *dst) {
    const double *s = (const double *)src;
    double *d = dst;
    for (int64_t r0 = 0; r0 < rows; r0 += width) {
        int valid = (int)min64(width, rows - r0);
        for (int64_t p = 0; p < kc; p++, d += width) {
            for (int r = 0; r < valid; r++) d[r] = s[(r0 + r) * rs + p * cs];
            for (int r = valid; r < width; r++) d[r] = 0.0;
        }
    }
}

static void pack_int(porta_dtype dtype, const char *src, int64_t rs, int64_t cs, int64_t rows,
                     int64_t kc, int width, void *dst) {
    int64_t elem = (int64_t)porta_dtype_size(dtype);
    uint64_t *d = dst;
    for (int64_t r0 = 0; r0 < rows; r0 += width) {
        int valid = (int)min64(width, rows - r0);
        for (int64_t p = 0; p < kc; p++, d += width) {
            for (int r = 0; r < valid; r++)
                d[r] = (uint64_t)load_integer(dtype, src + ((r0 + r) * rs + p * cs) * elem);
            for (int r = valid; r < width; r++) d[r] = 0;
        }
    }
}

/* Two doubles: SSE2, so the register tile needs no ISA beyond baseline. */
typedef double f64x2 __attribute__((vector_size(16)));

static f64x2 load_f64x2(const double *p) {
    f64x2 v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* The 4 x 4 tile lives in eight vector registers, written out by hand:
 * as an array, gcc keeps it in memory. */
static void multiply_f64(int64_t kc, const void *a_pack, const void *b_pack, void *tile) {
    const double *a = a_pack, *b = b_pack;
    f64x2 c00 = {0, 0}, c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00,
          c31 = c00;
    for (int64_t p = 0; p < kc; p++, a += MR, b += NR) {
        f64x2 b0 = load_f64x2(b), b1 = load_f64x2(b + 2);
        f64x2 a0 = {a[0], a[0]}, a1 = {a[1], a[1]}, a2 = {a[2], a[2]}, a3 = {a[3], a[3]};
        c00 += a0 * b0;
        c01 += a0 * b1;
        c10 += a1 * b0;
        c11 += a1 * b1;
        c20 += a2 * b0;
        c21 += a2 * b1;
        c30 += a3 * b0;
        c31 += a3 * b1;
    }
    f64x2 rows[MR][NR / 2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}};
    memcpy(tile, rows, sizeof rows);
}

static void multiply_int(int64_t kc, const void *a_pack, const void *b_pack, void *tile) {
    const uint64_t *a = a_pack, *b = b_pack;
    uint64_t acc[MR][NR] = {{0}};
    for (int64_t p = 0; p < kc; p++, a += MR, b += NR)
        for (int r = 0; r < MR; r++)
            for (int c = 0; c < NR; c++) acc[r][c] += a[r] * b[c];
    memcpy(tile, acc, sizeof acc);
}

static void store_f64(porta_dtype dtype, const void *tile, int m, int n, bool accumulate,
                      char *c, int64_t rs, int64_t cs) {
    const double(*acc)[NR] = tile;
    double *out = (double *)c;
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double *p = out + i * rs + j * cs;
            *p = accumulate ? *p + acc[i][j] : acc[i][j];
        }
}

static void store_int(porta_dtype dtype, const void *tile, int m, int n, bool accumulate,
                      char *c, int64_t rs, int64_t cs) {
    const uint64_t(*acc)[NR] = tile;
    int64_t elem = (int64_t)porta_dtype_size(dtype);
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            char *p = c + (i * rs + j * cs) * elem;
            uint64_t v = acc[i][j];
            if (accumulate) v += (uint64_t)load_integer(dtype, p);
            store_integer(dtype, p, v);
        }
}

static const accumulator_ops f64_ops = {pack_f64, multiply_f64, store_f64};
static const accumulator_ops int_ops = {pack_int, multiply_int, store_int};

/* C (m x n) = A (m x k) B (k x n), k > 0, on one thread with its scratch. */
static void blocked_gemm(const accumulator_ops *ops, porta_dtype dtype, int64_t m, int64_t n,
                         int64_t k, const char *a, const matrix *am, const char *b,
                         const matrix *bm, char *c, const matrix *cm, uint64_t *a_pack,
                         uint64_t *b_pack) {
    int64_t e = (int64_t)porta_dtype_size(dtype);
    uint64_t tile[MR * NR];
    for (int64_t jc = 0; jc < n; jc += NC) {
        int64_t nc = min64(NC, n - jc);
        for (int64_t pc = 0; pc < k; pc += KC) {
            int64_t kc = min64(KC, k - pc);
            /* B's columns are packed as rows, so its strides come swapped. */
            ops->pack(dtype, b + (pc * bm->rs + jc * bm->cs) * e, bm->cs, bm->rs, nc, kc, NR,
                      b_pack);
            for (int64_t ic = 0; ic < m; ic += MC) {
                int64_t mc = min64(MC, m - ic);
                ops->pack(dtype, a + (ic * am->rs + pc * am->cs) * e, am->rs, am->cs, mc, kc,
                          MR, a_pack);
                for (int64_t jr = 0; jr < nc; jr += NR) {
                    for (int64_t ir = 0; ir < mc; ir += MR) {
                        ops->multiply(kc, a_pack + ir * kc, b_pack + jr * kc, tile);
                        char *ct = c + ((ic + ir) * cm->rs + (jc + jr) * cm->cs) * e;
                        ops->store(dtype, tile, (int)min64(MR, mc - ir), (int)min64(NR, nc - jr),
                                   pc > 0, ct, cm->rs, cm->cs);
                    }
                }
            }
        }
    }
}

/* Work item t: batch t / (m_tiles * n_tiles), then an MC x NC tile of it. */
static void blocked_range(void *ctx, int64_t begin, int64_t end, int thread) {
    matmul_job *job = ctx;
    const accumulator_ops *ops = job->dtype == PORTA_F64 ? &f64_ops : &int_ops;
    uint64_t *a_pack = (uint64_t *)((char *)job->scratch + (size_t)thread * job->scratch_stride);
    uint64_t *b_pack = a_pack + MC * KC;
    int64_t e = (int64_t)job->elem;
    for (int64_t t = begin; t < end; t++) {
        int64_t per_batch = job->m_tiles * job->n_tiles;
        int64_t tile = t % per_batch;
        int64_t i0 = tile / job->n_tiles * MC, j0 = tile % job->n_tiles * NC;
        const char *a, *b;
        char *c;
        batch_pointers(job, t / per_batch, &a, &b, &c);
        blocked_gemm(ops, job->dtype, min64(MC, job->m - i0), min64(NC, job->n - j0), job->k,
                     a + i0 * job->a.rs * e, &job->a, b + j0 * job->b.cs * e, &job->b,
                     c + (i0 * job->c.rs + j0 * job->c.cs) * e, &job->c, a_pack, b_pack);
    }
}

static porta_status *run_blocked(matmul_job *job) {
    job->m_tiles = (job->m + MC - 1) / MC;
    job->n_tiles = (job->n + NC - 1) / NC;
    int64_t items = job->batch_count * job->m_tiles * job->n_tiles;
    int64_t item_work = gemm_work(min64(MC, job->m), min64(NC, job->n), job->k);
    int64_t grain = TASK_WORK / item_work + 1;
    int threads = (int)min64(cpu_thread_count(), (items + grain - 1) / grain);
    job->scratch_stride = (size_t)(MC * KC + KC * NC) * sizeof(uint64_t);
    PORTA_TRY(core_host_alloc(job->scratch_stride * (size_t)threads,
                               "matmul packing buffers", &job->scratch));
    cpu_parallel_for(items, grain, blocked_range, job);
    core_host_free(job->scratch);
    return NULL;
}

/* ---- entry point ---- */

/* K == 0: every output element is an empty sum. */
static void zero_output(const matmul_job *job) {
    for (int64_t index = 0; index < job->batch_count; index++) {
        const char *a, *b;
        char *c;
        batch_pointers(job, index, &a, &b, &c);
        for (int64_t i = 0; i < job->m; i++)
            for (int64_t j = 0; j < job->n; j++)
                memset(c + (i * job->c.rs + j * job->c.cs) * (int64_t)job->elem, 0, job->elem);
    }
}

/* The one stride that walks the rows of all batches of `m` (batch axes
 * then its row axis, in order), or false when there is none. */
static bool rows_stride(const matmul_job *job, const matrix *m, int64_t *out) {
    int64_t step = 0, span = 1; /* span: rows per step of the axis */
    bool have = false;
    for (int d = job->batch_rank; d >= 0; d--) {
        int64_t size = d == job->batch_rank ? job->m : job->batch_sizes[d];
        int64_t stride = d == job->batch_rank ? m->rs : m->batch_strides[d];
        if (size != 1) {
            if (!have) {
                step = stride;
                have = true;
            } else if (stride != step * span) {
                return false;
            }
        }
        span *= size;
    }
    *out = have ? step : m->rs;
    return true;
}

/* When b is one matrix for every batch and the batches of a and out are
 * rows after rows in memory, the batches are one taller GEMM (as PyTorch
 * folds them), which threads and blocks better than many short ones. */
static void fold_batches_into_rows(matmul_job *job) {
    for (int d = 0; d < job->batch_rank; d++)
        if (job->batch_sizes[d] != 1 && job->b.batch_strides[d] != 0) return;
    int64_t a_rs, c_rs;
    if (job->batch_rank == 0 || !rows_stride(job, &job->a, &a_rs) ||
        !rows_stride(job, &job->c, &c_rs))
        return;
    job->a.rs = a_rs;
    job->c.rs = c_rs;
    job->m *= job->batch_count;
    job->batch_count = 1;
    job->batch_rank = 0;
}

static void describe(const porta_tensor *t, int batch_rank, matrix *out) {
    out->data = core_tensor_data(t);
    out->rs = t->strides[batch_rank];
    out->cs = t->strides[batch_rank + 1];
    for (int d = 0; d < batch_rank; d++) out->batch_strides[d] = t->strides[d];
}

porta_status *cpu_exec_matmul(const ir_prim *prim, const porta_tensor *const *inputs,
                              int input_count, porta_tensor *out) {
    const porta_tensor *a = inputs[0], *b = inputs[1];
    int batch_rank = out->rank - 2;
    matmul_job job = {.dtype = out->dtype,
                      .elem = porta_dtype_size(out->dtype),
                      .m = out->sizes[batch_rank],
                      .n = out->sizes[batch_rank + 1],
                      .k = a->sizes[batch_rank + 1],
                      .batch_rank = batch_rank,
                      .batch_count = 1};
    for (int d = 0; d < batch_rank; d++) {
        job.batch_sizes[d] = out->sizes[d];
        job.batch_count *= out->sizes[d];
    }
    describe(a, batch_rank, &job.a);
    describe(b, batch_rank, &job.b);
    describe(out, batch_rank, &job.c);
    atomic_init(&job.error, NULL);
    if (porta_tensor_numel(out) == 0) return NULL;
    fold_batches_into_rows(&job);
    if (job.k == 0) {
        zero_output(&job);
        return NULL;
    }
    switch (job.dtype) {
    case PORTA_F32:
    case PORTA_F16:
    case PORTA_BF16: return run_through_sgemm(&job);
    case PORTA_F64:
    case PORTA_U8:
    case PORTA_I8:
    case PORTA_I16:
    case PORTA_I32:
    case PORTA_I64: return run_blocked(&job);
    default:
        return porta_error(PORTA_ERR_INTERNAL, "cpu matmul: dtype %s is not supported",
                           porta_dtype_name(job.dtype));
    }
}
