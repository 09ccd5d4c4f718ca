/* Masked index ops: masked_fill (where(mask, value, self)), nonzero, and
 * masked_scatter, which scatters source's leading elements to the mask's
 * true positions (found with nonzero on the flattened mask), with its
 * backward, which gathers them back. */
#include "aten/index/common.h"
#include "aten/dispatch/scope.h"
#include "core/status.h"
#include "runtime/tensor.h"
#include "ir/infer.h"

/* The fill value as a 0-dim tensor of self's dtype: a number, or a 0-dim
 * tensor (cast as PyTorch does). */
static porta_status *fill_value(const porta_tensor *self, const porta_value *value,
                                porta_tensor **out) {
    porta_dtype dtype = porta_tensor_dtype(self);
    if (value->kind != PORTA_VALUE_TENSOR)
        return index_scalar(porta_tensor_device(self), dtype, aten_number(value), out);
    int rank = porta_tensor_rank(value->tensor);
    if (rank != 0)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "masked_fill_ only supports a 0-dimensional value tensor, but got "
                           "tensor with %d dimension(s).",
                           rank);
    return porta_cast(value->tensor, dtype, out);
}

static porta_status *masked_fill_into(const porta_value *args, bool in_place, aten_results *r) {
    if (args[0].kind != PORTA_VALUE_TENSOR || args[1].kind != PORTA_VALUE_TENSOR)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "masked_fill: expected porta tensors");
    porta_tensor *self = args[0].tensor, *mask = args[1].tensor;
    if (porta_tensor_dtype(mask) != PORTA_BOOL)
        return porta_error(PORTA_ERR_DTYPE,
                           "masked_fill_ only supports boolean masks, but got mask with dtype %s",
                           porta_dtype_name(porta_tensor_dtype(mask)));
    porta_tensor *value = NULL, *out = in_place ? self : NULL;
    PORTA_TRY(fill_value(self, &args[2], &value));
    porta_status *status = porta_ternary(PORTA_WHERE, mask, value, self, &out);
    porta_tensor_release(value);
    if (status) return status;
    if (in_place) porta_tensor_retain(out);
    return aten_push_tensor(r, out);
}

static porta_status *masked_fill(const porta_value *args, aten_results *r) {
    return masked_fill_into(args, false, r);
}
static porta_status *masked_fill_(const porta_value *args, aten_results *r) {
    return masked_fill_into(args, true, r);
}

static porta_status *nonzero(const porta_value *args, aten_results *r) {
    if (args[0].kind != PORTA_VALUE_TENSOR)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "nonzero: expected a porta tensor");
    porta_tensor *out = NULL;
    PORTA_TRY(index_nonzero(args[0].tensor, &out));
    return aten_push_tensor(r, out);
}

/* The row-major positions of mask's true elements: int64 [count]. */
static porta_tensor *true_positions(aten_scope *s, const porta_tensor *mask) {
    if (s->status) return NULL;
    int64_t numel = porta_tensor_numel(mask);
    porta_tensor *flat = scope_reshape(s, mask, 1, &numel), *coordinates = NULL;
    if (!flat) return NULL;
    porta_status *status = index_nonzero(flat, &coordinates); /* before scope_hold reads it */
    scope_hold(s, status, coordinates);
    if (!coordinates) return NULL;
    return scope_reshape(s, coordinates, 1, coordinates->sizes);
}

static porta_status *check_masked_scatter(const porta_tensor *self, const porta_tensor *mask,
                                          const porta_tensor *source) {
    if (mask->dtype != PORTA_BOOL)
        return porta_error(PORTA_ERR_DTYPE,
                           "masked_scatter_ only supports boolean masks, but got mask with "
                           "dtype %s",
                           porta_dtype_name(mask->dtype));
    if (source->dtype != self->dtype)
        return porta_error(PORTA_ERR_DTYPE,
                           "masked_scatter: expected self and source to have same dtypes but "
                           "got %s and %s",
                           porta_dtype_name(self->dtype), porta_dtype_name(source->dtype));
    return NULL;
}

/* self (broadcast to `rank, sizes`) with source's first elements at mask's
 * true positions, as a new tensor of that shape. */
static porta_tensor *scatter_masked(aten_scope *s, const porta_tensor *self,
                                    const porta_tensor *mask, const porta_tensor *source,
                                    int rank, const int64_t *sizes) {
    porta_tensor *positions = true_positions(s, scope_expand(s, mask, rank, sizes));
    if (!positions) return NULL;
    int64_t count = positions->sizes[0], available = porta_tensor_numel(source);
    if (available < count)
        return scope_fail(s, porta_error(PORTA_ERR_INVALID_ARGUMENT,
                                         "Number of elements of source < number of ones in mask "
                                         "(%lld < %lld)",
                                         (long long)available, (long long)count));
    int64_t numel = core_shape_numel(rank, sizes);
    porta_tensor *flat_self = scope_reshape(s, scope_contiguous(s, scope_expand(s, self, rank, sizes)), 1,
                                            &numel);
    porta_tensor *taken = scope_slice(s, scope_reshape(s, source, 1, &available), 0, 0, count, 1);
    porta_tensor *flat = scope_scatter(s, flat_self, 0, positions, taken, PORTA_SCATTER_NONE);
    return scope_reshape(s, flat, rank, sizes);
}

/* masked_scatter(self, mask, source): self and mask broadcast together. */
static porta_status *masked_scatter(const porta_value *args, aten_results *r) {
    const porta_tensor *self = args[0].tensor, *mask = args[1].tensor, *source = args[2].tensor;
    PORTA_TRY(check_masked_scatter(self, mask, source));
    int rank;
    int64_t sizes[PORTA_MAX_RANK];
    PORTA_TRY(ir_broadcast_shapes("masked_scatter", self->rank, self->sizes, mask->rank,
                                     mask->sizes, &rank, sizes));
    aten_scope s;
    scope_begin(&s);
    scope_push(&s, r, scatter_masked(&s, self, mask, source, rank, sizes));
    return scope_end(&s);
}

/* masked_scatter_(self, mask, source): mask broadcast to self's shape. */
static porta_status *masked_scatter_(const porta_value *args, aten_results *r) {
    porta_tensor *self = args[0].tensor;
    const porta_tensor *mask = args[1].tensor, *source = args[2].tensor;
    PORTA_TRY(check_masked_scatter(self, mask, source));
    aten_scope s;
    scope_begin(&s);
    scope_push_into(&s, r, scatter_masked(&s, self, mask, source, self->rank, self->sizes), self);
    return scope_end(&s);
}

/* masked_scatter_backward(grad_output, mask, sizes): source's gradient, the
 * gradient at mask's true positions in order, zeros after them. */
static porta_status *masked_scatter_backward(const porta_value *args, aten_results *r) {
    const porta_tensor *grad = args[0].tensor, *mask = args[1].tensor;
    const porta_value *sizes = &args[2];
    aten_scope s;
    scope_begin(&s);
    int64_t numel = porta_tensor_numel(grad), source_numel = 1;
    for (int i = 0; i < sizes->ints.count; i++) source_numel *= sizes->ints.items[i];
    porta_tensor *positions = true_positions(&s, scope_expand(&s, mask, grad->rank, grad->sizes));
    porta_tensor *picked = scope_index_select(&s, scope_reshape(&s, grad, 1, &numel), 0, positions);
    if (picked && picked->sizes[0] > source_numel)
        scope_fail(&s, porta_error(PORTA_ERR_INVALID_ARGUMENT,
                                   "masked_scatter_backward: the mask has %lld true elements, "
                                   "more than the %lld of source",
                                   (long long)picked->sizes[0], (long long)source_numel));
    int64_t pads[2] = {0, picked ? source_numel - picked->sizes[0] : 0};
    scope_push(&s, r, scope_reshape(&s, scope_pad(&s, picked, pads, 0), sizes->ints.count,
                                    sizes->ints.items));
    return scope_end(&s);
}

const aten_op aten_index_masked_ops[] = {
    {"masked_fill.Scalar", "TTs", masked_fill},
    {"masked_fill.Tensor", "TTT", masked_fill},
    {"masked_fill_.Scalar", "TTs", masked_fill_},
    {"masked_fill_.Tensor", "TTT", masked_fill_},
    {"masked_scatter", "TTT", masked_scatter},
    {"masked_scatter_", "TTT", masked_scatter_},
    {"masked_scatter_backward", "TTI", masked_scatter_backward},
    {"nonzero", "T", nonzero},
    {NULL, NULL, NULL},
};
