/* The layout of buffers and tensors, shared by every layer inside libporta,
 * and the shape arithmetic on it that needs no device: the primitive IR's
 * inference reads tensors through this header. Making and moving tensors
 * needs the devices: runtime/tensor.h. */
#ifndef PORTA_CORE_TENSOR_LAYOUT_H
#define PORTA_CORE_TENSOR_LAYOUT_H

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
     * rt_buffer_wrap_host): on the last release, release(release_context)
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

/* Element count, or -1 when the product overflows int64. */
int64_t core_shape_numel(int rank, const int64_t *sizes);
/* Row-major strides for sizes. */
void core_contiguous_strides(int rank, const int64_t *sizes, int64_t *strides);
/* Pointer to element 0 of a tensor on a host-memory device. */
static inline char *core_tensor_data(const porta_tensor *t) {
    return (char *)t->buffer->handle + t->offset * (int64_t)porta_dtype_size(t->dtype);
}
/* Rejects NULL tensors with a message naming the argument. */
porta_status *core_check_tensor(const porta_tensor *t, const char *arg_name);
/* Normalizes a possibly negative axis against rank; error names the op. */
porta_status *core_normalize_axis(const char *op, int axis, int rank, int *out);

#endif
