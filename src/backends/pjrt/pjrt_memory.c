/* Porta buffers on a PJRT device: a pjrt_storage whose array, once
 * written, is one immutable tensor<bytes x ui8> (pjrt_runtime.h). A write
 * replaces the array; reads copy from it. Nothing is allocated on the
 * device until the first write. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/pjrt/pjrt_backend.h"
#include "core/alloc.h"
#include "core/fault.h"
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
    PORTA_TRY(CORE_FAULT_CHECK(CORE_FAULT_ALLOC, PORTA_ERR_OUT_OF_MEMORY,
                               "PJRT: allocating %zu bytes", bytes));
    PORTA_TRY(CORE_FAULT_DEVICE_CHECK(device->info.index, "PJRT: allocating a buffer"));
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

/* A read or write ("read", "write") of bytes [offset, offset + bytes): in
 * the buffer, and not failed by an injected fault (docs/faults.md). */
static porta_status *check_access(const porta_device *device, const pjrt_storage *storage,
                                  size_t offset, size_t bytes, const char *what) {
    if (offset > storage->bytes || bytes > storage->bytes - offset)
        return porta_error(PORTA_ERR_OUT_OF_RANGE,
                           "PJRT %s: bytes [%zu, %zu) are outside the buffer of %zu bytes", what,
                           offset, offset + bytes, storage->bytes);
    PORTA_TRY(CORE_FAULT_CHECK(CORE_FAULT_DRIVER, PORTA_ERR_DEVICE, "PJRT: %s of a buffer", what));
    return CORE_FAULT_DEVICE_CHECK(device->info.index, "PJRT: a buffer's read or write");
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
    PORTA_TRY(check_access(device, storage, offset, bytes, "read"));
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

/* From this size of buffer, a write of part of it patches the array on
 * the device (patch_on_device) instead of copying the whole buffer to the
 * host and back: below it that round trip costs less than the one-time
 * compile of the patching module (tens of milliseconds on XLA's CPU). */
#define PATCH_ON_DEVICE_MIN_BYTES ((size_t)1 << 20)

/* storage's bytes [offset, offset + bytes) replaced by src's on the device:
 * the patch and the offset (8 bytes, as an int64) are uploaded and a
 * dynamic_update_slice writes them into the array, which it takes over
 * (one module per buffer and patch size; the offset is an argument). */
static porta_status *patch_on_device(porta_device *device, pjrt_storage *storage, size_t offset,
                                     const void *src, size_t bytes) {
    pjrt_device_state *s = pjrt_state_of(device);
    char text[1024];
    snprintf(text, sizeof text,
             "module @porta_patch {\n"
             "  func.func public @main(%%old: tensor<%zuxui8> {tf.aliasing_output = 0 : i32},\n"
             "                         %%patch: tensor<%zuxui8>, %%at: tensor<8xui8>)\n"
             "      -> tensor<%zuxui8> {\n"
             "    %%start = stablehlo.bitcast_convert %%at : (tensor<8xui8>) -> tensor<i64>\n"
             "    %%new = stablehlo.dynamic_update_slice %%old, %%patch, %%start :\n"
             "        (tensor<%zuxui8>, tensor<%zuxui8>, tensor<i64>) -> tensor<%zuxui8>\n"
             "    return %%new : tensor<%zuxui8>\n"
             "  }\n"
             "}\n",
             storage->bytes, bytes, storage->bytes, storage->bytes, bytes, storage->bytes,
             storage->bytes);
    pjrt_program *program;
    PORTA_TRY(pjrt_program_get(device, text, strlen(text), &program));
    int64_t start = (int64_t)offset;
    pjrt_storage patch = {.bytes = bytes}, at = {.bytes = sizeof start};
    porta_status *status = pjrt_upload(s, src, bytes, &patch.array);
    if (!status) status = pjrt_upload(s, &start, sizeof start, &at.array);
    if (!status) {
        pjrt_storage *const args[3] = {storage, &patch, &at};
        pjrt_storage *const result[1] = {storage};
        status = pjrt_program_run(device, program, args, 3, result, 1);
    }
    /* the plugin keeps what the run still reads */
    pjrt_buffer_destroy(s->plugin->api, patch.array);
    pjrt_buffer_destroy(s->plugin->api, at.array);
    return status;
}

/* A write of part of a small buffer, or of one never written: arrays are
 * immutable, so the whole buffer is read back (zeros when never written),
 * patched and uploaded again. */
static porta_status *patch_through_host(pjrt_device_state *s, pjrt_storage *storage,
                                        size_t offset, const void *src, size_t bytes,
                                        PJRT_Buffer **array) {
    unsigned char *whole = malloc(storage->bytes);
    if (!whole)
        return porta_error(PORTA_ERR_OUT_OF_MEMORY, "PJRT write: %zu bytes of host memory",
                           storage->bytes);
    porta_status *status = read_whole(s, storage, whole);
    if (!status) {
        memcpy(whole + offset, src, bytes);
        status = pjrt_upload(s, whole, storage->bytes, array);
    }
    free(whole);
    return status;
}

porta_status *pjrt_buffer_write(porta_device *device, void *handle, size_t offset,
                                const void *src, size_t bytes) {
    pjrt_storage *storage = handle;
    pjrt_device_state *s = pjrt_state_of(device);
    PORTA_TRY(check_access(device, storage, offset, bytes, "write"));
    if (!bytes) return NULL;
    uint64_t begin = prof_begin();
    porta_status *status = NULL;
    if (storage->array && bytes < storage->bytes && storage->bytes >= PATCH_ON_DEVICE_MIN_BYTES) {
        status = patch_on_device(device, storage, offset, src, bytes);
    } else {
        PJRT_Buffer *array = NULL;
        if (offset == 0 && bytes == storage->bytes)
            status = pjrt_upload(s, src, bytes, &array);
        else
            status = patch_through_host(s, storage, offset, src, bytes, &array);
        if (!status) {
            pjrt_buffer_destroy(s->plugin->api, storage->array);
            storage->array = array;
        }
    }
    prof_end(PROF_COPY, device, "write from host", NULL, (int64_t)bytes, begin);
    return status;
}
