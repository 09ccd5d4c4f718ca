/* Sealed kernel cache entries: the trailer written after a compiled entry
 * and the check of it before the entry is loaded (see kernel_cache.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/status.h"
#include "runtime/kernel_cache.h"

/* The trailer: this magic, the content's length, its FNV-1a hash; the
 * numbers little-endian whatever the host. */
static const unsigned char seal_magic[8] = {'P', 'O', 'R', 'T', 'A', 'K', 'C', '1'};

#define FNV_PRIME 0x100000001b3ull

static uint64_t fnv1a(uint64_t hash, const unsigned char *bytes, size_t n) {
    for (size_t i = 0; i < n; i++) hash = (hash ^ bytes[i]) * FNV_PRIME;
    return hash;
}

static void put_u64(unsigned char *out, uint64_t value) {
    for (int i = 0; i < 8; i++) out[i] = (unsigned char)(value >> (8 * i));
}

static uint64_t get_u64(const unsigned char *in) {
    uint64_t value = 0;
    for (int i = 0; i < 8; i++) value |= (uint64_t)in[i] << (8 * i);
    return value;
}

static void make_seal(unsigned char seal[RT_SEAL_BYTES], uint64_t length, uint64_t hash) {
    memcpy(seal, seal_magic, sizeof seal_magic);
    put_u64(seal + 8, length);
    put_u64(seal + 16, hash);
}

/* Reads up to `cap` bytes, retrying short reads; returns how many came. */
static size_t read_fully(int fd, unsigned char *out, size_t cap) {
    size_t done = 0;
    while (done < cap) {
        ssize_t n = read(fd, out + done, cap - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        done += (size_t)n;
    }
    return done;
}

porta_status *rt_kernel_cache_seal(const char *path) {
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) return porta_error(PORTA_ERR_IO, "cannot seal %s: %s", path, strerror(errno));
    uint64_t hash = RT_HASH_SEED, length = 0;
    unsigned char chunk[16384];
    size_t n;
    while ((n = read_fully(fd, chunk, sizeof chunk)) > 0) {
        hash = fnv1a(hash, chunk, n);
        length += n;
        if (n < sizeof chunk) break;
    }
    unsigned char seal[RT_SEAL_BYTES];
    make_seal(seal, length, hash);
    porta_status *status = NULL;
    if (pwrite(fd, seal, sizeof seal, (off_t)length) != (ssize_t)sizeof seal)
        status = porta_error(PORTA_ERR_IO, "cannot seal %s: %s", path, strerror(errno));
    if (close(fd) != 0 && !status)
        status = porta_error(PORTA_ERR_IO, "cannot seal %s: %s", path, strerror(errno));
    return status;
}

porta_status *rt_kernel_cache_write_sealed(const char *dir, const char *name, const void *data,
                                           size_t bytes) {
    unsigned char *entry = malloc(bytes + RT_SEAL_BYTES);
    if (!entry)
        return porta_error(PORTA_ERR_OUT_OF_MEMORY, "out of memory writing %s/%s", dir, name);
    memcpy(entry, data, bytes);
    make_seal(entry + bytes, bytes, fnv1a(RT_HASH_SEED, data, bytes));
    porta_status *status = rt_kernel_cache_write(dir, name, entry, bytes + RT_SEAL_BYTES);
    free(entry);
    return status;
}

static atomic_bool damage_said;

/* Removes a damaged entry so that it is rebuilt; anything but a directory
 * goes, since nothing of the user's belongs in the cache directory. When
 * `seen` (the file found damaged) is given and the path now names another
 * file, another process has rebuilt the entry meanwhile: it stays. */
static void discard(const char *path, const char *problem, const struct stat *seen) {
    struct stat st;
    bool replaced = false, removed = false;
    if (lstat(path, &st) == 0 && !S_ISDIR(st.st_mode)) {
        replaced = seen && !S_ISLNK(st.st_mode) &&
                   (st.st_ino != seen->st_ino || st.st_dev != seen->st_dev);
        removed = !replaced && unlink(path) == 0;
    }
    if (replaced) return;
    if (atomic_exchange(&damage_said, true)) return;
    fprintf(stderr,
            "porta: kernel cache entry %s is damaged or foreign (%s); %s, the kernel is built "
            "again\n",
            path, problem, removed ? "removed it" : "cannot remove it");
}

/* The problem with the open entry `fd` of `st`, or NULL when it is sound;
 * its content goes to *content when asked for. */
static const char *check_open(int fd, const struct stat *st, unsigned char **content,
                              size_t *bytes, char *why, size_t why_cap) {
    if (!S_ISREG(st->st_mode)) return "not a regular file";
    if (st->st_size < RT_SEAL_BYTES) return "shorter than its trailer";
    size_t length = (size_t)st->st_size - RT_SEAL_BYTES;
    unsigned char seal[RT_SEAL_BYTES];
    if (pread(fd, seal, sizeof seal, (off_t)length) != (ssize_t)sizeof seal ||
        memcmp(seal, seal_magic, sizeof seal_magic) != 0)
        return "no integrity trailer at its end";
    if (get_u64(seal + 8) != length) {
        snprintf(why, why_cap, "%zu bytes, %llu recorded", length,
                 (unsigned long long)get_u64(seal + 8));
        return why;
    }
    unsigned char *copy = NULL;
    /* no memory to read it into: not known to be damaged, so it stays and
     * the caller (seeing no content) builds the kernel anew */
    if (content && !(copy = malloc(length ? length : 1))) return NULL;
    uint64_t hash = RT_HASH_SEED;
    unsigned char chunk[16384];
    size_t done = 0;
    while (done < length) {
        size_t want = length - done < sizeof chunk ? length - done : sizeof chunk;
        size_t n = read_fully(fd, chunk, want);
        hash = fnv1a(hash, chunk, n);
        if (copy) memcpy(copy + done, chunk, n);
        done += n;
        if (n < want) break;
    }
    if (done != length || hash != get_u64(seal + 16)) {
        free(copy);
        return "its content differs from the hash recorded";
    }
    if (content) *content = copy, *bytes = length;
    return NULL;
}

bool rt_kernel_cache_check(const char *path, void **content, size_t *bytes) {
    if (content) *content = NULL;
    struct stat st;
    /* Only a regular file is opened: opening a device node can act on the
     * device. O_NONBLOCK still, since the path may name a FIFO by the time
     * it is opened, and opening one for reading waits for a writer. */
    if (stat(path, &st) != 0) {
        int error = errno; /* no entry is a miss; a dangling link is damage */
        if (error != ENOENT || lstat(path, &st) == 0) discard(path, strerror(error), NULL);
        return false;
    }
    if (!S_ISREG(st.st_mode)) {
        discard(path, "not a regular file", NULL);
        return false;
    }
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        if (errno != ENOENT) discard(path, strerror(errno), NULL);
        return false;
    }
    char why[96];
    unsigned char *copy = NULL;
    bool known = fstat(fd, &st) == 0;
    const char *problem = !known ? strerror(errno)
                                 : check_open(fd, &st, content ? &copy : NULL, bytes, why,
                                              sizeof why);
    close(fd);
    if (problem) {
        discard(path, problem, known ? &st : NULL);
        return false;
    }
    if (content && !copy) return false; /* no memory to hand the content over */
    if (content) *content = copy;
    return true;
}
