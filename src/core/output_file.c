#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/output_file.h"

#include "core/fault.h"

/* As many links as the kernel follows in one lookup before ELOOP. */
enum { MAX_LINKS = 40 };

const char *core_file_kind(mode_t mode) {
    if (S_ISREG(mode)) return "a regular file";
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISSOCK(mode)) return "a socket";
    if (S_ISLNK(mode)) return "a symbolic link";
    return "a special file";
}

static porta_status *failure(const core_output *o, const char *doing) {
    return porta_error(PORTA_ERR_IO, "%s %s: %s: %s", o->what, o->path, doing, strerror(errno));
}

static porta_status *no_memory(const core_output *o) {
    return porta_error(PORTA_ERR_OUT_OF_MEMORY, "%s %s: no memory for the file's name", o->what,
                       o->path);
}

/* "dir/" of a path ("" for a bare name): where its file lives. */
static size_t folder_length(const char *path) {
    const char *slash = strrchr(path, '/');
    return slash ? (size_t)(slash - path) + 1 : 0;
}

/* What the link at `link` names, read relative to the link's folder. */
static porta_status *read_link(const core_output *o, const char *link, off_t size, char **out) {
    size_t cap = (size_t)(size > 0 ? size : 4095) + 1, folder = folder_length(link);
    char *text = malloc(cap);
    if (!text) return no_memory(o);
    ssize_t got = readlink(link, text, cap);
    if (got < 0 || (size_t)got >= cap) {
        if (got >= 0) errno = ENAMETOOLONG;
        porta_status *status = failure(o, "cannot read the symbolic link");
        free(text);
        return status;
    }
    text[got] = '\0';
    if (text[0] == '/' || !folder) {
        *out = text;
        return NULL;
    }
    char *joined = malloc(folder + (size_t)got + 1);
    if (joined) {
        memcpy(joined, link, folder);
        memcpy(joined + folder, text, (size_t)got + 1);
    }
    free(text);
    *out = joined;
    return joined ? NULL : no_memory(o);
}

/* The file `o->path` leads to once every symbolic link is followed; *st is
 * filled and *exists set when something is there. */
static porta_status *follow_links(core_output *o, struct stat *st, bool *exists) {
    char *current = strdup(o->path);
    if (!current) return no_memory(o);
    for (int links = 0;; links++) {
        if (lstat(current, st) != 0) {
            *exists = false;
            if (errno == ENOENT) break;
            free(current);
            return failure(o, "cannot examine the path");
        }
        *exists = true;
        if (!S_ISLNK(st->st_mode)) break;
        if (links == MAX_LINKS) {
            free(current);
            return porta_error(PORTA_ERR_IO, "%s %s: more than %d symbolic links in a row",
                               o->what, o->path, MAX_LINKS);
        }
        char *next;
        porta_status *status = read_link(o, current, st->st_size, &next);
        free(current);
        if (status) return status;
        current = next;
    }
    o->target = current;
    return NULL;
}

/* A new file in the target's folder, created exclusively. */
static porta_status *create_temporary(core_output *o) {
    static atomic_uint counter;
    size_t folder = folder_length(o->target), cap = folder + 64;
    o->temp = malloc(cap);
    if (!o->temp) return no_memory(o);
    for (int attempt = 0; attempt < 100; attempt++) {
        snprintf(o->temp, cap, "%.*s.porta-%ld-%u.tmp", (int)folder, o->target, (long)getpid(),
                 atomic_fetch_add(&counter, 1));
        o->fd = open(o->temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (o->fd >= 0) return NULL;
        if (errno != EEXIST) break;
    }
    return porta_error(PORTA_ERR_IO, "%s %s: cannot create %s: %s", o->what, o->path, o->temp,
                       strerror(errno));
}

static void release(core_output *o) {
    free(o->target);
    free(o->temp);
    *o = (core_output){.fd = -1};
}

porta_status *core_output_open(const char *path, const char *what, core_output *out) {
    *out = (core_output){.path = path, .what = what, .fd = -1};
    if (!path || !*path) {
        release(out);
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "%s: expected a file name, got %s", what,
                           path ? "an empty one" : "NULL");
    }
    struct stat st;
    bool exists;
    porta_status *status = follow_links(out, &st, &exists);
    if (!status && exists && !S_ISREG(st.st_mode)) {
        bool linked = strcmp(out->target, path) != 0;
        status = porta_error(PORTA_ERR_IO,
                             "%s %s%s%s: expected a regular file to replace or a new name, got "
                             "%s (left as it is)",
                             what, path, linked ? " -> " : "", linked ? out->target : "",
                             core_file_kind(st.st_mode));
    }
    if (!status) status = create_temporary(out);
    /* The replacement keeps the permissions of the file it replaces. */
    if (!status && exists && fchmod(out->fd, st.st_mode & 07777) != 0)
        status = failure(out, "cannot set the new file's permissions");
    if (status) {
        if (out->fd >= 0) {
            close(out->fd);
            unlink(out->temp);
        }
        release(out);
    }
    return status;
}

porta_status *core_output_write(core_output *out, const void *data, size_t size) {
    const char *p = data;
    while (size) {
        ssize_t n = core_fault_write(out->fd, p, size);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return failure(out, "cannot write");
        p += n;
        size -= (size_t)n;
    }
    return NULL;
}

porta_status *core_output_stream(core_output *out, FILE **stream) {
    if (!out->stream) out->stream = fdopen(out->fd, "w");
    if (!out->stream) return failure(out, "cannot write");
    *stream = out->stream;
    return NULL;
}

/* Flushes, syncs and closes the temporary file; the descriptor is gone
 * afterwards whatever happens. */
static porta_status *finish(core_output *o) {
    porta_status *status = NULL;
    errno = 0;
    if (o->stream && (fflush(o->stream) != 0 || ferror(o->stream))) {
        if (!errno) errno = EIO; /* an earlier print failed; its errno is gone */
        status = failure(o, "cannot write");
    }
    if (!status && fsync(o->fd) != 0) status = failure(o, "cannot sync");
    int closed = o->stream ? fclose(o->stream) : close(o->fd);
    if (!status && closed != 0) status = failure(o, "cannot close");
    o->stream = NULL;
    o->fd = -1;
    return status;
}

porta_status *core_output_close(core_output *out, porta_status *status) {
    if (out->fd < 0) {
        release(out);
        return status;
    }
    if (status) {
        if (out->stream) fclose(out->stream);
        else close(out->fd);
    } else {
        status = finish(out);
        if (!status && rename(out->temp, out->target) != 0)
            status = porta_error(PORTA_ERR_IO, "%s %s: cannot rename %s to %s: %s", out->what,
                                 out->path, out->temp, out->target, strerror(errno));
    }
    if (status) unlink(out->temp);
    release(out);
    return status;
}

porta_status *core_output_file(const char *path, const char *what, const void *data,
                               size_t size) {
    core_output out;
    PORTA_TRY(core_output_open(path, what, &out));
    return core_output_close(&out, core_output_write(&out, data, size));
}
