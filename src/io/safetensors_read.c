/* The safetensors file handle: the file's bytes (a private mapping, or a
 * copy made by porta_safetensors_parse) and its validated header, shared by
 * reference with every zero-copy tensor taken from it. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/status.h"
#include "io/file_map.h"
#include "io/safetensors.h"
#include "io/utf8.h"
#include "runtime/device.h"
#include "runtime/tensor.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors data is little-endian; a big-endian host needs byte swapping here"
#endif

struct porta_safetensors {
    /* The handle holds one reference, each zero-copy buffer another. */
    atomic_int refcount;
    unsigned char *bytes;
    size_t size;
    bool mapped; /* io_file_map's, else a core_host_alloc copy */
    st_header header;
};

static void file_release(void *context) {
    porta_safetensors *file = context;
    if (atomic_fetch_sub(&file->refcount, 1) != 1) return;
    io_bytes_free(file->bytes, file->size, file->mapped);
    st_header_free(&file->header);
    free(file);
}

/* Takes ownership of `bytes` (freed on error too). */
static porta_status *adopt_bytes(unsigned char *bytes, size_t size, bool mapped,
                                 porta_safetensors **out) {
    porta_safetensors *file = calloc(1, sizeof *file);
    if (!file) {
        io_bytes_free(bytes, size, mapped);
        return porta_error(PORTA_ERR_OUT_OF_MEMORY, "safetensors: no memory for the handle");
    }
    atomic_init(&file->refcount, 1);
    file->bytes = bytes;
    file->size = size;
    file->mapped = mapped;
    porta_status *status = st_header_parse(bytes, size, &file->header);
    if (status) {
        file_release(file);
        return status;
    }
    *out = file;
    return NULL;
}

porta_status *porta_safetensors_parse(const void *data, size_t size, porta_safetensors **out) {
    if ((!data && size) || !out)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "safetensors_parse: expected data and an output pointer, got NULL");
    void *copy;
    PORTA_TRY(core_host_alloc(size, "safetensors bytes", &copy));
    if (size) memcpy(copy, data, size);
    porta_status *status = adopt_bytes(copy, size, false, out);
    return status ? porta_error_context(status, "safetensors") : NULL;
}

porta_status *porta_safetensors_open(const char *path, porta_safetensors **out) {
    if (!path || !out)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "safetensors_open: expected a path and an output pointer, got NULL");
    int fd;
    size_t size;
    PORTA_TRY(io_file_open(path, "safetensors file", &fd, &size));
    if (size < 8) {
        close(fd);
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "safetensors file %s: expected at least 8 bytes (the header length), "
                           "got a %zu-byte file",
                           path, size);
    }
    void *bytes;
    PORTA_TRY(io_file_map(fd, size, path, "safetensors file", &bytes));
    porta_status *status = adopt_bytes(bytes, size, true, out);
    return status ? porta_error_context(status, "safetensors file %s", path) : NULL;
}

void porta_safetensors_close(porta_safetensors *file) {
    if (file) file_release(file);
}

int porta_safetensors_count(const porta_safetensors *file) {
    return file ? (int)file->header.count : 0;
}

const char *porta_safetensors_name(const porta_safetensors *file, int index) {
    if (!file || index < 0 || (size_t)index >= file->header.count) return NULL;
    return file->header.tensors[index].name;
}

static porta_status *find(const porta_safetensors *file, const char *name, const char *op,
                          const st_tensor **out) {
    if (!file || !name)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "%s: expected a file and a tensor name, got NULL", op);
    const st_tensor *t = st_header_find(&file->header, name);
    if (!t) {
        char quoted[UTF8_EXCERPT_CAP];
        return porta_error(PORTA_ERR_OUT_OF_RANGE,
                           "%s: expected the name of one of the file's %zu tensors, got %s", op,
                           file->header.count, utf8_excerpt(name, strlen(name), quoted, sizeof quoted));
    }
    *out = t;
    return NULL;
}

porta_status *porta_safetensors_info_get(const porta_safetensors *file, const char *name,
                                         porta_safetensors_info *out) {
    const st_tensor *t;
    PORTA_TRY(find(file, name, "safetensors_info_get", &t));
    if (!out)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "safetensors_info_get: expected an output pointer, got NULL");
    memset(out, 0, sizeof *out);
    out->dtype = t->dtype;
    out->rank = t->rank;
    memcpy(out->sizes, t->sizes, (size_t)t->rank * sizeof *t->sizes);
    out->data_offset = file->header.data_start + t->begin;
    out->bytes = t->end - t->begin;
    return NULL;
}

/* Porta's kernels take a bool byte to be 0 or 1, as PyTorch does. */
static porta_status *check_bools(const st_tensor *t, const unsigned char *data, size_t bytes) {
    for (size_t i = 0; i < bytes; i++)
        if (data[i] > 1) {
            char quoted[UTF8_EXCERPT_CAP];
            return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                               "tensor %s: expected BOOL elements of 0 or 1, got %u at element %zu",
                               utf8_excerpt(t->name, strlen(t->name), quoted, sizeof quoted),
                               data[i], i);
        }
    return NULL;
}

static porta_status *view_of_file(porta_safetensors *file, const st_tensor *t,
                                  porta_device *device, unsigned char *data, size_t bytes,
                                  porta_tensor **out) {
    atomic_fetch_add(&file->refcount, 1);
    porta_buffer *buffer;
    porta_status *status = rt_buffer_wrap_host(device, data, bytes, file_release, file, &buffer);
    if (status) {
        file_release(file);
        return status;
    }
    int64_t strides[PORTA_MAX_RANK];
    core_contiguous_strides(t->rank, t->sizes, strides);
    status = rt_tensor_wrap(buffer, t->dtype, t->rank, t->sizes, strides, 0, out);
    porta_buffer_release(buffer); /* the tensor holds its own reference */
    return status;
}

porta_status *porta_safetensors_get(porta_safetensors *file, const char *name,
                                    porta_device *device, porta_tensor **out) {
    const st_tensor *t;
    PORTA_TRY(find(file, name, "safetensors_get", &t));
    if (!device || !out)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "safetensors_get: expected a device and an output pointer, got NULL");
    unsigned char *data = file->bytes + file->header.data_start + t->begin;
    size_t bytes = (size_t)(t->end - t->begin);
    if (t->dtype == PORTA_BOOL) PORTA_TRY(check_bools(t, data, bytes));
    size_t element = porta_dtype_size(t->dtype);
    bool host = device->info.capabilities & PORTA_CAP_HOST_MEMORY;
    /* Unaligned elements would be undefined behaviour for the kernels. */
    if (host && bytes && (uintptr_t)data % element == 0)
        return view_of_file(file, t, device, data, bytes, out);
    porta_tensor *copy;
    PORTA_TRY(porta_tensor_empty(device, t->dtype, t->rank, t->sizes, &copy));
    porta_status *status = porta_buffer_write(porta_tensor_buffer(copy), 0, data, bytes);
    if (status) {
        porta_tensor_release(copy);
        return status;
    }
    *out = copy;
    return NULL;
}

int porta_safetensors_metadata_count(const porta_safetensors *file) {
    return file ? (int)file->header.metadata_count : 0;
}

porta_status *porta_safetensors_metadata_at(const porta_safetensors *file, int index,
                                            const char **key, const char **value) {
    if (!file || !key || !value)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "safetensors_metadata_at: expected a file and two output pointers, "
                           "got NULL");
    if (index < 0 || (size_t)index >= file->header.metadata_count)
        return porta_error(PORTA_ERR_OUT_OF_RANGE,
                           "safetensors_metadata_at: expected an index in [0, %zu), got %d",
                           file->header.metadata_count, index);
    *key = file->header.metadata[index].key;
    *value = file->header.metadata[index].value;
    return NULL;
}

const char *porta_safetensors_metadata_get(const porta_safetensors *file, const char *key) {
    if (!file || !key) return NULL;
    for (size_t i = 0; i < file->header.metadata_count; i++)
        if (!strcmp(file->header.metadata[i].key, key)) return file->header.metadata[i].value;
    return NULL;
}
