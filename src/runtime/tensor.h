/* Buffers and tensors on a device: making, viewing and releasing them. */
#ifndef PORTA_RUNTIME_TENSOR_H
#define PORTA_RUNTIME_TENSOR_H

#include "core/tensor_layout.h"

/* A buffer over `bytes` of host memory at `data` that Porta does not own,
 * on a device whose handles are host pointers (PORTA_CAP_HOST_MEMORY):
 * release(context) runs when its last reference goes. Never deferred or
 * discarded. On error nothing is called and nothing is held. */
porta_status *rt_buffer_wrap_host(porta_device *device, void *data, size_t bytes,
                                     void (*release)(void *context), void *context,
                                     porta_buffer **out);
/* Gives a deferred buffer its memory (a no-op for the others). */
porta_status *rt_buffer_materialize(porta_buffer *buffer);
/* Readies a buffer for the host to touch its contents in place: recorded
 * ops that use it have run, and it has memory. */
porta_status *rt_buffer_host_access(porta_buffer *buffer);
/* Gives a buffer's memory back, deferring it again: for a buffer nothing
 * will read again (the trace's executor, after its last use). */
void rt_buffer_discard(porta_buffer *buffer);

/* Builds a tensor struct on `buffer` (retained) without checking bounds;
 * callers inside the library have already validated the view. */
porta_status *rt_tensor_wrap(porta_buffer *buffer, porta_dtype dtype, int rank,
                                const int64_t *sizes, const int64_t *strides,
                                int64_t offset, porta_tensor **out);
/* A tensor with the same buffer and a different layout (a view). */
porta_status *rt_tensor_restride(const porta_tensor *base, int rank,
                                    const int64_t *sizes, const int64_t *strides,
                                    int64_t offset, porta_tensor **out);

#endif
