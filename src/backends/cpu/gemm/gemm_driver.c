/* The outer loops of the packed GEMM (Goto's algorithm, as in BLIS), shared
 * by a team of threads: C's columns in nc-wide panels and the depth in
 * kc-deep steps; for each step the team packs one B panel together, then
 * each thread takes row blocks of C, packs that block of A for itself and
 * multiplies it by the panel.
 *
 * Work is claimed, not assigned: each piece of packing and each block of C
 * goes to the first thread that asks for it, and a thread waiting for the
 * others helps with what they have not claimed yet. So a thread the OS
 * runs late, or one the pool could not start, costs only its share of
 * speed, never a stall; and a lone thread does everything in order.
 *
 * A step may be packed only after the step two before it is multiplied
 * (panels alternate) and multiplied only after the step before it (both
 * write the same C). */
#include <sched.h>
#include <stdbool.h>

#include "gemm_internal.h"

/* Packing is cut into about this many pieces per thread, so that a thread
 * arriving late still finds some. */
#define PACK_ITEMS_PER_THREAD 4
/* Panels this many slivers wide or less use each A block (almost) once. */
#define STREAMING_SLIVERS 2
/* How large a block of A such panels may pack at once (4 MB, measured
 * best on a 1 MB L2): tall enough for long runs along A's rows, small
 * enough to stay in cache until the kernels read it. */
#define STREAMING_BLOCK_FLOATS (1 << 20)
#define STREAMING_MIN_KC 128

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }
static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
static int64_t round_up(int64_t value, int64_t multiple) {
    return ceil_div(value, multiple) * multiple;
}
static int64_t whole_lines(int64_t bytes) { return round_up(bytes, 64); }

/* The block size that cuts `total` into the fewest blocks of at most
 * `limit`, evened out (rounded up to `unit`) so the last one is not a
 * sliver: a 4100-wide panel limit would otherwise leave a 4-wide panel
 * that costs a whole pass over A. */
static int64_t even_block(int64_t total, int64_t limit, int64_t unit) {
    return round_up(ceil_div(total, ceil_div(total, limit)), unit);
}

void gemm_job_plan(gemm_job *job, int team) {
    const gemm_problem *p = &job->problem;
    const int64_t mr = job->kernel->mr, nr = job->kernel->nr;
    const gemm_blocking *blocking = &job->blocking;
    job->nc = even_block(p->n, blocking->nc, nr);
    int64_t panel_slivers = ceil_div(job->nc, nr);
    if (panel_slivers <= STREAMING_SLIVERS) {
        /* Each A block meets only a sliver or two of B, so keeping it in L2
         * buys nothing; what costs is reading A, which is fastest in long
         * runs along its rows. So: blocks as tall as STREAMING_BLOCK_FLOATS
         * allows at a depth that still amortizes C's loads and stores, and
         * threads only when there are several blocks (splitting columns
         * would pack each block twice). */
        int64_t depth = STREAMING_BLOCK_FLOATS / round_up(p->m, mr);
        job->kc = even_block(p->k, max64(STREAMING_MIN_KC, min64(blocking->kc, depth)), 1);
        int64_t tallest = STREAMING_BLOCK_FLOATS / job->kc / mr * mr;
        job->row_block = min64(round_up(p->m, mr), max64(blocking->mc, tallest));
        job->row_blocks = ceil_div(p->m, job->row_block);
        job->col_parts = 1;
    } else {
        job->kc = even_block(p->k, blocking->kc, 1);
        /* Row blocks of at most mc rows, as many as a multiple of the team
         * so that they go round evenly; too few rows for that, and each
         * block's columns are split instead. */
        int64_t blocks = ceil_div(p->m, blocking->mc);
        if (blocks >= team) blocks = round_up(blocks, team);
        job->row_block = round_up(ceil_div(p->m, blocks), mr);
        job->row_blocks = ceil_div(p->m, job->row_block);
        job->col_parts =
            job->row_blocks >= team ? 1 : min64(ceil_div(team, job->row_blocks), panel_slivers);
    }
    job->k_steps = ceil_div(p->k, job->kc);
    job->steps = ceil_div(p->n, job->nc) * job->k_steps;
    job->team = (int)min64(team, job->row_blocks * job->col_parts);
    job->pack_slivers = max64(1, panel_slivers / (PACK_ITEMS_PER_THREAD * job->team));
    job->panel_stride = whole_lines(panel_slivers * nr * job->kc * 4) / 4;
    job->a_pack_stride = whole_lines(job->row_block * job->kc * 4) / 4;
    job->scratch_bytes = (size_t)(whole_lines(job->steps * (int64_t)sizeof(gemm_step)) +
                                  (2 * job->panel_stride + job->team * job->a_pack_stride) * 4);
}

void gemm_job_attach(gemm_job *job, void *scratch) {
    char *next = scratch;
    job->step = (gemm_step *)next;
    for (int64_t s = 0; s < job->steps; s++) {
        atomic_init(&job->step[s].pack_claimed, 0);
        atomic_init(&job->step[s].pack_done, 0);
        atomic_init(&job->step[s].work_claimed, 0);
        atomic_init(&job->step[s].work_done, 0);
    }
    next += whole_lines(job->steps * (int64_t)sizeof(gemm_step));
    job->panels[0] = (float *)next;
    job->panels[1] = job->panels[0] + job->panel_stride;
    job->a_packs = job->panels[1] + job->panel_stride;
}

/* Where step s lies: its columns [*jc, *jc + *nc) and depth [*pc, *pc + *kc). */
static void step_bounds(const gemm_job *job, int64_t s, int64_t *jc, int64_t *nc, int64_t *pc,
                        int64_t *kc) {
    *jc = s / job->k_steps * job->nc;
    *nc = min64(job->nc, job->problem.n - *jc);
    *pc = s % job->k_steps * job->kc;
    *kc = min64(job->kc, job->problem.k - *pc);
}

static int64_t pack_items(const gemm_job *job, int64_t nc) {
    return ceil_div(ceil_div(nc, job->kernel->nr), job->pack_slivers);
}

static int64_t work_items(const gemm_job *job) { return job->row_blocks * job->col_parts; }

static void pack_item(const gemm_job *job, int64_t s, int64_t item) {
    const gemm_problem *p = &job->problem;
    int64_t jc, nc, pc, kc;
    step_bounds(job, s, &jc, &nc, &pc, &kc);
    int64_t first = item * job->pack_slivers * job->kernel->nr;
    int64_t count = min64(job->pack_slivers * job->kernel->nr, nc - first);
    gemm_pack(job->panels[s % 2] + first * kc, p->b + pc * p->b_rs + (jc + first) * p->b_cs,
              p->b_cs, p->b_rs, count, kc, job->kernel->nr);
}

/* One row block of C (or one column part of it) times step s's panel. */
static void work_item(const gemm_job *job, int64_t s, int64_t item, float *a_pack) {
    const gemm_problem *p = &job->problem;
    const int64_t nr = job->kernel->nr;
    int64_t jc, nc, pc, kc;
    step_bounds(job, s, &jc, &nc, &pc, &kc);
    int64_t ic = item / job->col_parts * job->row_block;
    int64_t rows = min64(job->row_block, p->m - ic);
    int64_t part = item % job->col_parts, slivers = ceil_div(nc, nr);
    int64_t first = slivers * part / job->col_parts * nr;
    int64_t last = min64(slivers * (part + 1) / job->col_parts * nr, nc);
    if (first >= last) return;
    gemm_pack(a_pack, p->a + ic * p->a_rs + pc * p->a_cs, p->a_rs, p->a_cs, rows, kc,
              job->kernel->mr);
    float beta = pc == 0 ? p->beta : 1.0f; /* later depth steps accumulate */
    /* After the last depth step this block of C is final. */
    gemm_block_done done = {p, ic, jc + first};
    bool final = p->epilogue && pc + kc == p->k;
    gemm_multiply_block(job->kernel, kc, a_pack, job->panels[s % 2] + first * kc, beta,
                        p->c + ic * p->c_rs + (jc + first) * p->c_cs, p->c_rs, p->c_cs, rows,
                        last - first, final ? &done : NULL);
}

/* Claims and does step s's packing items until none are left. */
static void pack_claimed(gemm_job *job, int64_t s, int64_t items) {
    gemm_step *step = &job->step[s];
    for (int64_t item; (item = atomic_fetch_add(&step->pack_claimed, 1)) < items;) {
        pack_item(job, s, item);
        atomic_fetch_add(&step->pack_done, 1);
    }
}

static void work_claimed(gemm_job *job, int64_t s, float *a_pack) {
    gemm_step *step = &job->step[s];
    for (int64_t item; (item = atomic_fetch_add(&step->work_claimed, 1)) < work_items(job);) {
        work_item(job, s, item, a_pack);
        atomic_fetch_add(&step->work_done, 1);
    }
}

/* Waits until `counter` reaches `target`, the items it counts being in the
 * hands of running threads. Yielding, not PAUSE: under KVM a PAUSE loop
 * makes the host deschedule the whole virtual CPU (pause-loop exiting),
 * which stalls for a millisecond what should take microseconds. */
static void wait_for(_Atomic int64_t *counter, int64_t target) {
    while (atomic_load(counter) < target) sched_yield();
}

/* Step s multiplied completely: first help with what is unclaimed, then
 * wait for the rest. A thread only gets here after step s's panel was
 * packed and step s - 1 multiplied, so helping is safe. */
static void finish_work(gemm_job *job, int64_t s, float *a_pack) {
    work_claimed(job, s, a_pack);
    wait_for(&job->step[s].work_done, work_items(job));
}

void gemm_job_work(gemm_job *job, int thread) {
    float *a_pack = job->a_packs + thread * job->a_pack_stride;
    for (int64_t s = 0; s < job->steps; s++) {
        gemm_step *step = &job->step[s];
        if (atomic_load(&step->work_done) == work_items(job)) continue; /* joined late */
        int64_t jc, nc, pc, kc;
        step_bounds(job, s, &jc, &nc, &pc, &kc);
        int64_t items = pack_items(job, nc);
        if (s >= 2) finish_work(job, s - 2, a_pack); /* it read panels[s % 2] */
        pack_claimed(job, s, items);
        wait_for(&step->pack_done, items);
        if (s >= 1) finish_work(job, s - 1, a_pack); /* it wrote the same C */
        work_claimed(job, s, a_pack);
    }
}
