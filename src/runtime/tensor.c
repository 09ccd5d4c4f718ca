/* Tensors: strided views on reference-counted buffers. */
#include "runtime/tensor.h"

#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"
#include "core/refcount.h"
#include "core/status.h"
#include "runtime/device.h"

static porta_status *check_shape(const char *op, int rank, const int64_t *sizes) {
    if (rank < 0 || rank > PORTA_MAX_RANK)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "%s: rank must be 0..%d, got %d", op,
                           PORTA_MAX_RANK, rank);
    if (rank > 0 && !sizes)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "%s: sizes is NULL for rank %d", op,
                           rank);
    for (int i = 0; i < rank; i++)
        if (sizes[i] < 0)
            return porta_error(PORTA_ERR_SHAPE, "%s: size %lld of axis %d is negative", op,
                               (long long)sizes[i], i);
    if (core_shape_numel(rank, sizes) < 0) {
        char buf[CORE_SHAPE_STR_CAP];
        return porta_error(PORTA_ERR_SHAPE, "%s: shape %s has more elements than fit in int64",
                           op, core_format_shape(buf, sizeof buf, rank, sizes));
    }
    return NULL;
}

/* A tensor struct that takes over a reference to buffer the caller holds
 * (released when the struct cannot be allocated). */
static porta_status *adopt_buffer(porta_buffer *buffer, porta_dtype dtype, int rank,
                                  const int64_t *sizes, const int64_t *strides, int64_t offset,
                                  porta_tensor **out) {
    /* malloc, then cleared: glibc's calloc skips its per-thread cache, which
     * made it one of the costliest steps of an op on a small tensor */
    porta_tensor *t = malloc(sizeof *t);
    if (!t) {
        porta_buffer_release(buffer);
        return porta_error(PORTA_ERR_OUT_OF_MEMORY, "no memory for a tensor handle");
    }
    memset(t, 0, sizeof *t);
    atomic_init(&t->refcount, 1);
    t->buffer = buffer;
    t->dtype = dtype;
    t->rank = rank;
    if (rank) {
        memcpy(t->sizes, sizes, (size_t)rank * sizeof *sizes);
        memcpy(t->strides, strides, (size_t)rank * sizeof *strides);
    }
    t->offset = offset;
    *out = t;
    return NULL;
}

porta_status *rt_tensor_wrap(porta_buffer *buffer, porta_dtype dtype, int rank,
                                const int64_t *sizes, const int64_t *strides, int64_t offset,
                                porta_tensor **out) {
    porta_buffer_retain(buffer);
    return adopt_buffer(buffer, dtype, rank, sizes, strides, offset, out);
}

porta_status *rt_tensor_restride(const porta_tensor *base, int rank, const int64_t *sizes,
                                    const int64_t *strides, int64_t offset, porta_tensor **out) {
    return rt_tensor_wrap(base->buffer, base->dtype, rank, sizes, strides, offset, out);
}

porta_status *porta_tensor_empty(porta_device *device, porta_dtype dtype, int rank,
                                 const int64_t *sizes, porta_tensor **out) {
    if (!device || !out)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "tensor_empty: expected a device and an output pointer, got NULL");
    if (!core_dtype_is_valid((int)dtype))
        return porta_error(PORTA_ERR_DTYPE, "tensor_empty: invalid dtype %d", (int)dtype);
    PORTA_TRY(check_shape("tensor_empty", rank, sizes));
    int64_t numel = core_shape_numel(rank, sizes);
    size_t elem = porta_dtype_size(dtype);
    if ((uint64_t)numel > SIZE_MAX / elem)
        return porta_error(PORTA_ERR_OUT_OF_MEMORY, "tensor_empty: %lld elements do not fit in memory",
                           (long long)numel);
    int64_t strides[PORTA_MAX_RANK];
    core_contiguous_strides(rank, sizes, strides);
    porta_buffer *buffer;
    PORTA_TRY(porta_buffer_alloc(device, (size_t)numel * elem, &buffer));
    /* the new buffer's one reference becomes the tensor's */
    return adopt_buffer(buffer, dtype, rank, sizes, strides, 0, out);
}

porta_status *porta_tensor_view(porta_buffer *buffer, porta_dtype dtype, int rank,
                                const int64_t *sizes, const int64_t *strides, int64_t offset,
                                porta_tensor **out) {
    if (!buffer || !out || (rank > 0 && !strides))
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "tensor_view: expected a buffer, strides and an output pointer, got NULL");
    if (!core_dtype_is_valid((int)dtype))
        return porta_error(PORTA_ERR_DTYPE, "tensor_view: invalid dtype %d", (int)dtype);
    PORTA_TRY(check_shape("tensor_view", rank, sizes));
    if (core_shape_numel(rank, sizes) > 0) {
        /* The lowest and highest element addressed must both lie in the buffer. */
        int64_t low = offset, high = offset;
        for (int i = 0; i < rank; i++) {
            int64_t span;
            if (__builtin_mul_overflow(sizes[i] - 1, strides[i], &span) ||
                __builtin_add_overflow(span < 0 ? low : high, span, span < 0 ? &low : &high))
                return porta_error(PORTA_ERR_OUT_OF_RANGE,
                                   "tensor_view: strides overflow the address range");
        }
        int64_t capacity = (int64_t)(buffer->size / porta_dtype_size(dtype));
        if (low < 0 || high >= capacity)
            return porta_error(PORTA_ERR_OUT_OF_RANGE,
                               "tensor_view: the view addresses elements %lld..%lld, but the "
                               "buffer holds %lld elements of %s",
                               (long long)low, (long long)high, (long long)capacity,
                               porta_dtype_name(dtype));
    }
    return rt_tensor_wrap(buffer, dtype, rank, sizes, strides, offset, out);
}

porta_status *porta_tensor_from_host(porta_device *device, porta_dtype dtype, int rank,
                                     const int64_t *sizes, const void *data, porta_tensor **out) {
    porta_tensor *t;
    PORTA_TRY(porta_tensor_empty(device, dtype, rank, sizes, &t));
    size_t bytes = t->buffer->size;
    if (bytes && !data) {
        porta_tensor_release(t);
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "tensor_from_host: data is NULL");
    }
    porta_status *status = porta_buffer_write(t->buffer, 0, data, bytes);
    if (status) {
        porta_tensor_release(t);
        return status;
    }
    *out = t;
    return NULL;
}

void porta_tensor_retain(porta_tensor *tensor) {
    if (tensor) atomic_fetch_add(&tensor->refcount, 1);
}

void porta_tensor_release(porta_tensor *tensor) {
    if (!tensor) return;
    if (!core_ref_drop(&tensor->refcount)) return;
    porta_buffer_release(tensor->buffer);
    free(tensor);
}

porta_dtype porta_tensor_dtype(const porta_tensor *t) { return t->dtype; }
int porta_tensor_rank(const porta_tensor *t) { return t->rank; }
const int64_t *porta_tensor_sizes(const porta_tensor *t) { return t->sizes; }
const int64_t *porta_tensor_strides(const porta_tensor *t) { return t->strides; }
int64_t porta_tensor_offset(const porta_tensor *t) { return t->offset; }
int64_t porta_tensor_numel(const porta_tensor *t) { return core_shape_numel(t->rank, t->sizes); }
porta_buffer *porta_tensor_buffer(const porta_tensor *t) { return t->buffer; }
porta_device *porta_tensor_device(const porta_tensor *t) { return t->buffer->device; }

bool porta_tensor_is_contiguous(const porta_tensor *t) {
    int64_t expected = 1;
    for (int i = t->rank - 1; i >= 0; i--) {
        if (t->sizes[i] == 0) return true;
        if (t->sizes[i] != 1 && t->strides[i] != expected) return false;
        expected *= t->sizes[i];
    }
    return true;
}
