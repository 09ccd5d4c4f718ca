/* searchsorted and bucketize on the sort primitive. A value's insertion
 * point is the number of boundaries sorted before it when values and
 * boundaries are sorted together: its place in the joint order minus its
 * rank among the values alone. Both sorts are stable, so a value placed
 * ahead of the boundaries in the joined row lands before equal boundaries
 * (side "left") and one placed after them lands after (side "right").
 * Two sorts of n + m elements instead of n binary searches of log m steps
 * each: every step is a large primitive. */
#include <string.h>

#include "aten/aten.h"
#include "aten/dispatch/scope.h"
#include "aten/dispatch/op_reuse.h"
#include "aten/reduce/common.h"
#include "core/status.h"
#include "runtime/tensor.h"

/* The ascending stable order of x along its last axis. */
static porta_tensor *sorted_order(aten_scope *s, const porta_tensor *x) {
    if (s->status || !x) return NULL;
    porta_tensor *order = NULL;
    porta_status *status = porta_sort(x, -1, PORTA_SORT_ASCENDING, NULL, &order);
    return scope_hold(s, status, order);
}

/* Where each element of the rows went in their sorted order: the inverse
 * of the permutation `order` along the last axis. */
static porta_tensor *places(aten_scope *s, const porta_tensor *order) {
    if (!order) return NULL;
    int64_t length = order->sizes[order->rank - 1], shape[PORTA_MAX_RANK];
    for (int d = 0; d < order->rank; d++) shape[d] = d == order->rank - 1 ? length : 1;
    porta_tensor *positions = scope_expand(s, scope_reshape(s, scope_arange(s, order->buffer->device, length),
                                                            order->rank, shape),
                                        order->rank, order->sizes);
    porta_tensor *zeros = scope_full(s, order->buffer->device, PORTA_I64, order->rank, order->sizes, 0);
    return scope_scatter(s, zeros, order->rank - 1, order, positions, PORTA_SCATTER_NONE);
}

static porta_tensor *joined(aten_scope *s, const porta_tensor *first, const porta_tensor *second) {
    if (!first || !second) return NULL;
    porta_tensor *items[2] = {(porta_tensor *)first, (porta_tensor *)second};
    porta_value args[2] = {{.kind = PORTA_VALUE_TENSORS, .tensors = {items, 2}},
                           {.kind = PORTA_VALUE_INT, .i = -1}};
    return scope_call(s, "cat", args, 2);
}

static porta_status *check_search(const porta_tensor *seq, const porta_tensor *values,
                                  porta_dtype dtype, bool scalar, const porta_value *side, bool right,
                                  const porta_value *sorter) {
    char b[CORE_SHAPE_STR_CAP], v[CORE_SHAPE_STR_CAP];
    if (side->kind == PORTA_VALUE_STRING && strcmp(side->string, "left") &&
        strcmp(side->string, "right"))
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "torch.searchsorted(): side can only be 'left' or 'right' but got %s",
                           side->string);
    if (side->kind == PORTA_VALUE_STRING && right && !strcmp(side->string, "left"))
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "torch.searchsorted(): side and right can't be set to opposites, got "
                           "side of left while right was True");
    if (scalar && seq->rank != 1)
        return porta_error(PORTA_ERR_SHAPE,
                           "torch.searchsorted(): input value can be a scalar only when "
                           "boundaries tensor dimension is 1, but we got boundaries tensor dim(%d)",
                           seq->rank);
    bool batched_fits = seq->rank == values->rank && seq->rank > 0;
    for (int d = 0; batched_fits && d < seq->rank - 1; d++)
        batched_fits = seq->sizes[d] == values->sizes[d];
    if (seq->rank == 0 || (seq->rank > 1 && !batched_fits))
        return porta_error(PORTA_ERR_SHAPE,
                           "torch.searchsorted(): boundaries tensor should be 1 dimension or the "
                           "first N-1 dimensions of boundaries tensor and input value tensor must "
                           "match, but we got boundaries tensor %s and input value tensor %s",
                           core_format_shape(b, sizeof b, seq->rank, seq->sizes),
                           core_format_shape(v, sizeof v, values->rank, values->sizes));
    if (sorter->kind == PORTA_VALUE_TENSOR) {
        const porta_tensor *order = sorter->tensor;
        if (order->dtype != PORTA_I64)
            return porta_error(PORTA_ERR_DTYPE,
                               "torch.searchsorted(): sorter must be a tensor of long dtype but "
                               "got dtype %s",
                               aten_dtype_label(order->dtype));
        bool same = order->rank == seq->rank;
        for (int d = 0; same && d < seq->rank; d++) same = order->sizes[d] == seq->sizes[d];
        if (!same)
            return porta_error(PORTA_ERR_SHAPE,
                               "torch.searchsorted(): boundary and sorter must have the same "
                               "size, but got boundary tensor %s and got sorter tensor %s",
                               core_format_shape(b, sizeof b, seq->rank, seq->sizes),
                               core_format_shape(v, sizeof v, order->rank, order->sizes));
    }
    if (dtype == PORTA_BOOL)
        return porta_error(PORTA_ERR_DTYPE, "\"searchsorted_out_cpu\" not implemented for 'Bool'");
    return NULL;
}

/* PyTorch's check that every sorter index lies in [0, m). */
static void check_sorter_bounds(aten_scope *s, const porta_tensor *sorter, int64_t m) {
    porta_tensor *low = scope_reduce(s, PORTA_REDUCE_MIN, sorter, NULL, 0, false);
    porta_tensor *high = scope_reduce(s, PORTA_REDUCE_MAX, sorter, NULL, 0, false);
    if (!high) return;
    int64_t bounds[2];
    porta_status *status = porta_tensor_to_host(low, &bounds[0], sizeof bounds[0]);
    if (!status) status = porta_tensor_to_host(high, &bounds[1], sizeof bounds[1]);
    if (!status && (bounds[0] < 0 || bounds[1] >= m))
        status = porta_error(PORTA_ERR_INVALID_ARGUMENT,
                             "torch.searchsorted(): sorter index out of range");
    if (status) scope_fail(s, status);
}

/* searchsorted(sorted_sequence, values, out_int32, right, side, sorter):
 * the insertion points of values (a tensor or a number) in the rows of
 * sorted_sequence (1-D: one row for every value). */
static porta_status *search(const porta_value *a, aten_results *results) {
    const porta_tensor *seq = a[0].tensor;
    bool right = a[3].b || (a[4].kind == PORTA_VALUE_STRING && !strcmp(a[4].string, "right"));
    const porta_value *operands[2] = {&a[0], &a[1]};
    porta_dtype dtype = aten_result_type(operands, 2);
    aten_scope s;
    scope_begin(&s);
    porta_tensor *values = a[1].tensor;
    if (aten_is_number(&a[1])) {
        porta_status *status = aten_operand(&a[1], seq->buffer->device, dtype, &values);
        scope_hold(&s, status, values);
    }
    if (!s.status) {
        porta_status *status =
            check_search(seq, values, dtype, aten_is_number(&a[1]), &a[4], a[3].b, &a[5]);
        if (status) scope_fail(&s, status);
    }
    if (s.status) return scope_end(&s);
    int64_t m = seq->sizes[seq->rank - 1], n = seq->rank == 1 ? porta_tensor_numel(values)
                                                               : values->sizes[values->rank - 1];
    porta_tensor *rows = scope_cast(&s, seq, dtype);
    if (a[5].kind == PORTA_VALUE_TENSOR) {
        if (m && porta_tensor_numel(a[5].tensor)) check_sorter_bounds(&s, a[5].tensor, m);
        rows = scope_gather(&s, rows, seq->rank - 1, a[5].tensor);
    }
    int64_t flat_sizes[1] = {n};
    porta_tensor *keys = scope_cast(&s, values, dtype);
    if (seq->rank == 1) keys = scope_reshape(&s, keys, 1, flat_sizes);
    porta_tensor *order = sorted_order(&s, right ? joined(&s, rows, keys) : joined(&s, keys, rows));
    porta_tensor *joint = places(&s, order);
    int last = keys ? keys->rank - 1 : 0;
    porta_tensor *value_places = scope_slice(&s, joint, last, right ? m : 0, right ? m + n : n, 1);
    porta_tensor *ranks = places(&s, sorted_order(&s, keys));
    porta_tensor *points = scope_binary(&s, PORTA_SUB, value_places, ranks);
    points = scope_reshape(&s, points, values->rank, values->sizes);
    scope_push(&s, results, a[2].b ? scope_cast(&s, points, PORTA_I32) : points);
    return scope_end(&s);
}

/* bucketize(self, boundaries, out_int32, right): searchsorted with the
 * arguments swapped, boundaries 1-D. */
static porta_status *bucketize(const porta_value *a, aten_results *results) {
    const porta_tensor *boundaries = a[1].tensor;
    if (boundaries->rank != 1)
        return porta_error(PORTA_ERR_SHAPE, "boundaries tensor must be 1 dimension, but got dim(%d)",
                           boundaries->rank);
    porta_value args[6] = {a[1], a[0], a[2], a[3], {.kind = PORTA_VALUE_NONE},
                           {.kind = PORTA_VALUE_NONE}};
    return search(args, results);
}

ATEN_OUT_KERNEL(search_out, search, 6)
ATEN_OUT_KERNEL(bucketize_out, bucketize, 4)

const aten_op aten_sort_searchsorted_ops[] = {
    {"searchsorted.Tensor", "TTbbrt", search},
    {"searchsorted.Scalar", "Tsbbrt", search},
    {"searchsorted.Tensor_out", "TTbbrtT", search_out},
    {"searchsorted.Scalar_out", "TsbbrtT", search_out},
    {"bucketize.Tensor", "TTbb", bucketize},
    {"bucketize.Scalar", "sTbb", bucketize},
    {"bucketize.Tensor_out", "TTbbT", bucketize_out},
    {"bucketize.Scalar_out", "sTbbT", bucketize_out},
    {NULL, NULL, NULL},
};
