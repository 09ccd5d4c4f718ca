/* View aten ops: results share the input's buffer, with the sizes, strides
 * and storage offset PyTorch computes (the binding puts them on the input's
 * torch storage, so both sides see one layout). Layouts are computed here,
 * not through porta's movement ops, because PyTorch's strides differ from
 * porta's in corner cases (a sliced size-1 dim keeps step * stride, a new
 * leading expand dim of size 1 gets a non-zero stride). */
#include <string.h>

#include "aten/shape/shape.h"
#include "core/status.h"
#include "runtime/tensor.h"

porta_status *aten_wrap_dim(int64_t dim, int rank, int *out) {
    int64_t bound = rank > 0 ? rank : 1;
    if (dim < -bound || dim >= bound)
        return porta_error(PORTA_ERR_OUT_OF_RANGE,
                           "Dimension out of range (expected to be in range of [%lld, %lld], "
                           "but got %lld)",
                           (long long)-bound, (long long)(bound - 1), (long long)dim);
    *out = (int)(dim < 0 ? dim + bound : dim);
    return NULL;
}

porta_status *aten_push_view(const porta_tensor *x, int rank, const int64_t *sizes,
                             const int64_t *strides, int64_t offset, aten_results *results) {
    porta_tensor *view = NULL;
    PORTA_TRY(rt_tensor_restride(x, rank, sizes, strides, offset, &view));
    return aten_push_tensor(results, view);
}

/* PyTorch's view strides where porta_reshape's rule differs: a rank-0 input
 * gives every dim stride 1; an empty input keeps its strides when the shape
 * is unchanged. Returns false when the general rule applies. */
static bool special_view_strides(const porta_tensor *x, const porta_tensor *shaped,
                                 int64_t *strides) {
    if (x->rank == 0) {
        for (int i = 0; i < shaped->rank; i++) strides[i] = 1;
        return true;
    }
    bool same_shape = x->rank == shaped->rank &&
                      !memcmp(x->sizes, shaped->sizes, (size_t)x->rank * sizeof *x->sizes);
    if (porta_tensor_numel(x) == 0 && same_shape) {
        memcpy(strides, x->strides, (size_t)x->rank * sizeof *strides);
        return true;
    }
    return false;
}

/* view(self, size): porta_reshape infers -1 and checks the element count;
 * a result on a new buffer means the layout cannot be viewed, which view
 * must refuse (the copy is dropped: this only happens on the error path). */
static porta_status *view(const porta_value *args, aten_results *results) {
    const porta_tensor *x = args[0].tensor;
    if (args[1].ints.count > PORTA_MAX_RANK)
        return porta_error(PORTA_ERR_SHAPE, "view: at most %d dimensions, got %d", PORTA_MAX_RANK,
                           args[1].ints.count);
    porta_tensor *shaped = NULL;
    PORTA_TRY(porta_reshape(x, args[1].ints.count, args[1].ints.items, &shaped));
    int64_t strides[PORTA_MAX_RANK];
    porta_status *status = NULL;
    if (special_view_strides(x, shaped, strides)) {
        status = aten_push_view(x, shaped->rank, shaped->sizes, strides, x->offset, results);
    } else if (shaped->buffer != x->buffer) {
        status = porta_error(PORTA_ERR_SHAPE,
                             "view size is not compatible with input tensor's size and stride (at "
                             "least one dimension spans across two contiguous subspaces). Use "
                             ".reshape(...) instead.");
    } else {
        porta_tensor_retain(shaped);
        status = aten_push_tensor(results, shaped);
    }
    porta_tensor_release(shaped);
    return status;
}

static porta_status *check_layout(const char *op, const porta_value *size,
                                  const porta_value *stride) {
    if (size->ints.count != stride->ints.count)
        return porta_error(PORTA_ERR_SHAPE, "%s: mismatch in length of strides and shape (%d vs %d)",
                           op, stride->ints.count, size->ints.count);
    if (size->ints.count > PORTA_MAX_RANK)
        return porta_error(PORTA_ERR_SHAPE, "%s: at most %d dimensions, got %d", op,
                           PORTA_MAX_RANK, size->ints.count);
    for (int i = 0; i < size->ints.count; i++) {
        if (size->ints.items[i] < 0)
            return porta_error(PORTA_ERR_SHAPE,
                               "%s: Trying to create tensor with negative dimension %lld", op,
                               (long long)size->ints.items[i]);
        if (stride->ints.items[i] < 0)
            return porta_error(PORTA_ERR_SHAPE,
                               "%s: Negative strides are not supported at the moment, got "
                               "stride %lld at dimension %d",
                               op, (long long)stride->ints.items[i], i);
    }
    return NULL;
}

/* A layout on x's buffer that porta_tensor_view bounds-checks (as PyTorch
 * checks it against the storage). */
static porta_status *strided_view(const char *op, const porta_tensor *x, const porta_value *size,
                                  const porta_value *stride, int64_t offset,
                                  aten_results *results) {
    PORTA_TRY(check_layout(op, size, stride));
    if (offset < 0)
        return porta_error(PORTA_ERR_SHAPE, "%s: Tensor: invalid storage offset %lld", op,
                           (long long)offset);
    /* The bytes the layout needs, checked here for PyTorch's message (and
     * RuntimeError); porta_tensor_view checks again, against overflow. */
    int rank = size->ints.count;
    uint64_t last = (uint64_t)offset, itemsize = porta_dtype_size(x->dtype);
    bool empty = false;
    for (int i = 0; i < rank; i++) {
        empty = empty || size->ints.items[i] == 0;
        last += (uint64_t)(size->ints.items[i] - 1) * (uint64_t)stride->ints.items[i];
    }
    uint64_t needed = empty ? 0 : (last + 1) * itemsize;
    if (needed > x->buffer->size) {
        char sizes[CORE_SHAPE_STR_CAP], strides[CORE_SHAPE_STR_CAP];
        return porta_error(PORTA_ERR_SHAPE,
                           "setStorage: sizes %s, strides %s, storage offset %lld, and itemsize "
                           "%llu requiring a storage size of %llu are out of bounds for storage "
                           "of size %zu",
                           core_format_shape(sizes, sizeof sizes, rank, size->ints.items),
                           core_format_shape(strides, sizeof strides, rank, stride->ints.items),
                           (long long)offset, (unsigned long long)itemsize,
                           (unsigned long long)needed, x->buffer->size);
    }
    porta_tensor *view = NULL;
    PORTA_TRY(porta_tensor_view(x->buffer, x->dtype, rank, size->ints.items, stride->ints.items,
                                offset, &view));
    return aten_push_tensor(results, view);
}

static porta_status *as_strided(const porta_value *args, aten_results *results) {
    const porta_tensor *x = args[0].tensor;
    int64_t offset = args[3].kind == PORTA_VALUE_INT ? args[3].i : x->offset;
    return strided_view("as_strided", x, &args[1], &args[2], offset, results);
}

static porta_status *reshape_alias(const porta_value *args, aten_results *results) {
    const porta_tensor *x = args[0].tensor;
    return strided_view("_reshape_alias", x, &args[1], &args[2], x->offset, results);
}

/* PyTorch's inferExpandGeometry: a new leading dim of size 1 strides over
 * everything after it; a dim that grows gets stride 0. */
static porta_status *expand(const porta_value *args, aten_results *results) {
    const porta_tensor *x = args[0].tensor;
    const int64_t *want = args[1].ints.items;
    int rank = args[1].ints.count;
    char target[CORE_SHAPE_STR_CAP], given[CORE_SHAPE_STR_CAP];
    core_format_shape(target, sizeof target, rank, want);
    core_format_shape(given, sizeof given, x->rank, x->sizes);
    if (rank < x->rank || rank > PORTA_MAX_RANK)
        return porta_error(PORTA_ERR_SHAPE,
                           "expand(size=%s): the number of sizes provided (%d) must be greater or "
                           "equal to the number of dimensions in the tensor (%d)",
                           target, rank, x->rank);
    int64_t sizes[PORTA_MAX_RANK], strides[PORTA_MAX_RANK];
    for (int i = rank - 1; i >= 0; i--) {
        int dim = i - (rank - x->rank);
        int64_t size = dim >= 0 ? x->sizes[dim] : 1;
        int64_t stride = dim >= 0 ? x->strides[dim]
                         : i == rank - 1 ? 1
                                         : sizes[i + 1] * strides[i + 1];
        int64_t target_size = want[i];
        if (target_size == -1) {
            if (dim < 0)
                return porta_error(PORTA_ERR_SHAPE,
                                   "The expanded size of the tensor (-1) isn't allowed in a "
                                   "leading, non-existing dimension %d",
                                   i);
            target_size = size;
        }
        if (target_size < 0)
            return porta_error(PORTA_ERR_SHAPE,
                               "Trying to create tensor with negative dimension %lld: %s",
                               (long long)target_size, target);
        if (size != target_size) {
            if (size != 1)
                return porta_error(PORTA_ERR_SHAPE,
                                   "The expanded size of the tensor (%lld) must match the existing "
                                   "size (%lld) at non-singleton dimension %d.  Target sizes: %s. "
                                   " Tensor sizes: %s",
                                   (long long)target_size, (long long)size, i, target, given);
            size = target_size;
            stride = 0;
        }
        sizes[i] = size;
        strides[i] = stride;
    }
    return aten_push_view(x, rank, sizes, strides, x->offset, results);
}

static porta_status *permute(const porta_value *args, aten_results *results) {
    const porta_tensor *x = args[0].tensor;
    if (args[1].ints.count != x->rank)
        return porta_error(PORTA_ERR_SHAPE,
                           "permute(sparse_coo): number of dimensions in the tensor input does not "
                           "match the length of the desired ordering of dimensions i.e. input.dim() "
                           "= %d is not equal to len(dims) = %d",
                           x->rank, args[1].ints.count);
    bool seen[PORTA_MAX_RANK] = {false};
    int64_t sizes[PORTA_MAX_RANK], strides[PORTA_MAX_RANK];
    for (int i = 0; i < x->rank; i++) {
        int dim = 0;
        PORTA_TRY(aten_wrap_dim(args[1].ints.items[i], x->rank, &dim));
        if (seen[dim]) return porta_error(PORTA_ERR_SHAPE, "permute(): duplicate dims are not allowed.");
        seen[dim] = true;
        sizes[i] = x->sizes[dim];
        strides[i] = x->strides[dim];
    }
    return aten_push_view(x, x->rank, sizes, strides, x->offset, results);
}

static porta_status *transpose_dims(const porta_tensor *x, int64_t dim0, int64_t dim1,
                                    aten_results *results) {
    int a = 0, b = 0;
    PORTA_TRY(aten_wrap_dim(dim0, x->rank, &a));
    PORTA_TRY(aten_wrap_dim(dim1, x->rank, &b));
    int64_t sizes[PORTA_MAX_RANK], strides[PORTA_MAX_RANK];
    memcpy(sizes, x->sizes, sizeof sizes);
    memcpy(strides, x->strides, sizeof strides);
    if (x->rank > 0) {
        sizes[a] = x->sizes[b], sizes[b] = x->sizes[a];
        strides[a] = x->strides[b], strides[b] = x->strides[a];
    }
    return aten_push_view(x, x->rank, sizes, strides, x->offset, results);
}

static porta_status *transpose(const porta_value *args, aten_results *results) {
    return transpose_dims(args[0].tensor, args[1].i, args[2].i, results);
}

static porta_status *t(const porta_value *args, aten_results *results) {
    const porta_tensor *x = args[0].tensor;
    if (x->rank > 2)
        return porta_error(PORTA_ERR_SHAPE,
                           "t() expects a tensor with <= 2 dimensions, but self is %dD", x->rank);
    return transpose_dims(x, 0, x->rank < 2 ? 0 : 1, results);
}

/* PyTorch's slice: bounds count from the end when negative, then clamp to
 * [0, size] with end >= start; the offset moves by start even when nothing
 * is taken, and the stride is multiplied by step whatever the length. */
static porta_status *slice(const porta_value *args, aten_results *results) {
    const porta_tensor *x = args[0].tensor;
    if (x->rank == 0)
        return porta_error(PORTA_ERR_OUT_OF_RANGE, "slice() cannot be applied to a 0-dim tensor.");
    int dim = 0;
    PORTA_TRY(aten_wrap_dim(args[1].i, x->rank, &dim));
    int64_t step = args[4].i, size = x->sizes[dim];
    if (step <= 0) return porta_error(PORTA_ERR_SHAPE, "slice step must be positive");
    int64_t start = args[2].kind == PORTA_VALUE_INT ? args[2].i : 0;
    int64_t end = args[3].kind == PORTA_VALUE_INT ? args[3].i : INT64_MAX;
    if (start < 0) start += size;
    if (end < 0) end += size;
    start = start < 0 ? 0 : start > size ? size : start;
    end = end < start ? start : end > size ? size : end;
    int64_t sizes[PORTA_MAX_RANK], strides[PORTA_MAX_RANK];
    memcpy(sizes, x->sizes, sizeof sizes);
    memcpy(strides, x->strides, sizeof strides);
    sizes[dim] = (end - start + step - 1) / step;
    strides[dim] *= step;
    return aten_push_view(x, x->rank, sizes, strides, x->offset + start * x->strides[dim],
                          results);
}

static porta_status *select_int(const porta_value *args, aten_results *results) {
    const porta_tensor *x = args[0].tensor;
    if (x->rank == 0)
        return porta_error(PORTA_ERR_OUT_OF_RANGE, "select() cannot be applied to a 0-dim tensor.");
    int dim = 0;
    PORTA_TRY(aten_wrap_dim(args[1].i, x->rank, &dim));
    int64_t index = args[2].i, size = x->sizes[dim];
    if (index < -size || index >= size) {
        char shape[CORE_SHAPE_STR_CAP];
        return porta_error(PORTA_ERR_OUT_OF_RANGE,
                           "select(): index %lld out of range for tensor of size %s at dimension %lld",
                           (long long)index, core_format_shape(shape, sizeof shape, x->rank, x->sizes),
                           (long long)args[1].i);
    }
    if (index < 0) index += size;
    int64_t sizes[PORTA_MAX_RANK], strides[PORTA_MAX_RANK];
    for (int i = 0, k = 0; i < x->rank; i++)
        if (i != dim) sizes[k] = x->sizes[i], strides[k++] = x->strides[i];
    return aten_push_view(x, x->rank - 1, sizes, strides, x->offset + index * x->strides[dim],
                          results);
}

static porta_status *unsqueeze(const porta_value *args, aten_results *results) {
    const porta_tensor *x = args[0].tensor;
    int dim = 0;
    PORTA_TRY(aten_wrap_dim(args[1].i, x->rank + 1, &dim));
    if (x->rank == PORTA_MAX_RANK)
        return porta_error(PORTA_ERR_SHAPE, "unsqueeze: porta tensors have at most %d dimensions",
                           PORTA_MAX_RANK);
    int64_t sizes[PORTA_MAX_RANK], strides[PORTA_MAX_RANK];
    for (int i = 0, k = 0; i <= x->rank; i++) {
        if (i == dim) {
            sizes[i] = 1;
            strides[i] = dim < x->rank ? x->sizes[dim] * x->strides[dim] : 1;
        } else {
            sizes[i] = x->sizes[k], strides[i] = x->strides[k++];
        }
    }
    return aten_push_view(x, x->rank + 1, sizes, strides, x->offset, results);
}

/* Drops the size-1 dims among those marked. */
static porta_status *squeeze_marked(const porta_tensor *x, const bool *marked,
                                    aten_results *results) {
    int64_t sizes[PORTA_MAX_RANK], strides[PORTA_MAX_RANK];
    int rank = 0;
    for (int i = 0; i < x->rank; i++)
        if (!marked[i] || x->sizes[i] != 1) sizes[rank] = x->sizes[i], strides[rank++] = x->strides[i];
    return aten_push_view(x, rank, sizes, strides, x->offset, results);
}

static porta_status *squeeze(const porta_value *args, aten_results *results) {
    bool marked[PORTA_MAX_RANK];
    for (int i = 0; i < PORTA_MAX_RANK; i++) marked[i] = true;
    return squeeze_marked(args[0].tensor, marked, results);
}

static porta_status *squeeze_dims(const porta_value *args, aten_results *results) {
    const porta_tensor *x = args[0].tensor;
    bool marked[PORTA_MAX_RANK] = {false};
    bool one = args[1].kind == PORTA_VALUE_INT;
    int count = one ? 1 : args[1].ints.count;
    for (int i = 0; i < count; i++) {
        int dim = 0;
        PORTA_TRY(aten_wrap_dim(one ? args[1].i : args[1].ints.items[i], x->rank, &dim));
        if (marked[dim] && x->rank > 0)
            return porta_error(PORTA_ERR_SHAPE, "dim %d appears multiple times in the list of dims",
                               dim);
        marked[dim] = true;
    }
    return squeeze_marked(x, marked, results);
}

/* unfold(dimension, size, step): windows of `size` along a dim, every
 * `step` elements, as a new last dim. */
static porta_status *unfold(const porta_value *args, aten_results *results) {
    const porta_tensor *x = args[0].tensor;
    int dim = 0;
    PORTA_TRY(aten_wrap_dim(args[1].i, x->rank, &dim));
    int64_t size = args[2].i, step = args[3].i;
    int64_t extent = x->rank ? x->sizes[dim] : 1, stride = x->rank ? x->strides[dim] : 1;
    if (size > extent)
        return porta_error(PORTA_ERR_SHAPE, "maximum size for tensor at dimension %d is %lld but size is %lld",
                           dim, (long long)extent, (long long)size);
    if (size < 0) return porta_error(PORTA_ERR_SHAPE, "size is %lld but must be >= 0", (long long)size);
    if (step <= 0) return porta_error(PORTA_ERR_SHAPE, "step is %lld but must be > 0", (long long)step);
    if (x->rank == PORTA_MAX_RANK)
        return porta_error(PORTA_ERR_SHAPE, "unfold: porta tensors have at most %d dimensions",
                           PORTA_MAX_RANK);
    int64_t sizes[PORTA_MAX_RANK], strides[PORTA_MAX_RANK];
    memcpy(sizes, x->sizes, sizeof sizes);
    memcpy(strides, x->strides, sizeof strides);
    int rank = x->rank ? x->rank + 1 : 1;
    if (x->rank) {
        sizes[dim] = (extent - size) / step + 1;
        strides[dim] = step * stride;
    }
    sizes[rank - 1] = size;
    strides[rank - 1] = stride;
    return aten_push_view(x, rank, sizes, strides, x->offset, results);
}

const aten_op aten_shape_ops[] = {
    {"view", "TI", view},
    {"_unsafe_view", "TI", view},
    {"_reshape_alias", "TII", reshape_alias},
    {"as_strided", "TIIj", as_strided},
    {"expand", "TIb", expand},
    {"permute", "TI", permute},
    {"transpose.int", "Tii", transpose},
    {"t", "T", t},
    {"slice.Tensor", "Tijji", slice},
    {"select.int", "Tii", select_int},
    {"unsqueeze", "Ti", unsqueeze},
    {"squeeze", "T", squeeze},
    {"squeeze.dim", "Ti", squeeze_dims},
    {"squeeze.dims", "TI", squeeze_dims},
    {"unfold", "Tiii", unfold},
    {NULL, NULL, NULL},
};
