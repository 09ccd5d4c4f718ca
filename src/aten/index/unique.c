/* unique_consecutive, _unique and _unique2, composed of primitives: runs of
 * equal values (or equal slices along a dim) are found by comparing each
 * with the one before it; a running count of run starts numbers the runs.
 * The number of runs is read to the host (the output's size depends on the
 * data, as on the CPU). _unique and _unique2 find the runs of the sorted
 * values, so their output is sorted whatever `sorted` asks (as the CPU's);
 * unique_dim those of the slices sorted lexicographically.
 * NaN equals nothing, so every NaN is its own run. */
#include "aten/dispatch/scope.h"
#include "aten/dispatch/op_reuse.h"
#include "core/status.h"
#include "runtime/tensor.h"

/* The runs of x along axis: the first slice of each, the run of every
 * slice (int64 [n]) and the length of each run. */
typedef struct runs {
    porta_tensor *values, *run_of, *lengths;
} runs;

static runs find_runs(aten_scope *s, const porta_tensor *x, int axis) {
    runs out = {NULL, NULL, NULL};
    if (s->status) return out;
    int64_t n = x->sizes[axis];
    porta_device *device = porta_tensor_device(x);
    int64_t pads[2 * PORTA_MAX_RANK] = {0};
    pads[2 * axis] = 1;
    pads[2 * axis + 1] = -1;
    porta_tensor *differs = scope_binary(s, PORTA_NE, x, scope_pad(s, x, pads, 0));
    int other[PORTA_MAX_RANK], other_count = 0;
    for (int d = 0; d < x->rank; d++)
        if (d != axis) other[other_count++] = d;
    if (other_count) differs = scope_reduce(s, PORTA_REDUCE_ANY, differs, other, other_count, false);
    porta_tensor *positions = scope_arange(s, device, n);
    porta_tensor *starts_run = scope_binary(s, PORTA_LOGICAL_OR, differs,
                                            scope_binary_number(s, PORTA_EQ, positions, 0));
    porta_value scan[3] = {{.kind = PORTA_VALUE_TENSOR, .tensor = scope_cast(s, starts_run, PORTA_I64)},
                           {.kind = PORTA_VALUE_INT, .i = 0},
                           {.kind = PORTA_VALUE_NONE}};
    porta_tensor *counted = scope_call(s, "cumsum", scan, 3);
    out.run_of = scope_binary_number(s, PORTA_SUB, counted, 1);
    int64_t count = 0;
    if (n && !s->status) {
        porta_status *status = porta_tensor_to_host(
            scope_slice(s, counted, 0, n - 1, n, 1), &count, sizeof count);
        if (status) scope_fail(s, status);
    }
    if (s->status) return out;
    porta_tensor *first = scope_scatter(s, scope_full(s, device, PORTA_I64, 1, &count, (double)n), 0,
                                        out.run_of, positions, PORTA_SCATTER_AMIN);
    out.values = scope_index_select(s, x, axis, first);
    out.lengths = scope_scatter(s, scope_full(s, device, PORTA_I64, 1, &count, 0), 0, out.run_of,
                                scope_full(s, device, PORTA_I64, 1, &n, 1), PORTA_SCATTER_ADD);
    return out;
}

/* An empty int64 tensor: the result PyTorch gives for an output not asked
 * for. */
static porta_tensor *nothing(aten_scope *s, porta_device *device) {
    int64_t zero = 0;
    return scope_full(s, device, PORTA_I64, 1, &zero, 0);
}

/* unique_consecutive(self, return_inverse, return_counts, dim?) */
static porta_status *unique_consecutive(const porta_value *a, aten_results *r) {
    const porta_tensor *x = a[0].tensor;
    bool inverse = a[1].b, counts = a[2].b, along = a[3].kind == PORTA_VALUE_INT;
    int axis = 0;
    if (along) PORTA_TRY(core_normalize_axis("unique_consecutive", (int)a[3].i, x->rank, &axis));
    aten_scope s;
    scope_begin(&s);
    porta_device *device = porta_tensor_device(x);
    int64_t total = porta_tensor_numel(x);
    runs found = find_runs(&s, along ? x : scope_reshape(&s, x, 1, &total), axis);
    scope_push(&s, r, found.values);
    scope_push(&s, r, !inverse ? nothing(&s, device)
                            : along ? found.run_of
                                    : scope_reshape(&s, found.run_of, x->rank, x->sizes));
    scope_push(&s, r, counts ? found.lengths : nothing(&s, device));
    return scope_end(&s);
}

/* The unique values of self, sorted, the run of each element (in self's
 * shape) and the run lengths: what _unique and _unique2 give. */
static porta_status *unique_sorted(const porta_value *a, bool inverse, bool counts, int outputs,
                                   aten_results *r) {
    const porta_tensor *x = a[0].tensor;
    aten_scope s;
    scope_begin(&s);
    porta_device *device = porta_tensor_device(x);
    int64_t total = porta_tensor_numel(x);
    porta_tensor *flat = scope_reshape(&s, x, 1, &total), *sorted = NULL, *order = NULL;
    if (flat) {
        porta_status *status = porta_sort(flat, 0, PORTA_SORT_ASCENDING, &sorted, &order);
        if (scope_hold(&s, status, sorted)) scope_hold(&s, NULL, order);
    }
    runs found = find_runs(&s, sorted, 0);
    scope_push(&s, r, found.values);
    porta_tensor *run_of = NULL;
    if (inverse) {
        porta_tensor *unsorted = scope_scatter(&s, scope_full(&s, device, PORTA_I64, 1, &total, 0), 0,
                                               order, found.run_of, PORTA_SCATTER_NONE);
        run_of = scope_reshape(&s, unsorted, x->rank, x->sizes);
    }
    scope_push(&s, r, inverse ? run_of : nothing(&s, device));
    if (outputs == 3) scope_push(&s, r, counts ? found.lengths : nothing(&s, device));
    return scope_end(&s);
}

/* _unique(self, sorted, return_inverse) */
static porta_status *unique(const porta_value *a, aten_results *r) {
    return unique_sorted(a, a[2].b, false, 2, r);
}

/* _unique2(self, sorted, return_inverse, return_counts) */
static porta_status *unique2(const porta_value *a, aten_results *r) {
    return unique_sorted(a, a[2].b, a[3].b, 3, r);
}

/* The order that sorts x's slices along axis lexicographically (int64
 * [n]): stable sorts by each element of the slices, the last first (each
 * step in its own scope: slices may have more elements than a scope holds). */
static porta_tensor *lexicographic_order(aten_scope *s, const porta_tensor *x, int axis) {
    if (s->status) return NULL;
    int64_t n = x->sizes[axis], m = n ? porta_tensor_numel(x) / n : 0;
    int to_front[PORTA_MAX_RANK] = {axis};
    for (int d = 0, k = 1; d < x->rank; d++)
        if (d != axis) to_front[k++] = d;
    int64_t matrix[2] = {n, m};
    porta_tensor *rows = scope_reshape(s, scope_contiguous(s, scope_permute(s, x, to_front)), 2,
                                       matrix);
    porta_tensor *order = scope_arange(s, porta_tensor_device(x), n);
    if (!order) return NULL;
    porta_tensor_retain(order); /* owned across the steps, each in its own scope */
    for (int64_t k = m - 1; k >= 0; k--) {
        aten_scope step;
        scope_begin(&step);
        porta_tensor *key = scope_reshape(&step, scope_slice(&step, rows, 1, k, k + 1, 1), 1, &n);
        porta_tensor *ordered_key = scope_index_select(&step, key, 0, order), *by_key = NULL;
        if (ordered_key) {
            porta_status *status = porta_sort(ordered_key, 0, PORTA_SORT_ASCENDING, NULL, &by_key);
            scope_hold(&step, status, by_key);
        }
        porta_tensor *next = scope_index_select(&step, order, 0, by_key);
        if (next) porta_tensor_retain(next);
        porta_status *status = scope_end(&step);
        porta_tensor_release(order);
        order = next;
        if (status) {
            if (order) porta_tensor_release(order);
            return scope_fail(s, status);
        }
    }
    return scope_hold(s, NULL, order);
}

/* unique_dim(self, dim, sorted, return_inverse, return_counts): the
 * distinct slices along dim, sorted (whatever `sorted` asks, as the CPU's). */
static porta_status *unique_dim(const porta_value *a, aten_results *r) {
    const porta_tensor *x = a[0].tensor;
    int axis;
    PORTA_TRY(core_normalize_axis("unique_dim", (int)a[1].i, x->rank, &axis));
    if (x->sizes[axis] == 0 && porta_tensor_numel(x) == 0) {
        for (int d = 0; d < x->rank; d++)
            if (d != axis && x->sizes[d] == 0)
                return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                                   "Number of zero sized dimensions is more than one, so unique "
                                   "cannot be applied ");
    }
    aten_scope s;
    scope_begin(&s);
    porta_device *device = porta_tensor_device(x);
    int64_t n = x->sizes[axis];
    porta_tensor *order = lexicographic_order(&s, x, axis);
    runs found = find_runs(&s, scope_index_select(&s, x, axis, order), axis);
    scope_push(&s, r, found.values);
    scope_push(&s, r, !a[3].b ? nothing(&s, device)
                              : scope_scatter(&s, scope_full(&s, device, PORTA_I64, 1, &n, 0), 0,
                                              order, found.run_of, PORTA_SCATTER_NONE));
    scope_push(&s, r, a[4].b ? found.lengths : nothing(&s, device));
    return scope_end(&s);
}

const aten_op aten_index_unique_ops[] = {
    {"unique_dim", "Tibbb", unique_dim},
    {"unique_consecutive", "Tbbj", unique_consecutive},
    {"_unique", "Tbb", unique},
    {"_unique2", "Tbbb", unique2},
    {NULL, NULL, NULL},
};
