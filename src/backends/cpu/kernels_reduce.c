/* The CPU reduction driver: turns any strided input and output into tiles
 * for the typed loops of kernels_reduce_fold.h, and spreads them over the
 * thread pool.
 *
 * Layout: size-1 axes are dropped, kept axes are ordered by input stride and
 * merged where contiguous, and so are reduced axes. The innermost kept axis
 * becomes the tile axis (a tile is a stretch of outputs along it) and the
 * innermost reduced axis the run axis, so a tile folds a contiguous run per
 * output when the reduced axes are innermost, and whole rows of outputs when
 * the kept ones are. Arg ops keep their reduced axes in logical order, since
 * the index they return counts in that order. */

#include "backends/cpu/cpu_kernels.h"
#include "backends/cpu/kernels_reduce.h"
#include "backends/cpu/threadpool.h"
#include "core/alloc.h"
#include "core/status.h"

/* Elements one pool task should at least cover: below this, waking a thread
 * costs more than it saves. */
#define REDUCE_GRAIN 32768
/* Outputs per tile. Row sweeps (kept axis contiguous) want whole rows, as
 * short stretches of many rows defeat the prefetcher; runs per output need
 * no more than enough outputs to spread over threads. */
#define ROWS_TILE 8192
#define RUNS_TILE 256
/* Scratch per output of a tile: its total, its arg index and a fold lane. */
#define SCRATCH_PER_OUTPUT (sizeof(reduce_total) + sizeof(int64_t) + 8)

typedef struct reduce_plan {
    const reduce_kernel *kernel;
    bool arg;
    const char *x;
    char *out;
    size_t x_elem, out_elem;
    /* Kept axes except the tile axis, outermost first. */
    int outer_rank;
    int64_t outer_sizes[PORTA_MAX_RANK], outer_x[PORTA_MAX_RANK], outer_out[PORTA_MAX_RANK];
    int64_t outer_count;
    int64_t tile_size, tile_x, tile_out, tile_width, tiles_per_outer;
    /* Reduced axes except the run axis, outermost first. */
    int red_rank;
    int64_t red_sizes[PORTA_MAX_RANK], red_x[PORTA_MAX_RANK];
    int64_t run_size, run_x;
    int64_t red_count; /* elements folded into each output */
} reduce_plan;

/* An axis while planning: its size and strides in x and out. */
typedef struct plan_axis {
    int64_t size, x, out;
} plan_axis;

/* Orders axes outermost (largest input stride) first; stable, so equal
 * strides keep their order. */
static void sort_by_input_stride(plan_axis *axes, int count) {
    for (int i = 1; i < count; i++) {
        plan_axis a = axes[i];
        int j = i;
        for (; j > 0 && axes[j - 1].x < a.x; j--) axes[j] = axes[j - 1];
        axes[j] = a;
    }
}

/* Merges each axis into its outer neighbour when together they step through
 * memory as one axis would, in x and (for kept axes) in out. */
static int merge_contiguous(plan_axis *axes, int count) {
    if (count == 0) return 0;
    int merged = 0;
    for (int i = 1; i < count; i++) {
        plan_axis *outer = &axes[merged];
        const plan_axis *inner = &axes[i];
        if (outer->x == inner->x * inner->size && outer->out == inner->out * inner->size) {
            outer->size *= inner->size;
            outer->x = inner->x;
            outer->out = inner->out;
        } else {
            axes[++merged] = *inner;
        }
    }
    return merged + 1;
}

/* Turns negative input strides positive by walking the axis from its other
 * end; the output moves with it, so each element still lands where it did. */
static void make_strides_positive(plan_axis *axes, int count, int64_t *x_base,
                                  int64_t *out_base) {
    for (int i = 0; i < count; i++) {
        if (axes[i].x >= 0) continue;
        *x_base += (axes[i].size - 1) * axes[i].x;
        *out_base += (axes[i].size - 1) * axes[i].out;
        axes[i].x = -axes[i].x;
        axes[i].out = -axes[i].out;
    }
}

static void build_plan(const ir_prim *prim, const porta_tensor *x, const porta_tensor *out,
                       const reduce_kernel *kernel, reduce_plan *p) {
    bool reduced[PORTA_MAX_RANK] = {false};
    for (int i = 0; i < prim->axis_count; i++) reduced[prim->axes[i]] = true;
    for (int axis = 0; axis < x->rank && prim->axis_count == 0; axis++) reduced[axis] = true;

    plan_axis kept[PORTA_MAX_RANK], red[PORTA_MAX_RANK];
    int kept_count = 0, red_count = 0, out_axis = 0;
    for (int axis = 0; axis < x->rank; axis++) {
        int64_t out_stride = 0;
        if (!reduced[axis] || prim->keepdim) out_stride = out->strides[out_axis++];
        if (x->sizes[axis] == 1) continue;
        plan_axis a = {x->sizes[axis], x->strides[axis], out_stride};
        if (reduced[axis])
            red[red_count++] = (plan_axis){a.size, a.x, 0};
        else
            kept[kept_count++] = a;
    }

    int64_t x_base = 0, out_base = 0;
    make_strides_positive(kept, kept_count, &x_base, &out_base);
    sort_by_input_stride(kept, kept_count);
    kept_count = merge_contiguous(kept, kept_count);
    p->arg = kernel->find != NULL;
    if (!p->arg) {
        make_strides_positive(red, red_count, &x_base, &out_base);
        sort_by_input_stride(red, red_count);
    }
    red_count = merge_contiguous(red, red_count);

    p->kernel = kernel;
    p->x_elem = porta_dtype_size(x->dtype);
    p->out_elem = porta_dtype_size(out->dtype);
    p->x = core_tensor_data(x) + x_base * (int64_t)p->x_elem;
    p->out = core_tensor_data(out) + out_base * (int64_t)p->out_elem;

    plan_axis tile = kept_count ? kept[kept_count - 1] : (plan_axis){1, 0, 0};
    p->outer_rank = kept_count ? kept_count - 1 : 0;
    p->outer_count = 1;
    for (int i = 0; i < p->outer_rank; i++) {
        p->outer_sizes[i] = kept[i].size;
        p->outer_x[i] = kept[i].x;
        p->outer_out[i] = kept[i].out;
        p->outer_count *= kept[i].size;
    }
    plan_axis run = red_count ? red[red_count - 1] : (plan_axis){1, 0, 0};
    int64_t cap = tile.x == 1 && run.x != 1 ? ROWS_TILE : RUNS_TILE;
    p->tile_size = tile.size;
    p->tile_x = tile.x;
    p->tile_out = tile.out;
    p->tile_width = tile.size < cap ? tile.size : cap;
    p->tiles_per_outer = (tile.size + p->tile_width - 1) / p->tile_width;

    p->red_rank = red_count ? red_count - 1 : 0;
    p->red_count = run.size;
    for (int i = 0; i < p->red_rank; i++) {
        p->red_sizes[i] = red[i].size;
        p->red_x[i] = red[i].x;
        p->red_count *= red[i].size;
    }
    p->run_size = run.size;
    p->run_x = run.x;
}

/* One tile: where its inputs and outputs start, and how many outputs. */
typedef struct tile_ref {
    int64_t x_off, out_off, width;
} tile_ref;

static tile_ref locate_tile(const reduce_plan *p, int64_t unit) {
    int64_t outer = unit / p->tiles_per_outer, first = unit % p->tiles_per_outer * p->tile_width;
    tile_ref t = {first * p->tile_x, first * p->tile_out, p->tile_size - first};
    if (t.width > p->tile_width) t.width = p->tile_width;
    for (int i = p->outer_rank - 1; i >= 0; i--) {
        int64_t idx = outer % p->outer_sizes[i];
        outer /= p->outer_sizes[i];
        t.x_off += idx * p->outer_x[i];
        t.out_off += idx * p->outer_out[i];
    }
    return t;
}

/* Walks the reduced elements [begin, end) (row-major over the reduced axes)
 * of one tile in runs along the run axis, calling either fold or find. */
typedef struct run_walk {
    const reduce_plan *p;
    tile_ref tile;
    reduce_total *totals;        /* fold only */
    void *lanes;                 /* fold only */
    const reduce_total *targets; /* find only */
    int64_t *idx;                /* find only */
} run_walk;

static void walk_runs(const run_walk *walk, int64_t begin, int64_t end, bool find) {
    if (begin >= end) return; /* also spares an empty run axis the division */
    const reduce_plan *p = walk->p;
    int64_t n = p->run_size;
    int64_t pos[PORTA_MAX_RANK], offset = walk->tile.x_off;
    int64_t outer = begin / n, i = begin % n;
    for (int d = p->red_rank - 1; d >= 0; d--) {
        pos[d] = outer % p->red_sizes[d];
        outer /= p->red_sizes[d];
        offset += pos[d] * p->red_x[d];
    }
    for (int64_t at = begin; at < end;) {
        int64_t count = n - i < end - at ? n - i : end - at;
        const char *x = p->x + (offset + i * p->run_x) * (int64_t)p->x_elem;
        if (!find) {
            p->kernel->fold(x, walk->tile.width, p->tile_x, count, p->run_x, walk->totals,
                            walk->lanes);
        } else if (p->kernel->find(x, walk->tile.width, p->tile_x, count, p->run_x,
                                   walk->targets, walk->idx, at) == 0) {
            return; /* every output found its first extreme */
        }
        at += count;
        i = 0;
        for (int d = p->red_rank - 1; d >= 0; d--) { /* next run: an odometer step */
            offset += p->red_x[d];
            if (++pos[d] < p->red_sizes[d]) break;
            offset -= pos[d] * p->red_x[d];
            pos[d] = 0;
        }
    }
}

static void store_tile(const reduce_plan *p, const tile_ref *t, const reduce_total *totals,
                       const int64_t *idx) {
    char *dst = p->out + t->out_off * (int64_t)p->out_elem;
    if (!p->arg) {
        p->kernel->store(totals, t->width, dst, p->tile_out);
        return;
    }
    int64_t *indices = (int64_t *)dst;
    for (int64_t j = 0; j < t->width; j++) indices[j * p->tile_out] = idx[j];
}

/* A task's share of the scratch block: totals, arg indices and fold lanes
 * for one tile. */
typedef struct tile_scratch {
    reduce_total *totals;
    int64_t *idx;
    void *lanes;
} tile_scratch;

static tile_scratch scratch_of(const reduce_plan *p, char *block, int task) {
    size_t width = (size_t)p->tile_width;
    char *mine = block + (size_t)task * width * SCRATCH_PER_OUTPUT;
    return (tile_scratch){(reduce_total *)mine, (int64_t *)(mine + width * sizeof(reduce_total)),
                          mine + width * (sizeof(reduce_total) + sizeof(int64_t))};
}

static void reset_scratch(const reduce_plan *p, tile_scratch s, int64_t width) {
    for (int64_t j = 0; j < width; j++) {
        s.totals[j] = p->kernel->identity;
        s.idx[j] = -1;
    }
}

typedef struct reduce_job {
    const reduce_plan *p;
    char *scratch;
    int tasks;     /* split only: slot `tasks` of scratch holds the merged result */
    tile_ref tile; /* split only: the tile whose reductions are shared out */
} reduce_job;

/* ---- many tiles: each task reduces whole tiles ---- */

static void reduce_tiles(void *ctx, int64_t begin, int64_t end, int task) {
    const reduce_job *job = ctx;
    const reduce_plan *p = job->p;
    tile_scratch s = scratch_of(p, job->scratch, task);
    for (int64_t unit = begin; unit < end; unit++) {
        run_walk walk = {p, locate_tile(p, unit), s.totals, s.lanes, s.totals, s.idx};
        reset_scratch(p, s, walk.tile.width);
        walk_runs(&walk, 0, p->red_count, false);
        if (p->arg) walk_runs(&walk, 0, p->red_count, true);
        store_tile(p, &walk.tile, s.totals, s.idx);
    }
}

/* ---- few tiles: tasks split each tile's reduction, with partial results
 * per task merged afterwards ---- */

static void fold_part(void *ctx, int64_t begin, int64_t end, int task) {
    const reduce_job *job = ctx;
    tile_scratch s = scratch_of(job->p, job->scratch, task);
    run_walk walk = {job->p, job->tile, s.totals, s.lanes, NULL, NULL};
    walk_runs(&walk, begin, end, false);
}

/* Finds against the merged totals, which live in the slot after the tasks'. */
static void find_part(void *ctx, int64_t begin, int64_t end, int task) {
    const reduce_job *job = ctx;
    tile_scratch s = scratch_of(job->p, job->scratch, task);
    tile_scratch merged = scratch_of(job->p, job->scratch, job->tasks);
    run_walk walk = {job->p, job->tile, NULL, NULL, merged.totals, s.idx};
    walk_runs(&walk, begin, end, true);
}

static void reduce_split(const reduce_plan *p, char *scratch, int tasks, int64_t units) {
    tile_scratch merged = scratch_of(p, scratch, tasks);
    for (int64_t unit = 0; unit < units; unit++) {
        reduce_job job = {p, scratch, tasks, locate_tile(p, unit)};
        int64_t width = job.tile.width;
        for (int t = 0; t <= tasks; t++) reset_scratch(p, scratch_of(p, scratch, t), width);
        int64_t grain = REDUCE_GRAIN / width;
        cpu_parallel_for(p->red_count, grain, fold_part, &job);
        for (int t = 0; t < tasks; t++) {
            tile_scratch part = scratch_of(p, scratch, t);
            for (int64_t j = 0; j < width; j++) p->kernel->merge(&merged.totals[j], part.totals[j]);
        }
        if (p->arg) {
            cpu_parallel_for(p->red_count, grain, find_part, &job);
            /* Tasks cover the range in order, so the first that found one wins. */
            for (int t = 0; t < tasks; t++) {
                tile_scratch part = scratch_of(p, scratch, t);
                for (int64_t j = 0; j < width; j++)
                    if (merged.idx[j] < 0) merged.idx[j] = part.idx[j];
            }
        }
        store_tile(p, &job.tile, merged.totals, merged.idx);
    }
}

static porta_dtype expected_out_dtype(int op, porta_dtype x) {
    switch (op) {
    case PORTA_REDUCE_ARGMAX:
    case PORTA_REDUCE_ARGMIN: return PORTA_I64;
    case PORTA_REDUCE_ANY:
    case PORTA_REDUCE_ALL: return PORTA_BOOL;
    default: return x;
    }
}

porta_status *cpu_exec_reduce(const ir_prim *prim, const porta_tensor *const *inputs,
                              int input_count, porta_tensor *out) {
    if (input_count != 1)
        return porta_error(PORTA_ERR_INTERNAL, "cpu: %s expects 1 input, got %d",
                           ir_prim_name(prim), input_count);
    const porta_tensor *x = inputs[0];
    const reduce_kernel *kernel = cpu_reduce_kernel((porta_reduce_op)prim->op, x->dtype);
    if (!kernel || out->dtype != expected_out_dtype(prim->op, x->dtype))
        return porta_error(PORTA_ERR_INTERNAL, "cpu: %s has no kernel from %s to %s",
                           ir_prim_name(prim), porta_dtype_name(x->dtype),
                           porta_dtype_name(out->dtype));
    if (porta_tensor_numel(out) == 0) return NULL;

    reduce_plan plan;
    build_plan(prim, x, out, kernel, &plan);
    if (plan.arg && plan.red_count == 0)
        return porta_error(PORTA_ERR_INTERNAL, "cpu: %s over no elements",
                           ir_prim_name(prim));
    int tasks = cpu_thread_count();
    int64_t units = plan.outer_count * plan.tiles_per_outer;
    int64_t unit_elems = plan.red_count * plan.tile_width;
    /* Too few tiles to occupy every thread: split the reductions instead. */
    bool split = units < 2 * (int64_t)tasks && tasks > 1 && unit_elems >= 2 * REDUCE_GRAIN;
    char *scratch;
    PORTA_TRY(core_host_alloc((size_t)(tasks + 1) * (size_t)plan.tile_width * SCRATCH_PER_OUTPUT,
                               "reduction scratch", (void **)&scratch));
    if (split) {
        reduce_split(&plan, scratch, tasks, units);
    } else {
        reduce_job job = {&plan, scratch, tasks, {0, 0, 0}};
        cpu_parallel_for(units, unit_elems > 0 ? REDUCE_GRAIN / unit_elems : units, reduce_tiles,
                         &job);
    }
    core_host_free(scratch);
    return NULL;
}
