/* The layout of buffers and tensors, shared by every layer inside libporta. */
#ifndef PORTA_CORE_TENSOR_H
#define PORTA_CORE_TENSOR_H

#include <stdatomic.h>

#include "porta.h"

struct porta_buffer {
    atomic_int refcount;
    porta_device *device;
    size_t size;  /* bytes */
    void *handle; /* backend's memory handle; a host pointer on host-memory devices */
    /* No memory yet: buffers made while fusion records get it when a kernel
     * first writes or the host touches them, so intermediates that fused
     * kernels keep in registers never take any. */
    atomic_bool deferred;
    /* Memory the buffer does not own (a mapped file, see
     * porta_buffer_wrap_host): on the last release, release(release_context)
     * is called instead of the device's buffer_free. NULL otherwise. */
    void (*release)(void *release_context);
    void *release_context;
};

struct porta_tensor {
    atomic_int refcount;
    porta_buffer *buffer; /* one reference held */
    porta_dtype dtype;
    int rank;
    int64_t sizes[PORTA_MAX_RANK];
    int64_t strides[PORTA_MAX_RANK]; /* in elements, may be 0 or negative */
    int64_t offset;                  /* in elements */
};

/* A buffer over `bytes` of host memory at `data` that Porta does not own,
 * on a device whose handles are host pointers (PORTA_CAP_HOST_MEMORY):
 * release(context) runs when its last reference goes. Never deferred or
 * discarded. On error nothing is called and nothing is held. */
porta_status *porta_buffer_wrap_host(porta_device *device, void *data, size_t bytes,
                                     void (*release)(void *context), void *context,
                                     porta_buffer **out);
/* Gives a deferred buffer its memory (a no-op for the others). */
porta_status *porta_buffer_materialize(porta_buffer *buffer);
/* Readies a buffer for the host to touch its contents in place: recorded
 * ops that use it have run, and it has memory. */
porta_status *porta_buffer_host_access(porta_buffer *buffer);
/* Gives a buffer's memory back, deferring it again: for a buffer nothing
 * will read again (the trace's executor, after its last use). */
void porta_buffer_discard(porta_buffer *buffer);

/* Element count, or -1 when the product overflows int64. */
int64_t porta_shape_numel(int rank, const int64_t *sizes);
/* Row-major strides for sizes. */
void porta_contiguous_strides(int rank, const int64_t *sizes, int64_t *strides);
/* Builds a tensor struct on `buffer` (retained) without checking bounds;
 * callers inside the library have already validated the view. */
porta_status *porta_tensor_wrap(porta_buffer *buffer, porta_dtype dtype, int rank,
                                const int64_t *sizes, const int64_t *strides,
                                int64_t offset, porta_tensor **out);
/* A tensor with the same buffer and a different layout (a view). */
porta_status *porta_tensor_restride(const porta_tensor *base, int rank,
                                    const int64_t *sizes, const int64_t *strides,
                                    int64_t offset, porta_tensor **out);
/* Pointer to element 0 of a tensor on a host-memory device. */
static inline char *porta_tensor_data(const porta_tensor *t) {
    return (char *)t->buffer->handle + t->offset * (int64_t)porta_dtype_size(t->dtype);
}
/* Rejects NULL tensors with a message naming the argument. */
porta_status *porta_check_tensor(const porta_tensor *t, const char *arg_name);
/* Normalizes a possibly negative axis against rank; error names the op. */
porta_status *porta_normalize_axis(const char *op, int axis, int rank, int *out);

#endif
