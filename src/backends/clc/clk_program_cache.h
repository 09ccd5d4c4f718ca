/* A device's programs, the same path on both backends: a program's source
 * (the backend's prelude first) is looked up in memory, then in the disk
 * cache, and built only when neither has it; builds are traced and counted
 * (kernels compiled, disk hits, compile seconds). Each backend fills a
 * clk_compiler with its driver calls and keeps one clk_program_cache per
 * device.
 *
 * A disk entry's name hashes the full source, the build options and the
 * device's identity (for OpenCL its name, driver version and platform; for
 * CUDA the driver's version), so another driver or device never loads an
 * old binary; the entry also stores the source, compared on load. */
#ifndef PORTA_BACKENDS_CLC_CLK_PROGRAM_CACHE_H
#define PORTA_BACKENDS_CLC_CLK_PROGRAM_CACHE_H

#include <pthread.h>
#include <stddef.h>

#include "porta.h"
#include "runtime/device.h"

/* What a backend's driver does with programs. */
typedef struct clk_compiler {
    const char *label;      /* in messages: "OpenCL" */
    const char *cache_dir;  /* the kernel cache's folder for the backend: "opencl" */
    char magic[4];          /* a disk entry's first bytes */
    const char *extension;  /* a disk entry's name ends with it: ".clbin" */
    const char *build_name; /* the trace event of a build */
    /* The text every program begins with; NULL when out of memory. */
    const char *(*prelude)(void);
    /* Builds `full` into a program, and in *binary (malloc'd, *size bytes)
     * what the disk cache keeps of it (NULL: nothing). A failed build
     * leaves no program, and its error holds the compiler's log. */
    porta_status *(*build)(porta_device *device, const char *full, void **program,
                           void **binary, size_t *size);
    /* The program of a binary from the disk cache; NULL when the driver
     * refuses it (it is then built again and rewritten). */
    void *(*load)(porta_device *device, const void *binary, size_t size);
    /* Entry `name` of a program, valid as long as the program. */
    porta_status *(*kernel)(porta_device *device, void *program, const char *name,
                            void **kernel);
} clk_compiler;

typedef struct clk_program_entry clk_program_entry;

#define CLK_OPTIONS_MAX 8
#define CLK_IDENTITY_MAX 256
typedef struct clk_program_cache {
    const clk_compiler *compiler;
    const char *options[CLK_OPTIONS_MAX + 1]; /* the build options, NULL-terminated */
    char identity[CLK_IDENTITY_MAX];          /* the device's part of every disk-cache key */
    pthread_mutex_t lock;                     /* the program list */
    clk_program_entry *programs;              /* most recent first, kept for the process */
} clk_program_cache;

/* A cache with no program yet. `options` (NULL-terminated, at most
 * CLK_OPTIONS_MAX, living as long as the cache) and `identity` go into
 * every disk-cache key. */
void clk_program_cache_init(clk_program_cache *cache, const clk_compiler *compiler,
                            const char *const *options, const char *identity);

/* Entry `name` of the program of `source` on `device`, from the cache
 * (built when new); valid for the process. Thread-safe. */
porta_status *clk_program_kernel(clk_program_cache *cache, porta_device *device,
                                 const char *source, const char *name, void **kernel);

#endif
