/* The disk side of the program cache (clk_program_cache.h): an entry is
 * the 4-byte magic, the full source's length (uint64), the full source,
 * then the backend's binary, sealed (runtime/kernel_cache.h) so that a
 * damaged entry is rebuilt, never handed to the driver. */
#ifndef PORTA_BACKENDS_CLC_CLK_DISK_CACHE_H
#define PORTA_BACKENDS_CLC_CLK_DISK_CACHE_H

#include <stddef.h>

/* The entry's file name: two hashes of `full`, the options and `identity`,
 * then `extension`. */
void clk_disk_entry_name(const char *const *options, const char *identity, const char *full,
                         const char *extension, char *name, size_t cap);
/* The binary of dir/name (malloc'd, *size bytes) when that entry holds
 * `full`'s, else NULL. */
void *clk_disk_load(const char *dir, const char *name, const char magic[4], const char *full,
                    size_t *size);
/* Writes the entry of `full` and its binary; a failure only costs a build
 * next time. */
void clk_disk_save(const char *dir, const char *name, const char magic[4], const char *full,
                   const void *binary, size_t size);

#endif
