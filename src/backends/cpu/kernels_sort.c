/* PRIM_SORT on the CPU: the stable sorting permutation of each row along
 * `axis`, the rows split into as many tasks as threads (and work) allow, each
 * with its own scratch, so scratch stays within 32 bytes per element.
 *
 * Every dtype is sorted the same way: each element becomes an unsigned
 * 64-bit key whose order is the element's order (sign bit flipped for
 * integers; for floats the IEEE bits ordered as integers, -0.0 folded onto
 * 0.0 and every NaN onto the largest key), paired with its position. A
 * descending sort complements the keys, so ties still keep their positions'
 * order. The pairs are merge sorted (insertion-sorted runs, then bottom-up
 * merges between two buffers), which is stable and O(n log n). */
#include <math.h>
#include <string.h>

#include "backends/cpu/cpu_kernels.h"
#include "backends/cpu/threadpool.h"
#include "core/alloc.h"
#include "core/dtype.h"
#include "core/status.h"

/* Elements per task below which threading costs more than it saves. */
#define GRAIN 16384
/* Rows up to this long are insertion sorted before the merges begin. */
#define RUN 16

typedef struct sort_pair {
    uint64_t key;
    int64_t index;
} sort_pair;

static inline uint64_t float_key(double v) {
    if (isnan(v)) return UINT64_MAX;
    if (v == 0) v = 0; /* -0.0 compares equal to 0.0, so it must tie with it */
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    return bits >> 63 ? ~bits : bits | UINT64_C(1) << 63;
}

static inline uint64_t signed_key(int64_t v) { return (uint64_t)v ^ UINT64_C(1) << 63; }

/* Reads n elements `stride` apart into pairs; the contiguous case gets its
 * own loop so the compiler can vectorize it. */
typedef void (*key_reader)(const void *data, int64_t stride, int64_t n, sort_pair *pairs);

#define KEY_READER(name, type, key_of)                                                    \
    static void name(const void *data, int64_t stride, int64_t n, sort_pair *pairs) {     \
        const type *p = data;                                                             \
        if (stride == 1) {                                                                \
            for (int64_t i = 0; i < n; i++) {                                             \
                pairs[i].key = key_of(p[i]);                                              \
                pairs[i].index = i;                                                       \
            }                                                                             \
        } else {                                                                          \
            for (int64_t i = 0; i < n; i++) {                                             \
                pairs[i].key = key_of(p[i * stride]);                                     \
                pairs[i].index = i;                                                       \
            }                                                                             \
        }                                                                                 \
    }

#define UNSIGNED_KEY(v) ((uint64_t)(v))
#define SIGNED_KEY(v) signed_key((int64_t)(v))
#define FLOAT_KEY(v) float_key((double)(v))
#define F16_KEY(v) float_key((double)core_f16_to_f32(v))
#define BF16_KEY(v) float_key((double)core_bf16_to_f32(v))

KEY_READER(read_u8, uint8_t, UNSIGNED_KEY) /* bool too: 0 and 1 */
KEY_READER(read_i8, int8_t, SIGNED_KEY)
KEY_READER(read_i16, int16_t, SIGNED_KEY)
KEY_READER(read_i32, int32_t, SIGNED_KEY)
KEY_READER(read_i64, int64_t, SIGNED_KEY)
KEY_READER(read_f16, uint16_t, F16_KEY)
KEY_READER(read_bf16, uint16_t, BF16_KEY)
KEY_READER(read_f32, float, FLOAT_KEY)
KEY_READER(read_f64, double, FLOAT_KEY)

static const key_reader readers[PORTA_DTYPE_COUNT] = {
    [PORTA_BOOL] = read_u8, [PORTA_U8] = read_u8,     [PORTA_I8] = read_i8,
    [PORTA_I16] = read_i16, [PORTA_I32] = read_i32,   [PORTA_I64] = read_i64,
    [PORTA_F16] = read_f16, [PORTA_BF16] = read_bf16, [PORTA_F32] = read_f32,
    [PORTA_F64] = read_f64,
};

static void insertion_sort(sort_pair *a, int64_t n) {
    for (int64_t i = 1; i < n; i++) {
        sort_pair current = a[i];
        int64_t j = i;
        for (; j > 0 && a[j - 1].key > current.key; j--) a[j] = a[j - 1];
        a[j] = current;
    }
}

/* Merges sorted l[0..nl) and r[0..nr) into out; on equal keys l goes first,
 * which keeps the sort stable. */
static void merge(const sort_pair *l, int64_t nl, const sort_pair *r, int64_t nr,
                  sort_pair *out) {
    if (nr == 0 || l[nl - 1].key <= r[0].key) { /* already in order: common on sorted data */
        memcpy(out, l, (size_t)nl * sizeof *l);
        memcpy(out + nl, r, (size_t)nr * sizeof *r);
        return;
    }
    int64_t i = 0, j = 0, k = 0;
    while (i < nl && j < nr) out[k++] = r[j].key < l[i].key ? r[j++] : l[i++];
    memcpy(out + k, l + i, (size_t)(nl - i) * sizeof *l);
    memcpy(out + k + (nl - i), r + j, (size_t)(nr - j) * sizeof *r);
}

/* Sorts a[0..n) stably with tmp[0..n) as the second buffer; returns the
 * buffer that ends up holding the result. */
static sort_pair *merge_sort(sort_pair *a, sort_pair *tmp, int64_t n) {
    for (int64_t start = 0; start < n; start += RUN)
        insertion_sort(a + start, n - start < RUN ? n - start : RUN);
    sort_pair *src = a, *dst = tmp;
    for (int64_t width = RUN; width < n; width *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * width) {
            int64_t mid = lo + width < n ? lo + width : n;
            int64_t hi = mid + width < n ? mid + width : n;
            merge(src + lo, mid - lo, src + mid, hi - mid, dst + lo);
        }
        sort_pair *swap = src;
        src = dst;
        dst = swap;
    }
    return src;
}

typedef struct sort_job {
    key_reader read;
    bool descending;
    const char *x;     /* element 0 */
    int64_t *out;      /* element 0 */
    size_t elem_size;
    int64_t n;         /* row length */
    int64_t x_stride, out_stride; /* along the axis, in elements */
    int outer_rank;    /* the other axes, row-major */
    int64_t outer_sizes[PORTA_MAX_RANK];
    int64_t x_strides[PORTA_MAX_RANK], out_strides[PORTA_MAX_RANK];
    int64_t rows, tasks;
    sort_pair *scratch; /* 2 * n pairs per task */
} sort_job;

static void sort_rows(const sort_job *job, int64_t begin, int64_t end, sort_pair *pairs) {
    for (int64_t row = begin; row < end; row++) {
        int64_t x_offset = 0, out_offset = 0, rest = row;
        for (int d = job->outer_rank - 1; d >= 0; d--) {
            int64_t i = rest % job->outer_sizes[d];
            rest /= job->outer_sizes[d];
            x_offset += i * job->x_strides[d];
            out_offset += i * job->out_strides[d];
        }
        job->read(job->x + x_offset * (int64_t)job->elem_size, job->x_stride, job->n, pairs);
        if (job->descending)
            for (int64_t i = 0; i < job->n; i++) pairs[i].key = ~pairs[i].key;
        const sort_pair *sorted = merge_sort(pairs, pairs + job->n, job->n);
        int64_t *out = job->out + out_offset;
        if (job->out_stride == 1) {
            for (int64_t i = 0; i < job->n; i++) out[i] = sorted[i].index;
        } else {
            for (int64_t i = 0; i < job->n; i++) out[i * job->out_stride] = sorted[i].index;
        }
    }
}

/* Tasks [begin, end): task t sorts its share of the rows in scratch slot t. */
static void sort_tasks(void *ctx, int64_t begin, int64_t end, int thread) {
    const sort_job *job = ctx;
    for (int64_t t = begin; t < end; t++)
        sort_rows(job, t * job->rows / job->tasks, (t + 1) * job->rows / job->tasks,
                  job->scratch + (size_t)t * 2 * (size_t)job->n);
}

porta_status *cpu_exec_sort(const ir_prim *prim, const porta_tensor *const *inputs,
                            int input_count, porta_tensor *out) {
    const porta_tensor *x = inputs[0];
    if (input_count != 1 || out->dtype != PORTA_I64 || !readers[x->dtype])
        return porta_error(PORTA_ERR_INTERNAL, "cpu sort: expected one input and an int64 out");
    int64_t numel = porta_tensor_numel(x);
    if (numel == 0) return NULL;
    sort_job job = {
        .read = readers[x->dtype],
        .descending = prim->op == PORTA_SORT_DESCENDING,
        .x = core_tensor_data(x),
        .out = (int64_t *)core_tensor_data(out),
        .elem_size = porta_dtype_size(x->dtype),
        .n = x->rank ? x->sizes[prim->axis] : 1,
        .x_stride = x->rank ? x->strides[prim->axis] : 1,
        .out_stride = x->rank ? out->strides[prim->axis] : 1,
    };
    for (int d = 0; d < x->rank; d++) {
        if (d == prim->axis) continue;
        job.outer_sizes[job.outer_rank] = x->sizes[d];
        job.x_strides[job.outer_rank] = x->strides[d];
        job.out_strides[job.outer_rank] = out->strides[d];
        job.outer_rank++;
    }
    job.rows = numel / job.n;
    int64_t by_work = (numel + GRAIN - 1) / GRAIN;
    job.tasks = cpu_thread_count();
    if (job.tasks > job.rows) job.tasks = job.rows;
    if (job.tasks > by_work) job.tasks = by_work;
    size_t scratch_bytes = (size_t)job.tasks * 2 * (size_t)job.n * sizeof(sort_pair);
    PORTA_TRY(core_host_alloc(scratch_bytes, "sort's scratch pairs", (void **)&job.scratch));
    cpu_parallel_for(job.tasks, 1, sort_tasks, &job);
    core_host_free(job.scratch);
    return NULL;
}
