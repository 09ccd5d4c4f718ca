/* Which values occur, composed on the sort primitive: isin (membership,
 * by a binary search of the sorted test elements), histc (counts in equal
 * bins) and mode (the most frequent value along a dim), with their out=
 * variants. */
#include <math.h>
#include <string.h>

#include "aten/index/common.h"
#include "aten/dispatch/scope.h"
#include "aten/dispatch/op_reuse.h"
#include "aten/reduce/common.h"
#include "core/status.h"
#include "runtime/tensor.h"

/* Holds the tensor a call made through its out pointer: read only after
 * the call (an argument beside the call could be read before it). */
static porta_tensor *hold_made(aten_scope *s, porta_status *status, porta_tensor *const *made) {
    return scope_hold(s, status, status ? NULL : *made);
}

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

ATEN_OUT_KERNEL(isin_out, isin, 4)

/* histc(self, bins, min, max): counts of self's values in `bins` equal
 * bins over [min, max] (the data's range when min == max, widened by 1
 * each way when that is empty too), a value at max in the last bin, values
 * outside and NaN not counted. The bin is computed as the CPU kernel does,
 * (x - min) * bins / (max - min) in self's dtype; uncounted values go to
 * one extra bin that is cut off. Integer inputs, which PyTorch's CPU kernel
 * refuses, are counted as CUDA counts them: min and max truncated to
 * integers, the bin divided exactly in int64, counts in self's dtype. */
static porta_status *histc(const porta_value *a, aten_results *r) {
    const porta_tensor *x = a[0].tensor;
    int64_t bins = a[1].i;
    double low = aten_number(&a[2]), high = aten_number(&a[3]);
    bool integral = !porta_dtype_is_float(x->dtype);
    if (x->dtype == PORTA_BOOL)
        return porta_error(PORTA_ERR_DTYPE,
                           "\"histogram_cpu\" not implemented for '%s': histc expects a "
                           "floating-point or integer tensor",
                           aten_dtype_label(x->dtype));
    if (bins <= 0)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "torch.histogram(): bins must be > 0, but got %lld for dimension 0",
                           (long long)bins);
    if (integral) {
        low = trunc(low);
        high = trunc(high);
    }
    if (high < low)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "torch.histc: max must be larger than min");
    int64_t total = porta_tensor_numel(x), slots = bins + 1;
    aten_scope s;
    scope_begin(&s);
    porta_tensor *flat = scope_reshape(&s, x, 1, &total);
    if (integral) flat = scope_cast(&s, flat, PORTA_I64);
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
        &s, integral ? PORTA_FLOOR_DIVIDE : PORTA_DIV,
        scope_binary_number(&s, PORTA_MUL, scope_binary_number(&s, PORTA_SUB, flat, low), (double)bins),
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

ATEN_OUT_KERNEL(histc_out, histc, 4)

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
    PORTA_TRY(core_normalize_axis("mode", (int)a[1].i, rank, &axis));
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

const aten_op aten_sort_isin_histc_mode_ops[] = {
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
