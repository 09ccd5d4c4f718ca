/* Porta buffers on a PJRT device: a pjrt_storage whose array, once
 * written, is one immutable tensor<bytes x ui8> (pjrt_runtime.h). A write
 * replaces the array; reads copy from it. Nothing is allocated on the
 * device until the first write. */
#include <stdlib.h>
#include <string.h>

#include "backends/pjrt/pjrt_backend.h"
#include "core/alloc.h"
#include "core/status.h"
#include "runtime/profiler.h"

porta_status *pjrt_upload(pjrt_device_state *s, const void *data, size_t bytes,
                          PJRT_Buffer **out) {
    const PJRT_Api *api = s->plugin->api;
    void *zeros = NULL;
    static const unsigned char empty[1];
    if (!data && bytes) {
        zeros = calloc(bytes, 1);
        if (!zeros)
            return porta_error(PORTA_ERR_OUT_OF_MEMORY,
                               "PJRT: %zu bytes of zeros to upload to %s", bytes, s->name);
        data = zeros;
    }
    int64_t dims[1] = {(int64_t)bytes};
    PJRT_Client_BufferFromHostBuffer_Args args = {
        .struct_size = sizeof args,
        .client = s->plugin->client,
        .data = data ? data : empty,
        .type = PJRT_Buffer_Type_U8,
        .dims = dims,
        .num_dims = 1,
        .host_buffer_semantics = PJRT_HostBufferSemantics_kImmutableUntilTransferCompletes,
        .device = s->device,
    };
    porta_status *status = pjrt_status(api, api->PJRT_Client_BufferFromHostBuffer(&args),
                                       "Client_BufferFromHostBuffer");
    /* the host bytes must stay until the plugin says it is done with them */
    if (!status) status = pjrt_await(api, args.done_with_host_buffer, "host buffer transfer");
    else porta_status_free(pjrt_await(api, args.done_with_host_buffer, "host buffer transfer"));
    free(zeros);
    if (status) {
        pjrt_buffer_destroy(api, args.buffer);
        return status;
    }
    *out = args.buffer;
    return NULL;
}

porta_status *pjrt_buffer_alloc(porta_device *device, size_t bytes, void **handle) {
    pjrt_storage *storage = calloc(1, sizeof *storage);
    if (!storage)
        return porta_error(PORTA_ERR_OUT_OF_MEMORY, "PJRT: allocating a buffer's record");
    porta_status *status = core_memory_reserve(bytes, "a PJRT buffer");
    if (status) {
        free(storage);
        return status;
    }
    storage->bytes = bytes;
    *handle = storage;
    return NULL;
}

void pjrt_buffer_free(porta_device *device, void *handle) {
    pjrt_storage *storage = handle;
    pjrt_buffer_destroy(pjrt_state_of(device)->plugin->api, storage->array);
    core_memory_unreserve(storage->bytes);
    free(storage);
}

static porta_status *check_range(const pjrt_storage *storage, size_t offset, size_t bytes,
                                 const char *what) {
    if (offset > storage->bytes || bytes > storage->bytes - offset)
        return porta_error(PORTA_ERR_OUT_OF_RANGE,
                           "PJRT %s: bytes [%zu, %zu) are outside the buffer of %zu bytes", what,
                           offset, offset + bytes, storage->bytes);
    return NULL;
}

/* The whole array to `dst` (storage->bytes). */
static porta_status *read_whole(pjrt_device_state *s, const pjrt_storage *storage, void *dst) {
    const PJRT_Api *api = s->plugin->api;
    if (!storage->array) {
        memset(dst, 0, storage->bytes);
        return NULL;
    }
    PJRT_Buffer_ToHostBuffer_Args args = {.struct_size = sizeof args,
                                          .src = storage->array,
                                          .dst = dst,
                                          .dst_size = storage->bytes};
    PORTA_TRY(pjrt_status(api, api->PJRT_Buffer_ToHostBuffer(&args), "Buffer_ToHostBuffer"));
    return pjrt_await(api, args.event, "Buffer_ToHostBuffer");
}

/* A range through PJRT_Buffer_CopyRawToHost; false where the plugin lacks
 * it or refuses it (then the caller copies the whole array). */
static bool read_range_raw(pjrt_device_state *s, const pjrt_storage *storage, size_t offset,
                           void *dst, size_t bytes) {
    const PJRT_Api *api = s->plugin->api;
    if (!PJRT_API_HAS(api, PJRT_Buffer_CopyRawToHost)) return false;
    PJRT_Buffer_CopyRawToHost_Args args = {.struct_size = sizeof args,
                                           .buffer = storage->array,
                                           .dst = dst,
                                           .offset = (int64_t)offset,
                                           .transfer_size = (int64_t)bytes};
    porta_status *status =
        pjrt_status(api, api->PJRT_Buffer_CopyRawToHost(&args), "Buffer_CopyRawToHost");
    if (!status) status = pjrt_await(api, args.event, "Buffer_CopyRawToHost");
    bool done = !status;
    porta_status_free(status);
    return done;
}

porta_status *pjrt_buffer_read(porta_device *device, void *handle, size_t offset, void *dst,
                               size_t bytes) {
    pjrt_storage *storage = handle;
    pjrt_device_state *s = pjrt_state_of(device);
    PORTA_TRY(check_range(storage, offset, bytes, "read"));
    if (!bytes) return NULL;
    uint64_t begin = prof_begin();
    porta_status *status = NULL;
    if (!storage->array) {
        memset(dst, 0, bytes);
    } else if (offset == 0 && bytes == storage->bytes) {
        status = read_whole(s, storage, dst);
    } else if (!read_range_raw(s, storage, offset, dst, bytes)) {
        unsigned char *whole = malloc(storage->bytes);
        if (!whole) {
            status = porta_error(PORTA_ERR_OUT_OF_MEMORY, "PJRT read: %zu bytes of host memory",
                                 storage->bytes);
        } else {
            status = read_whole(s, storage, whole);
            if (!status) memcpy(dst, whole + offset, bytes);
            free(whole);
        }
    }
    prof_end(PROF_COPY, device, "read to host", NULL, (int64_t)bytes, begin);
    return status;
}

/* A write of part of the buffer: arrays are immutable, so the whole
 * buffer is read back, patched and uploaded again (two copies of the whole
 * buffer for a few bytes; writes from the host are rare next to program
 * runs, which replace arrays without a host copy). */
porta_status *pjrt_buffer_write(porta_device *device, void *handle, size_t offset,
                                const void *src, size_t bytes) {
    pjrt_storage *storage = handle;
    pjrt_device_state *s = pjrt_state_of(device);
    PORTA_TRY(check_range(storage, offset, bytes, "write"));
    if (!bytes) return NULL;
    uint64_t begin = prof_begin();
    porta_status *status = NULL;
    PJRT_Buffer *array = NULL;
    if (offset == 0 && bytes == storage->bytes) {
        status = pjrt_upload(s, src, bytes, &array);
    } else {
        unsigned char *whole = malloc(storage->bytes);
        if (!whole)
            return porta_error(PORTA_ERR_OUT_OF_MEMORY, "PJRT write: %zu bytes of host memory",
                               storage->bytes);
        status = read_whole(s, storage, whole);
        if (!status) {
            memcpy(whole + offset, src, bytes);
            status = pjrt_upload(s, whole, storage->bytes, &array);
        }
        free(whole);
    }
    if (!status) {
        pjrt_buffer_destroy(s->plugin->api, storage->array);
        storage->array = array;
    }
    prof_end(PROF_COPY, device, "write from host", NULL, (int64_t)bytes, begin);
    return status;
}
