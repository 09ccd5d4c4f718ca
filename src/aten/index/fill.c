/* Index ops that select or fill through a flat or per-dim index:
 * index_fill (a mask along one dim, so the fill is one where over self),
 * masked_select, take and put (index_select and scatter over the flattened
 * tensor) and index_reduce (a scatter with a reduction along one dim). */
#include <string.h>

#include "aten/index/common.h"
#include "aten/dispatch/scope.h"
#include "aten/dispatch/op_reuse.h"
#include "aten/reduce/common.h"
#include "core/status.h"
#include "runtime/tensor.h"
#include "ir/infer.h"

static porta_status *need_long_index(const char *message, const porta_tensor *index) {
    if (index->dtype == PORTA_I64) return NULL;
    return porta_error(PORTA_ERR_DTYPE, "%s, but got %s", message, aten_dtype_label(index->dtype));
}

/* ---- index_fill ---- */

/* A bool mask [size] true at the index's positions (checked, wrapped),
 * shaped to broadcast along `dim` of a rank-`rank` tensor. */
static porta_tensor *dim_mask(aten_scope *s, porta_device *device, const porta_tensor *index,
                              int dim, int rank, int64_t size) {
    if (s->status) return NULL;
    porta_tensor *wrapped = NULL;
    porta_status *status = index_wrap(index, size, dim, &wrapped);
    if (!scope_hold(s, status, wrapped)) return NULL;
    int64_t count = porta_tensor_numel(index), shape[PORTA_MAX_RANK];
    porta_tensor *flat = scope_reshape(s, wrapped, 1, &count);
    porta_tensor *marks = scope_full(s, device, PORTA_U8, 1, &count, 1);
    porta_tensor *hits = scope_scatter(s, scope_full(s, device, PORTA_U8, 1, &size, 0), 0, flat, marks,
                                       PORTA_SCATTER_NONE);
    for (int d = 0; d < rank; d++) shape[d] = d == dim ? size : 1;
    return scope_reshape(s, scope_cast(s, hits, PORTA_BOOL), rank, shape);
}

/* self with the slices along dim at index set to value (a number or a
 * 0-dim tensor); into self when in_place. */
static porta_status *index_fill_into(const porta_value *a, bool in_place, aten_results *r) {
    porta_tensor *self = a[0].tensor, *index = a[2].tensor;
    int rank = self->rank, dim;
    PORTA_TRY(core_normalize_axis("index_fill", (int)a[1].i, rank ? rank : 1, &dim));
    if (index->dtype != PORTA_I64)
        return porta_error(PORTA_ERR_OUT_OF_RANGE, "index_fill_(): Expected dtype int64 for index.");
    if (index->rank > 1)
        return porta_error(PORTA_ERR_SHAPE, "Index has to be a vector/scalar");
    if (a[3].kind == PORTA_VALUE_TENSOR && a[3].tensor->rank != 0)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "index_fill_ only supports a 0-dimensional value tensor, but got "
                           "tensor with %d dimension(s).",
                           a[3].tensor->rank);
    aten_scope s;
    scope_begin(&s);
    porta_device *device = porta_tensor_device(self);
    porta_tensor *value = a[3].kind == PORTA_VALUE_TENSOR
                              ? scope_cast(&s, a[3].tensor, self->dtype)
                              : scope_full(&s, device, self->dtype, 0, NULL, aten_number(&a[3]));
    porta_tensor *mask = dim_mask(&s, device, index, dim, rank, rank ? self->sizes[dim] : 1);
    if (rank == 0) mask = scope_reshape(&s, mask, 0, NULL);
    porta_tensor *filled = scope_ternary(&s, PORTA_WHERE, mask, value, self);
    if (in_place) scope_push_into(&s, r, filled, self);
    else scope_push(&s, r, filled);
    return scope_end(&s);
}

static porta_status *index_fill(const porta_value *a, aten_results *r) {
    return index_fill_into(a, false, r);
}
static porta_status *index_fill_(const porta_value *a, aten_results *r) {
    return index_fill_into(a, true, r);
}
ATEN_OUT_KERNEL(index_fill_out, index_fill, 4)

/* ---- masked_select ---- */

/* The elements of self (broadcast with mask) where mask is true, in
 * row-major order, as a 1-D tensor. */
static porta_status *masked_select(const porta_value *a, aten_results *r) {
    const porta_tensor *self = a[0].tensor, *mask = a[1].tensor;
    if (mask->dtype != PORTA_BOOL)
        return porta_error(PORTA_ERR_DTYPE, "masked_select: expected BoolTensor for mask");
    int rank;
    int64_t sizes[PORTA_MAX_RANK];
    PORTA_TRY(ir_broadcast_shapes("masked_select", self->rank, self->sizes, mask->rank,
                                     mask->sizes, &rank, sizes));
    int64_t numel = core_shape_numel(rank, sizes);
    aten_scope s;
    scope_begin(&s);
    porta_tensor *flat_mask = scope_reshape(&s, scope_expand(&s, mask, rank, sizes), 1, &numel);
    porta_tensor *coordinates = NULL;
    if (flat_mask) {
        porta_status *status = index_nonzero(flat_mask, &coordinates);
        scope_hold(&s, status, coordinates);
    }
    porta_tensor *positions = coordinates ? scope_reshape(&s, coordinates, 1, coordinates->sizes) : NULL;
    porta_tensor *flat_self = scope_reshape(&s, scope_expand(&s, self, rank, sizes), 1, &numel);
    scope_push(&s, r, scope_index_select(&s, flat_self, 0, positions));
    return scope_end(&s);
}
ATEN_OUT_KERNEL(masked_select_out, masked_select, 2)

/* ---- take / put ---- */

/* The flat positions index names in a tensor of numel elements, wrapped,
 * or IndexError naming an out-of-range value. */
static porta_tensor *flat_positions(aten_scope *s, const porta_tensor *index, int64_t numel) {
    if (s->status) return NULL;
    int64_t count = porta_tensor_numel(index), bounds[2] = {0, 0};
    porta_tensor *flat = scope_reshape(s, index, 1, &count);
    if (count) index_bounds(s, flat, bounds);
    if (count && !s->status && (bounds[0] < -numel || bounds[1] >= numel))
        return scope_fail(s, porta_error(PORTA_ERR_OUT_OF_RANGE,
                                         "out of range: tried to access index %lld on a tensor of "
                                         "%lld elements.",
                                         (long long)(bounds[0] < -numel ? bounds[0] : bounds[1]),
                                         (long long)numel));
    /* i + numel where i < 0 */
    porta_tensor *negative = scope_binary_number(s, PORTA_LT, flat, 0);
    return scope_ternary(s, PORTA_WHERE, negative, scope_binary_number(s, PORTA_ADD, flat, (double)numel),
                         flat);
}

static porta_status *take(const porta_value *a, aten_results *r) {
    const porta_tensor *self = a[0].tensor, *index = a[1].tensor;
    PORTA_TRY(need_long_index("take(): Expected a long tensor for index", index));
    int64_t numel = porta_tensor_numel(self);
    if (numel == 0 && porta_tensor_numel(index) != 0)
        return porta_error(PORTA_ERR_OUT_OF_RANGE, "take(): tried to take from an empty tensor");
    aten_scope s;
    scope_begin(&s);
    porta_tensor *positions = flat_positions(&s, index, numel);
    porta_tensor *flat_self = scope_reshape(&s, self, 1, &numel);
    scope_push(&s, r, scope_reshape(&s, scope_index_select(&s, flat_self, 0, positions), index->rank,
                                    index->sizes));
    return scope_end(&s);
}
ATEN_OUT_KERNEL(take_out, take, 2)

/* self with source's elements written (or added, with accumulate) at the
 * flat positions index names. */
static porta_tensor *put_of(aten_scope *s, const porta_value *a) {
    const porta_tensor *self = a[0].tensor, *index = a[1].tensor, *source = a[2].tensor;
    int64_t numel = porta_tensor_numel(self), count = porta_tensor_numel(index);
    if (index->dtype != PORTA_I64)
        return scope_fail(s, need_long_index("put_(): Expected a long tensor for index", index));
    if (porta_tensor_numel(source) != count)
        return scope_fail(s, porta_error(PORTA_ERR_OUT_OF_RANGE,
                                         "put_(): Expected source and index to have the same "
                                         "number of elements, but got source.numel() = %lld, "
                                         "index.numel() = %lld",
                                         (long long)porta_tensor_numel(source), (long long)count));
    if (source->dtype != self->dtype)
        return scope_fail(s, porta_error(PORTA_ERR_DTYPE,
                                         "put_(): self and source expected to have the same dtype, "
                                         "but got self.dtype = %s and source.dtype = %s",
                                         aten_dtype_label(self->dtype),
                                         aten_dtype_label(source->dtype)));
    if (numel == 0 && count != 0)
        return scope_fail(s, porta_error(PORTA_ERR_OUT_OF_RANGE,
                                         "put_(): Tried to put elements into an empty tensor"));
    porta_tensor *positions = flat_positions(s, index, numel);
    porta_tensor *flat_self = scope_reshape(s, scope_contiguous(s, self), 1, &numel);
    porta_tensor *flat_source = scope_reshape(s, source, 1, &count);
    porta_tensor *put = scope_scatter(s, flat_self, 0, positions, flat_source,
                                      a[3].b ? PORTA_SCATTER_ADD : PORTA_SCATTER_NONE);
    return scope_reshape(s, put, self->rank, self->sizes);
}

static porta_status *put(const porta_value *a, aten_results *r) {
    return scope_run(put_of, a, NULL, r);
}
ATEN_OUT_KERNEL(put_out, put, 4)
static porta_status *put_(const porta_value *a, aten_results *r) {
    return scope_run(put_of, a, a[0].tensor, r);
}

/* ---- index_reduce ---- */

static const struct {
    const char *name;
    porta_scatter_reduce reduce;
} index_reductions[] = {
    {"prod", PORTA_SCATTER_MUL},
    {"mean", PORTA_SCATTER_ADD},
    {"amax", PORTA_SCATTER_AMAX},
    {"amin", PORTA_SCATTER_AMIN},
};

static porta_status *check_index_reduce(const porta_tensor *self, int dim,
                                        const porta_tensor *index, const porta_tensor *source) {
    if (index->dtype != PORTA_I64 && index->dtype != PORTA_I32)
        return porta_error(PORTA_ERR_DTYPE,
                           "index_reduce_(): Expected dtype int32/int64 for index but got: %s",
                           aten_dtype_label(index->dtype));
    if (index->rank > 1)
        return porta_error(PORTA_ERR_SHAPE, "index_reduce_(): Index is supposed to be a vector");
    if (source->dtype != self->dtype)
        return porta_error(PORTA_ERR_DTYPE,
                           "index_reduce_(): self (%s) and source (%s) must have the same scalar "
                           "type",
                           aten_dtype_label(self->dtype), aten_dtype_label(source->dtype));
    int64_t count = porta_tensor_numel(index);
    bool fits = source->rank == self->rank || (self->rank <= 1 && source->rank <= 1);
    for (int d = 0; fits && d < self->rank; d++)
        fits = d == dim ? source->sizes[d] == count : source->sizes[d] == self->sizes[d];
    if (self->rank == 0) fits = fits && count == 1;
    if (fits) return NULL;
    char have[CORE_SHAPE_STR_CAP], given[CORE_SHAPE_STR_CAP];
    return porta_error(PORTA_ERR_SHAPE,
                       "source tensor shape must match self tensor shape, excluding the specified "
                       "dimension. Got self.shape = %s source.shape = %s (index has %lld elements)",
                       core_format_shape(have, sizeof have, self->rank, self->sizes),
                       core_format_shape(given, sizeof given, source->rank, source->sizes),
                       (long long)count);
}

/* self with source's slices reduced into the slices along dim that index
 * names. Without include_self the named slices start from the first
 * source slice written to them (amax/amin), 1 (prod) or 0 (mean); a mean
 * divides by the number of values reduced (floor division for integers). */
static porta_tensor *index_reduce_of(aten_scope *s, const porta_value *a) {
    porta_tensor *self = a[0].tensor, *index = a[2].tensor, *source = a[3].tensor;
    const char *name = a[4].kind == PORTA_VALUE_STRING ? a[4].string : "None";
    int which = -1;
    for (int i = 0; i < 4; i++)
        if (!strcmp(name, index_reductions[i].name)) which = i;
    if (which < 0)
        return scope_fail(s, porta_error(PORTA_ERR_INVALID_ARGUMENT,
                                         "index_reduce(): Expected reduce to be one of prod, mean, "
                                         "amax or amin but got %s.",
                                         name));
    int rank = self->rank, dim;
    porta_status *status = core_normalize_axis("index_reduce", (int)a[1].i, rank ? rank : 1, &dim);
    if (!status) status = check_index_reduce(self, dim, index, source);
    if (status) return scope_fail(s, status);
    bool include_self = a[5].b, mean = which == 1;
    int64_t count = porta_tensor_numel(index);
    index_slices view;
    index_slices_of(self, dim, count, &view);
    /* unlike the other index ops, index_reduce takes no negative index */
    porta_tensor *flat_index = scope_reshape(s, scope_cast(s, index, PORTA_I64), 1, &count);
    int64_t bounds[2] = {0, 0};
    if (count) index_bounds(s, flat_index, bounds);
    if (count && !s->status && (bounds[0] < 0 || bounds[1] >= view.size))
        return scope_fail(s, porta_error(PORTA_ERR_OUT_OF_RANGE,
                                         "index out of range in self: index %lld, dimension %d has "
                                         "size %lld",
                                         (long long)(bounds[0] < 0 ? bounds[0] : bounds[1]), dim,
                                         (long long)view.size));
    porta_tensor *spread = NULL;
    if (flat_index) {
        status = index_along(flat_index, dim, view.rank, view.source_sizes, &spread);
        scope_hold(s, status, spread);
    }
    porta_tensor *values = scope_reshape(s, source, view.rank, view.source_sizes);
    porta_tensor *base = scope_contiguous(s, scope_reshape(s, self, view.rank, view.self_sizes));
    if (!include_self) {
        porta_device *device = porta_tensor_device(self);
        porta_tensor *named = dim_mask(s, device, flat_index, dim, view.rank, view.size);
        if (index_reductions[which].reduce == PORTA_SCATTER_MUL || mean)
            base = scope_ternary(s, PORTA_WHERE, named,
                                 scope_full(s, device, self->dtype, 0, NULL, mean ? 0 : 1), base);
        else
            base = scope_scatter(s, base, dim, spread, values, PORTA_SCATTER_NONE);
    }
    porta_tensor *reduced = scope_scatter(s, base, dim, spread, values, index_reductions[which].reduce);
    if (mean) {
        porta_device *device = porta_tensor_device(self);
        porta_tensor *counts = scope_scatter(s, scope_full(s, device, self->dtype, 1, &view.size, include_self),
                                          0, flat_index, scope_full(s, device, self->dtype, 1, &count, 1),
                                          PORTA_SCATTER_ADD);
        int64_t shape[PORTA_MAX_RANK];
        for (int d = 0; d < view.rank; d++) shape[d] = d == dim ? view.size : 1;
        counts = scope_reshape(s, scope_binary_number(s, PORTA_MAXIMUM, counts, 1), view.rank, shape);
        reduced = scope_binary(s, porta_dtype_is_float(self->dtype) ? PORTA_DIV : PORTA_FLOOR_DIVIDE,
                               reduced, counts);
    }
    return scope_reshape(s, reduced, rank, self->sizes);
}

static porta_status *index_reduce(const porta_value *a, aten_results *r) {
    return scope_run(index_reduce_of, a, NULL, r);
}
ATEN_OUT_KERNEL(index_reduce_out, index_reduce, 6)
static porta_status *index_reduce_(const porta_value *a, aten_results *r) {
    return scope_run(index_reduce_of, a, a[0].tensor, r);
}

const aten_op aten_index_fill_ops[] = {
    {"index_fill.int_Scalar", "TiTs", index_fill},
    {"index_fill.int_Tensor", "TiTT", index_fill},
    {"index_fill_.int_Scalar", "TiTs", index_fill_},
    {"index_fill_.int_Tensor", "TiTT", index_fill_},
    {"index_fill.int_Scalar_out", "TiTsT", index_fill_out},
    {"index_fill.int_Tensor_out", "TiTTT", index_fill_out},
    {"masked_select", "TT", masked_select},
    {"masked_select.out", "TTT", masked_select_out},
    {"take", "TT", take},
    {"take.out", "TTT", take_out},
    {"put", "TTTb", put},
    {"put_", "TTTb", put_},
    {"put.out", "TTTbT", put_out},
    {"index_reduce", "TiTTrb", index_reduce},
    {"index_reduce.out", "TiTTrbT", index_reduce_out},
    {"index_reduce_", "TiTTrb", index_reduce_},
    {NULL, NULL, NULL},
};
