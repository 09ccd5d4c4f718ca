/* flip and roll: new tensors holding x's elements in another order. flip
 * keeps x's layout, as PyTorch's empty_like(Preserve) does for dense
 * inputs; roll's result is contiguous. */
#include <string.h>

#include "aten/shape/shape.h"
#include "core/status.h"
#include "runtime/tensor.h"

/* Dims ordered by decreasing stride (size-1 dims last), for laying out a
 * result like x. */
static void order_by_stride(const porta_tensor *x, int *order) {
    for (int i = 0; i < x->rank; i++) order[i] = i;
    for (int i = 1; i < x->rank; i++)
        for (int k = i; k > 0; k--) {
            int a = order[k - 1], b = order[k];
            bool swap = x->sizes[a] == 1 ? x->sizes[b] != 1
                                         : x->sizes[b] != 1 && x->strides[b] > x->strides[a];
            if (!swap) break;
            order[k - 1] = b, order[k] = a;
        }
}

/* A new tensor shaped like x: with x's strides when they lay x densely
 * without overlap, else contiguous. */
static porta_status *empty_like_preserve(const porta_tensor *x, porta_tensor **out) {
    int order[PORTA_MAX_RANK];
    order_by_stride(x, order);
    int64_t expected = 1;
    bool dense = true;
    for (int i = x->rank - 1; i >= 0; i--) {
        int d = order[i];
        if (x->sizes[d] == 1) continue;
        dense = dense && x->strides[d] == expected;
        expected *= x->sizes[d];
    }
    porta_device *device = x->buffer->device;
    if (!dense || porta_tensor_numel(x) == 0)
        return porta_tensor_empty(device, x->dtype, x->rank, x->sizes, out);
    int64_t numel = porta_tensor_numel(x);
    porta_tensor *flat = NULL;
    PORTA_TRY(porta_tensor_empty(device, x->dtype, 1, &numel, &flat));
    porta_status *status = rt_tensor_restride(flat, x->rank, x->sizes, x->strides, 0, out);
    porta_tensor_release(flat);
    return status;
}

static porta_status *flip(const porta_value *args, aten_results *results) {
    const porta_tensor *x = args[0].tensor;
    bool seen[PORTA_MAX_RANK] = {false};
    int axes[PORTA_MAX_RANK];
    int count = args[1].ints.count;
    for (int i = 0; i < count; i++) {
        int dim = 0;
        PORTA_TRY(aten_wrap_dim(args[1].ints.items[i], x->rank, &dim));
        if (seen[dim])
            return porta_error(PORTA_ERR_SHAPE, "dim %d appears multiple times in the list of dims",
                               dim);
        seen[dim] = true;
        axes[i] = dim;
    }
    porta_tensor *flipped = NULL, *out = NULL;
    porta_status *status;
    /* A rank-0 tensor has nothing to flip (dim 0 is accepted, as in PyTorch). */
    CORE_TRY_GOTO(status, porta_flip(x, axes, x->rank ? count : 0, &flipped), fail);
    CORE_TRY_GOTO(status, empty_like_preserve(x, &out), fail);
    CORE_TRY_GOTO(status, porta_copy(flipped, out), fail);
    porta_tensor_release(flipped);
    return aten_push_tensor(results, out);
fail:
    porta_tensor_release(flipped);
    porta_tensor_release(out);
    return status;
}

/* A view of t with dim narrowed to [start, start + length). */
static porta_status *narrow(const porta_tensor *t, int dim, int64_t start, int64_t length,
                            porta_tensor **out) {
    int64_t sizes[PORTA_MAX_RANK];
    memcpy(sizes, t->sizes, sizeof sizes);
    sizes[dim] = length;
    return rt_tensor_restride(t, t->rank, sizes, t->strides,
                                 t->offset + start * t->strides[dim], out);
}

/* dst = src rolled by shift along dim: the last `shift` elements first. */
static porta_status *roll_dim(const porta_tensor *src, int dim, int64_t shift, porta_tensor *dst) {
    int64_t n = src->sizes[dim];
    shift = ((shift % n) + n) % n;
    const int64_t parts[2][3] = {{n - shift, 0, shift}, {0, shift, n - shift}}; /* from, to, length */
    for (int p = 0; p < 2; p++) {
        if (!parts[p][2]) continue;
        porta_tensor *from = NULL, *to = NULL;
        porta_status *status = narrow(src, dim, parts[p][0], parts[p][2], &from);
        if (!status) status = narrow(dst, dim, parts[p][1], parts[p][2], &to);
        if (!status) status = porta_copy(from, to);
        porta_tensor_release(from);
        porta_tensor_release(to);
        PORTA_TRY(status);
    }
    return NULL;
}

/* Rolls over each (shift, dim) pair in turn, ping-ponging between two
 * contiguous tensors; with no dims, rolls the flattened tensor. */
static porta_status *roll(const porta_value *args, aten_results *results) {
    const porta_tensor *x = args[0].tensor;
    int shifts = args[1].ints.count, dims = args[2].ints.count;
    if (shifts == 0) return porta_error(PORTA_ERR_SHAPE, "`shifts` required");
    if (dims == 0 && shifts != 1)
        return porta_error(PORTA_ERR_SHAPE, "shifts and dimensions must align. shifts: %d, dims:%d",
                           shifts, dims);
    if (dims != 0 && shifts != dims)
        return porta_error(PORTA_ERR_SHAPE, "shifts and dimensions must align. shifts: %d, dims:%d",
                           shifts, dims);
    if (x->rank == 0 && dims > 0)
        return porta_error(PORTA_ERR_OUT_OF_RANGE,
                           "Dimension specified as %lld but tensor has no dimensions",
                           (long long)args[2].ints.items[0]);
    if (dims > PORTA_MAX_RANK)
        return porta_error(PORTA_ERR_SHAPE, "roll: at most %d dims, got %d", PORTA_MAX_RANK, dims);
    int axes[PORTA_MAX_RANK];
    for (int i = 0; i < dims; i++)
        PORTA_TRY(aten_wrap_dim(args[2].ints.items[i], x->rank, &axes[i]));
    porta_device *device = x->buffer->device;
    porta_tensor *src = NULL, *dst = NULL, *result = NULL;
    porta_status *status;
    int64_t numel = porta_tensor_numel(x);
    if (dims == 0) { /* the flattened tensor, as one axis */
        CORE_TRY_GOTO(status, porta_reshape(x, 1, &numel, &src), done);
        axes[0] = 0;
        dims = 1;
    } else {
        porta_tensor_retain((porta_tensor *)x);
        src = (porta_tensor *)x;
    }
    for (int i = 0; i < dims; i++) {
        CORE_TRY_GOTO(status, porta_tensor_empty(device, x->dtype, src->rank, src->sizes, &dst), done);
        if (numel == 0 || src->rank == 0) /* nothing to move */
            CORE_TRY_GOTO(status, porta_copy(src, dst), done);
        else CORE_TRY_GOTO(status, roll_dim(src, axes[i], args[1].ints.items[i], dst), done);
        porta_tensor_release(src);
        src = dst;
        dst = NULL;
    }
    CORE_TRY_GOTO(status, porta_reshape(src, x->rank, x->sizes, &result), done);
    status = aten_push_tensor(results, result);
done:
    porta_tensor_release(src);
    porta_tensor_release(dst);
    return status;
}

const aten_op aten_shape_reorder_ops[] = {
    {"flip", "TI", flip},
    {"roll", "TII", roll},
    {NULL, NULL, NULL},
};
