/* The ZIP archive handle: the file's bytes (a private mapping, or a copy
 * made by zip_parse) and its validated directory, shared by reference with
 * every view taken from it. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/status.h"
#include "io/file_map.h"
#include "io/zip_directory.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "zip_crc32 reads words little-endian; a big-endian host needs byte swapping there"
#endif

struct zip_archive {
    atomic_int refcount; /* the handle's and each view's */
    unsigned char *bytes;
    size_t size;
    bool mapped; /* io_file_map's, else a core_host_alloc copy */
    zip_directory directory;
};

void zip_retain(zip_archive *archive) { atomic_fetch_add(&archive->refcount, 1); }

void zip_release(void *context) {
    zip_archive *archive = context;
    if (!archive || atomic_fetch_sub(&archive->refcount, 1) != 1) return;
    io_bytes_free(archive->bytes, archive->size, archive->mapped);
    zip_directory_free(&archive->directory);
    free(archive);
}

void zip_close(zip_archive *archive) { zip_release(archive); }

/* Takes ownership of `bytes` (released on error too). */
static porta_status *adopt(unsigned char *bytes, size_t size, bool mapped, zip_archive **out) {
    zip_archive *archive = calloc(1, sizeof *archive);
    if (!archive) {
        io_bytes_free(bytes, size, mapped);
        return porta_error(PORTA_ERR_OUT_OF_MEMORY, "no memory for the archive's handle");
    }
    atomic_init(&archive->refcount, 1);
    archive->bytes = bytes;
    archive->size = size;
    archive->mapped = mapped;
    porta_status *status = zip_directory_read(bytes, size, &archive->directory);
    if (status) {
        zip_release(archive);
        return status;
    }
    *out = archive;
    return NULL;
}

porta_status *zip_parse(const void *data, size_t size, zip_archive **out) {
    if ((!data && size) || !out)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "zip_parse: expected data and an output pointer, got NULL");
    *out = NULL;
    void *copy;
    PORTA_TRY(core_host_alloc(size ? size : 1, "zip archive bytes", &copy));
    if (size) memcpy(copy, data, size);
    porta_status *status = adopt(copy, size, false, out);
    return status ? porta_error_context(status, "zip archive") : NULL;
}

porta_status *zip_open(const char *path, zip_archive **out) {
    if (!path || !out)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "zip_open: expected a path and an output pointer, got NULL");
    *out = NULL;
    int fd;
    size_t size;
    PORTA_TRY(io_file_open(path, "zip archive", &fd, &size));
    if (size == 0) {
        close(fd);
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "zip archive %s: expected at least 22 bytes (an end of central "
                           "directory record), got an empty file",
                           path);
    }
    void *bytes;
    PORTA_TRY(io_file_map(fd, size, path, "zip archive", &bytes));
    porta_status *status = adopt(bytes, size, true, out);
    return status ? porta_error_context(status, "zip archive %s", path) : NULL;
}

size_t zip_count(const zip_archive *archive) { return archive ? archive->directory.count : 0; }

const zip_entry *zip_entry_at(const zip_archive *archive, size_t index) {
    if (!archive || index >= archive->directory.count) return NULL;
    return &archive->directory.entries[index];
}

const zip_entry *zip_find(const zip_archive *archive, const char *name) {
    if (!archive || !name) return NULL;
    const zip_entry *const *sorted = archive->directory.sorted;
    size_t lo = 0, hi = archive->directory.count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int order = strcmp(sorted[mid]->name, name);
        if (order == 0) return sorted[mid];
        if (order < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}
