/* Index ops composed from primitives that PyTorch has no decomposition
 * for: trace (a strided view of the diagonal, summed), index_copy (a
 * scatter of whole slices) and repeat_interleave of counts (a scan). */
#include <string.h>

#include "aten/index/common.h"
#include "aten/dispatch/scope.h"
#include "aten/dispatch/op_reuse.h"
#include "aten/reduce/common.h"
#include "core/status.h"
#include "core/tensor.h"

/* One int64 value of a rank-0 tensor, read to the host. */
static int64_t host_int(aten_scope *s, const porta_tensor *x) {
    int64_t value = 0;
    porta_tensor *wide = scope_cast(s, x, PORTA_I64);
    porta_status *status = wide ? porta_tensor_to_host(wide, &value, sizeof value) : NULL;
    if (status) scope_fail(s, status);
    return value;
}

/* Holds the tensor a call made through its out pointer: read only after
 * the call (an argument beside the call could be read before it). */
static porta_tensor *hold_made(aten_scope *s, porta_status *status, porta_tensor *const *made) {
    return scope_hold(s, status, status ? NULL : *made);
}

/* ---- trace ---- */

/* trace(self): the sum of a matrix's diagonal (not of bool, which the CPU
 * refuses), integers summed in int64 and the half types in float32, as sum does. */
static porta_status *trace(const porta_value *args, aten_results *results) {
    const porta_tensor *x = args[0].tensor;
    if (x->rank != 2)
        return porta_error(PORTA_ERR_SHAPE, "trace: expected a matrix, but got tensor with dim %d",
                           x->rank);
    if (x->dtype == PORTA_BOOL)
        return porta_error(PORTA_ERR_DTYPE, "\"trace\" not implemented for 'Bool'");
    int64_t length = x->sizes[0] < x->sizes[1] ? x->sizes[0] : x->sizes[1];
    int64_t stride = x->strides[0] + x->strides[1];
    porta_dtype dtype = porta_dtype_is_float(x->dtype) ? x->dtype : PORTA_I64;
    aten_scope s;
    scope_begin(&s);
    porta_tensor *diagonal = scope_cast(&s, scope_restride(&s, x, 1, &length, &stride),
                                     aten_compute_dtype(dtype));
    porta_tensor *sum = scope_reduce(&s, PORTA_REDUCE_SUM, diagonal, NULL, 0, false);
    scope_push(&s, results, scope_cast(&s, sum, dtype));
    return scope_end(&s);
}

static porta_status *trace_out(const porta_value *args, aten_results *results) {
    return aten_into_outs(trace, args, 1, 1, results);
}

/* ---- index_copy ---- */

/* PyTorch's checks, with its exception types: IndexError for the index's
 * rank and length, RuntimeError for dtypes and source's other sizes. */
static porta_status *check_index_copy(const porta_tensor *self, int dim, const porta_tensor *index,
                                      const porta_tensor *source) {
    if (index->dtype != PORTA_I64)
        return porta_error(PORTA_ERR_DTYPE,
                           "index_copy_(): Expected a long tensor for index, but got %s",
                           aten_dtype_label(index->dtype));
    if (index->rank > 1)
        return porta_error(PORTA_ERR_OUT_OF_RANGE,
                           "index_copy_(): Index should have dimension 1 or 0 (got %d)",
                           index->rank);
    if (source->dtype != self->dtype)
        return porta_error(PORTA_ERR_DTYPE,
                           "index_copy_(): self and source expected to have the same dtype, but "
                           "got (self) %s and (source) %s",
                           aten_dtype_label(self->dtype), aten_dtype_label(source->dtype));
    int64_t count = porta_tensor_numel(index);
    if (source->rank && self->rank && dim < source->rank && source->sizes[dim] != count)
        return porta_error(PORTA_ERR_OUT_OF_RANGE,
                           "index_copy_(): Number of indices (%lld) should be equal to "
                           "source.size(dim) (%lld)",
                           (long long)count, (long long)source->sizes[dim]);
    bool fits = source->rank == self->rank || (self->rank <= 1 && source->rank <= 1);
    for (int d = 0; fits && d < self->rank && source->rank; d++)
        fits = d == dim ? source->sizes[d] == count : source->sizes[d] == self->sizes[d];
    if (self->rank == 0 || source->rank == 0) fits = fits && count == 1;
    if (fits) return NULL;
    char have[PORTA_SHAPE_STR_CAP], given[PORTA_SHAPE_STR_CAP];
    return porta_error(PORTA_ERR_SHAPE,
                       "index_copy_(): source shape must match self shape except along dim %d "
                       "with one slice per index: got self %s, source %s, %lld indices",
                       dim, porta_format_shape(have, sizeof have, self->rank, self->sizes),
                       porta_format_shape(given, sizeof given, source->rank, source->sizes),
                       (long long)count);
}

/* self with the slices along dim that index names replaced by source's
 * slices, in order. A 0-dim self or source is a one-element vector here. */
static porta_tensor *index_copy_of(aten_scope *s, const porta_value *a) {
    porta_tensor *self = a[0].tensor, *index = a[2].tensor, *source = a[3].tensor;
    int rank = self->rank, dim;
    porta_status *status = porta_normalize_axis("index_copy", (int)a[1].i, rank ? rank : 1, &dim);
    if (!status) status = check_index_copy(self, dim, index, source);
    if (status) return scope_fail(s, status);
    int view_rank = rank ? rank : 1;
    int64_t one = 1, count = porta_tensor_numel(index), size = rank ? self->sizes[dim] : 1;
    const int64_t *self_sizes = rank ? self->sizes : &one;
    int64_t source_sizes[PORTA_MAX_RANK];
    memcpy(source_sizes, self_sizes, sizeof(int64_t) * (size_t)view_rank);
    source_sizes[dim] = count;
    porta_tensor *flat_index = scope_reshape(s, index, 1, &count);
    if (count) {
        int64_t low = host_int(s, scope_reduce(s, PORTA_REDUCE_MIN, flat_index, NULL, 0, false));
        int64_t high = host_int(s, scope_reduce(s, PORTA_REDUCE_MAX, flat_index, NULL, 0, false));
        if (!s->status && (low < 0 || high >= size))
            return scope_fail(s, porta_error(PORTA_ERR_OUT_OF_RANGE,
                                          "index_copy_(): index %lld is out of bounds for "
                                          "dimension %d with size %lld",
                                          (long long)(low < 0 ? low : high), dim, (long long)size));
    }
    if (s->status) return NULL;
    porta_tensor *spread = NULL;
    status = index_along(flat_index, dim, view_rank, source_sizes, &spread);
    scope_hold(s, status, spread);
    porta_tensor *values = scope_reshape(s, source, view_rank, source_sizes);
    porta_tensor *base = scope_reshape(s, self, view_rank, self_sizes);
    porta_tensor *copied = scope_scatter(s, base, dim, spread, values, PORTA_SCATTER_NONE);
    return scope_reshape(s, copied, rank, self->sizes);
}

static porta_status *index_copy(const porta_value *a, aten_results *r) {
    aten_scope s;
    scope_begin(&s);
    scope_push(&s, r, index_copy_of(&s, a));
    return scope_end(&s);
}

static porta_status *index_copy_out(const porta_value *a, aten_results *r) {
    return aten_into_outs(index_copy, a, 4, 1, r);
}

static porta_status *index_copy_inplace(const porta_value *a, aten_results *r) {
    aten_scope s;
    scope_begin(&s);
    scope_copy(&s, index_copy_of(&s, a), a[0].tensor);
    if (!s.status) scope_push(&s, r, a[0].tensor);
    return scope_end(&s);
}

/* ---- repeat_interleave ---- */

/* repeat_interleave(repeats, output_size): i repeated repeats[i] times.
 * The length comes from the data (read to the host, as the CPU does). A 1
 * marks where each i > 0 starts (ends of the running count; empty repeats
 * mark the same place twice), and the running sum of the marks is i. */
static porta_status *repeat_interleave(const porta_value *a, aten_results *r) {
    porta_tensor *repeats = a[0].tensor;
    if (repeats->rank != 1)
        return porta_error(PORTA_ERR_SHAPE, "repeat_interleave only accept 1D vector as repeat, "
                                            "got %d dimensions", repeats->rank);
    if (repeats->dtype != PORTA_I64 && repeats->dtype != PORTA_I32)
        return porta_error(PORTA_ERR_DTYPE, "repeats has to be Long or Int tensor, got %s",
                           aten_dtype_label(repeats->dtype));
    int64_t n = repeats->sizes[0], zero = 0;
    aten_scope s;
    scope_begin(&s);
    porta_device *device = porta_tensor_device(repeats);
    porta_value scan_args[3] = {{.kind = PORTA_VALUE_TENSOR, .tensor = repeats},
                                {.kind = PORTA_VALUE_INT, .i = 0},
                                {.kind = PORTA_VALUE_DTYPE, .dtype = PORTA_I64}};
    porta_tensor *ends = scope_call(&s, "cumsum", scan_args, 3);
    int64_t total = n ? host_int(&s, scope_reshape(&s, scope_slice(&s, ends, 0, n - 1, n, 1), 0, NULL))
                      : 0;
    int64_t lowest = n ? host_int(&s, scope_reduce(&s, PORTA_REDUCE_MIN, repeats, NULL, 0, false))
                       : 0;
    if (!s.status && lowest < 0)
        scope_fail(&s, porta_error(PORTA_ERR_INVALID_ARGUMENT, "repeats can not be negative"));
    if (!s.status && a[1].kind == PORTA_VALUE_INT && a[1].i != total)
        scope_fail(&s, porta_error(PORTA_ERR_INVALID_ARGUMENT,
                                "repeat_interleave: output_size %lld does not match the sum of "
                                "repeats %lld",
                                (long long)a[1].i, (long long)total));
    int64_t marks_size = total + 1, starts = n ? n - 1 : 0;
    porta_tensor *later_starts = n ? scope_slice(&s, ends, 0, 0, n - 1, 1)
                                   : scope_full(&s, device, PORTA_I64, 1, &zero, 0);
    porta_tensor *marks = scope_scatter(&s, scope_full(&s, device, PORTA_I64, 1, &marks_size, 0), 0,
                                     later_starts, scope_full(&s, device, PORTA_I64, 1, &starts, 1),
                                     PORTA_SCATTER_ADD);
    porta_value mark_args[3] = {{.kind = PORTA_VALUE_TENSOR, .tensor = marks},
                                {.kind = PORTA_VALUE_INT, .i = 0},
                                {.kind = PORTA_VALUE_NONE}};
    porta_tensor *counted = scope_call(&s, "cumsum", mark_args, 3);
    scope_push(&s, r, scope_cast(&s, scope_slice(&s, counted, 0, 0, total, 1), repeats->dtype));
    return scope_end(&s);
}

static porta_status *repeat_interleave_out(const porta_value *a, aten_results *r) {
    return aten_into_outs(repeat_interleave, a, 2, 1, r);
}

/* ---- isin ---- */

/* Sorted test elements, flattened: each element is found where a binary
 * search puts it (searchsorted), then compared with what is there. Both
 * compare in their promoted dtype; NaN is in nothing. */
static porta_status *isin(const porta_value *a, aten_results *r) {
    const porta_value *operands[2] = {&a[0], &a[1]};
    porta_dtype dtype = aten_result_type(operands, 2);
    porta_device *device = aten_device_of(operands, 2);
    bool invert = a[3].b;
    porta_tensor *elements = NULL, *tests = NULL;
    aten_scope s;
    scope_begin(&s);
    hold_made(&s, aten_operand(&a[0], device, dtype, &elements), &elements);
    hold_made(&s, aten_operand(&a[1], device, dtype, &tests), &tests);
    if (s.status) return scope_end(&s);
    int64_t count = porta_tensor_numel(tests);
    porta_tensor *found;
    if (!count) {
        found = scope_full(&s, device, PORTA_BOOL, elements->rank, elements->sizes, 0);
    } else {
        porta_tensor *sorted = NULL, *flat = scope_reshape(&s, tests, 1, &count);
        if (flat) hold_made(&s, porta_sort(flat, 0, PORTA_SORT_ASCENDING, &sorted, NULL), &sorted);
        porta_value search[6] = {{.kind = PORTA_VALUE_TENSOR, .tensor = sorted},
                                 {.kind = PORTA_VALUE_TENSOR, .tensor = elements},
                                 {.kind = PORTA_VALUE_BOOL, .b = false},
                                 {.kind = PORTA_VALUE_BOOL, .b = false},
                                 {.kind = PORTA_VALUE_NONE},
                                 {.kind = PORTA_VALUE_NONE}};
        porta_tensor *places = scope_call(&s, "searchsorted.Tensor", search, 6);
        int64_t total = porta_tensor_numel(elements);
        porta_tensor *clamped = scope_binary_number(&s, PORTA_MINIMUM, places, (double)(count - 1));
        porta_tensor *there = scope_index_select(&s, sorted, 0, scope_reshape(&s, clamped, 1, &total));
        found = scope_binary(&s, PORTA_EQ, scope_reshape(&s, there, elements->rank, elements->sizes),
                          elements);
    }
    scope_push(&s, r, invert ? scope_unary(&s, PORTA_LOGICAL_NOT, found) : found);
    return scope_end(&s);
}

static porta_status *isin_out(const porta_value *a, aten_results *r) {
    return aten_into_outs(isin, a, 4, 1, r);
}

/* ---- histc ---- */

/* histc(self, bins, min, max): counts of self's values in `bins` equal
 * bins over [min, max] (the data's range when min == max, widened by 1
 * each way when that is empty too), a value at max in the last bin, values
 * outside and NaN not counted. The bin is computed as the CPU kernel does,
 * (x - min) * bins / (max - min) in self's dtype; uncounted values go to
 * one extra bin that is cut off. */
static porta_status *histc(const porta_value *a, aten_results *r) {
    const porta_tensor *x = a[0].tensor;
    int64_t bins = a[1].i;
    double low = aten_number(&a[2]), high = aten_number(&a[3]);
    if (!porta_dtype_is_float(x->dtype))
        return porta_error(PORTA_ERR_DTYPE, "\"histogram_cpu\" not implemented for '%s'",
                           aten_dtype_label(x->dtype));
    if (bins <= 0)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "torch.histogram(): bins must be > 0, but got %lld for dimension 0",
                           (long long)bins);
    if (high < low)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "torch.histc: max must be larger than min");
    int64_t total = porta_tensor_numel(x), slots = bins + 1;
    aten_scope s;
    scope_begin(&s);
    porta_tensor *flat = scope_reshape(&s, x, 1, &total);
    if (low == high && total) {
        double range[2];
        porta_tensor *lo = scope_cast(&s, scope_reduce(&s, PORTA_REDUCE_MIN, flat, NULL, 0, false), PORTA_F64);
        porta_tensor *hi = scope_cast(&s, scope_reduce(&s, PORTA_REDUCE_MAX, flat, NULL, 0, false), PORTA_F64);
        porta_status *status = lo ? porta_tensor_to_host(lo, &range[0], sizeof range[0]) : NULL;
        if (!status && hi) status = porta_tensor_to_host(hi, &range[1], sizeof range[1]);
        if (status) scope_fail(&s, status);
        low = range[0];
        high = range[1];
    }
    if (low == high) {
        low -= 1;
        high += 1;
    }
    porta_device *device = porta_tensor_device(x);
    porta_tensor *position = scope_binary_number(
        &s, PORTA_DIV, scope_binary_number(&s, PORTA_MUL, scope_binary_number(&s, PORTA_SUB, flat, low), (double)bins),
        high - low);
    porta_tensor *inside = scope_binary(&s, PORTA_LOGICAL_AND, scope_binary_number(&s, PORTA_GE, flat, low),
                                     scope_binary_number(&s, PORTA_LE, flat, high));
    porta_tensor *bin = scope_binary_number(&s, PORTA_MINIMUM, scope_cast(&s, position, PORTA_I64), (double)(bins - 1));
    porta_tensor *slot = scope_ternary(&s, PORTA_WHERE, inside, bin,
                                    scope_full(&s, device, PORTA_I64, 0, NULL, (double)bins));
    porta_tensor *counts = scope_scatter(&s, scope_full(&s, device, x->dtype, 1, &slots, 0), 0, slot,
                                      scope_full(&s, device, x->dtype, 1, &total, 1), PORTA_SCATTER_ADD);
    scope_push(&s, r, scope_slice(&s, counts, 0, 0, bins, 1));
    return scope_end(&s);
}

static porta_status *histc_out(const porta_value *a, aten_results *r) {
    return aten_into_outs(histc, a, 4, 1, r);
}

/* ---- mode ---- */

/* x shifted by one place along axis (toward higher indices for `later`
 * false: element i holds x[i - 1]), compared with x: true where the
 * neighbour differs, and at the end that has no neighbour. */
static porta_tensor *differs_from_neighbour(aten_scope *s, const porta_tensor *x, int axis,
                                            const porta_tensor *positions, int64_t n, bool later) {
    int64_t pads[2 * PORTA_MAX_RANK] = {0};
    pads[2 * axis] = later ? -1 : 1;
    pads[2 * axis + 1] = later ? 1 : -1;
    porta_tensor *differs = scope_binary(s, PORTA_NE, x, scope_pad(s, x, pads, 0));
    porta_tensor *edge = scope_binary_number(s, PORTA_EQ, positions, later ? (double)(n - 1) : 0);
    return scope_binary(s, PORTA_LOGICAL_OR, differs, edge);
}

/* mode(self, dim, keepdim): the most frequent value along dim (the
 * smallest among equally frequent ones) and the last index where it
 * occurs, as the CPU kernel gives. Along the stably sorted slice a run of
 * equal values ends where the next differs; its length is counted from its
 * start, the running maximum (log2(n) shifted maxima) of the positions
 * where runs start; the first longest run wins (argmax keeps the first). */
static porta_status *mode(const porta_value *a, aten_results *r) {
    const porta_tensor *x = a[0].tensor;
    int axis, rank = x->rank ? x->rank : 1;
    bool keepdim = a[2].b;
    PORTA_TRY(porta_normalize_axis("mode", (int)a[1].i, rank, &axis));
    int64_t one = 1, n = x->rank ? x->sizes[axis] : 1, shape[PORTA_MAX_RANK];
    if (n == 0)
        return porta_error(PORTA_ERR_OUT_OF_RANGE,
                           "mode(): Expected reduction dim %d to have non-zero size.", axis);
    for (int d = 0; d < rank; d++) shape[d] = d == axis ? n : 1;
    aten_scope s;
    scope_begin(&s);
    porta_tensor *values = x->rank ? (porta_tensor *)x : scope_reshape(&s, x, 1, &one);
    porta_tensor *sorted = NULL, *order = NULL;
    if (values) {
        porta_status *status = porta_sort(values, axis, PORTA_SORT_ASCENDING, &sorted, &order);
        if (scope_hold(&s, status, sorted)) scope_hold(&s, NULL, order);
    }
    porta_tensor *positions = scope_reshape(&s, scope_arange(&s, porta_tensor_device(x), n), rank, shape);
    porta_tensor *starts = scope_ternary(&s, PORTA_WHERE,
                                      differs_from_neighbour(&s, sorted, axis, positions, n, false),
                                      positions, scope_binary_number(&s, PORTA_MUL, positions, 0));
    for (int64_t step = 1; step < n; step *= 2) {
        int64_t pads[2 * PORTA_MAX_RANK] = {0};
        pads[2 * axis] = step;
        pads[2 * axis + 1] = -step;
        starts = scope_binary(&s, PORTA_MAXIMUM, starts, scope_pad(&s, starts, pads, 0));
    }
    porta_tensor *lengths = scope_binary_number(&s, PORTA_ADD, scope_binary(&s, PORTA_SUB, positions, starts), 1);
    porta_tensor *run_lengths = scope_ternary(&s, PORTA_WHERE,
                                           differs_from_neighbour(&s, sorted, axis, positions, n, true),
                                           lengths, scope_binary_number(&s, PORTA_MUL, lengths, 0));
    porta_tensor *best = scope_reduce(&s, PORTA_REDUCE_ARGMAX, run_lengths, &axis, 1, true);
    porta_tensor *value = scope_gather(&s, sorted, axis, best), *index = scope_gather(&s, order, axis, best);
    if (!keepdim || !x->rank) {
        int64_t kept[PORTA_MAX_RANK];
        int kept_rank = 0;
        for (int d = 0; d < x->rank; d++)
            if (d != axis || keepdim) kept[kept_rank++] = x->sizes[d];
        value = scope_reshape(&s, value, kept_rank, kept);
        index = scope_reshape(&s, index, kept_rank, kept);
    }
    scope_push(&s, r, value);
    scope_push(&s, r, index);
    return scope_end(&s);
}

static porta_status *mode_out(const porta_value *a, aten_results *r) {
    return aten_into_outs(mode, a, 3, 2, r);
}

const aten_op aten_index_more_ops[] = {
    {"trace", "T", trace},
    {"trace.out", "TT", trace_out},
    {"index_copy", "TiTT", index_copy},
    {"index_copy.out", "TiTTT", index_copy_out},
    {"index_copy_", "TiTT", index_copy_inplace},
    {"repeat_interleave.Tensor", "Tj", repeat_interleave},
    {"repeat_interleave.Tensor_out", "TjT", repeat_interleave_out},
    {"isin.Tensor_Tensor", "TTbb", isin},
    {"isin.Tensor_Tensor_out", "TTbbT", isin_out},
    {"isin.Tensor_Scalar", "Tsbb", isin},
    {"isin.Tensor_Scalar_out", "TsbbT", isin_out},
    {"isin.Scalar_Tensor", "sTbb", isin},
    {"isin.Scalar_Tensor_out", "sTbbT", isin_out},
    {"histc", "Tiss", histc},
    {"histc.out", "TissT", histc_out},
    {"mode", "Tib", mode},
    {"mode.values", "TibTT", mode_out},
    {NULL, NULL, NULL},
};
