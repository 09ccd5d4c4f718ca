/* unique_consecutive, _unique and _unique2, composed of primitives: runs of
 * equal values (or equal slices along a dim) are found by comparing each
 * with the one before it; a running count of run starts numbers the runs.
 * The number of runs is read to the host (the output's size depends on the
 * data, as on the CPU). _unique and _unique2 find the runs of the sorted
 * values, so their output is sorted whatever `sorted` asks (as the CPU's).
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

const aten_op aten_index_unique_ops[] = {
    {"unique_consecutive", "Tbbj", unique_consecutive},
    {"_unique", "Tbb", unique},
    {"_unique2", "Tbbb", unique2},
    {NULL, NULL, NULL},
};
