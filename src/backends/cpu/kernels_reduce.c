/* The CPU reduction driver: turns any strided input and output into tiles
 * for the typed loops of kernels_reduce_fold.c, and spreads them over the
 * thread pool.
 *
 * Layout: size-1 axes are dropped, kept axes are ordered by input stride and
 * merged where contiguous, and so are reduced axes. The innermost kept axis
 * becomes the tile axis (up to REDUCE_TILE outputs per tile) and the
 * innermost reduced axis the run axis, so a tile folds a contiguous run per
 * output when the reduced axes are innermost, and whole rows of outputs when
 * the kept ones are. Arg ops keep their reduced axes in logical order, since
 * the index they return counts in that order. */
#include <string.h>

#include "backends/cpu/cpu_kernels.h"
#include "backends/cpu/kernels_reduce.h"
#include "backends/cpu/threadpool.h"
#include "core/alloc.h"
#include "core/status.h"

/* Elements one pool task should at least cover: below this, waking a thread
 * costs more than it saves. */
#define REDUCE_GRAIN 32768

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
    int64_t tile_size, tile_x, tile_out, tiles_per_outer;
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

static void build_plan(const porta_prim *prim, const porta_tensor *x, const porta_tensor *out,
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
    p->x = porta_tensor_data(x) + x_base * (int64_t)p->x_elem;
    p->out = porta_tensor_data(out) + out_base * (int64_t)p->out_elem;

    plan_axis tile = kept_count ? kept[kept_count - 1] : (plan_axis){1, 0, 0};
    p->outer_rank = kept_count ? kept_count - 1 : 0;
    p->outer_count = 1;
    for (int i = 0; i < p->outer_rank; i++) {
        p->outer_sizes[i] = kept[i].size;
        p->outer_x[i] = kept[i].x;
        p->outer_out[i] = kept[i].out;
        p->outer_count *= kept[i].size;
    }
    p->tile_size = tile.size;
    p->tile_x = tile.x;
    p->tile_out = tile.out;
    p->tiles_per_outer = (tile.size + REDUCE_TILE - 1) / REDUCE_TILE;

    plan_axis run = red_count ? red[red_count - 1] : (plan_axis){1, 0, 0};
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
    int64_t outer = unit / p->tiles_per_outer, first = unit % p->tiles_per_outer * REDUCE_TILE;
    tile_ref t = {first * p->tile_x, first * p->tile_out, p->tile_size - first};
    if (t.width > REDUCE_TILE) t.width = REDUCE_TILE;
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
    reduce_total *totals;
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
            p->kernel->fold(x, walk->tile.width, p->tile_x, count, p->run_x, walk->totals);
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
    for (int64_t j = 0; j < t->width; j++) {
        char *dst = p->out + (t->out_off + j * p->tile_out) * (int64_t)p->out_elem;
        if (p->arg)
            memcpy(dst, &idx[j], sizeof idx[j]);
        else
            p->kernel->store(totals[j], dst);
    }
}

/* ---- many tiles: each task reduces whole tiles ---- */

static void reduce_tiles(void *ctx, int64_t begin, int64_t end, int thread) {
    const reduce_plan *p = ctx;
    reduce_total totals[REDUCE_TILE];
    int64_t idx[REDUCE_TILE];
    for (int64_t unit = begin; unit < end; unit++) {
        run_walk walk = {p, locate_tile(p, unit), totals, totals, idx};
        for (int64_t j = 0; j < walk.tile.width; j++) {
            totals[j] = p->kernel->identity;
            idx[j] = -1;
        }
        walk_runs(&walk, 0, p->red_count, false);
        if (p->arg) walk_runs(&walk, 0, p->red_count, true);
        store_tile(p, &walk.tile, totals, idx);
    }
}

/* ---- few tiles: tasks split each tile's reduction, with partial results
 * per task merged afterwards ---- */

typedef struct split_job {
    const reduce_plan *p;
    tile_ref tile;
    reduce_total *partials;    /* [task][REDUCE_TILE] */
    int64_t *found;            /* [task][REDUCE_TILE] */
    const reduce_total *targets;
} split_job;

static void fold_part(void *ctx, int64_t begin, int64_t end, int task) {
    const split_job *job = ctx;
    run_walk walk = {job->p, job->tile, job->partials + (int64_t)task * REDUCE_TILE, NULL, NULL};
    walk_runs(&walk, begin, end, false);
}

static void find_part(void *ctx, int64_t begin, int64_t end, int task) {
    const split_job *job = ctx;
    run_walk walk = {job->p, job->tile, NULL, job->targets,
                     job->found + (int64_t)task * REDUCE_TILE};
    walk_runs(&walk, begin, end, true);
}

static porta_status *reduce_split(const reduce_plan *p, int64_t units) {
    int tasks = cpu_thread_count();
    size_t slots = (size_t)tasks * REDUCE_TILE;
    reduce_total *partials;
    PORTA_TRY(porta_host_alloc(slots * (sizeof *partials + sizeof(int64_t)),
                               "reduction partial results", (void **)&partials));
    int64_t *found = (int64_t *)(partials + slots);
    reduce_total totals[REDUCE_TILE];
    int64_t idx[REDUCE_TILE];
    for (int64_t unit = 0; unit < units; unit++) {
        split_job job = {p, locate_tile(p, unit), partials, found, totals};
        int64_t width = job.tile.width;
        for (size_t s = 0; s < slots; s++) {
            partials[s] = p->kernel->identity;
            found[s] = -1;
        }
        int64_t grain = REDUCE_GRAIN / width;
        cpu_parallel_for(p->red_count, grain, fold_part, &job);
        for (int64_t j = 0; j < width; j++) {
            totals[j] = partials[j];
            for (int t = 1; t < tasks; t++)
                p->kernel->merge(&totals[j], partials[(int64_t)t * REDUCE_TILE + j]);
        }
        if (p->arg) {
            cpu_parallel_for(p->red_count, grain, find_part, &job);
            for (int64_t j = 0; j < width; j++) { /* the earliest task that found one wins */
                idx[j] = -1;
                for (int t = 0; t < tasks && idx[j] < 0; t++)
                    idx[j] = found[(int64_t)t * REDUCE_TILE + j];
            }
        }
        store_tile(p, &job.tile, totals, idx);
    }
    porta_host_free(partials);
    return NULL;
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

porta_status *cpu_exec_reduce(const porta_prim *prim, const porta_tensor *const *inputs,
                              int input_count, porta_tensor *out) {
    if (input_count != 1)
        return porta_error(PORTA_ERR_INTERNAL, "cpu: %s expects 1 input, got %d",
                           porta_prim_name(prim), input_count);
    const porta_tensor *x = inputs[0];
    const reduce_kernel *kernel = cpu_reduce_kernel((porta_reduce_op)prim->op, x->dtype);
    if (!kernel || out->dtype != expected_out_dtype(prim->op, x->dtype))
        return porta_error(PORTA_ERR_INTERNAL, "cpu: %s has no kernel from %s to %s",
                           porta_prim_name(prim), porta_dtype_name(x->dtype),
                           porta_dtype_name(out->dtype));
    if (porta_tensor_numel(out) == 0) return NULL;

    reduce_plan plan;
    build_plan(prim, x, out, kernel, &plan);
    if (plan.arg && plan.red_count == 0)
        return porta_error(PORTA_ERR_INTERNAL, "cpu: %s over no elements",
                           porta_prim_name(prim));
    int64_t units = plan.outer_count * plan.tiles_per_outer;
    int64_t unit_elems = plan.red_count * (plan.tile_size < REDUCE_TILE ? plan.tile_size
                                                                         : REDUCE_TILE);
    /* Too few tiles to occupy every thread: split the reductions instead. */
    if (units < 2 * (int64_t)cpu_thread_count() && cpu_thread_count() > 1 &&
        unit_elems >= 2 * REDUCE_GRAIN)
        return reduce_split(&plan, units);
    int64_t grain = unit_elems > 0 ? REDUCE_GRAIN / unit_elems : units;
    cpu_parallel_for(units, grain, reduce_tiles, &plan);
    return NULL;
}
