/* Where compiled kernels are kept on disk, shared by every backend that
 * compiles (the CPU's shared objects, OpenCL program binaries). */
#ifndef PORTA_RUNTIME_KERNEL_CACHE_H
#define PORTA_RUNTIME_KERNEL_CACHE_H

#include <stddef.h>

#include "porta.h"

/* The directory `sub` of the kernel cache ($PORTA_CACHE_DIR, else
 * $XDG_CACHE_HOME/porta, else ~/.cache/porta), created if missing. When it
 * cannot be made, a private temporary directory of this process instead:
 * kernels still build, they are just not kept. */
porta_status *rt_kernel_cache_dir(const char *sub, char *dir, size_t cap);

/* Writes `bytes` to dir/name atomically: a unique temporary file in the
 * same directory renamed into place, so processes sharing the cache see a
 * whole file or none. */
porta_status *rt_kernel_cache_write(const char *dir, const char *name, const void *data,
                                       size_t bytes);

/* FNV-1a of a string, then a separator, so "ab"+"c" differs from "a"+"bc":
 * the hash cache file names are built from. */
uint64_t rt_hash_text(uint64_t hash, const char *text);
#define RT_HASH_SEED 0xcbf29ce484222325ull

#endif
