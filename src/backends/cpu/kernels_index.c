/* PRIM_GATHER, PRIM_SCATTER and PRIM_INDEX_SELECT on the CPU.
 *
 * All three walk an iteration space with three operands:
 *  - INDEXED, addressed along `axis` by the index values (x for gather and
 *    index_select, out for scatter): its iteration stride on `axis` is 0 and
 *    its stride there is applied to the index value instead;
 *  - INDEX, the int64 index;
 *  - PLAIN, addressed by position (out for gather and index_select, src for
 *    scatter).
 * index_select is a gather whose index is broadcast over out's shape.
 * Index values are checked before anything is written, so on error out is
 * left as it was. Elements move as bytes, except in scatter's reductions. */
#include <stdatomic.h>
#include <string.h>

#include "backends/cpu/cpu_kernels.h"
#include "backends/cpu/threadpool.h"
#include "core/dtype.h"
#include "core/status.h"

/* Elements per task below which threading costs more than it saves. */
#define GRAIN 32768

enum { INDEXED, INDEX, PLAIN, OPERANDS };

typedef struct index_loop {
    int rank; /* >= 1 once simplified */
    int64_t sizes[PORTA_MAX_RANK];
    int64_t strides[OPERANDS][PORTA_MAX_RANK]; /* in elements */
} index_loop;

/* A loop over `sizes` with every stride 0; callers fill in the operands. */
static void loop_init(index_loop *loop, int rank, const int64_t *sizes) {
    memset(loop, 0, sizeof *loop);
    loop->rank = rank;
    if (rank) memcpy(loop->sizes, sizes, (size_t)rank * sizeof *sizes);
}

static bool loop_mergeable(const index_loop *loop, int outer, int inner) {
    for (int k = 0; k < OPERANDS; k++)
        if (loop->strides[k][outer] != loop->strides[k][inner] * loop->sizes[inner]) return false;
    return true;
}

/* Dim `from` of src becomes dim `to` of dst (src may be dst). */
static void loop_copy_dim(index_loop *dst, int to, const index_loop *src, int from) {
    dst->sizes[to] = src->sizes[from];
    for (int k = 0; k < OPERANDS; k++) dst->strides[k][to] = src->strides[k][from];
}

/* Drops size-1 dims and merges neighbours that every operand steps through
 * as through one dim, keeping row-major order. `pinned` (-1: none) is never
 * merged; returns its new position, or -1 when it was dropped. Leaves at
 * least one dim. */
static int loop_simplify(index_loop *loop, int pinned) {
    int rank = 0, pinned_at = -1;
    for (int d = 0; d < loop->rank; d++) {
        if (loop->sizes[d] == 1) continue;
        int prev = rank - 1;
        if (prev >= 0 && d != pinned && prev != pinned_at && loop_mergeable(loop, prev, d)) {
            loop->sizes[prev] *= loop->sizes[d];
            for (int k = 0; k < OPERANDS; k++) loop->strides[k][prev] = loop->strides[k][d];
            continue;
        }
        if (d == pinned) pinned_at = rank;
        loop_copy_dim(loop, rank++, loop, d);
    }
    if (rank == 0) { /* a single element */
        loop->sizes[0] = 1;
        for (int k = 0; k < OPERANDS; k++) loop->strides[k][0] = 0;
        rank = 1;
    }
    loop->rank = rank;
    return pinned_at;
}

/* Rows are all dims but the innermost, in row-major order; a cursor holds
 * one row's multi-index and each operand's offset of its first element. */
typedef struct cursor {
    int64_t idx[PORTA_MAX_RANK];
    int64_t off[OPERANDS];
} cursor;

static void cursor_seek(const index_loop *loop, int64_t row, cursor *c) {
    memset(c, 0, sizeof *c);
    for (int d = loop->rank - 2; d >= 0; d--) {
        c->idx[d] = row % loop->sizes[d];
        row /= loop->sizes[d];
        for (int k = 0; k < OPERANDS; k++) c->off[k] += c->idx[d] * loop->strides[k][d];
    }
}

static void cursor_next_row(const index_loop *loop, cursor *c) {
    for (int d = loop->rank - 2; d >= 0; d--) {
        for (int k = 0; k < OPERANDS; k++) c->off[k] += loop->strides[k][d];
        if (++c->idx[d] < loop->sizes[d]) return;
        for (int k = 0; k < OPERANDS; k++) c->off[k] -= loop->strides[k][d] * loop->sizes[d];
        c->idx[d] = 0;
    }
}

/* ---- splitting the work ----
 * An item is `rows_per_item` consecutive rows (rows that must stay on one
 * thread) times one block of the innermost dim. Items are numbered row by
 * row, block by block, so with one row per item a task meets its elements
 * in row-major order. */

/* Handles elements [j0, j1) of the innermost dim in `row`; returns false to
 * stop the task early. */
typedef bool (*segment_fn)(void *job, const cursor *c, int64_t row, int64_t j0, int64_t j1);

typedef struct split {
    const index_loop *loop;
    int64_t rows_per_item;
    int64_t block, blocks;
    segment_fn segment;
    void *job;
} split;

static void run_items(void *ctx, int64_t begin, int64_t end, int thread) {
    (void)thread;
    const split *s = ctx;
    const index_loop *loop = s->loop;
    int64_t n = loop->sizes[loop->rank - 1];
    cursor c;
    if (s->blocks == 1) { /* items are row ranges: walk them without seeking */
        cursor_seek(loop, begin * s->rows_per_item, &c);
        for (int64_t row = begin * s->rows_per_item; row < end * s->rows_per_item;
             row++, cursor_next_row(loop, &c))
            if (!s->segment(s->job, &c, row, 0, n)) return;
        return;
    }
    for (int64_t item = begin; item < end; item++) {
        int64_t row = item / s->blocks * s->rows_per_item;
        int64_t j0 = item % s->blocks * s->block, j1 = j0 + s->block < n ? j0 + s->block : n;
        cursor_seek(loop, row, &c);
        for (int64_t r = 0; r < s->rows_per_item; r++, row++, cursor_next_row(loop, &c))
            if (!s->segment(s->job, &c, row, j0, j1)) return;
    }
}

/* Runs `segment` over the whole loop (numel elements), on the pool when
 * there is enough work. */
static void run_split(const index_loop *loop, int64_t numel, int64_t rows_per_item,
                      int64_t block, segment_fn segment, void *job) {
    int64_t n = loop->sizes[loop->rank - 1];
    if (block > n) block = n;
    split s = {loop, rows_per_item, block, (n + block - 1) / block, segment, job};
    int64_t items = numel / n / rows_per_item * s.blocks;
    int64_t item_size = rows_per_item * block;
    cpu_parallel_for(items, item_size >= GRAIN ? 1 : GRAIN / item_size, run_items, &s);
}

/* Blocks long enough to stream, short enough to spread one long row. */
#define BLOCK 4096
/* Scatter's items hold a whole group of rows, so their blocks are narrower. */
#define SCATTER_BLOCK 256

/* ---- bounds check ---- */

typedef struct check_job {
    index_loop loop; /* over the index alone */
    const int64_t *index;
    int64_t limit;
    _Atomic int64_t first_bad; /* row-major position; INT64_MAX: none */
} check_job;

/* Branch-free so that the common, all-valid case vectorizes; the unsigned
 * compare catches negative values too. */
static bool any_out_of_range(const int64_t *p, int64_t n, int64_t stride, int64_t limit) {
    bool bad = false;
    if (stride == 1)
        for (int64_t j = 0; j < n; j++) bad |= (uint64_t)p[j] >= (uint64_t)limit;
    else
        for (int64_t j = 0; j < n; j++) bad |= (uint64_t)p[j * stride] >= (uint64_t)limit;
    return bad;
}

static bool check_segment(void *ctx, const cursor *c, int64_t row, int64_t j0, int64_t j1) {
    check_job *job = ctx;
    int inner = job->loop.rank - 1;
    int64_t stride = job->loop.strides[INDEX][inner];
    const int64_t *p = job->index + c->off[INDEX] + j0 * stride;
    if (!any_out_of_range(p, j1 - j0, stride, job->limit)) return true;
    int64_t j = 0;
    while ((uint64_t)p[j * stride] < (uint64_t)job->limit) j++;
    /* Keep the earliest over all tasks, so the report is deterministic; the
     * rest of this task comes later in row-major order. */
    int64_t position = row * job->loop.sizes[inner] + j0 + j;
    int64_t seen = atomic_load(&job->first_bad);
    while (position < seen && !atomic_compare_exchange_weak(&job->first_bad, &seen, position)) {
    }
    return false;
}

/* Every index value must lie in [0, limit); reports the first that does not,
 * in the index's row-major order. */
static porta_status *check_index(const char *op, const porta_tensor *index, int axis,
                                 int64_t limit) {
    int64_t numel = porta_tensor_numel(index);
    if (numel == 0) return NULL;
    check_job job;
    loop_init(&job.loop, index->rank, index->sizes);
    if (index->rank)
        memcpy(job.loop.strides[INDEX], index->strides, (size_t)index->rank * sizeof(int64_t));
    loop_simplify(&job.loop, -1);
    job.index = (const int64_t *)(const void *)core_tensor_data(index);
    job.limit = limit;
    atomic_init(&job.first_bad, INT64_MAX);
    run_split(&job.loop, numel, 1, BLOCK, check_segment, &job);
    int64_t position = atomic_load(&job.first_bad);
    if (position == INT64_MAX) return NULL;
    int inner = job.loop.rank - 1;
    int64_t n = job.loop.sizes[inner];
    cursor c;
    cursor_seek(&job.loop, position / n, &c);
    int64_t value = job.index[c.off[INDEX] + position % n * job.loop.strides[INDEX][inner]];
    return porta_error(PORTA_ERR_OUT_OF_RANGE,
                       "%s: index %lld is out of bounds for dimension %d with size %lld", op,
                       (long long)value, axis, (long long)limit);
}

/* ---- gather and index_select ---- */

typedef struct gather_job {
    index_loop loop;
    char *out;
    const char *x;
    const int64_t *index;
    int64_t axis_stride; /* x's stride along axis */
    size_t elem;
} gather_job;

/* `elem` is a constant once inlined, so each memcpy is one load and store. */
static inline __attribute__((always_inline)) void gather_segment_sized(const gather_job *job,
                                                                       const cursor *c,
                                                                       int64_t j0, int64_t j1,
                                                                       size_t elem) {
    int inner = job->loop.rank - 1;
    int64_t n = j1 - j0, e = (int64_t)elem;
    int64_t os = job->loop.strides[PLAIN][inner] * e;
    int64_t xs = job->loop.strides[INDEXED][inner] * e;
    int64_t is = job->loop.strides[INDEX][inner];
    int64_t axis_step = job->axis_stride * e;
    char *out = job->out + c->off[PLAIN] * e + j0 * os;
    const char *x = job->x + c->off[INDEXED] * e + j0 * xs;
    const int64_t *index = job->index + c->off[INDEX] + j0 * is;
    if (is == 0) { /* one index value for the whole row: a strided copy */
        const char *from = x + index[0] * axis_step;
        if (os == e && xs == e) {
            memcpy(out, from, (size_t)(n * e));
            return;
        }
        for (int64_t j = 0; j < n; j++) memcpy(out + j * os, from + j * xs, elem);
        return;
    }
    for (int64_t j = 0; j < n; j++)
        memcpy(out + j * os, x + j * xs + index[j * is] * axis_step, elem);
}

static bool gather_segment(void *ctx, const cursor *c, int64_t row, int64_t j0, int64_t j1) {
    (void)row;
    const gather_job *job = ctx;
    switch (job->elem) {
    case 1: gather_segment_sized(job, c, j0, j1, 1); break;
    case 2: gather_segment_sized(job, c, j0, j1, 2); break;
    case 4: gather_segment_sized(job, c, j0, j1, 4); break;
    default: gather_segment_sized(job, c, j0, j1, 8); break;
    }
    return true;
}

/* out[i] = x[i with axis replaced by index[i]], index laid over out's shape
 * (index_strides, in elements). */
static void gather(const porta_tensor *x, const int64_t *index, const int64_t *index_strides,
                   int axis, porta_tensor *out) {
    int64_t numel = core_shape_numel(out->rank, out->sizes);
    if (numel == 0) return;
    gather_job job;
    loop_init(&job.loop, out->rank, out->sizes);
    for (int d = 0; d < out->rank; d++) {
        job.loop.strides[INDEXED][d] = d == axis ? 0 : x->strides[d];
        job.loop.strides[INDEX][d] = index_strides[d];
        job.loop.strides[PLAIN][d] = out->strides[d];
    }
    loop_simplify(&job.loop, -1);
    job.out = core_tensor_data(out);
    job.x = core_tensor_data(x);
    job.index = index;
    job.axis_stride = x->rank ? x->strides[axis] : 0;
    job.elem = porta_dtype_size(x->dtype);
    run_split(&job.loop, numel, 1, BLOCK, gather_segment, &job);
}

/* ---- scatter ---- */

/* A stretch of the innermost dim: pointers to its first elements, strides
 * in elements. */
typedef struct scatter_row {
    char *out;
    const char *src;
    const int64_t *index;
    int64_t out_stride, src_stride, index_stride, axis_stride, count;
} scatter_row;

static inline __attribute__((always_inline)) void assign_row_sized(const scatter_row *r,
                                                                   size_t elem) {
    int64_t e = (int64_t)elem;
    for (int64_t j = 0; j < r->count; j++)
        memcpy(r->out + (j * r->out_stride + r->index[j * r->index_stride] * r->axis_stride) * e,
               r->src + j * r->src_stride * e, elem);
}

static void assign_row(const scatter_row *r, size_t elem) {
    switch (elem) {
    case 1: assign_row_sized(r, 1); break;
    case 2: assign_row_sized(r, 2); break;
    case 4: assign_row_sized(r, 4); break;
    default: assign_row_sized(r, 8); break;
    }
}

/* Integers wrap around as in PyTorch (computed in uint64, which is defined). */
static inline int64_t combine_int(int reduce, int64_t a, int64_t b) {
    switch (reduce) {
    case PORTA_SCATTER_ADD: return (int64_t)((uint64_t)a + (uint64_t)b);
    case PORTA_SCATTER_MUL: return (int64_t)((uint64_t)a * (uint64_t)b);
    case PORTA_SCATTER_AMAX: return a < b ? b : a;
    default: return b < a ? b : a;
    }
}

/* Every float width computes in double: one operation rounded to the dtype
 * (through float for the 16-bit ones) equals PyTorch's float arithmetic.
 * NaN in either operand propagates through amax/amin, as in PyTorch. */
static inline double combine_float(int reduce, double a, double b) {
    switch (reduce) {
    case PORTA_SCATTER_ADD: return a + b;
    case PORTA_SCATTER_MUL: return a * b;
    case PORTA_SCATTER_AMAX: return b != b || a < b ? b : a;
    default: return b != b || b < a ? b : a;
    }
}

#define SAME(v) (v)
#define NONZERO(v) ((v) != 0)
#define F16_FROM_DOUBLE(v) core_f32_to_f16((float)(v))
#define BF16_FROM_DOUBLE(v) core_f32_to_bf16((float)(v))

/* out[..] = STORE(COMBINE(LOAD(out[..]), LOAD(src[j]))) along one stretch;
 * T is the storage type. Each reduction gets a loop of its own, so the
 * combination is not chosen again per element. */
#define SCATTER_REDUCE_ROW(NAME, T, LOAD, COMBINE, STORE)                                \
    static inline __attribute__((always_inline)) void NAME##_op(const scatter_row *r,   \
                                                                int reduce) {           \
        T *out = (T *)(void *)r->out;                                                    \
        const T *src = (const T *)(const void *)r->src;                                  \
        for (int64_t j = 0; j < r->count; j++) {                                         \
            T *dst = out + j * r->out_stride + r->index[j * r->index_stride] * r->axis_stride; \
            *dst = (T)STORE(COMBINE(reduce, LOAD(*dst), LOAD(src[j * r->src_stride])));  \
        }                                                                                \
    }                                                                                    \
    static void NAME(const scatter_row *r, int reduce) {                                 \
        switch (reduce) {                                                                \
        case PORTA_SCATTER_ADD: NAME##_op(r, PORTA_SCATTER_ADD); break;                  \
        case PORTA_SCATTER_MUL: NAME##_op(r, PORTA_SCATTER_MUL); break;                  \
        case PORTA_SCATTER_AMAX: NAME##_op(r, PORTA_SCATTER_AMAX); break;                \
        default: NAME##_op(r, PORTA_SCATTER_AMIN); break;                                \
        }                                                                                \
    }

SCATTER_REDUCE_ROW(reduce_row_bool, uint8_t, SAME, combine_int, NONZERO)
SCATTER_REDUCE_ROW(reduce_row_u8, uint8_t, SAME, combine_int, SAME)
SCATTER_REDUCE_ROW(reduce_row_i8, int8_t, SAME, combine_int, SAME)
SCATTER_REDUCE_ROW(reduce_row_i16, int16_t, SAME, combine_int, SAME)
SCATTER_REDUCE_ROW(reduce_row_i32, int32_t, SAME, combine_int, SAME)
SCATTER_REDUCE_ROW(reduce_row_i64, int64_t, SAME, combine_int, SAME)
SCATTER_REDUCE_ROW(reduce_row_f16, uint16_t, core_f16_to_f32, combine_float, F16_FROM_DOUBLE)
SCATTER_REDUCE_ROW(reduce_row_bf16, uint16_t, core_bf16_to_f32, combine_float, BF16_FROM_DOUBLE)
SCATTER_REDUCE_ROW(reduce_row_f32, float, SAME, combine_float, SAME)
SCATTER_REDUCE_ROW(reduce_row_f64, double, SAME, combine_float, SAME)

typedef void (*reduce_row_fn)(const scatter_row *r, int reduce);

static reduce_row_fn reduce_row_for(porta_dtype dtype) {
    switch (dtype) {
    case PORTA_BOOL: return reduce_row_bool;
    case PORTA_U8: return reduce_row_u8;
    case PORTA_I8: return reduce_row_i8;
    case PORTA_I16: return reduce_row_i16;
    case PORTA_I32: return reduce_row_i32;
    case PORTA_I64: return reduce_row_i64;
    case PORTA_F16: return reduce_row_f16;
    case PORTA_BF16: return reduce_row_bf16;
    case PORTA_F32: return reduce_row_f32;
    default: return reduce_row_f64;
    }
}

typedef struct scatter_job {
    index_loop loop;
    char *out;
    const char *src;
    const int64_t *index;
    int64_t axis_stride; /* out's stride along axis */
    size_t elem;
    int reduce;
    reduce_row_fn reduce_row;
} scatter_job;

static bool scatter_segment(void *ctx, const cursor *c, int64_t row, int64_t j0, int64_t j1) {
    (void)row;
    const scatter_job *job = ctx;
    int inner = job->loop.rank - 1;
    int64_t e = (int64_t)job->elem;
    scatter_row r = {
        .out_stride = job->loop.strides[INDEXED][inner],
        .src_stride = job->loop.strides[PLAIN][inner],
        .index_stride = job->loop.strides[INDEX][inner],
        .axis_stride = job->axis_stride,
        .count = j1 - j0,
    };
    r.out = job->out + (c->off[INDEXED] + j0 * r.out_stride) * e;
    r.src = job->src + (c->off[PLAIN] + j0 * r.src_stride) * e;
    r.index = job->index + c->off[INDEX] + j0 * r.index_stride;
    if (job->reduce == PORTA_SCATTER_NONE)
        assign_row(&r, job->elem);
    else
        job->reduce_row(&r, job->reduce);
    return true;
}

/* out = x, then src scattered into out along axis over index's shape.
 * Updates to one out element come from index positions that differ only
 * along axis. Items keep all of those on one thread, in index order, so the
 * result is the serial one: with axis innermost, an item is a whole row;
 * otherwise axis becomes the innermost row dim and an item holds all its
 * rows, over one block of the innermost dim. */
static porta_status *scatter(const ir_prim *prim, const porta_tensor *const *inputs,
                             porta_tensor *out) {
    const porta_tensor *x = inputs[0], *index = inputs[1], *src = inputs[2];
    ir_prim copy;
    memset(&copy, 0, sizeof copy);
    copy.kind = PRIM_CAST;
    copy.dtype = out->dtype;
    PORTA_TRY(cpu_exec_elementwise(&copy, &x, 1, out));
    int64_t numel = porta_tensor_numel(index);
    if (numel == 0) return NULL;

    int axis = prim->axis;
    scatter_job job;
    loop_init(&job.loop, index->rank, index->sizes);
    for (int d = 0; d < index->rank; d++) {
        job.loop.strides[INDEXED][d] = d == axis ? 0 : out->strides[d];
        job.loop.strides[INDEX][d] = index->strides[d];
        job.loop.strides[PLAIN][d] = src->strides[d];
    }
    int axis_at = loop_simplify(&job.loop, index->rank ? axis : -1);
    int last = job.loop.rank - 1;
    int64_t rows_per_item = 1, block = BLOCK;
    if (axis_at == last) {
        block = job.loop.sizes[last];
    } else if (axis_at >= 0) {
        index_loop simplified = job.loop;
        for (int d = axis_at; d < last - 1; d++) loop_copy_dim(&job.loop, d, &simplified, d + 1);
        loop_copy_dim(&job.loop, last - 1, &simplified, axis_at);
        rows_per_item = job.loop.sizes[last - 1];
        block = SCATTER_BLOCK;
    }
    job.out = core_tensor_data(out);
    job.src = core_tensor_data(src);
    job.index = (const int64_t *)(const void *)core_tensor_data(index);
    job.axis_stride = out->rank ? out->strides[axis] : 0;
    job.elem = porta_dtype_size(out->dtype);
    job.reduce = prim->op;
    job.reduce_row = reduce_row_for(out->dtype);
    run_split(&job.loop, numel, rows_per_item, block, scatter_segment, &job);
    return NULL;
}

porta_status *cpu_exec_index(const ir_prim *prim, const porta_tensor *const *inputs,
                             int input_count, porta_tensor *out) {
    (void)input_count;
    const porta_tensor *x = inputs[0], *index = inputs[1];
    int axis = prim->axis;
    /* Index values address the indexed tensor, which has x's shape. */
    int64_t limit = x->rank ? x->sizes[axis] : 1;
    PORTA_TRY(check_index(ir_prim_name(prim), index, axis, limit));
    const int64_t *index_data = (const int64_t *)(const void *)core_tensor_data(index);
    switch (prim->kind) {
    case PRIM_GATHER: gather(x, index_data, index->strides, axis, out); return NULL;
    case PRIM_SCATTER: return scatter(prim, inputs, out);
    default: break;
    }
    /* index_select: the 1-D index runs along axis, repeated over the rest. */
    int64_t index_strides[PORTA_MAX_RANK] = {0};
    if (out->rank && index->rank) index_strides[axis] = index->strides[0];
    gather(x, index_data, index_strides, axis, out);
    return NULL;
}
