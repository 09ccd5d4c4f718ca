/* Index ops composed from primitives that PyTorch has no decomposition
 * for: index_copy (a scatter of whole slices) and repeat_interleave of
 * counts (a scan), with their out= and in-place variants. */
#include "aten/index/common.h"
#include "aten/dispatch/scope.h"
#include "aten/dispatch/op_reuse.h"
#include "aten/reduce/common.h"
#include "core/status.h"
#include "runtime/tensor.h"

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
    char have[CORE_SHAPE_STR_CAP], given[CORE_SHAPE_STR_CAP];
    return porta_error(PORTA_ERR_SHAPE,
                       "index_copy_(): source shape must match self shape except along dim %d "
                       "with one slice per index: got self %s, source %s, %lld indices",
                       dim, core_format_shape(have, sizeof have, self->rank, self->sizes),
                       core_format_shape(given, sizeof given, source->rank, source->sizes),
                       (long long)count);
}

/* self with the slices along dim that index names replaced by source's
 * slices, in order. A 0-dim self or source is a one-element vector here. */
static porta_tensor *index_copy_of(aten_scope *s, const porta_value *a) {
    porta_tensor *self = a[0].tensor, *index = a[2].tensor, *source = a[3].tensor;
    int rank = self->rank, dim;
    porta_status *status = core_normalize_axis("index_copy", (int)a[1].i, rank ? rank : 1, &dim);
    if (!status) status = check_index_copy(self, dim, index, source);
    if (status) return scope_fail(s, status);
    int64_t count = porta_tensor_numel(index);
    index_slices view;
    index_slices_of(self, dim, count, &view);
    porta_tensor *flat_index = scope_reshape(s, index, 1, &count);
    if (count) {
        int64_t bounds[2];
        index_bounds(s, flat_index, bounds);
        int64_t low = bounds[0], high = bounds[1];
        if (!s->status && (low < 0 || high >= view.size))
            return scope_fail(s, porta_error(PORTA_ERR_OUT_OF_RANGE,
                                             "index_copy_(): index %lld is out of bounds for "
                                             "dimension %d with size %lld",
                                             (long long)(low < 0 ? low : high), dim,
                                             (long long)view.size));
    }
    if (s->status) return NULL;
    porta_tensor *spread = NULL;
    status = index_along(flat_index, dim, view.rank, view.source_sizes, &spread);
    scope_hold(s, status, spread);
    porta_tensor *values = scope_reshape(s, source, view.rank, view.source_sizes);
    porta_tensor *base = scope_reshape(s, self, view.rank, view.self_sizes);
    porta_tensor *copied = scope_scatter(s, base, dim, spread, values, PORTA_SCATTER_NONE);
    return scope_reshape(s, copied, rank, self->sizes);
}

static porta_status *index_copy(const porta_value *a, aten_results *r) {
    return scope_run(index_copy_of, a, NULL, r);
}

ATEN_OUT_KERNEL(index_copy_out, index_copy, 4)

static porta_status *index_copy_inplace(const porta_value *a, aten_results *r) {
    return scope_run(index_copy_of, a, a[0].tensor, r);
}


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
    int64_t total = n ? scope_read_int(&s, scope_reshape(&s, scope_slice(&s, ends, 0, n - 1, n, 1), 0, NULL))
                      : 0;
    int64_t lowest = n ? scope_read_int(&s, scope_reduce(&s, PORTA_REDUCE_MIN, repeats, NULL, 0, false))
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

ATEN_OUT_KERNEL(repeat_interleave_out, repeat_interleave, 2)

const aten_op aten_index_copy_repeat_ops[] = {
    {"index_copy", "TiTT", index_copy},
    {"index_copy.out", "TiTTT", index_copy_out},
    {"index_copy_", "TiTT", index_copy_inplace},
    {"repeat_interleave.Tensor", "Tj", repeat_interleave},
    {"repeat_interleave.Tensor_out", "TjT", repeat_interleave_out},
    {NULL, NULL, NULL},
};
