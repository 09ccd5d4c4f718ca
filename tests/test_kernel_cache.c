/* Sealed kernel cache entries (runtime/kernel_cache.h) as the OpenCL and
 * CUDA program caches use them (clk_disk_cache.h): a saved binary comes
 * back whole; a truncated, bit-flipped or unsealed entry, a FIFO, a link to
 * one, a dangling link or a device node is refused without blocking and
 * removed, so the program is rebuilt instead of a damaged binary reaching
 * the driver. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "backends/clc/clk_disk_cache.h"
#include "runtime/kernel_cache.h"
#include "test.h"

static const char magic[4] = {'T', 'E', 'S', 'T'};
static const char *const no_options[] = {NULL};
static const char source[] = "__kernel void k(__global float *x) { x[0] = 1; }";

/* A saved entry: its directory and file name, and the binary saved. */
typedef struct saved {
    char dir[600], name[64], path[700];
    unsigned char binary[3000];
} saved;

static void save(saved *s, const char *root) {
    snprintf(s->dir, sizeof s->dir, "%s/opencl", root);
    mkdir(s->dir, 0755);
    clk_disk_entry_name(no_options, "test device", source, ".bin", s->name, sizeof s->name);
    snprintf(s->path, sizeof s->path, "%s/%s", s->dir, s->name);
    for (size_t i = 0; i < sizeof s->binary; i++) s->binary[i] = (unsigned char)(i * 7 + 3);
    clk_disk_save(s->dir, s->name, magic, source, s->binary, sizeof s->binary);
}

static unsigned char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    unsigned char *bytes = malloc(1 << 16);
    *len = f && bytes ? fread(bytes, 1, 1 << 16, f) : 0;
    if (f) fclose(f);
    return bytes;
}

static void write_file(const char *path, const unsigned char *bytes, size_t len) {
    unlink(path);
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(bytes, 1, len, f) == len);
    if (f) fclose(f);
}

/* Loads the entry: the saved binary when `sound`, else nothing, and then
 * the path must be gone (removed, for a rebuild to take its place). */
static void expect_load(const saved *s, bool sound, const char *what) {
    size_t size = 0;
    unsigned char *binary = clk_disk_load(s->dir, s->name, magic, source, &size);
    if (sound) {
        CHECK_MSG(binary && size == sizeof s->binary &&
                      memcmp(binary, s->binary, size) == 0,
                  "%s: the saved binary did not come back", what);
    } else {
        CHECK_MSG(!binary, "%s: a damaged entry was handed out", what);
        struct stat st;
        CHECK_MSG(lstat(s->path, &st) != 0, "%s: the damaged entry was not removed", what);
    }
    free(binary);
}

TEST(kernel_cache_sealed_entries_refuse_damage) {
    const char *root = test_cache_begin();
    saved *s = calloc(1, sizeof *s);
    save(s, root);
    expect_load(s, true, "a fresh entry");
    size_t len = 0;
    unsigned char *good = read_file(s->path, &len);
    CHECK(len == 4 + 8 + strlen(source) + sizeof s->binary + RT_SEAL_BYTES);

    write_file(s->path, good, len / 2);
    expect_load(s, false, "truncated to half");

    unsigned char *flipped = malloc(len);
    memcpy(flipped, good, len);
    for (size_t i = 0; i < 40; i++) flipped[len / 2 + i] ^= 0xa5;
    write_file(s->path, flipped, len);
    expect_load(s, false, "40 bytes flipped");
    free(flipped);

    write_file(s->path, good, len - RT_SEAL_BYTES);
    expect_load(s, false, "no seal (an entry from before seals)");

    CHECK(mkfifo(s->path, 0644) == 0);
    expect_load(s, false, "a FIFO");

    char fifo[720];
    snprintf(fifo, sizeof fifo, "%s/elsewhere.fifo", root);
    CHECK(mkfifo(fifo, 0644) == 0);
    CHECK(symlink(fifo, s->path) == 0);
    expect_load(s, false, "a link to a FIFO");
    struct stat st;
    CHECK_MSG(lstat(fifo, &st) == 0 && S_ISFIFO(st.st_mode), "the link's target was removed");

    CHECK(symlink("nowhere", s->path) == 0);
    expect_load(s, false, "a dangling link");

    /* a copy of /dev/null, where the system lets this process make one */
    if (mknod(s->path, S_IFCHR | 0666, makedev(1, 3)) == 0) expect_load(s, false, "a device");

    CHECK(mkdir(s->path, 0755) == 0); /* a directory stays: it may hold anything */
    size_t size = 0;
    CHECK(!clk_disk_load(s->dir, s->name, magic, source, &size));
    CHECK(lstat(s->path, &st) == 0 && S_ISDIR(st.st_mode));
    rmdir(s->path);

    expect_load(s, false, "a missing entry");
    save(s, root); /* rebuilt: sound again */
    expect_load(s, true, "a rebuilt entry");
    free(good);
    free(s);
    test_cache_end();
}
