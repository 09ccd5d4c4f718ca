/* cat: tensors joined along a dim, with PyTorch's rules: the result dtype
 * promotes across the inputs, and 1-D empty tensors (shape [0]) are skipped
 * whatever their rank (the legacy rule). Each input is copied (and cast)
 * into its slice of the result. */
#include <string.h>

#include "aten/shape/shape.h"
#include "core/status.h"
#include "runtime/tensor.h"

static bool skipped(const porta_tensor *t) { return t->rank == 1 && t->sizes[0] == 0; }

/* The result's sizes and dtype; *dim is wrapped against the first input
 * that is not skipped (sizes [0] and dim 0 when every input is). */
static porta_status *cat_shape(const porta_value *list, int64_t dim_arg, int *dim, int *rank,
                               int64_t *sizes, porta_dtype *dtype) {
    int count = list->tensors.count;
    porta_tensor *const *items = list->tensors.items;
    if (count == 0)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "torch.cat(): expected a non-empty list of Tensors");
    const porta_tensor *first = NULL;
    *dtype = items[0]->dtype;
    for (int i = 0; i < count; i++) {
        if (items[i]->rank == 0)
            return porta_error(PORTA_ERR_SHAPE,
                               "zero-dimensional tensor (at position %d) cannot be concatenated", i);
        *dtype = porta_dtype_promote(*dtype, items[i]->dtype);
        if (!first && !skipped(items[i])) first = items[i];
    }
    if (!first) {
        *dim = 0, *rank = 1, sizes[0] = 0;
        return NULL;
    }
    PORTA_TRY(aten_wrap_dim(dim_arg, first->rank, dim));
    *rank = first->rank;
    memcpy(sizes, first->sizes, (size_t)first->rank * sizeof *sizes);
    sizes[*dim] = 0;
    for (int i = 0; i < count; i++) {
        const porta_tensor *t = items[i];
        if (skipped(t)) continue;
        if (t->rank != first->rank)
            return porta_error(PORTA_ERR_SHAPE,
                               "Tensors must have same number of dimensions: got %d and %d",
                               first->rank, t->rank);
        for (int d = 0; d < t->rank; d++)
            if (d != *dim && t->sizes[d] != first->sizes[d])
                return porta_error(PORTA_ERR_SHAPE,
                                   "Sizes of tensors must match except in dimension %d. Expected "
                                   "size %lld but got size %lld for tensor number %d in the list.",
                                   *dim, (long long)first->sizes[d], (long long)t->sizes[d], i);
        sizes[*dim] += t->sizes[*dim];
    }
    return NULL;
}

/* Copies every input into its slice of out along dim. */
static porta_status *fill_slices(const porta_value *list, int dim, porta_tensor *out) {
    int64_t start = 0;
    for (int i = 0; i < list->tensors.count; i++) {
        const porta_tensor *t = list->tensors.items[i];
        if (skipped(t) || porta_tensor_numel(t) == 0) {
            if (!skipped(t)) start += t->sizes[dim];
            continue;
        }
        int64_t sizes[PORTA_MAX_RANK];
        memcpy(sizes, out->sizes, sizeof sizes);
        sizes[dim] = t->sizes[dim];
        porta_tensor *part = NULL;
        PORTA_TRY(rt_tensor_restride(out, out->rank, sizes, out->strides,
                                        out->offset + start * out->strides[dim], &part));
        porta_status *status = porta_copy(t, part);
        porta_tensor_release(part);
        PORTA_TRY(status);
        start += t->sizes[dim];
    }
    return NULL;
}

static porta_status *cat(const porta_value *args, aten_results *results) {
    int dim, rank;
    int64_t sizes[PORTA_MAX_RANK];
    porta_dtype dtype;
    PORTA_TRY(cat_shape(&args[0], args[1].i, &dim, &rank, sizes, &dtype));
    porta_tensor *out = NULL;
    PORTA_TRY(porta_tensor_empty(args[0].tensors.items[0]->buffer->device, dtype, rank, sizes, &out));
    porta_status *status = fill_slices(&args[0], dim, out);
    if (status) {
        porta_tensor_release(out);
        return status;
    }
    return aten_push_tensor(results, out);
}

/* cat.out into an out tensor of the result's shape (resizing a torch
 * tensor's metadata is the binding's business, not libporta's). */
static porta_status *cat_out(const porta_value *args, aten_results *results) {
    int dim, rank;
    int64_t sizes[PORTA_MAX_RANK];
    porta_dtype dtype;
    porta_tensor *out = args[2].tensor;
    PORTA_TRY(cat_shape(&args[0], args[1].i, &dim, &rank, sizes, &dtype));
    if (!porta_dtype_can_cast(dtype, out->dtype))
        return porta_error(PORTA_ERR_DTYPE,
                           "torch.cat(): input types can't be cast to the desired output type %s",
                           porta_dtype_name(out->dtype));
    if (out->rank != rank || memcmp(out->sizes, sizes, (size_t)rank * sizeof *sizes)) {
        char want[CORE_SHAPE_STR_CAP], have[CORE_SHAPE_STR_CAP];
        return porta_error(PORTA_ERR_SHAPE, "torch.cat(): out has shape %s, the result has shape %s",
                           core_format_shape(have, sizeof have, out->rank, out->sizes),
                           core_format_shape(want, sizeof want, rank, sizes));
    }
    PORTA_TRY(fill_slices(&args[0], dim, out));
    porta_tensor_retain(out);
    return aten_push_tensor(results, out);
}

const aten_op aten_shape_cat_ops[] = {
    {"cat", "Li", cat},
    {"cat.out", "LiT", cat_out},
    {NULL, NULL, NULL},
};
