/* Ops about the layout of a tensor's elements: the views diagonal and
 * split_with_sizes, the copies repeat and constant_pad_nd, and the
 * *_scatter ops, which write src into a view of a copy of self (the
 * functional forms of writing through select, slice, diagonal and
 * as_strided). */
#include <string.h>

#include "aten/factory/factory.h"
#include "aten/shape/shape.h"
#include "aten/shape/copy.h"
#include "core/status.h"
#include "runtime/tensor.h"

/* A view's geometry on its base's buffer. */
typedef struct view_layout {
    int rank;
    int64_t sizes[PORTA_MAX_RANK];
    int64_t strides[PORTA_MAX_RANK];
    int64_t offset;
} view_layout;

/* x with dim `dim` fixed at `index` (select.int's layout). */
static porta_status *select_layout(const porta_tensor *x, int64_t dim_arg, int64_t index,
                                   view_layout *out) {
    if (x->rank == 0)
        return porta_error(PORTA_ERR_OUT_OF_RANGE, "select() cannot be applied to a 0-dim tensor.");
    int dim = 0;
    PORTA_TRY(aten_wrap_dim(dim_arg, x->rank, &dim));
    int64_t size = x->sizes[dim];
    if (index < -size || index >= size) {
        char shape[CORE_SHAPE_STR_CAP];
        return porta_error(PORTA_ERR_OUT_OF_RANGE,
                           "select(): index %lld out of range for tensor of size %s at dimension "
                           "%lld",
                           (long long)index, core_format_shape(shape, sizeof shape, x->rank, x->sizes),
                           (long long)dim_arg);
    }
    if (index < 0) index += size;
    out->rank = 0;
    for (int i = 0; i < x->rank; i++)
        if (i != dim) {
            out->sizes[out->rank] = x->sizes[i];
            out->strides[out->rank++] = x->strides[i];
        }
    out->offset = x->offset + index * x->strides[dim];
    return NULL;
}

/* x[start:end:step] along dim (slice.Tensor's layout): bounds count from
 * the end when negative and clamp to the dim. */
static porta_status *slice_layout(const porta_tensor *x, int64_t dim_arg, const porta_value *start_arg,
                                  const porta_value *end_arg, int64_t step, view_layout *out) {
    if (x->rank == 0)
        return porta_error(PORTA_ERR_OUT_OF_RANGE, "slice() cannot be applied to a 0-dim tensor.");
    int dim = 0;
    PORTA_TRY(aten_wrap_dim(dim_arg, x->rank, &dim));
    if (step <= 0) return porta_error(PORTA_ERR_SHAPE, "slice step must be positive, got %lld",
                                      (long long)step);
    int64_t size = x->sizes[dim];
    int64_t start = start_arg->kind == PORTA_VALUE_INT ? start_arg->i : 0;
    int64_t end = end_arg->kind == PORTA_VALUE_INT ? end_arg->i : INT64_MAX;
    if (start < 0) start += size;
    if (end < 0) end += size;
    start = start < 0 ? 0 : start > size ? size : start;
    end = end < start ? start : end > size ? size : end;
    out->rank = x->rank;
    memcpy(out->sizes, x->sizes, sizeof out->sizes);
    memcpy(out->strides, x->strides, sizeof out->strides);
    out->sizes[dim] = (end - start + step - 1) / step;
    out->strides[dim] *= step;
    out->offset = x->offset + start * x->strides[dim];
    return NULL;
}

/* The diagonal of dims dim1 and dim2, `offset` above the main one, as a
 * last dim (diagonal's layout). */
static porta_status *diagonal_layout(const porta_tensor *x, int64_t offset, int64_t dim1_arg,
                                     int64_t dim2_arg, view_layout *out) {
    int dim1 = 0, dim2 = 0;
    PORTA_TRY(aten_wrap_dim(dim1_arg, x->rank, &dim1));
    PORTA_TRY(aten_wrap_dim(dim2_arg, x->rank, &dim2));
    if (dim1 == dim2)
        return porta_error(PORTA_ERR_SHAPE, "diagonal dimensions cannot be identical %lld, %lld",
                           (long long)dim1_arg, (long long)dim2_arg);
    int64_t rows = x->sizes[dim1], cols = x->sizes[dim2];
    int64_t length = offset >= 0 ? (rows < cols - offset ? rows : cols - offset)
                                 : (rows + offset < cols ? rows + offset : cols);
    out->offset = x->offset;
    if (length <= 0)
        length = 0; /* an empty diagonal starts where x does, as in PyTorch */
    else
        out->offset += offset >= 0 ? offset * x->strides[dim2] : -offset * x->strides[dim1];
    out->rank = 0;
    for (int i = 0; i < x->rank; i++)
        if (i != dim1 && i != dim2) {
            out->sizes[out->rank] = x->sizes[i];
            out->strides[out->rank++] = x->strides[i];
        }
    out->sizes[out->rank] = length;
    out->strides[out->rank++] = x->strides[dim1] + x->strides[dim2];
    return NULL;
}

/* diagonal(self, offset, dim1, dim2) */
static porta_status *diagonal(const porta_value *args, aten_results *r) {
    const porta_tensor *x = args[0].tensor;
    view_layout layout;
    PORTA_TRY(diagonal_layout(x, args[1].i, args[2].i, args[3].i, &layout));
    return aten_push_view(x, layout.rank, layout.sizes, layout.strides, layout.offset, r);
}

/* split_with_sizes(self, split_sizes, dim): consecutive views along dim. */
static porta_status *split_with_sizes(const porta_value *args, aten_results *r) {
    const porta_tensor *x = args[0].tensor;
    const int64_t *parts = args[1].ints.items;
    int count = args[1].ints.count;
    if (x->rank == 0)
        return porta_error(PORTA_ERR_SHAPE, "split_with_sizes expects at least a 1-dimensional "
                                            "tensor");
    int dim = 0;
    PORTA_TRY(aten_wrap_dim(args[2].i, x->rank, &dim));
    int64_t total = 0;
    bool negative = false;
    for (int i = 0; i < count; i++) {
        total += parts[i];
        negative = negative || parts[i] < 0;
    }
    char given[CORE_SHAPE_STR_CAP];
    core_format_shape(given, sizeof given, count, parts);
    if (negative)
        return porta_error(PORTA_ERR_SHAPE,
                           "split_with_sizes expects split_sizes have only non-negative entries, "
                           "but got split_sizes=%s",
                           given);
    if (total != x->sizes[dim])
        return porta_error(PORTA_ERR_SHAPE,
                           "split_with_sizes expects split_sizes to sum exactly to %lld (input "
                           "tensor's size at dimension %d), but got split_sizes=%s",
                           (long long)x->sizes[dim], dim, given);
    int64_t sizes[PORTA_MAX_RANK], start = 0;
    memcpy(sizes, x->sizes, sizeof sizes);
    for (int i = 0; i < count; i++) {
        sizes[dim] = parts[i];
        PORTA_TRY(aten_push_view(x, x->rank, sizes, x->strides,
                                 x->offset + start * x->strides[dim], r));
        start += parts[i];
    }
    return NULL;
}

/* repeat(self, repeats): one copy from a broadcast view. Each repeated dim
 * becomes a pair (repeat count with stride 0, the dim itself), whose
 * contiguous layout is that of the result's dim of size count * size. */
static porta_status *repeat(const porta_value *args, aten_results *r) {
    const porta_tensor *x = args[0].tensor;
    const int64_t *repeats = args[1].ints.items;
    int rank = args[1].ints.count;
    if (rank < x->rank)
        return porta_error(PORTA_ERR_SHAPE,
                           "Number of dimensions of repeat dims can not be smaller than number of "
                           "dimensions of tensor: %d repeat dims for a %d-dimensional tensor",
                           rank, x->rank);
    int64_t result_sizes[PORTA_MAX_RANK], pair_sizes[PORTA_MAX_RANK], pair_strides[PORTA_MAX_RANK];
    int pairs = 0;
    for (int i = 0; i < rank; i++) {
        int dim = i - (rank - x->rank);
        int64_t size = dim >= 0 ? x->sizes[dim] : 1, stride = dim >= 0 ? x->strides[dim] : 0;
        if (pairs + (repeats[i] != 1) + 1 > PORTA_MAX_RANK)
            return porta_error(PORTA_ERR_UNSUPPORTED,
                               "repeat: %d repeat dims need more than the %d dimensions porta "
                               "tensors have",
                               rank, PORTA_MAX_RANK);
        if (repeats[i] != 1) {
            pair_sizes[pairs] = repeats[i];
            pair_strides[pairs++] = 0;
        }
        pair_sizes[pairs] = size;
        pair_strides[pairs++] = stride;
        result_sizes[i] = repeats[i] * size;
    }
    for (int i = 0; i < rank; i++)
        if (repeats[i] < 0) {
            char shape[CORE_SHAPE_STR_CAP];
            return porta_error(PORTA_ERR_SHAPE,
                               "Trying to create tensor with negative dimension %lld: %s",
                               (long long)result_sizes[i],
                               core_format_shape(shape, sizeof shape, rank, result_sizes));
        }
    int64_t dense[PORTA_MAX_RANK];
    core_contiguous_strides(pairs, pair_sizes, dense);
    porta_tensor *out = NULL, *source = NULL, *target = NULL;
    porta_status *status;
    CORE_TRY_GOTO(status, porta_tensor_empty(x->buffer->device, x->dtype, rank, result_sizes, &out),
                   done);
    CORE_TRY_GOTO(status, rt_tensor_restride(x, pairs, pair_sizes, pair_strides, x->offset,
                                                 &source),
                   done);
    CORE_TRY_GOTO(status, rt_tensor_restride(out, pairs, pair_sizes, dense, 0, &target), done);
    CORE_TRY_GOTO(status, porta_copy(source, target), done);
    status = aten_push_tensor(r, out);
    out = NULL;
done:
    porta_tensor_release(out);
    porta_tensor_release(source);
    porta_tensor_release(target);
    return status;
}

/* constant_pad_nd(self, pad, value): pad lists (before, after) pairs from
 * the last dim backwards; negative amounts crop. */
static porta_status *constant_pad_nd(const porta_value *args, aten_results *r) {
    const porta_tensor *x = args[0].tensor;
    const int64_t *pad = args[1].ints.items;
    int count = args[1].ints.count;
    if (count % 2)
        return porta_error(PORTA_ERR_SHAPE, "Length of pad must be even but instead it equals %d",
                           count);
    if (count / 2 > x->rank)
        return porta_error(PORTA_ERR_SHAPE,
                           "Length of pad should be no more than twice the number of dimensions "
                           "of the input. Pad length is %d while the input has %d dimensions.",
                           count, x->rank);
    int64_t pads[2 * PORTA_MAX_RANK] = {0};
    for (int k = 0; k < count / 2; k++) {
        int axis = x->rank - 1 - k;
        int64_t before = pad[2 * k], after = pad[2 * k + 1];
        if (x->sizes[axis] + before + after < 0)
            return porta_error(PORTA_ERR_SHAPE,
                               "The input size %lld, plus negative padding %lld and %lld resulted "
                               "in a negative output size, which is invalid. Check dimension %d "
                               "of your input.",
                               (long long)x->sizes[axis], (long long)before, (long long)after, axis);
        pads[2 * axis] = before;
        pads[2 * axis + 1] = after;
    }
    PORTA_TRY(aten_check_fits(&args[2], x->dtype));
    porta_tensor *out = NULL;
    PORTA_TRY(porta_pad(x, pads, aten_number(&args[2]), &out));
    return aten_push_tensor(r, out);
}

/* ---- the *_scatter ops ---- */

/* The layout each op's view has in a tensor. */
typedef porta_status *(*layout_of)(const porta_tensor *x, const porta_value *args,
                                   view_layout *out);

/* A copy of self (clone_preserve_strides) with src written into the view
 * `layout` computes on it; src must have the view's shape. */
static porta_status *scatter_into(const porta_value *args, layout_of layout, aten_results *r) {
    const porta_tensor *self = args[0].tensor, *src = args[1].tensor;
    porta_tensor *out = NULL, *view = NULL;
    view_layout where;
    porta_status *status;
    CORE_TRY_GOTO(status, aten_clone_preserve_strides(self, &out), done);
    CORE_TRY_GOTO(status, layout(out, args, &where), done);
    CORE_TRY_GOTO(status, porta_tensor_view(out->buffer, out->dtype, where.rank, where.sizes,
                                             where.strides, where.offset, &view),
                   done);
    if (src->rank != where.rank ||
        memcmp(src->sizes, where.sizes, (size_t)src->rank * sizeof *src->sizes)) {
        char given[CORE_SHAPE_STR_CAP], slice[CORE_SHAPE_STR_CAP];
        status = porta_error(PORTA_ERR_SHAPE,
                             "expected src to have a size equal to the slice of self. src size = "
                             "%s, slice size = %s",
                             core_format_shape(given, sizeof given, src->rank, src->sizes),
                             core_format_shape(slice, sizeof slice, where.rank, where.sizes));
        goto done;
    }
    CORE_TRY_GOTO(status, porta_copy(src, view), done);
    status = aten_push_tensor(r, out);
    out = NULL;
done:
    porta_tensor_release(out);
    porta_tensor_release(view);
    return status;
}

/* select_scatter(self, src, dim, index) */
static porta_status *select_at(const porta_tensor *x, const porta_value *args, view_layout *out) {
    return select_layout(x, args[2].i, args[3].i, out);
}
static porta_status *select_scatter(const porta_value *args, aten_results *r) {
    return scatter_into(args, select_at, r);
}

/* slice_scatter(self, src, dim, start, end, step) */
static porta_status *slice_at(const porta_tensor *x, const porta_value *args, view_layout *out) {
    return slice_layout(x, args[2].i, &args[3], &args[4], args[5].i, out);
}
static porta_status *slice_scatter(const porta_value *args, aten_results *r) {
    return scatter_into(args, slice_at, r);
}

/* diagonal_scatter(self, src, offset, dim1, dim2) */
static porta_status *diagonal_at(const porta_tensor *x, const porta_value *args, view_layout *out) {
    return diagonal_layout(x, args[2].i, args[3].i, args[4].i, out);
}
static porta_status *diagonal_scatter(const porta_value *args, aten_results *r) {
    return scatter_into(args, diagonal_at, r);
}

/* as_strided_scatter(self, src, size, stride, storage_offset): the layout
 * is absolute on the copy's buffer (which holds all of self's), offset
 * None meaning self's. */
static porta_status *strided_at(const porta_tensor *x, const porta_value *args, view_layout *out) {
    const porta_value *size = &args[2], *stride = &args[3];
    if (size->ints.count != stride->ints.count || size->ints.count > PORTA_MAX_RANK)
        return porta_error(PORTA_ERR_SHAPE,
                           "as_strided_scatter: mismatch in length of strides and shape (%d vs "
                           "%d, at most %d)",
                           stride->ints.count, size->ints.count, PORTA_MAX_RANK);
    out->rank = size->ints.count;
    for (int i = 0; i < out->rank; i++) {
        if (size->ints.items[i] < 0 || stride->ints.items[i] < 0)
            return porta_error(PORTA_ERR_SHAPE,
                               "as_strided_scatter: negative size %lld or stride %lld at "
                               "dimension %d",
                               (long long)size->ints.items[i], (long long)stride->ints.items[i], i);
        out->sizes[i] = size->ints.items[i];
        out->strides[i] = stride->ints.items[i];
    }
    out->offset = args[4].kind == PORTA_VALUE_INT ? args[4].i : x->offset;
    return NULL;
}
static porta_status *as_strided_scatter(const porta_value *args, aten_results *r) {
    return scatter_into(args, strided_at, r);
}

const aten_op aten_shape_layout_ops[] = {
    {"diagonal", "Tiii", diagonal},
    {"split_with_sizes", "TIi", split_with_sizes},
    {"repeat", "TI", repeat},
    {"constant_pad_nd", "TIs", constant_pad_nd},
    {"select_scatter", "TTii", select_scatter},
    {"slice_scatter", "TTijji", slice_scatter},
    {"diagonal_scatter", "TTiii", diagonal_scatter},
    {"as_strided_scatter", "TTIIj", as_strided_scatter},
    {NULL, NULL, NULL},
};
