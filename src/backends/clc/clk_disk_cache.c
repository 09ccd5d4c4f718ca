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
    uint64_t a = rt_hash_text(RT_HASH_SEED, full);
    for (int i = 0; options[i]; i++) a = rt_hash_text(a, options[i]);
    uint64_t b = rt_hash_text(rt_hash_text(a ^ 0x9e3779b97f4a7c15ull, identity), full);
    snprintf(name, cap, "%016" PRIx64 "%016" PRIx64 "%s", a, b, extension);
}

void *clk_disk_load(const char *dir, const char *name, const char magic[4], const char *full,
                    size_t *size) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char found[4], *source = NULL, *binary = NULL;
    uint64_t source_len = 0;
    size_t full_len = strlen(full);
    long start, end;
    bool ok = fread(found, 1, 4, f) == 4 && memcmp(found, magic, 4) == 0 &&
              fread(&source_len, sizeof source_len, 1, f) == 1 && source_len == full_len &&
              (source = malloc(full_len + 1)) && fread(source, 1, full_len, f) == full_len &&
              memcmp(source, full, full_len) == 0 && (start = ftell(f)) > 0 &&
              fseek(f, 0, SEEK_END) == 0 && (end = ftell(f)) > start &&
              fseek(f, start, SEEK_SET) == 0 && (binary = malloc((size_t)(end - start))) &&
              fread(binary, 1, (size_t)(end - start), f) == (size_t)(end - start);
    free(source);
    fclose(f);
    if (!ok) {
        free(binary);
        return NULL;
    }
    *size = (size_t)(end - start);
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
    porta_status_free(rt_kernel_cache_write(dir, name, entry, header + size));
    free(entry);
}
