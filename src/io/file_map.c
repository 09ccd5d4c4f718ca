#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/status.h"
#include "io/file_map.h"

porta_status *io_file_open(const char *path, const char *what, int *fd, size_t *size) {
    int opened = open(path, O_RDONLY | O_CLOEXEC);
    if (opened < 0)
        return porta_error(PORTA_ERR_IO, "%s %s: cannot open: %s", what, path, strerror(errno));
    struct stat st;
    if (fstat(opened, &st) != 0) {
        int error = errno;
        close(opened);
        return porta_error(PORTA_ERR_IO, "%s %s: cannot stat: %s", what, path, strerror(error));
    }
    if (!S_ISREG(st.st_mode)) {
        close(opened);
        return porta_error(PORTA_ERR_IO,
                           "%s %s: expected a regular file, got a directory, device or pipe", what,
                           path);
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
