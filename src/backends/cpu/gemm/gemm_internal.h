/* Pieces of the packed GEMM shared between its files. */
#ifndef PORTA_CPU_GEMM_INTERNAL_H
#define PORTA_CPU_GEMM_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gemm.h"
#include "gemm_kernel.h"

/* C (m x n) = A (m x k) B (k x n) + beta C, every operand addressed by
 * element strides; then the epilogue, if any, over C's finished blocks. */
typedef struct gemm_problem {
    int64_t m, n, k;
    const float *a;
    int64_t a_rs, a_cs;
    const float *b;
    int64_t b_rs, b_cs;
    float beta;
    float *c;
    int64_t c_rs, c_cs;
    const cpu_gemm_epilogue *epilogue; /* NULL: none */
    bool transposed; /* computing C^T: the epilogue's rows are our columns */
} gemm_problem;

/* Hands rows [row0, row0 + rows) x columns [col0, col0 + cols) of C, as
 * the problem is oriented now, to its epilogue in the caller's orientation. */
static inline void gemm_finish_block(const gemm_problem *p, int64_t row0, int64_t rows,
                                     int64_t col0, int64_t cols) {
    if (p->transposed)
        p->epilogue->fn(p->epilogue->ctx, col0, cols, row0, rows);
    else
        p->epilogue->fn(p->epilogue->ctx, row0, rows, col0, cols);
}

/* Where a block multiplied at its last depth step lies in C, so that each
 * strip of it can go to the epilogue as soon as it is written. */
typedef struct gemm_block_done {
    const gemm_problem *problem; /* with an epilogue */
    int64_t row0, col0;
} gemm_block_done;

/* Cache blocking of the five-loop algorithm: a kc x nc panel of B is packed
 * once and shared by the team, which multiplies it with mc x kc blocks of A
 * each member packs for itself. */
typedef struct gemm_blocking {
    int64_t kc; /* depth of a packed panel; a kc x nr sliver of B stays in L1 */
    int64_t mc; /* rows of a packed A block, which stays in a core's L2 */
    int64_t nc; /* columns of the B panel, which stays in L3 */
} gemm_blocking;

/* Block sizes for a kernel's tile on this machine's caches. */
gemm_blocking gemm_blocking_for(const gemm_kernel *kernel);

/* Packs `rows` x kc of a matrix into slivers of `width` rows: sliver s holds,
 * for each p in [0, kc), the `width` elements of rows s*width.. at column p,
 * zero-padded past `rows`. row_stride and col_stride are the source's
 * element strides. Used for A (rows = rows of A) and for B (rows = columns
 * of B, so its strides come swapped). */
void gemm_pack(float *dst, const float *src, int64_t row_stride, int64_t col_stride,
               int64_t rows, int64_t kc, int width);

/* C (mc x nc) = A B + beta C for one packed mc x kc block of A and nc
 * columns of a packed B panel. With `done` (not NULL), C's values are final
 * afterwards, and each nr-wide strip goes to the epilogue once written. */
void gemm_multiply_block(const gemm_kernel *kernel, int64_t kc, const float *a_pack,
                         const float *b_pack, float beta, float *c, int64_t c_rs, int64_t c_cs,
                         int64_t mc, int64_t nc, const gemm_block_done *done);

/* Progress through one (column panel, depth step) of a job: work items
 * are claimed by counting up *_claimed and reported by counting up *_done. */
typedef struct gemm_step {
    _Atomic int64_t pack_claimed, pack_done; /* packing the B panel */
    _Atomic int64_t work_claimed, work_done; /* multiplying it into C */
} gemm_step;

/* One product (k > 0) cut into work items that whichever threads of a team
 * are running claim: packing pieces of each shared B panel, then multiplying
 * row blocks (and, when C has too few rows to go round, column parts) of C
 * by it. Threads the pool starts late, or never, leave their share to the
 * others instead of holding them up. */
typedef struct gemm_job {
    const gemm_kernel *kernel;
    gemm_blocking blocking;
    gemm_problem problem;
    int team;      /* threads worth running; the scratch has room for them */
    int64_t nc, kc; /* the blocking's, evened out to this problem */
    int64_t k_steps, steps; /* depth steps per column panel; steps in all */
    int64_t row_block;      /* rows of C per work item, a multiple of mr */
    int64_t row_blocks, col_parts;
    int64_t pack_slivers; /* B slivers per packing item */
    size_t scratch_bytes;
    gemm_step *step;
    float *panels[2]; /* step s packs into panels[s % 2] */
    float *a_packs;   /* one A block per thread */
    int64_t panel_stride, a_pack_stride; /* floats per buffer, whole cache lines */
} gemm_job;

/* Cuts job->problem into work items for up to `team` threads, sets
 * job->team to how many are worth running and job->scratch_bytes; kernel,
 * blocking and problem must be set. */
void gemm_job_plan(gemm_job *job, int team);
/* Lays the job's bookkeeping and packing buffers out in `scratch`
 * (scratch_bytes, 64-byte aligned). */
void gemm_job_attach(gemm_job *job, void *scratch);
/* Thread `thread` (below job->team) works on the job until nothing is left
 * to claim; the job is done once every thread that started has returned. */
void gemm_job_work(gemm_job *job, int thread);

/* Straight loops without packing, for problems too small to amortize it
 * (and k == 0). */
void gemm_run_unpacked(const gemm_problem *problem);

#endif
