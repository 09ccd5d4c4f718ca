/* Sorting ops: sort (every variant is stable; stable=False admits that
 * order too), topk (the first k of a sort), and the order statistics
 * kthvalue, median and nanmedian, which pick one position of a sorted row,
 * with their out= variants. All of them run the sort primitive once and then
 * slice or gather. */
#include <math.h>

#include "aten/dispatch/scope.h"
#include "core/status.h"
#include "runtime/tensor.h"

/* The dim argument as a normalized axis of x, with PyTorch's IndexError. */
static porta_status *sort_axis(const porta_tensor *x, int64_t dim, int *axis) {
    int extent = x->rank ? x->rank : 1;
    if (dim < -extent || dim >= extent)
        return porta_error(PORTA_ERR_OUT_OF_RANGE,
                           "Dimension out of range (expected to be in range of [%d, %d], but "
                           "got %lld)",
                           -extent, extent - 1, (long long)dim);
    *axis = (int)(dim < 0 ? dim + extent : dim);
    return NULL;
}

static int64_t row_length(const porta_tensor *x, int axis) {
    return x->rank ? x->sizes[axis] : 1;
}

/* Sorts x along axis into tensors the scope holds. */
static void sort_held(aten_scope *s, const porta_tensor *x, int axis, bool descending,
                      porta_tensor **values, porta_tensor **indices) {
    *values = *indices = NULL;
    if (s->status) return;
    porta_status *status = porta_sort(x, axis, descending ? PORTA_SORT_DESCENDING
                                                          : PORTA_SORT_ASCENDING,
                                      values, indices);
    scope_hold(s, status, *values);
    if (!status) scope_hold(s, NULL, *indices);
}

static porta_status *sort_push(const porta_tensor *x, int64_t dim, bool descending,
                               aten_results *results) {
    int axis = 0;
    PORTA_TRY(sort_axis(x, dim, &axis));
    aten_scope s;
    scope_begin(&s);
    porta_tensor *values, *indices;
    sort_held(&s, x, axis, descending, &values, &indices);
    scope_push(&s, results, values);
    scope_push(&s, results, indices);
    return scope_end(&s);
}

/* sort(self, dim, descending) */
static porta_status *sort(const porta_value *a, aten_results *r) {
    return sort_push(a[0].tensor, a[1].i, a[2].b, r);
}

/* sort.stable(self, *, stable?, dim, descending) */
static porta_status *sort_stable(const porta_value *a, aten_results *r) {
    return sort_push(a[0].tensor, a[2].i, a[3].b, r);
}

/* topk(self, k, dim, largest, sorted): the first k of a sort, copied out of
 * the full rows so the results are contiguous. Sorted or not, the order
 * returned is the sorted one. */
static porta_status *topk(const porta_value *a, aten_results *results) {
    const porta_tensor *x = a[0].tensor;
    int64_t k = a[1].i;
    int axis = 0;
    PORTA_TRY(sort_axis(x, a[2].i, &axis));
    int64_t n = row_length(x, axis);
    if (k < 0 || k > n)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "selected index k out of range (k = %lld, dimension %d has size %lld)",
                           (long long)k, axis, (long long)n);
    aten_scope s;
    scope_begin(&s);
    porta_tensor *values, *indices;
    sort_held(&s, x, axis, a[3].b, &values, &indices);
    if (k < n && x->rank) {
        values = scope_contiguous(&s, scope_slice(&s, values, axis, 0, k, 1));
        indices = scope_contiguous(&s, scope_slice(&s, indices, axis, 0, k, 1));
    }
    scope_push(&s, results, values);
    scope_push(&s, results, indices);
    return scope_end(&s);
}

/* Values and indices at int64 `position` (keepdim's shape) of each sorted
 * row, the axis dropped unless keepdim. */
static void pick_sorted(aten_scope *s, const porta_tensor *values, const porta_tensor *indices,
                        int axis, const porta_tensor *position, bool keepdim,
                        aten_results *results) {
    porta_tensor *picked_values = scope_gather(s, values, axis, position);
    porta_tensor *picked_indices = scope_gather(s, indices, axis, position);
    if (!keepdim && values && values->rank) {
        int rank = values->rank - 1;
        int64_t sizes[PORTA_MAX_RANK];
        for (int d = 0, at = 0; d < values->rank; d++)
            if (d != axis) sizes[at++] = values->sizes[d];
        picked_values = scope_reshape(s, picked_values, rank, sizes);
        picked_indices = scope_reshape(s, picked_indices, rank, sizes);
    }
    scope_push(s, results, picked_values);
    scope_push(s, results, picked_indices);
}

/* keepdim's shape of x reduced over axis. */
static void reduced_shape(const porta_tensor *x, int axis, int64_t *sizes) {
    for (int d = 0; d < x->rank; d++) sizes[d] = d == axis ? 1 : x->sizes[d];
}

static porta_status *check_nonempty_row(const char *op, const porta_tensor *x, int axis) {
    if (row_length(x, axis) > 0) return NULL;
    return porta_error(PORTA_ERR_OUT_OF_RANGE,
                       "%s(): Expected reduction dim %d to have non-zero size.", op, axis);
}

/* kthvalue(self, k, dim, keepdim): position k - 1 of the ascending sort. */
static porta_status *kthvalue(const porta_value *a, aten_results *results) {
    const porta_tensor *x = a[0].tensor;
    int64_t k = a[1].i;
    int axis = 0;
    PORTA_TRY(sort_axis(x, a[2].i, &axis));
    PORTA_TRY(check_nonempty_row("kthvalue", x, axis));
    if (k < 1 || k > row_length(x, axis))
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "kthvalue(): selected number k out of range for dimension %d "
                           "(k = %lld, size %lld)",
                           axis, (long long)k, (long long)row_length(x, axis));
    aten_scope s;
    scope_begin(&s);
    int64_t sizes[PORTA_MAX_RANK];
    reduced_shape(x, axis, sizes);
    porta_tensor *values, *indices;
    sort_held(&s, x, axis, false, &values, &indices);
    porta_tensor *position = scope_full(&s, x->buffer->device, PORTA_I64, x->rank, sizes,
                                        (double)(k - 1));
    pick_sorted(&s, values, indices, axis, position, a[3].b, results);
    return scope_end(&s);
}

/* The median's position in each ascending row (NaNs sort last, in order):
 * median takes the lower median, or the first NaN when a row has one, as
 * PyTorch propagates NaN; nanmedian the lower median of the numbers (the
 * first NaN when there are none). */
static porta_tensor *median_position(aten_scope *s, const porta_tensor *x, int axis,
                                     bool ignore_nan) {
    int64_t n = row_length(x, axis), sizes[PORTA_MAX_RANK];
    reduced_shape(x, axis, sizes);
    porta_device *device = x->buffer->device;
    porta_tensor *middle = scope_full(s, device, PORTA_I64, x->rank, sizes, (double)((n - 1) / 2));
    if (!porta_dtype_is_float(x->dtype)) return middle;
    int axes[1] = {axis};
    porta_tensor *nans = scope_reduce(s, PORTA_REDUCE_SUM, scope_unary(s, PORTA_ISNAN, x), axes,
                                      x->rank ? 1 : 0, true);
    porta_tensor *numbers = scope_binary(s, PORTA_SUB, scope_full(s, device, PORTA_I64, 0, NULL,
                                                                  (double)n), nans);
    if (ignore_nan) {
        porta_tensor *last = scope_binary_number(s, PORTA_MAXIMUM,
                                                 scope_binary_number(s, PORTA_SUB, numbers, 1), 0);
        return scope_binary_number(s, PORTA_FLOOR_DIVIDE, last, 2);
    }
    porta_tensor *has_nan = scope_binary_number(s, PORTA_GT, nans, 0);
    return scope_ternary(s, PORTA_WHERE, has_nan, numbers, middle);
}

static porta_status *median_dim_of(const porta_value *a, bool ignore_nan,
                                   aten_results *results) {
    const porta_tensor *x = a[0].tensor;
    int axis = 0;
    PORTA_TRY(sort_axis(x, a[1].i, &axis));
    PORTA_TRY(check_nonempty_row(ignore_nan ? "nanmedian" : "median", x, axis));
    aten_scope s;
    scope_begin(&s);
    porta_tensor *values, *indices;
    sort_held(&s, x, axis, false, &values, &indices);
    pick_sorted(&s, values, indices, axis, median_position(&s, x, axis, ignore_nan), a[2].b,
                results);
    return scope_end(&s);
}

/* median.dim(self, dim, keepdim) */
static porta_status *median_dim(const porta_value *a, aten_results *r) {
    return median_dim_of(a, false, r);
}
/* nanmedian.dim(self, dim, keepdim) */
static porta_status *nanmedian_dim(const porta_value *a, aten_results *r) {
    return median_dim_of(a, true, r);
}

/* median(self) or nanmedian(self) over every element. */
static porta_status *median_all(const porta_tensor *x, bool ignore_nan, aten_results *results) {
    int64_t numel = porta_tensor_numel(x);
    aten_scope s;
    scope_begin(&s);
    if (numel == 0) { /* PyTorch gives NaN for an empty tensor */
        scope_push(&s, results, scope_full(&s, x->buffer->device, x->dtype, 0, NULL, NAN));
        return scope_end(&s);
    }
    porta_tensor *flat = scope_reshape(&s, x, 1, &numel), *values, *indices;
    sort_held(&s, flat, 0, false, &values, &indices);
    porta_tensor *position = s.status ? NULL : median_position(&s, flat, 0, ignore_nan);
    scope_push(&s, results, scope_reshape(&s, scope_gather(&s, values, 0, position), 0, NULL));
    return scope_end(&s);
}

static porta_status *median(const porta_value *a, aten_results *r) {
    return median_all(a[0].tensor, false, r);
}
static porta_status *nanmedian(const porta_value *a, aten_results *r) {
    return median_all(a[0].tensor, true, r);
}

/* The out= variants: `fn` computes new results from the leading arguments,
 * then each goes into its out tensor (args[first_out + i]) when the shapes
 * match, cast to its dtype; otherwise the new tensor is returned and the
 * binding resizes the out tensor to it, as PyTorch resizes outs. */
static porta_status *into_outs(aten_fn fn, const porta_value *args, int first_out,
                               aten_results *results) {
    aten_results computed = {0};
    porta_status *status = fn(args, &computed);
    for (int i = 0; !status && i < computed.count; i++) {
        porta_tensor *result = computed.items[i].tensor, *out = args[first_out + i].tensor;
        bool same_shape = result->rank == out->rank;
        for (int d = 0; same_shape && d < out->rank; d++)
            same_shape = result->sizes[d] == out->sizes[d];
        porta_tensor *given = same_shape ? out : result;
        if (same_shape) status = porta_copy(result, out);
        if (!status) {
            porta_tensor_retain(given);
            status = aten_push_tensor(results, given);
        }
    }
    porta_aten_results_free(computed.items, computed.count);
    return status;
}

static porta_status *sort_values(const porta_value *a, aten_results *r) {
    return into_outs(sort, a, 3, r);
}
static porta_status *sort_values_stable(const porta_value *a, aten_results *r) {
    return into_outs(sort_stable, a, 4, r);
}
static porta_status *topk_values(const porta_value *a, aten_results *r) {
    return into_outs(topk, a, 5, r);
}
static porta_status *kthvalue_values(const porta_value *a, aten_results *r) {
    return into_outs(kthvalue, a, 4, r);
}
static porta_status *median_dim_values(const porta_value *a, aten_results *r) {
    return into_outs(median_dim, a, 3, r);
}
static porta_status *nanmedian_dim_values(const porta_value *a, aten_results *r) {
    return into_outs(nanmedian_dim, a, 3, r);
}

const aten_op aten_sort_ops[] = {
    {"kthvalue", "Tiib", kthvalue},
    {"kthvalue.values", "TiibTT", kthvalue_values},
    {"median", "T", median},
    {"median.dim", "Tib", median_dim},
    {"median.dim_values", "TibTT", median_dim_values},
    {"nanmedian", "T", nanmedian},
    {"nanmedian.dim", "Tib", nanmedian_dim},
    {"nanmedian.dim_values", "TibTT", nanmedian_dim_values},
    {"sort", "Tib", sort},
    {"sort.stable", "Tcib", sort_stable},
    {"sort.values", "TibTT", sort_values},
    {"sort.values_stable", "TcibTT", sort_values_stable},
    {"topk", "Tiibb", topk},
    {"topk.values", "TiibbTT", topk_values},
    {NULL, NULL, NULL},
};
