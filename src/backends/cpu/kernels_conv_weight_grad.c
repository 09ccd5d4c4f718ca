/* PRIM_CONV_WEIGHT_GRAD on the CPU: the gradient of a convolution's weight.
 *
 * For group g, gw_g [Cout/g, depth] is the sum over images n of
 * gy_n,g [Cout/g, positions] @ col_n,g^T [positions, depth], where col is
 * the forward convolution's im2col of x (kernels_conv.h), as PyTorch's CPU
 * kernel computes it. No index tensors and no per-image products: a task
 * takes one group and either several whole images (small images: their
 * columns side by side make one product deep enough for the GEMM to run
 * fast) or a tile of one image's positions, and adds its product into its
 * thread's own [Cout, depth] partial sum; the partials are added at the
 * end. Float32, float16 and bfloat16 compute in float through cpu_sgemm,
 * float64 in double. */
#include <string.h>

#include "backends/cpu/cpu_kernels.h"
#include "backends/cpu/gemm/gemm.h"
#include "backends/cpu/kernels_conv.h"
#include "backends/cpu/threadpool.h"
#include "core/alloc.h"
#include "core/dtype.h"
#include "core/status.h"

/* Bytes of one thread's column tile. */
#define COL_BYTES (1 << 20)
/* Columns per product unless the images are smaller: narrower products
 * make GEMMs too shallow to run fast. */
#define MIN_COLUMNS 64
/* Multiply-adds below which a task is not worth another thread. */
#define TASK_WORK (1 << 18)

typedef struct weight_grad_job {
    conv_job conv; /* conv(x, w) = gy: gy is the job's output */
    int64_t images;
    /* a task: block_images whole images when tiles_per_image is 1, else
     * tile_positions positions of one image */
    int64_t block_images, tiles_per_image, tile_positions, tasks_per_group;
    int64_t columns;    /* the most columns of one task: the tiles' row length */
    int64_t tile_depth; /* col rows per pass */
    int64_t out_channels;
    char *partials; /* per thread: [Cout, depth] of the arithmetic type */
    char *scratch;  /* per thread: col tile, then gy tile */
    size_t partial_stride, scratch_stride, col_bytes;
    _Atomic(porta_status *) error;
} weight_grad_job;

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }
static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* partial [m, rows] (row stride depth) += a [m, k] @ b^T, b [rows, k]; both
 * with row stride ld. */
static porta_status *accumulate_product(const weight_grad_job *job, int64_t m, int64_t rows,
                                        int64_t k, const char *a, const char *b, char *partial) {
    int64_t ld = job->columns, depth = job->conv.depth;
    if (!job->conv.wide)
        return cpu_sgemm(m, rows, k, (const float *)a, ld, 1, (const float *)b, 1, ld, 1.0f,
                         (float *)partial, depth, 1);
    const double *ad = (const double *)a, *bd = (const double *)b;
    double *c = (double *)partial;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < rows; j++) {
            double sum = 0.0;
            for (int64_t q = 0; q < k; q++) sum += ad[i * ld + q] * bd[j * ld + q];
            c[i * depth + j] += sum;
        }
    return NULL;
}

static porta_status *run_task(const weight_grad_job *job, int64_t task, int thread) {
    const conv_job *cj = &job->conv;
    int64_t g = task / job->tasks_per_group, block = task % job->tasks_per_group;
    int64_t b0, image_count, p0, count;
    if (job->tiles_per_image == 1) {
        b0 = block * job->block_images;
        image_count = min64(job->block_images, job->images - b0);
        p0 = 0;
        count = cj->positions;
    } else {
        b0 = block / job->tiles_per_image;
        image_count = 1;
        p0 = block % job->tiles_per_image * job->tile_positions;
        count = min64(job->tile_positions, cj->positions - p0);
    }
    int64_t m = cj->out_per_group, ld = job->columns, k = image_count * count;
    size_t ct = cj->ct_size;
    char *col = job->scratch + (size_t)thread * job->scratch_stride;
    char *gy_tile = col + job->col_bytes;
    for (int64_t t = 0; t < image_count; t++)
        for (int64_t i = 0; i < m; i++)
            cpu_conv_load_positions(cj, b0 + t, g * m + i, p0, count,
                           gy_tile + (size_t)(i * ld + t * count) * ct);
    char *partial = job->partials + (size_t)thread * job->partial_stride +
                    (size_t)(g * m * cj->depth) * ct;
    for (int64_t row0 = 0; row0 < cj->depth; row0 += job->tile_depth) {
        int64_t rows = min64(job->tile_depth, cj->depth - row0);
        for (int64_t t = 0; t < image_count; t++)
            cpu_conv_im2col(cj, b0 + t, g, row0, rows, p0, count, ld,
                            col + (size_t)(t * count) * ct);
        PORTA_TRY(accumulate_product(job, m, rows, k, gy_tile, col,
                                     partial + (size_t)row0 * ct));
    }
    return NULL;
}

static void task_range(void *ctx, int64_t begin, int64_t end, int thread) {
    weight_grad_job *job = ctx;
    for (int64_t t = begin; t < end && !atomic_load(&job->error); t++) {
        porta_status *status = run_task(job, t, thread), *none = NULL;
        if (status && !atomic_compare_exchange_strong(&job->error, &none, status))
            porta_status_free(status);
    }
}

/* Tasks: whole images side by side up to the tile's width, else tiles of
 * one image; then, when there are fewer blocks than threads, smaller ones,
 * a multiple of the thread count where that keeps them whole. */
static void choose_tasks(weight_grad_job *job, int threads) {
    const conv_job *cj = &job->conv;
    int64_t budget = COL_BYTES / (int64_t)cj->ct_size;
    int64_t width = max64(MIN_COLUMNS, budget / max64(cj->depth, 1));
    int64_t positions = max64(cj->positions, 1);
    if (positions <= width) {
        job->tiles_per_image = 1;
        job->tile_positions = positions;
        job->block_images = max64(1, min64(job->images, width / positions));
        int64_t blocks = ceil_div(job->images, job->block_images);
        if (blocks * cj->groups < 4 * threads) {
            /* an empty batch has no blocks, yet the tiles need a width */
            blocks = max64(1, ceil_div(blocks, threads) * threads);
            job->block_images = max64(1, ceil_div(job->images, blocks));
        }
        job->tasks_per_group = ceil_div(job->images, job->block_images);
        job->columns = job->block_images * positions;
    } else {
        job->block_images = 1;
        job->tile_positions = width;
        job->tiles_per_image = ceil_div(positions, width);
        job->tasks_per_group = job->images * job->tiles_per_image;
        job->columns = width;
    }
    job->tile_depth = max64(1, min64(cj->depth, budget / job->columns));
}

/* out[co, ci, *kernel] = the sum of the threads' partials at (co, ci * taps
 * + tap), narrowed to out's dtype: row-major over out is the partials'
 * order. */
static void write_out(const weight_grad_job *job, int partials, porta_tensor *out) {
    const conv_job *cj = &job->conv;
    int64_t elem = (int64_t)porta_dtype_size(out->dtype), total = porta_tensor_numel(out);
    int64_t idx[PORTA_MAX_RANK] = {0}, offset = 0;
    char *base = (char *)core_tensor_data(out);
    for (int64_t e = 0; e < total; e++) {
        double sum = 0.0;
        float sumf = 0.0f;
        for (int t = 0; t < partials; t++) {
            const char *p = job->partials + (size_t)t * job->partial_stride;
            if (cj->wide)
                sum += ((const double *)p)[e];
            else
                sumf += ((const float *)p)[e];
        }
        char *dst = base + offset * elem;
        switch (out->dtype) {
        case PORTA_F64: *(double *)dst = sum; break;
        case PORTA_F32: *(float *)dst = sumf; break;
        case PORTA_F16: *(uint16_t *)dst = core_f32_to_f16(sumf); break;
        default: *(uint16_t *)dst = core_f32_to_bf16(sumf); break;
        }
        for (int d = out->rank - 1; d >= 0; d--) {
            offset += out->strides[d];
            if (++idx[d] < out->sizes[d]) break;
            offset -= idx[d] * out->strides[d];
            idx[d] = 0;
        }
    }
}

porta_status *cpu_exec_conv_weight_grad(const ir_prim *prim, const porta_tensor *const *inputs,
                                        int input_count, porta_tensor *out) {
    if (input_count != 2)
        return porta_error(PORTA_ERR_INTERNAL,
                           "conv_weight_grad kernel: expected 2 inputs (x, grad_output), got %d",
                           input_count);
    if (porta_tensor_numel(out) == 0) return NULL;
    const porta_tensor *x = inputs[0], *gy = inputs[1];
    weight_grad_job job;
    memset(&job, 0, sizeof job);
    cpu_conv_describe(&job.conv, &prim->conv, x, out->sizes, gy);
    atomic_init(&job.error, NULL);
    job.images = x->sizes[0];
    job.out_channels = out->sizes[0];
    int threads = cpu_thread_count();
    choose_tasks(&job, threads);
    int64_t tasks = job.conv.positions ? job.conv.groups * job.tasks_per_group : 0;
    tasks = job.images ? tasks : 0;
    int64_t task_work = job.conv.out_per_group * job.conv.depth * job.columns;
    int64_t grain = TASK_WORK / max64(task_work, 1) + 1;
    int chunks = (int)max64(1, min64(threads, ceil_div(tasks, grain)));

    size_t ct = job.conv.ct_size;
    job.col_bytes = (size_t)(job.tile_depth * job.columns) * ct;
    job.col_bytes = (job.col_bytes + 63) / 64 * 64;
    size_t gy_bytes = (size_t)(job.conv.out_per_group * job.columns) * ct;
    job.scratch_stride = job.col_bytes + (gy_bytes + 63) / 64 * 64;
    job.partial_stride = ((size_t)(job.out_channels * job.conv.depth) * ct + 63) / 64 * 64;
    porta_status *status = NULL;
    CORE_TRY_GOTO(status, core_host_alloc(job.partial_stride * (size_t)chunks,
                                          "conv weight gradient sums", (void **)&job.partials),
                  done);
    memset(job.partials, 0, job.partial_stride * (size_t)chunks);
    CORE_TRY_GOTO(status, core_host_alloc(job.scratch_stride * (size_t)chunks,
                                          "conv weight gradient tiles", (void **)&job.scratch),
                  done);
    cpu_parallel_for(tasks, grain, task_range, &job);
    status = atomic_exchange(&job.error, NULL);
    if (!status) write_out(&job, chunks, out);
done:
    core_host_free(job.scratch);
    core_host_free(job.partials);
    return status;
}
