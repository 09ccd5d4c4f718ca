#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/output_file.h"
#include "core/status.h"
#include "io/file_map.h"

static porta_status *not_regular(const char *path, const char *what, mode_t mode) {
    return porta_error(PORTA_ERR_IO, "%s %s: expected a regular file, got %s", what, path,
                       core_file_kind(mode));
}

porta_status *io_file_open(const char *path, const char *what, int *fd, size_t *size) {
    /* A FIFO or a device is refused before it is opened (opening a FIFO
     * waits for a writer), and opened without waiting, then checked again,
     * in case the path changed in between. */
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) return not_regular(path, what, st.st_mode);
    int opened = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (opened < 0)
        return porta_error(PORTA_ERR_IO, "%s %s: cannot open: %s", what, path, strerror(errno));
    if (fstat(opened, &st) != 0) {
        int error = errno;
        close(opened);
        return porta_error(PORTA_ERR_IO, "%s %s: cannot stat: %s", what, path, strerror(error));
    }
    if (!S_ISREG(st.st_mode)) {
        close(opened);
        return not_regular(path, what, st.st_mode);
    }
    *fd = opened;
    *size = (size_t)st.st_size;
    return NULL;
}

porta_status *io_file_map(int fd, size_t size, const char *path, const char *what, void **out) {
    void *bytes = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    int error = errno;
    close(fd);
    if (bytes == MAP_FAILED)
        return porta_error(PORTA_ERR_IO, "%s %s: cannot map %zu bytes: %s", what, path, size,
                           strerror(error));
    *out = bytes;
    return NULL;
}

void io_bytes_free(void *bytes, size_t size, bool mapped) {
    if (mapped)
        munmap(bytes, size);
    else
        core_host_free(bytes);
}
