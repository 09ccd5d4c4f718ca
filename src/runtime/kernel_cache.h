/* Where compiled kernels are kept on disk, shared by every backend that
 * compiles (the CPU's shared objects, OpenCL program binaries). */
#ifndef PORTA_RUNTIME_KERNEL_CACHE_H
#define PORTA_RUNTIME_KERNEL_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "porta.h"

/* The directory `sub` of the kernel cache ($PORTA_CACHE_DIR, else
 * $XDG_CACHE_HOME/porta, else ~/.cache/porta), created if missing. When it
 * cannot be made or is not a directory, a private temporary directory of
 * this process instead (said once on stderr, removed at exit): kernels
 * still build, they are just not kept. */
porta_status *rt_kernel_cache_dir(const char *sub, char *dir, size_t cap);

/* Writes `bytes` to dir/name atomically: a unique temporary file in the
 * same directory renamed into place, so processes sharing the cache see a
 * whole file or none. */
porta_status *rt_kernel_cache_write(const char *dir, const char *name, const void *data,
                                       size_t bytes);

/* ---- sealed entries ----
 * A compiled entry (a CPU shared object, an OpenCL or CUDA program binary)
 * ends with a trailer recording its length and a 64-bit FNV-1a hash of its
 * content, checked before the entry is used: dlopen of a truncated or
 * partly overwritten object faults (SIGBUS, SIGSEGV) and opening a FIFO
 * blocks, so damage must be caught first. The hash guards against damage
 * (a crash mid-write on a filesystem without ordered renames, a disk error,
 * a stray write), not against attackers: whoever can write the cache can
 * write a matching trailer. The trailer follows the content, where neither
 * the dynamic loader nor a driver's binary reader looks. */
#define RT_SEAL_BYTES 24

/* Appends the trailer to the file at `path` (a tool wrote its content). */
porta_status *rt_kernel_cache_seal(const char *path);

/* rt_kernel_cache_write of `data` followed by its trailer. */
porta_status *rt_kernel_cache_write_sealed(const char *dir, const char *name, const void *data,
                                           size_t bytes);

/* Whether `path` holds a sound sealed entry: a regular file (checked
 * before it is opened, and opened without blocking, so neither a device
 * node nor a FIFO can act or hang) whose trailer matches
 * its content. When `content` is not NULL it receives the content without
 * the trailer (malloc'd; free it) and *bytes its length. A missing entry is
 * quietly false. A damaged or foreign one is removed, whatever kind of file
 * it is short of a directory (the cache directory is Porta's), so that it
 * is rebuilt; the first in a process is said on stderr. */
bool rt_kernel_cache_check(const char *path, void **content, size_t *bytes);

/* FNV-1a of a string, then a separator, so "ab"+"c" differs from "a"+"bc":
 * the hash cache file names are built from. */
uint64_t rt_hash_text(uint64_t hash, const char *text);
#define RT_HASH_SEED 0xcbf29ce484222325ull

#endif
