/* Copies that keep or choose a layout: clone, _to_copy, copy (the
 * functional copy_), and alias, a view of the whole tensor. The layouts
 * follow PyTorch's rules for new tensors made like another (shape/copy.h),
 * which the *_scatter ops and the *_like factories share. */
#include <string.h>

#include "aten/factory/factory.h"
#include "aten/shape/shape.h"
#include "aten/shape/copy.h"
#include "aten/nn/memory_format.h"
#include "core/status.h"
#include "runtime/tensor.h"

/* Dims ordered by stride, those of size < 2 last (they never break
 * density). */
bool aten_is_dense(int rank, const int64_t *sizes, const int64_t *strides) {
    if (rank == 1) return sizes[0] < 2 || strides[0] == 1;
    int order[PORTA_MAX_RANK];
    for (int i = 0; i < rank; i++) {
        int dim = i, j = i;
        for (; j > 0; j--) {
            int prev = order[j - 1];
            bool before = sizes[dim] >= 2 && (sizes[prev] < 2 || strides[dim] < strides[prev]);
            if (!before) break;
            order[j] = prev;
        }
        order[j] = dim;
    }
    int64_t required = 1;
    for (int i = 0; i < rank; i++) {
        int dim = order[i];
        if (sizes[dim] < 2) return true;
        if (strides[dim] != required) return false;
        required *= sizes[dim];
    }
    return true;
}

/* -1: a before b (innermost first), 1: after, 0: undecided (a stride 0
 * decides nothing, so such dims stay where they are). */
static int innermost_order(int64_t size_a, int64_t stride_a, int64_t size_b, int64_t stride_b) {
    if (stride_a == 0 || stride_b == 0) return 0;
    if (stride_a != stride_b) return stride_a < stride_b ? -1 : 1;
    return size_a > size_b ? 1 : 0;
}

void aten_infer_dense_strides(int rank, const int64_t *sizes, const int64_t *strides,
                              int64_t *out) {
    if (rank == 0) return;
    /* perm[0] is the innermost dim; it starts as the last dim, as in a
     * contiguous layout, and an insertion sort (stable, like
     * TensorIterator's) moves dims by stride. */
    int perm[PORTA_MAX_RANK];
    for (int i = 0; i < rank; i++) perm[i] = rank - 1 - i;
    for (int i = 1; i < rank; i++) {
        int moving = i;
        for (int j = i - 1; j >= 0; j--) {
            int order = innermost_order(sizes[perm[j]], strides[perm[j]], sizes[perm[moving]],
                                        strides[perm[moving]]);
            if (order < 0) break;
            if (order > 0) {
                int swap = perm[j];
                perm[j] = perm[moving];
                perm[moving] = swap;
                moving = j;
            }
        }
    }
    int64_t stride = 1;
    for (int i = 0; i < rank; i++) {
        out[perm[i]] = stride;
        if (sizes[perm[i]] > 1) stride *= sizes[perm[i]];
    }
}

porta_status *aten_like_strides(const char *op, const porta_tensor *x, const porta_value *format,
                                int64_t *strides) {
    int64_t code = format->kind == PORTA_VALUE_INT ? format->i : PORTA_MEMORY_PRESERVE;
    switch (code) {
    case PORTA_MEMORY_CONTIGUOUS:
        core_contiguous_strides(x->rank, x->sizes, strides);
        return NULL;
    case PORTA_MEMORY_PRESERVE:
        if (aten_is_dense(x->rank, x->sizes, x->strides))
            memcpy(strides, x->strides, (size_t)x->rank * sizeof *strides);
        else
            aten_infer_dense_strides(x->rank, x->sizes, x->strides, strides);
        return NULL;
    case PORTA_MEMORY_CHANNELS_LAST:
    case PORTA_MEMORY_CHANNELS_LAST_3D: {
        bool three_d = code == PORTA_MEMORY_CHANNELS_LAST_3D;
        int rank = three_d ? 5 : 4;
        if (x->rank != rank)
            return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                               "%s: required rank %d tensor to use %s format, got rank %d", op,
                               rank, three_d ? "channels_last_3d" : "channels_last", x->rank);
        aten_format_strides((porta_memory_format)code, rank, x->sizes, strides);
        return NULL;
    }
    default:
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "%s: memory_format code %lld is not one of contiguous (0), preserve "
                           "(1), channels_last (2), channels_last_3d (3)",
                           op, (long long)code);
    }
}

porta_status *aten_empty_strided(porta_device *device, porta_dtype dtype, int rank,
                                 const int64_t *sizes, const int64_t *strides, porta_tensor **out) {
    int64_t extent = 1;
    for (int i = 0; i < rank; i++) {
        if (sizes[i] == 0) extent = 0;
        if (extent) extent += (sizes[i] - 1) * strides[i];
    }
    porta_buffer *buffer = NULL;
    PORTA_TRY(porta_buffer_alloc(device, (size_t)extent * porta_dtype_size(dtype), &buffer));
    porta_status *status = rt_tensor_wrap(buffer, dtype, rank, sizes, strides, 0, out);
    porta_buffer_release(buffer);
    return status;
}

porta_status *aten_empty_like(const char *op, const porta_tensor *x, porta_dtype dtype,
                              porta_device *device, const porta_value *format, porta_tensor **out) {
    int64_t strides[PORTA_MAX_RANK];
    PORTA_TRY(aten_like_strides(op, x, format, strides));
    return aten_empty_strided(device, dtype, x->rank, x->sizes, strides, out);
}

/* A new tensor like x (dtype, device, layout `format`) holding x's
 * values. */
static porta_status *copy_like(const char *op, const porta_tensor *x, porta_dtype dtype,
                               porta_device *device, const porta_value *format,
                               porta_tensor **out) {
    porta_tensor *result = NULL;
    PORTA_TRY(aten_empty_like(op, x, dtype, device, format, &result));
    porta_status *status = porta_copy(x, result);
    if (status) {
        porta_tensor_release(result);
        return status;
    }
    *out = result;
    return NULL;
}

/* A stride-0 dim of more than one element: several elements share memory. */
static bool overlaps(const porta_tensor *x) {
    for (int i = 0; i < x->rank; i++)
        if (x->strides[i] == 0 && x->sizes[i] > 1) return true;
    return false;
}

porta_status *aten_clone_preserve_strides(const porta_tensor *x, porta_tensor **out) {
    if (overlaps(x)) {
        porta_value preserve = {.kind = PORTA_VALUE_INT, .i = PORTA_MEMORY_PRESERVE};
        return copy_like("clone_preserve_strides", x, x->dtype, x->buffer->device, &preserve,
                         out);
    }
    int64_t count = (int64_t)(x->buffer->size / porta_dtype_size(x->dtype)), one = 1;
    porta_tensor *whole = NULL, *copy = NULL;
    porta_status *status;
    CORE_TRY_GOTO(status, rt_tensor_restride(x, 1, &count, &one, 0, &whole), done);
    CORE_TRY_GOTO(status, porta_tensor_empty(x->buffer->device, x->dtype, 1, &count, &copy), done);
    CORE_TRY_GOTO(status, porta_copy(whole, copy), done);
    status = rt_tensor_restride(copy, x->rank, x->sizes, x->strides, x->offset, out);
done:
    porta_tensor_release(whole);
    porta_tensor_release(copy);
    return status;
}

static porta_status *push_copy_like(const char *op, const porta_tensor *x, porta_dtype dtype,
                                    porta_device *device, const porta_value *format,
                                    aten_results *r) {
    porta_tensor *out = NULL;
    PORTA_TRY(copy_like(op, x, dtype, device, format, &out));
    return aten_push_tensor(r, out);
}

/* clone(self, memory_format) */
static porta_status *clone(const porta_value *args, aten_results *r) {
    const porta_tensor *self = args[0].tensor;
    return push_copy_like("clone", self, self->dtype, self->buffer->device, &args[1], r);
}

/* _to_copy(self, dtype, layout, device, pin_memory, non_blocking,
 * memory_format): a copy on a porta device (the binding sends copies to
 * other kinds of device elsewhere), self's unless `device` names one. */
static porta_status *to_copy(const porta_value *args, aten_results *r) {
    const porta_tensor *self = args[0].tensor;
    porta_dtype dtype = args[1].kind == PORTA_VALUE_DTYPE ? args[1].dtype : self->dtype;
    porta_device *device = self->buffer->device;
    if (args[3].kind == PORTA_VALUE_INT) PORTA_TRY(aten_factory_device(&args[3], &device));
    return push_copy_like("_to_copy", self, dtype, device, &args[6], r);
}

/* copy(self, src, non_blocking): copy_ without the write, a new tensor
 * laid out as self (clone_preserve_strides) holding src broadcast and cast
 * to self's dtype. */
static porta_status *copy(const porta_value *args, aten_results *r) {
    porta_tensor *out = NULL;
    PORTA_TRY(aten_clone_preserve_strides(args[0].tensor, &out));
    porta_status *status = porta_copy(args[1].tensor, out);
    if (status) {
        porta_tensor_release(out);
        return status;
    }
    return aten_push_tensor(r, out);
}

/* alias(self): a view with self's own layout. */
static porta_status *alias(const porta_value *args, aten_results *r) {
    const porta_tensor *x = args[0].tensor;
    return aten_push_view(x, x->rank, x->sizes, x->strides, x->offset, r);
}

const aten_op aten_shape_copy_ops[] = {
    {"clone", "Tm", clone},
    {"_to_copy", "TdxDxxm", to_copy},
    {"copy", "TTx", copy},
    {"alias", "T", alias},
    {NULL, NULL, NULL},
};
