/* Program binaries on disk, keyed by what they were built from. */
#include "backends/clc/clk_disk_cache.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "runtime/kernel_cache.h"

void clk_disk_entry_name(const char *const *options, const char *identity, const char *full,
                         const char *extension, char *name, size_t cap) {
    /* "sealed": entries from before seals are never read */
    uint64_t a = rt_hash_text(rt_hash_text(RT_HASH_SEED, "sealed"), full);
    for (int i = 0; options[i]; i++) a = rt_hash_text(a, options[i]);
    uint64_t b = rt_hash_text(rt_hash_text(a ^ 0x9e3779b97f4a7c15ull, identity), full);
    snprintf(name, cap, "%016" PRIx64 "%016" PRIx64 "%s", a, b, extension);
}

void *clk_disk_load(const char *dir, const char *name, const char magic[4], const char *full,
                    size_t *size) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    void *content = NULL;
    size_t bytes = 0;
    if (!rt_kernel_cache_check(path, &content, &bytes)) return NULL;
    const char *entry = content;
    uint64_t source_len = 0;
    size_t full_len = strlen(full), header = 4 + sizeof source_len + full_len;
    if (bytes > 4 + sizeof source_len) memcpy(&source_len, entry + 4, sizeof source_len);
    /* sound but another program's (a hash collision): built anew, then
     * written over it */
    bool ours = bytes > header && memcmp(entry, magic, 4) == 0 && source_len == full_len &&
                memcmp(entry + 4 + sizeof source_len, full, full_len) == 0;
    char *binary = ours ? malloc(bytes - header) : NULL;
    if (binary) memcpy(binary, entry + header, bytes - header);
    free(content);
    if (binary) *size = bytes - header;
    return binary;
}

void clk_disk_save(const char *dir, const char *name, const char magic[4], const char *full,
                   const void *binary, size_t size) {
    uint64_t source_len = strlen(full);
    size_t header = 4 + sizeof source_len + source_len;
    char *entry = malloc(header + size);
    if (!entry) return;
    memcpy(entry, magic, 4);
    memcpy(entry + 4, &source_len, sizeof source_len);
    memcpy(entry + 4 + sizeof source_len, full, source_len);
    memcpy(entry + header, binary, size);
    porta_status_free(rt_kernel_cache_write_sealed(dir, name, entry, header + size));
    free(entry);
}
