/* A file read by mapping it: the shared first step of the readers that hand
 * out zero-copy views of a file's bytes (zip archives, safetensors). */
#ifndef PORTA_IO_FILE_MAP_H
#define PORTA_IO_FILE_MAP_H

#include <stdbool.h>
#include <stddef.h>

#include "porta.h"

/* Opens the regular file at path and gives its descriptor and size;
 * anything else (a directory, a FIFO, a device) is refused without waiting
 * for it. The caller checks the size (each format has its own smallest file) and then
 * maps it with io_file_map. Messages start "<what> <path>: ". */
porta_status *io_file_open(const char *path, const char *what, int *fd, size_t *size);

/* Maps size (> 0: mmap cannot map an empty file) bytes of fd privately and
 * writable, so that a tensor written in place gets its own copy of the page
 * and the file never changes; closes fd either way. */
porta_status *io_file_map(int fd, size_t size, const char *path, const char *what, void **out);

/* Frees a reader's bytes: unmapped when mapped by io_file_map, else a
 * core_host_alloc copy. */
void io_bytes_free(void *bytes, size_t size, bool mapped);

#endif
