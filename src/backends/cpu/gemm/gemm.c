/* cpu_sgemm: picks the path for a problem, allocates its packing scratch
 * and runs it on a team from the thread pool. */
#include "gemm.h"

#include "backends/cpu/threadpool.h"
#include "core/alloc.h"
#include "core/status.h"
#include "gemm_internal.h"

/* Below this many multiply-adds, packing and kernel calls cost more than
 * they save. */
#define UNPACKED_MAX_MACS 1024
/* A thread must get at least this many multiply-adds to pay for waking it. */
#define MIN_MACS_PER_THREAD (1 << 17)

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* In double: m * n * k can overflow int64 for (absurdly) large operands. */
static double macs(const gemm_problem *p) { return (double)p->m * (double)p->n * (double)p->k; }

static void transpose(gemm_problem *p) {
    gemm_problem t = *p;
    /* C^T = B^T A^T */
    t.m = p->n;
    t.n = p->m;
    t.a = p->b;
    t.a_rs = p->b_cs;
    t.a_cs = p->b_rs;
    t.b = p->a;
    t.b_rs = p->a_cs;
    t.b_cs = p->a_rs;
    t.c_rs = p->c_cs;
    t.c_cs = p->c_rs;
    t.transposed = !p->transposed;
    *p = t;
}

/* The kernels want C with unit row stride, as the tile's columns are their
 * vectors; a row-major C gets it by computing C^T = B^T A^T instead. The
 * stride along a dimension of size 1 is never used, so it is set to 1 to
 * let vectors count as either layout; they then put their length in m,
 * which the kernels' taller tiles handle better. */
static void orient(gemm_problem *p) {
    if (p->m == 1) {
        p->a_rs = 1;
        p->c_rs = 1;
    }
    if (p->n == 1) {
        p->b_cs = 1;
        p->c_cs = 1;
    }
    bool row_major = p->c_rs != 1 && p->c_cs == 1;
    bool row_vector = p->c_rs == 1 && p->c_cs == 1 && p->n > p->m;
    if (row_major || row_vector) transpose(p);
}

/* Each chunk of the pool's range is one scratch slot. A thread slow to
 * start finds its chunk taken by one that finished early, which then finds
 * nothing left to claim, so nobody waits for a latecomer. */
static void run_slots(void *ctx, int64_t begin, int64_t end, int thread) {
    for (int64_t slot = begin; slot < end; slot++) gemm_job_work(ctx, (int)slot);
}

static int64_t abs64(int64_t x) { return x < 0 ? -x : x; }

/* Whether no two elements of C share an address: the shorter stride (of
 * the dimensions longer than 1) must step past the whole extent of the
 * shorter-strided dimension before the longer stride's first step. */
static bool c_elements_distinct(const gemm_problem *p) {
    int64_t near = abs64(p->c_rs), far = abs64(p->c_cs), near_count = p->m, far_count = p->n;
    if (near > far) {
        int64_t t = near;
        near = far;
        far = t;
        t = near_count;
        near_count = far_count;
        far_count = t;
    }
    if (far_count == 1) return near_count == 1 || near != 0;
    if (near_count == 1) return far != 0;
    return near != 0 && near * (near_count - 1) < far;
}

/* Threads worth waking: each must get enough work to pay for it, and at
 * least one micro-tile. A C whose elements overlap (a zero stride, say)
 * gets one thread, so that no two write the same element at once. */
static int team_size(const gemm_kernel *kernel, const gemm_problem *p) {
    if (!c_elements_distinct(p)) return 1;
    double useful = macs(p) / MIN_MACS_PER_THREAD;
    double tiles = (double)ceil_div(p->m, kernel->mr) * (double)ceil_div(p->n, kernel->nr);
    if (tiles < useful) useful = tiles;
    int threads = cpu_thread_count();
    return useful < threads ? (useful > 1 ? (int)useful : 1) : threads;
}

porta_status *cpu_sgemm(int64_t m, int64_t n, int64_t k, const float *a, int64_t a_rs,
                        int64_t a_cs, const float *b, int64_t b_rs, int64_t b_cs, float beta,
                        float *c, int64_t c_rs, int64_t c_cs) {
    return cpu_sgemm_with_epilogue(m, n, k, a, a_rs, a_cs, b, b_rs, b_cs, beta, c, c_rs, c_cs,
                                   NULL);
}

porta_status *cpu_sgemm_with_epilogue(int64_t m, int64_t n, int64_t k, const float *a,
                                      int64_t a_rs, int64_t a_cs, const float *b, int64_t b_rs,
                                      int64_t b_cs, float beta, float *c, int64_t c_rs,
                                      int64_t c_cs, const cpu_gemm_epilogue *epilogue) {
    if (m <= 0 || n <= 0) return NULL;
    gemm_job job = {.problem = {m, n, k > 0 ? k : 0, a, a_rs, a_cs, b, b_rs, b_cs, beta, c,
                                c_rs, c_cs, epilogue, false}};
    orient(&job.problem);
    if (job.problem.k == 0 || macs(&job.problem) <= UNPACKED_MAX_MACS) {
        gemm_run_unpacked(&job.problem);
        return NULL;
    }
    job.kernel = gemm_kernel_active();
    job.blocking = gemm_blocking_for(job.kernel);
    gemm_job_plan(&job, team_size(job.kernel, &job.problem));
    void *scratch;
    PORTA_TRY(core_host_alloc(job.scratch_bytes, "GEMM pack buffers", &scratch));
    gemm_job_attach(&job, scratch);
    if (job.team == 1)
        gemm_job_work(&job, 0);
    else
        cpu_parallel_for(job.team, 1, run_slots, &job);
    core_host_free(scratch);
    return NULL;
}
