/* Writing a file the user named (an output, a report, a trace) without
 * harming what the name already stands for. The bytes go to a new file
 * beside the target and are renamed over it once complete, so a reader
 * sees the old file or the new one, never a partial one. A symbolic link
 * is followed and the file it leads to is replaced (the link stays); a
 * name that stands for anything but a regular file (a directory, a FIFO,
 * a device node, a socket) is refused and left as it is. */
#ifndef PORTA_CORE_OUTPUT_FILE_H
#define PORTA_CORE_OUTPUT_FILE_H

#include <stdio.h>
#include <sys/types.h>

#include "porta.h"

typedef struct core_output {
    const char *path; /* as the caller named it, for messages */
    const char *what; /* "safetensors file", "profiler trace": starts messages */
    char *target;     /* the regular file to replace or create: path, links followed */
    char *temp;       /* the new file beside target */
    int fd;
    FILE *stream;     /* set by core_output_stream */
} core_output;

/* Checks `path` and creates the temporary file; on failure nothing was
 * created and *out holds nothing to close. Messages start "<what> <path>: ". */
porta_status *core_output_open(const char *path, const char *what, core_output *out);
/* Writes all `size` bytes to the temporary file. */
porta_status *core_output_write(core_output *out, const void *data, size_t size);
/* A stdio stream on the temporary file, for writers that print; it is
 * flushed and closed by core_output_close. */
porta_status *core_output_stream(core_output *out, FILE **stream);
/* When `status` is NULL: flushes, syncs and closes the temporary file and
 * renames it over the target, returning the first failure. Otherwise (or
 * when finishing fails) removes the temporary file and returns `status`.
 * Either way `out` is released. */
porta_status *core_output_close(core_output *out, porta_status *status);

/* The whole of a file written at once, as above. */
porta_status *core_output_file(const char *path, const char *what, const void *data,
                               size_t size);

/* What a file's mode says it is: "a regular file", "a directory", "a FIFO",
 * "a character device", "a block device", "a socket", "a symbolic link". */
const char *core_file_kind(mode_t mode);

#endif
