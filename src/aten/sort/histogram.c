/* histogram and histogramdd's ops, composed from searchsorted and a
 * scatter-add. An element of dimension d falls in bin i when
 * edges[i] <= x < edges[i + 1] (the last bin holds its right edge too);
 * elements outside the edges, NaN among them, are not counted. A row's
 * bins combine into one flat bin; rows with an element outside go to an
 * extra bin that is dropped. With bin counts the edges are linspace over
 * the range (given, or the data's min and max, widened by 0.5 each way
 * when they are equal, [0, 1] without data), as PyTorch lays them. */
#include <math.h>

#include "aten/dispatch/op_reuse.h"
#include "aten/dispatch/scope.h"
#include "aten/reduce/common.h"
#include "core/status.h"
#include "runtime/tensor.h"

/* self as [N, D] rows (histogram: D = 1), with the weight's check. */
static porta_status *check_input(const char *op, const porta_tensor *x, int dims,
                                 const porta_tensor *weight) {
    char b[CORE_SHAPE_STR_CAP], w[CORE_SHAPE_STR_CAP];
    PORTA_TRY(aten_check_float(op, x));
    if (dims > PORTA_MAX_RANK) /* the edges are held in an array of that many */
        return porta_error(PORTA_ERR_UNSUPPORTED, "histogramdd: at most %d dimensions, got %d",
                           PORTA_MAX_RANK, dims);
    if (dims && (x->rank < 1 || x->sizes[x->rank - 1] != dims))
        return porta_error(PORTA_ERR_SHAPE,
                           "torch.histogramdd: expected input to have shape (..., %d) for %d bin "
                           "specifications, but got %s",
                           dims, dims, core_format_shape(b, sizeof b, x->rank, x->sizes));
    if (weight) {
        int rank = dims ? x->rank - 1 : x->rank;
        bool same = weight->rank == rank && weight->dtype == x->dtype;
        for (int d = 0; same && d < rank; d++) same = weight->sizes[d] == x->sizes[d];
        if (!same)
            return porta_error(PORTA_ERR_SHAPE,
                               "torch.histogramdd: if weight tensor is provided, it should have "
                               "the same shape as the input tensor excluding its innermost "
                               "dimension (and its dtype), but got %s for input %s",
                               core_format_shape(w, sizeof w, weight->rank, weight->sizes),
                               core_format_shape(b, sizeof b, x->rank, x->sizes));
    }
    return NULL;
}

/* x as [N, D]. */
static porta_tensor *rows_of(aten_scope *s, const porta_tensor *x, int64_t dims) {
    int64_t total = porta_tensor_numel(x), sizes[2] = {dims ? total / dims : 0, dims};
    return scope_reshape(s, scope_contiguous(s, x), 2, sizes);
}

static double read_double(aten_scope *s, const porta_tensor *x) {
    double v = 0;
    porta_tensor *d = scope_cast(s, x, PORTA_F64);
    if (d && !s->status) {
        porta_status *status = porta_tensor_to_host(d, &v, sizeof v);
        if (status) scope_fail(s, status);
    }
    return v;
}

/* linspace(low, high, bins + 1) in dtype for each dimension: the edges of
 * bin counts over the range (2 D numbers) or the data's extent. */
static void edges_from_counts(aten_scope *s, const porta_tensor *rows, const porta_value *counts,
                              const porta_value *range, porta_tensor **edges) {
    int64_t dims = counts->ints.count, n = rows ? rows->sizes[0] : 0;
    if (range->kind != PORTA_VALUE_NONE && range->floats.count != 2 * dims) {
        scope_fail(s, porta_error(PORTA_ERR_INVALID_ARGUMENT,
                                  "torch.histogramdd: for a %lld-dimensional histogram range "
                                  "should have %lld elements, but got %d",
                                  (long long)dims, (long long)(2 * dims), range->floats.count));
        return;
    }
    for (int64_t d = 0; d < dims && !s->status; d++) {
        double low = 0, high = 1; /* an empty input's range */
        if (range->kind != PORTA_VALUE_NONE) {
            low = range->floats.items[2 * d];
            high = range->floats.items[2 * d + 1];
        } else if (n) {
            aten_scope step;
            scope_begin(&step);
            porta_tensor *column = scope_slice(&step, rows, 1, d, d + 1, 1);
            low = read_double(&step, scope_reduce(&step, PORTA_REDUCE_MIN, column, NULL, 0, false));
            high = read_double(&step, scope_reduce(&step, PORTA_REDUCE_MAX, column, NULL, 0, false));
            porta_status *status = scope_end(&step);
            if (status) {
                scope_fail(s, status);
                return;
            }
        }
        if (s->status) return;
        if (!isfinite(low) || !isfinite(high)) {
            scope_fail(s, porta_error(PORTA_ERR_INVALID_ARGUMENT,
                                      "torch.histogramdd: dimension %lld's range [%g, %g] is not "
                                      "finite", (long long)d, low, high));
            return;
        }
        if (low > high) {
            scope_fail(s, porta_error(PORTA_ERR_INVALID_ARGUMENT,
                                      "torch.histogramdd: min should not exceed max, but got min "
                                      "%g max %g for dimension %lld", low, high, (long long)d));
            return;
        }
        if (low == high) {
            low -= 0.5;
            high += 0.5;
        }
        int64_t bins = counts->ints.items[d], steps = bins + 1;
        if (bins <= 0) {
            scope_fail(s, porta_error(PORTA_ERR_INVALID_ARGUMENT,
                                      "torch.histogramdd(): bins must be > 0, but got %lld for "
                                      "dimension %lld", (long long)bins, (long long)d));
            return;
        }
        porta_tensor *out = scope_full(s, rows->buffer->device, rows->dtype, 1, &steps, 0);
        porta_value args[4] = {{.kind = PORTA_VALUE_FLOAT, .f = low},
                               {.kind = PORTA_VALUE_FLOAT, .f = high},
                               {.kind = PORTA_VALUE_INT, .i = steps}, aten_tensor_value(out)};
        edges[d] = scope_call(s, "linspace.out", args, 4);
    }
}

/* The histogram of rows [N, D] over edges[d] (1-D each), shaped
 * [bins_0, ..., bins_{D-1}], weighted and normalized as asked. */
static porta_tensor *histogram_of(aten_scope *s, const porta_tensor *rows, porta_tensor **edges,
                                  int dims, const porta_tensor *weight, bool density) {
    if (s->status) return NULL;
    int64_t n = rows->sizes[0], flat_bins = 1, shape[PORTA_MAX_RANK];
    porta_device *device = rows->buffer->device;
    porta_tensor *flat = scope_full(s, device, PORTA_I64, 1, &n, 0);
    porta_tensor *outside = scope_full(s, device, PORTA_BOOL, 1, &n, 0);
    for (int d = dims - 1; d >= 0 && !s->status; d--) {
        /* each dimension in its own scope, flat and outside carried over */
        aten_scope step;
        scope_begin(&step);
        int64_t bins = edges[d]->sizes[0] - 1;
        shape[d] = bins;
        porta_tensor *x = scope_reshape(&step, scope_slice(&step, rows, 1, d, d + 1, 1), 1, &n);
        porta_tensor *e = scope_contiguous(&step, edges[d]);
        porta_value search[6] = {aten_tensor_value(e), aten_tensor_value(x),
                                 {.kind = PORTA_VALUE_BOOL, .b = false},
                                 {.kind = PORTA_VALUE_BOOL, .b = true},
                                 {.kind = PORTA_VALUE_NONE},
                                 {.kind = PORTA_VALUE_NONE}};
        porta_tensor *after = scope_call(&step, "searchsorted.Tensor", search, 6);
        /* the last edge belongs to the last bin */
        porta_tensor *bin = scope_binary_number(&step, PORTA_MINIMUM,
                                                scope_binary_number(&step, PORTA_SUB, after, 1),
                                                (double)(bins - 1));
        porta_tensor *low = scope_slice(&step, e, 0, 0, 1, 1);
        porta_tensor *high = scope_slice(&step, e, 0, bins, bins + 1, 1);
        porta_tensor *inside = scope_binary(&step, PORTA_LOGICAL_AND,
                                            scope_binary(&step, PORTA_GE, x, low),
                                            scope_binary(&step, PORTA_LE, x, high));
        porta_tensor *next_outside = scope_binary(&step, PORTA_LOGICAL_OR, outside,
                                                  scope_unary(&step, PORTA_LOGICAL_NOT, inside));
        porta_tensor *next_flat = scope_binary(
            &step, PORTA_ADD, flat, scope_binary_number(&step, PORTA_MUL, bin, (double)flat_bins));
        if (next_outside && next_flat) {
            porta_tensor_retain(next_outside);
            porta_tensor_retain(next_flat);
        }
        porta_status *status = scope_end(&step);
        if (status) return scope_fail(s, status);
        outside = scope_hold(s, NULL, next_outside);
        flat = scope_hold(s, NULL, next_flat);
        flat_bins *= bins;
    }
    flat = scope_where_number(s, outside, (double)flat_bins, flat);
    int64_t slots = flat_bins + 1;
    porta_tensor *counts = weight ? scope_reshape(s, scope_contiguous(s, weight), 1, &n)
                                  : scope_full(s, device, rows->dtype, 1, &n, 1);
    porta_tensor *hist = scope_scatter(s, scope_full(s, device, rows->dtype, 1, &slots, 0), 0, flat,
                                       counts, PORTA_SCATTER_ADD);
    hist = scope_reshape(s, scope_slice(s, hist, 0, 0, flat_bins, 1), dims, shape);
    if (density) {
        hist = scope_binary(s, PORTA_DIV, hist,
                            scope_reduce(s, PORTA_REDUCE_SUM, hist, NULL, 0, false));
        for (int d = 0; d < dims && hist; d++) {
            int64_t bins = shape[d], along[PORTA_MAX_RANK];
            for (int k = 0; k < dims; k++) along[k] = k == d ? bins : 1;
            porta_tensor *widths = scope_binary(s, PORTA_SUB, scope_slice(s, edges[d], 0, 1, bins + 1, 1),
                                                scope_slice(s, edges[d], 0, 0, bins, 1));
            hist = scope_binary(s, PORTA_DIV, hist, scope_reshape(s, widths, dims, along));
        }
    }
    return hist;
}

/* histogram.bin_ct(self, bins, range?, weight?, density) -> (hist, bin_edges) */
static porta_status *histogram_bin_ct(const porta_value *a, aten_results *r) {
    const porta_tensor *x = a[0].tensor, *weight = aten_optional_tensor(&a[3]);
    PORTA_TRY(check_input("histogram_cpu", x, 0, weight));
    int64_t bins = a[1].i;
    porta_value counts = {.kind = PORTA_VALUE_INTS, .ints = {&bins, 1}};
    aten_scope s;
    scope_begin(&s);
    porta_tensor *rows = rows_of(&s, x, 1), *edges[1] = {NULL};
    edges_from_counts(&s, rows, &counts, &a[2], edges);
    scope_push(&s, r, histogram_of(&s, rows, edges, 1, weight, a[4].b));
    scope_push(&s, r, edges[0]);
    return scope_end(&s);
}

/* histogram.bins_tensor(self, bins, weight?, density) -> (hist, bin_edges) */
static porta_status *histogram_bins_tensor(const porta_value *a, aten_results *r) {
    const porta_tensor *x = a[0].tensor, *weight = aten_optional_tensor(&a[2]);
    PORTA_TRY(check_input("histogram_cpu", x, 0, weight));
    const porta_tensor *bins = a[1].tensor;
    if (bins->rank != 1 || bins->sizes[0] < 1)
        return porta_error(PORTA_ERR_SHAPE,
                           "torch.histogramdd(): bins tensor should have one dimension and at "
                           "least 1 element, but got %d dimensions", bins->rank);
    aten_scope s;
    scope_begin(&s);
    porta_tensor *rows = rows_of(&s, x, 1), *edges[1] = {scope_cast(&s, bins, x->dtype)};
    scope_push(&s, r, histogram_of(&s, rows, edges, 1, weight, a[3].b));
    scope_push(&s, r, scope_contiguous(&s, edges[0]));
    return scope_end(&s);
}

/* _histogramdd_bin_edges(self, bins, range?, weight?, density) -> Tensor[] */
static porta_status *histogramdd_bin_edges(const porta_value *a, aten_results *r) {
    const porta_tensor *x = a[0].tensor;
    int dims = a[1].ints.count;
    PORTA_TRY(check_input("histogramdd", x, dims, aten_optional_tensor(&a[3])));
    porta_tensor *edges[PORTA_MAX_RANK] = {NULL};
    aten_scope s;
    scope_begin(&s);
    edges_from_counts(&s, rows_of(&s, x, dims), &a[1], &a[2], edges);
    for (int d = 0; d < dims; d++) scope_push(&s, r, edges[d]);
    return scope_end(&s);
}

/* _histogramdd_from_bin_cts(self, bins, range?, weight?, density) */
static porta_status *histogramdd_from_bin_cts(const porta_value *a, aten_results *r) {
    const porta_tensor *x = a[0].tensor, *weight = aten_optional_tensor(&a[3]);
    int dims = a[1].ints.count;
    PORTA_TRY(check_input("histogramdd", x, dims, weight));
    porta_tensor *edges[PORTA_MAX_RANK] = {NULL};
    aten_scope s;
    scope_begin(&s);
    porta_tensor *rows = rows_of(&s, x, dims);
    edges_from_counts(&s, rows, &a[1], &a[2], edges);
    scope_push(&s, r, histogram_of(&s, rows, edges, dims, weight, a[4].b));
    return scope_end(&s);
}

/* _histogramdd_from_bin_tensors(self, bins, weight?, density) */
static porta_status *histogramdd_from_bin_tensors(const porta_value *a, aten_results *r) {
    const porta_tensor *x = a[0].tensor, *weight = aten_optional_tensor(&a[2]);
    int dims = a[1].tensors.count;
    PORTA_TRY(check_input("histogramdd", x, dims, weight));
    porta_tensor *edges[PORTA_MAX_RANK] = {NULL};
    aten_scope s;
    scope_begin(&s);
    for (int d = 0; d < dims; d++) edges[d] = scope_cast(&s, a[1].tensors.items[d], x->dtype);
    scope_push(&s, r, histogram_of(&s, rows_of(&s, x, dims), edges, dims, weight, a[3].b));
    return scope_end(&s);
}

const aten_op aten_sort_histogram_ops[] = {
    {"histogram.bin_ct", "TiFtb", histogram_bin_ct},
    {"histogram.bins_tensor", "TTtb", histogram_bins_tensor},
    {"_histogramdd_bin_edges", "TIFtb", histogramdd_bin_edges},
    {"_histogramdd_from_bin_cts", "TIFtb", histogramdd_from_bin_cts},
    {"_histogramdd_from_bin_tensors", "TLtb", histogramdd_from_bin_tensors},
    {NULL, NULL, NULL},
};
