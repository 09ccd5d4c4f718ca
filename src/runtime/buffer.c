/* Reference-counted device memory: the only owner of backend allocations. */
#include <pthread.h>
#include <stdlib.h>

#include "core/alloc.h"
#include "core/refcount.h"
#include "core/status.h"
#include "runtime/deferred.h"
#include "runtime/device.h"
#include "runtime/tensor.h"

/* A handle holding one reference to `bytes` of device's memory, with no
 * memory attached yet; `op` names the caller in the out-of-memory error. */
static porta_status *new_handle(const char *op, porta_device *device, size_t bytes,
                                porta_buffer **out) {
    porta_buffer *buffer = malloc(sizeof *buffer);
    if (!buffer) return porta_error(PORTA_ERR_OUT_OF_MEMORY, "%s: no memory for the handle", op);
    buffer->handle = NULL;
    buffer->release = NULL;
    buffer->release_context = NULL;
    atomic_init(&buffer->deferred, false);
    atomic_init(&buffer->refcount, 1);
    buffer->device = device;
    buffer->size = bytes;
    *out = buffer;
    return NULL;
}

/* A request larger than the device's whole memory can never succeed; on the
 * CPU trying it would push the process into swap or the OOM killer instead. */
static porta_status *check_fits_device(const porta_device *device, size_t bytes) {
    uint64_t memory = device->info.memory_bytes; /* 0: the device does not say */
    if (memory == 0 || bytes <= memory) return NULL;
    return porta_error(PORTA_ERR_OUT_OF_MEMORY,
                       "buffer_alloc: cannot allocate %zu bytes on porta:%d (%s): the device "
                       "has %llu bytes of memory",
                       bytes, device->info.index, device->info.backend,
                       (unsigned long long)memory);
}

porta_status *porta_buffer_alloc(porta_device *device, size_t bytes, porta_buffer **out) {
    if (!device || !out)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "buffer_alloc: expected a device and an output pointer, got NULL");
    PORTA_TRY(check_fits_device(device, bytes));
    porta_buffer *buffer;
    PORTA_TRY(new_handle("buffer_alloc", device, bytes, &buffer));
    bool defer = bytes > 0 && rt_deferred_recording();
    atomic_store(&buffer->deferred, defer);
    porta_status *status = defer ? NULL : device->ops->buffer_alloc(device, bytes, &buffer->handle);
    if (status) {
        free(buffer);
        return status;
    }
    *out = buffer;
    return NULL;
}

porta_status *rt_buffer_wrap_host(porta_device *device, void *data, size_t bytes,
                                     void (*release)(void *context), void *context,
                                     porta_buffer **out) {
    if (!device || !release || !out || (!data && bytes))
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "buffer_wrap_host: expected a device, memory, a release function "
                           "and an output pointer, got NULL");
    if (!(device->info.capabilities & PORTA_CAP_HOST_MEMORY))
        return porta_error(PORTA_ERR_UNSUPPORTED,
                           "buffer_wrap_host: expected a device whose buffers are host memory, "
                           "got %s device porta:%d", device->info.backend, device->info.index);
    porta_buffer *buffer;
    PORTA_TRY(new_handle("buffer_wrap_host", device, bytes, &buffer));
    buffer->handle = data;
    buffer->release = release;
    buffer->release_context = context;
    *out = buffer;
    return NULL;
}

void porta_buffer_retain(porta_buffer *buffer) {
    if (buffer) atomic_fetch_add(&buffer->refcount, 1);
}

void porta_buffer_release(porta_buffer *buffer) {
    if (!buffer) return;
    if (!core_ref_drop(&buffer->refcount)) return;
    if (buffer->release)
        buffer->release(buffer->release_context);
    else if (!atomic_load(&buffer->deferred))
        buffer->device->ops->buffer_free(buffer->device, buffer->handle);
    free(buffer);
}

static pthread_mutex_t materialize_lock = PTHREAD_MUTEX_INITIALIZER;

porta_status *rt_buffer_materialize(porta_buffer *buffer) {
    if (!atomic_load_explicit(&buffer->deferred, memory_order_acquire)) return NULL;
    porta_status *status = NULL;
    pthread_mutex_lock(&materialize_lock);
    if (atomic_load(&buffer->deferred)) {
        status = buffer->device->ops->buffer_alloc(buffer->device, buffer->size, &buffer->handle);
        if (!status) atomic_store_explicit(&buffer->deferred, false, memory_order_release);
    }
    pthread_mutex_unlock(&materialize_lock);
    return status;
}

porta_status *rt_buffer_host_access(porta_buffer *buffer) {
    /* Recorded ops may not have written it yet, or may still read it. */
    PORTA_TRY(rt_deferred_sync_buffer(buffer));
    return rt_buffer_materialize(buffer);
}

void rt_buffer_discard(porta_buffer *buffer) {
    if (buffer->release) return; /* memory Porta does not own stays */
    pthread_mutex_lock(&materialize_lock);
    if (!atomic_load(&buffer->deferred) && buffer->size) {
        buffer->device->ops->buffer_free(buffer->device, buffer->handle);
        buffer->handle = NULL;
        atomic_store(&buffer->deferred, true);
    }
    pthread_mutex_unlock(&materialize_lock);
}

size_t porta_buffer_size(const porta_buffer *buffer) { return buffer ? buffer->size : 0; }

porta_device *porta_buffer_device(const porta_buffer *buffer) {
    return buffer ? buffer->device : NULL;
}

static porta_status *check_range(const char *op, const porta_buffer *buffer, size_t offset,
                                  const void *host, size_t bytes) {
    if (!buffer || (!host && bytes))
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "%s: expected a buffer and a host pointer, got NULL", op);
    if (offset > buffer->size || bytes > buffer->size - offset)
        return porta_error(PORTA_ERR_OUT_OF_RANGE,
                           "%s: range [%zu, %zu + %zu) exceeds the buffer's %zu bytes", op,
                           offset, offset, bytes, buffer->size);
    return NULL;
}

porta_status *porta_buffer_write(porta_buffer *buffer, size_t offset, const void *src,
                                 size_t bytes) {
    PORTA_TRY(check_range("buffer_write", buffer, offset, src, bytes));
    if (!bytes) return NULL;
    PORTA_TRY(rt_buffer_host_access(buffer));
    return buffer->device->ops->buffer_write(buffer->device, buffer->handle, offset, src, bytes);
}

porta_status *porta_buffer_read(const porta_buffer *buffer, size_t offset, void *dst,
                                size_t bytes) {
    PORTA_TRY(check_range("buffer_read", buffer, offset, dst, bytes));
    if (!bytes) return NULL;
    PORTA_TRY(rt_buffer_host_access((porta_buffer *)buffer));
    return buffer->device->ops->buffer_read(buffer->device, buffer->handle, offset, dst, bytes);
}
