/* Writing ZIP archives of stored entries in memory, laid out as PyTorch's
 * writer lays them out (see zip_write_options): what the tests and fuzz
 * targets build their archives with. */
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "core/text.h"
#include "io/zip.h"

static void put16(core_text *b, uint64_t v) {
    unsigned char p[2] = {(unsigned char)v, (unsigned char)(v >> 8)};
    text_append(b, p, 2);
}
static void put32(core_text *b, uint64_t v) {
    put16(b, v & 0xFFFF);
    put16(b, (v >> 16) & 0xFFFF);
}
static void put64(core_text *b, uint64_t v) {
    put32(b, v & 0xFFFFFFFFu);
    put32(b, v >> 32);
}
static uint64_t at_most(uint64_t v, uint64_t cap) { return v < cap ? v : cap; }

enum { LOCAL_SIZE = 30 };

static void write_local(core_text *b, const zip_write_entry *e, const zip_write_options *o,
                        uint32_t crc) {
    size_t name_length = strlen(e->name);
    size_t zip64 = o->zip64_entries ? 4 + 16 : 0;
    size_t padding = 0;
    if (o->alignment > 1) {
        /* The padding block's own 4-byte header counts too. */
        size_t unpadded = b->length + LOCAL_SIZE + name_length + zip64 + 4;
        padding = (o->alignment - unpadded % o->alignment) % o->alignment;
    }
    uint64_t known = o->descriptor ? 0 : (o->zip64_entries ? 0xFFFFFFFFu : e->size);
    put32(b, 0x04034b50u);
    put16(b, o->zip64_entries ? 45 : 20);
    put16(b, (o->descriptor ? 0x0008u : 0) | 0x0800u);
    put16(b, 0); /* stored */
    put32(b, 0); /* time and date */
    put32(b, o->descriptor ? 0 : crc);
    put32(b, known);
    put32(b, known);
    put16(b, name_length);
    put16(b, zip64 + (o->alignment > 1 ? 4 + padding : 0));
    text_append(b, e->name, name_length);
    if (zip64) {
        put16(b, 0x0001);
        put16(b, 16);
        put64(b, e->size);
        put64(b, e->size);
    }
    if (o->alignment > 1) {
        put16(b, 0x4246); /* "FB", PyTorch's padding block */
        put16(b, padding);
        for (size_t i = 0; i < padding; i++) text_append(b, "Z", 1);
    }
    text_append(b, e->data, e->size);
    if (o->descriptor) {
        put32(b, 0x08074b50u);
        put32(b, crc);
        if (o->zip64_entries) {
            put64(b, e->size);
            put64(b, e->size);
        } else {
            put32(b, e->size);
            put32(b, e->size);
        }
    }
}

static void write_central(core_text *b, const zip_write_entry *e, const zip_write_options *o,
                          uint32_t crc, uint64_t offset) {
    size_t name_length = strlen(e->name);
    uint64_t size = o->zip64_entries ? 0xFFFFFFFFu : e->size;
    put32(b, 0x02014b50u);
    put16(b, o->zip64_entries ? 45 : 20); /* made by */
    put16(b, o->zip64_entries ? 45 : 20); /* needed */
    put16(b, (o->descriptor ? 0x0008u : 0) | 0x0800u);
    put16(b, 0);
    put32(b, 0);
    put32(b, crc);
    put32(b, size);
    put32(b, size);
    put16(b, name_length);
    put16(b, o->zip64_entries ? 4 + 24 : 0);
    put16(b, 0); /* comment */
    put16(b, 0); /* disk */
    put16(b, 0); /* internal attributes */
    put32(b, 0); /* external attributes */
    put32(b, o->zip64_entries ? 0xFFFFFFFFu : offset);
    text_append(b, e->name, name_length);
    if (o->zip64_entries) {
        put16(b, 0x0001);
        put16(b, 24);
        put64(b, e->size);
        put64(b, e->size);
        put64(b, offset);
    }
}

static void write_end(core_text *b, const zip_write_options *o, uint64_t count,
                      uint64_t cd_offset) {
    uint64_t cd_size = b->length - cd_offset;
    if (o->zip64_end) {
        uint64_t record = b->length;
        put32(b, 0x06064b50u);
        put64(b, 44);
        put16(b, 45);
        put16(b, 45);
        put32(b, 0);
        put32(b, 0);
        put64(b, count);
        put64(b, count);
        put64(b, cd_size);
        put64(b, cd_offset);
        put32(b, 0x07064b50u);
        put32(b, 0);
        put64(b, record);
        put32(b, 1);
    }
    put32(b, 0x06054b50u);
    put16(b, 0);
    put16(b, 0);
    put16(b, at_most(count, 0xFFFF));
    put16(b, at_most(count, 0xFFFF));
    put32(b, at_most(cd_size, 0xFFFFFFFFu));
    put32(b, at_most(cd_offset, 0xFFFFFFFFu));
    put16(b, 0);
}

porta_status *zip_write_memory(const zip_write_entry *entries, size_t count,
                               const zip_write_options *options, unsigned char **out,
                               size_t *size) {
    if ((!entries && count) || !options || !out || !size)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "zip_write_memory: expected entries, options and output pointers, got "
                           "NULL");
    uint64_t *offsets = calloc(count ? count : 1, sizeof *offsets);
    uint32_t *crcs = calloc(count ? count : 1, sizeof *crcs);
    core_text b = {0}; /* the archive's bytes */
    if (!offsets || !crcs) b.failed = true;
    for (size_t i = 0; i < count && !b.failed; i++) {
        if (!entries[i].name || (!entries[i].data && entries[i].size)) {
            free(offsets);
            free(crcs);
            text_free(&b);
            return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                               "zip_write_memory: entry %zu: expected a name and data, got NULL",
                               i);
        }
        crcs[i] = zip_crc32(0, entries[i].data, entries[i].size);
        offsets[i] = b.length;
        write_local(&b, &entries[i], options, crcs[i]);
    }
    uint64_t cd_offset = b.length;
    for (size_t i = 0; i < count && !b.failed; i++)
        write_central(&b, &entries[i], options, crcs[i], offsets[i]);
    write_end(&b, options, count, cd_offset);
    free(offsets);
    free(crcs);
    if (b.failed) {
        text_free(&b);
        return porta_error(PORTA_ERR_OUT_OF_MEMORY, "zip_write_memory: no memory for the archive");
    }
    *out = (unsigned char *)b.chars;
    *size = b.length;
    return NULL;
}
