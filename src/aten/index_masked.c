/* Masked index ops: masked_fill (where(mask, value, self)) and nonzero. */
#include "aten/index_common.h"
#include "core/status.h"

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

const aten_op aten_index_masked_ops[] = {
    {"masked_fill.Scalar", "TTs", masked_fill},
    {"masked_fill.Tensor", "TTT", masked_fill},
    {"masked_fill_.Scalar", "TTs", masked_fill_},
    {"masked_fill_.Tensor", "TTT", masked_fill_},
    {"nonzero", "T", nonzero},
    {NULL, NULL, NULL},
};
