/* Programs by source: memory, then disk, then a build (clk_program_cache.h). */
#include "backends/clc/clk_program_cache.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/clc/clk_disk_cache.h"
#include "backends/clc/clk_source.h"
#include "runtime/compile_stats.h"
#include "core/status.h"
#include "runtime/kernel_cache.h"
#include "runtime/profiler.h"

#define KERNELS_PER_PROGRAM 16

struct clk_program_entry {
    clk_program_entry *next;
    uint64_t hash; /* of source, compared before the source itself */
    char *source;
    void *program;
    int kernel_count;
    char *kernel_names[KERNELS_PER_PROGRAM];
    void *kernels[KERNELS_PER_PROGRAM];
};

void clk_program_cache_init(clk_program_cache *cache, const clk_compiler *compiler,
                            const char *const *options, const char *identity) {
    cache->compiler = compiler;
    int n = 0;
    while (options[n] && n < CLK_OPTIONS_MAX) {
        cache->options[n] = options[n];
        n++;
    }
    cache->options[n] = NULL;
    snprintf(cache->identity, sizeof cache->identity, "%s", identity);
    pthread_mutex_init(&cache->lock, NULL);
    cache->programs = NULL;
}

static double seconds_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The program of `full`: its binary from the disk cache, else built (and
 * then written there). */
static porta_status *load_or_build(clk_program_cache *cache, porta_device *device,
                                   const char *full, void **program) {
    const clk_compiler *c = cache->compiler;
    char dir[768], name[64];
    clk_disk_entry_name(cache->options, cache->identity, full, c->extension, name, sizeof name);
    porta_status *dir_status = rt_kernel_cache_dir(c->cache_dir, dir, sizeof dir);
    size_t size = 0;
    void *binary = dir_status ? NULL : clk_disk_load(dir, name, c->magic, full, &size);
    *program = binary ? c->load(device, binary, size) : NULL;
    free(binary);
    if (*program) {
        compiler_count(COUNTER_KERNEL_DISK_HITS, 1);
        porta_status_free(dir_status);
        return NULL;
    }
    binary = NULL;
    double start = seconds_now();
    uint64_t begin = prof_begin();
    porta_status *status = c->build(device, full, program, &binary, &size);
    prof_end(PROF_COMPILE, device, c->build_name, name, -1, begin);
    compiler_count_compile_seconds(seconds_now() - start);
    if (!status) compiler_count(COUNTER_KERNELS_COMPILED, 1);
    if (!status && binary && !dir_status) clk_disk_save(dir, name, c->magic, full, binary, size);
    free(binary);
    porta_status_free(dir_status);
    return status;
}

/* The entry of `source`: memory, then load_or_build. Lock held. */
static porta_status *find_program(clk_program_cache *cache, porta_device *device,
                                  const char *source, clk_program_entry **out) {
    const clk_compiler *c = cache->compiler;
    uint64_t hash = rt_hash_text(RT_HASH_SEED, source);
    for (clk_program_entry *e = cache->programs; e; e = e->next)
        if (e->hash == hash && strcmp(e->source, source) == 0) {
            *out = e;
            return NULL;
        }
    char *full = clk_join(c->prelude(), source);
    clk_program_entry *entry = calloc(1, sizeof *entry);
    char *copy = strdup(source);
    porta_status *status = NULL;
    if (!full || !entry || !copy)
        status = porta_error(PORTA_ERR_OUT_OF_MEMORY, "%s: no memory for a program", c->label);
    if (!status) status = load_or_build(cache, device, full, &entry->program);
    free(full);
    if (status) {
        free(entry);
        free(copy);
        return status;
    }
    entry->hash = hash;
    entry->source = copy;
    entry->next = cache->programs;
    cache->programs = entry;
    *out = entry;
    return NULL;
}

/* Entry `name` of a program: kept from before, else got from the driver.
 * Lock held. */
static porta_status *find_kernel(clk_program_cache *cache, porta_device *device,
                                 clk_program_entry *e, const char *name, void **kernel) {
    const clk_compiler *c = cache->compiler;
    for (int i = 0; i < e->kernel_count; i++)
        if (strcmp(e->kernel_names[i], name) == 0) {
            *kernel = e->kernels[i];
            return NULL;
        }
    if (e->kernel_count == KERNELS_PER_PROGRAM)
        return porta_error(PORTA_ERR_INTERNAL, "%s: more than %d kernels in one program",
                           c->label, KERNELS_PER_PROGRAM);
    char *copy = strdup(name);
    if (!copy) return porta_error(PORTA_ERR_OUT_OF_MEMORY, "%s: no memory", c->label);
    porta_status *status = c->kernel(device, e->program, name, kernel);
    if (status) {
        free(copy);
        return status;
    }
    e->kernel_names[e->kernel_count] = copy;
    e->kernels[e->kernel_count++] = *kernel;
    return NULL;
}

porta_status *clk_program_kernel(clk_program_cache *cache, porta_device *device,
                                 const char *source, const char *name, void **kernel) {
    pthread_mutex_lock(&cache->lock);
    clk_program_entry *e = NULL;
    porta_status *status = find_program(cache, device, source, &e);
    if (!status) status = find_kernel(cache, device, e, name, kernel);
    pthread_mutex_unlock(&cache->lock);
    return status;
}
