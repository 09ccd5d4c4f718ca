/* Validation of a whole ZIP archive (see zip.h for what is checked). Every
 * number read from the file is checked against the file's size before it
 * is used as an offset, and every sum is overflow-checked, so a hostile
 * archive can only be rejected, never make the reader leave the file. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "io/utf8.h"
#include "io/zip_directory.h"

enum {
    END_SIZE = 22,        /* end of central directory record, without comment */
    LOCATOR_SIZE = 20,    /* ZIP64 end of central directory locator */
    END64_MIN_SIZE = 56,  /* ZIP64 end of central directory record */
    CENTRAL_SIZE = 46,    /* central directory entry, without name/extra/comment */
    LOCAL_SIZE = 30,      /* local header, without name/extra */
    MAX_COMMENT = 65535,
    ZIP64_EXTRA_ID = 0x0001,
};

#define SIG_LOCAL 0x04034b50u
#define SIG_CENTRAL 0x02014b50u
#define SIG_END 0x06054b50u
#define SIG_END64 0x06064b50u
#define SIG_LOCATOR 0x07064b50u
#define SIG_DESCRIPTOR 0x08074b50u
#define FLAG_ENCRYPTED 0x0001u
#define FLAG_DESCRIPTOR 0x0008u /* CRC and sizes follow the data */
#define FLAG_UTF8 0x0800u
#define U32_UNKNOWN 0xFFFFFFFFu /* "see the ZIP64 field" */

static uint16_t le16(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t le32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t le64(const unsigned char *p) { return le32(p) | (uint64_t)le32(p + 4) << 32; }

typedef unsigned long long ull; /* for printf */

/* A malformed archive: PORTA_ERR_INVALID_ARGUMENT with the message. */
static porta_status *bad(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static porta_status *bad(const char *fmt, ...) {
    char message[768];
    va_list args;
    va_start(args, fmt);
    vsnprintf(message, sizeof message, fmt, args);
    va_end(args);
    return porta_error(PORTA_ERR_INVALID_ARGUMENT, "%s", message);
}

/* Where the central directory is, from the end records. */
typedef struct end_records {
    uint64_t count, cd_offset, cd_size;
    uint64_t records_start; /* the first end record: the central directory ends here */
} end_records;

static porta_status *read_end64(const unsigned char *b, size_t end_pos, end_records *end) {
    const unsigned char *locator = b + end_pos - LOCATOR_SIZE;
    uint32_t disk = le32(locator + 4), disks = le32(locator + 16);
    uint64_t offset = le64(locator + 8);
    size_t locator_pos = end_pos - LOCATOR_SIZE;
    if (disk != 0 || disks != 1)
        return bad("ZIP64 locator: expected a single-disk archive (disk 0 of 1), got disk %u of %u",
                   disk, disks);
    if (offset > locator_pos || locator_pos - offset < END64_MIN_SIZE)
        return bad("ZIP64 locator: expected the ZIP64 end record at least %d bytes before the "
                   "locator at offset %zu, got offset %llu",
                   END64_MIN_SIZE, locator_pos, (ull)offset);
    const unsigned char *r = b + offset;
    if (le32(r) != SIG_END64)
        return bad("expected the ZIP64 end record's signature PK\\6\\6 at offset %llu, got 0x%08x",
                   (ull)offset, le32(r));
    uint64_t record_size = le64(r + 4);
    if (record_size != locator_pos - offset - 12)
        return bad("ZIP64 end record: expected its size field to reach the locator (%llu), got "
                   "%llu",
                   (ull)(locator_pos - offset - 12), (ull)record_size);
    uint32_t record_disk = le32(r + 16), cd_disk = le32(r + 20);
    uint64_t count_disk = le64(r + 24), count = le64(r + 32);
    if (record_disk || cd_disk)
        return bad("ZIP64 end record: expected disk numbers 0, got %u and %u", record_disk,
                   cd_disk);
    if (count_disk != count)
        return bad("ZIP64 end record: expected the entries on this disk (%llu) to equal the "
                   "total (%llu)",
                   (ull)count_disk, (ull)count);
    uint64_t cd_size = le64(r + 40), cd_offset = le64(r + 48);
    /* The 32-bit record holds each value or, when it does not fit, all ones. */
    if (end->count != 0xFFFF && end->count != count)
        return bad("expected the end record's entry count %llu to match the ZIP64 record's %llu",
                   (ull)end->count, (ull)count);
    if (end->cd_size != U32_UNKNOWN && end->cd_size != cd_size)
        return bad("expected the end record's central directory size %llu to match the ZIP64 "
                   "record's %llu",
                   (ull)end->cd_size, (ull)cd_size);
    if (end->cd_offset != U32_UNKNOWN && end->cd_offset != cd_offset)
        return bad("expected the end record's central directory offset %llu to match the ZIP64 "
                   "record's %llu",
                   (ull)end->cd_offset, (ull)cd_offset);
    end->count = count;
    end->cd_size = cd_size;
    end->cd_offset = cd_offset;
    end->records_start = offset;
    return NULL;
}

static porta_status *read_end(const unsigned char *b, size_t size, end_records *end) {
    if (size < END_SIZE)
        return bad("expected at least %d bytes (an end of central directory record), got a "
                   "%zu-byte file",
                   END_SIZE, size);
    /* The record is the last thing in the file but for its comment, whose
     * length it gives: the last position where that holds is the record. */
    size_t lowest = size - END_SIZE > MAX_COMMENT ? size - END_SIZE - MAX_COMMENT : 0;
    size_t pos = 0;
    bool found = false;
    for (size_t p = size - END_SIZE + 1; p-- > lowest;)
        if (le32(b + p) == SIG_END && p + END_SIZE + le16(b + p + 20) == size) {
            pos = p;
            found = true;
            break;
        }
    if (!found)
        return bad("expected an end of central directory record (PK\\5\\6) whose comment ends "
                   "the file, found none in the last %zu bytes",
                   size - lowest);
    unsigned disk = le16(b + pos + 4), cd_disk = le16(b + pos + 6);
    unsigned count_disk = le16(b + pos + 8), count = le16(b + pos + 10);
    if (disk || cd_disk)
        return bad("expected a single-disk archive (disk numbers 0), got disk %u with the "
                   "central directory on disk %u",
                   disk, cd_disk);
    if (count_disk != count)
        return bad("expected the entries on this disk (%u) to equal the total (%u)", count_disk,
                   count);
    end->count = count;
    end->cd_size = le32(b + pos + 12);
    end->cd_offset = le32(b + pos + 16);
    end->records_start = pos;
    if (pos >= LOCATOR_SIZE && le32(b + pos - LOCATOR_SIZE) == SIG_LOCATOR)
        PORTA_TRY(read_end64(b, pos, end));
    if (end->cd_offset > end->records_start ||
        end->records_start - end->cd_offset != end->cd_size)
        return bad("expected the central directory (offset %llu, %llu bytes) to end where the end "
                   "records begin (offset %llu)",
                   (ull)end->cd_offset, (ull)end->cd_size, (ull)end->records_start);
    if (end->count > end->cd_size / CENTRAL_SIZE)
        return bad("expected at most %llu entries in a central directory of %llu bytes, got %llu",
                   (ull)(end->cd_size / CENTRAL_SIZE), (ull)end->cd_size, (ull)end->count);
    return NULL;
}

static porta_status *check_name(const char *name, size_t length, size_t index) {
    char quoted[UTF8_EXCERPT_CAP];
    utf8_excerpt(name, length, quoted, sizeof quoted);
    size_t bad_offset;
    if (!length) return bad("entry %zu: expected a name, got an empty one", index);
    if (memchr(name, '\0', length))
        return bad("entry %zu (%s): expected a name without NUL characters, got one", index,
                   quoted);
    if (!utf8_is_valid(name, length, &bad_offset))
        return bad("entry %zu (%s): expected a UTF-8 name, got a bad sequence at byte %zu", index,
                   quoted, bad_offset);
    if (memchr(name, '\\', length))
        return bad("entry %zu (%s): expected '/' as the only separator, got a backslash", index,
                   quoted);
    if (name[0] == '/')
        return bad("entry %zu (%s): expected a relative name, got an absolute path", index,
                   quoted);
    for (size_t start = 0; start <= length;) {
        const char *slash = memchr(name + start, '/', length - start);
        size_t end = slash ? (size_t)(slash - name) : length;
        size_t n = end - start;
        if (n == 0)
            return bad("entry %zu (%s): expected no empty path component ('//' or a trailing "
                       "'/'), got one",
                       index, quoted);
        if ((n == 1 && name[start] == '.') || (n == 2 && !memcmp(name + start, "..", 2)))
            return bad("entry %zu (%s): expected no '.' or '..' path component, got one", index,
                       quoted);
        start = end + 1;
    }
    return NULL;
}

/* The ZIP64 block of an extra field, if any, after checking that the
 * field is a well-formed sequence of blocks. */
typedef struct zip64_block {
    const unsigned char *data;
    size_t length;
    bool present;
} zip64_block;

static porta_status *read_extra(const unsigned char *extra, size_t length, const char *where,
                                const char *quoted, zip64_block *out) {
    memset(out, 0, sizeof *out);
    for (size_t pos = 0; pos < length;) {
        if (length - pos < 4)
            return bad("entry %s: %s extra field: expected a 4-byte block header at byte %zu, got "
                       "%zu bytes",
                       quoted, where, pos, length - pos);
        unsigned id = le16(extra + pos), block = le16(extra + pos + 2);
        if (block > length - pos - 4)
            return bad("entry %s: %s extra field: expected block 0x%04x of %u bytes to end within "
                       "the field's %zu bytes, got it running past",
                       quoted, where, id, block, length);
        if (id == ZIP64_EXTRA_ID) {
            if (out->present)
                return bad("entry %s: %s extra field: expected one ZIP64 block, got two", quoted,
                           where);
            out->present = true;
            out->data = extra + pos + 4;
            out->length = block;
        }
        pos += 4 + (size_t)block;
    }
    return NULL;
}

/* What the central directory says of one entry, before its local header
 * is read. */
typedef struct central_entry {
    uint16_t flags, method;
    uint32_t crc;
    uint64_t size, local_offset;
    const unsigned char *name;
    size_t name_length;
} central_entry;

static porta_status *read_central(const unsigned char *p, uint64_t available, size_t index,
                                  central_entry *e, size_t *consumed) {
    if (available < CENTRAL_SIZE)
        return bad("entry %zu: expected a %d-byte central directory entry, got %llu bytes left in "
                   "the central directory",
                   index, CENTRAL_SIZE, (ull)available);
    if (le32(p) != SIG_CENTRAL)
        return bad("entry %zu: expected the central directory signature PK\\1\\2, got 0x%08x",
                   index, le32(p));
    size_t name_length = le16(p + 28), extra_length = le16(p + 30),
           comment_length = le16(p + 32);
    size_t total = CENTRAL_SIZE + name_length + extra_length + comment_length;
    if (total > available)
        return bad("entry %zu: expected its name, extra field and comment (%zu bytes) inside the "
                   "central directory, got %llu bytes left",
                   index, total - CENTRAL_SIZE, (ull)(available - CENTRAL_SIZE));
    e->name = p + CENTRAL_SIZE;
    e->name_length = name_length;
    PORTA_TRY(check_name((const char *)e->name, name_length, index));
    char quoted[UTF8_EXCERPT_CAP];
    utf8_excerpt((const char *)e->name, name_length, quoted, sizeof quoted);
    e->flags = le16(p + 8);
    e->method = le16(p + 10);
    if (e->flags & FLAG_ENCRYPTED)
        return porta_error(PORTA_ERR_UNSUPPORTED,
                           "entry %s: expected an unencrypted entry, got an encrypted one", quoted);
    if (e->flags & ~(FLAG_DESCRIPTOR | FLAG_UTF8))
        return porta_error(PORTA_ERR_UNSUPPORTED,
                           "entry %s: expected only the flags 0x0008 (data descriptor) and 0x0800 "
                           "(UTF-8 name), got 0x%04x",
                           quoted, e->flags);
    if (e->method != 0)
        return porta_error(PORTA_ERR_UNSUPPORTED,
                           "entry %s: expected a stored entry (method 0, as PyTorch writes), got "
                           "method %u%s",
                           quoted, e->method, e->method == 8 ? " (deflate)" : "");
    e->crc = le32(p + 16);
    uint64_t compressed = le32(p + 20), size = le32(p + 24), offset = le32(p + 42);
    unsigned disk = le16(p + 34);
    if (disk != 0)
        return bad("entry %s: expected it on disk 0, got disk %u", quoted, disk);
    zip64_block z;
    PORTA_TRY(read_extra(p + CENTRAL_SIZE + name_length, extra_length, "central", quoted, &z));
    /* The ZIP64 block holds, in this order, each value whose 32-bit field
     * is all ones, and nothing else. */
    uint64_t *fields[3] = {&size, &compressed, &offset};
    size_t needed = 0;
    for (int i = 0; i < 3; i++) needed += *fields[i] == U32_UNKNOWN;
    if (needed && !z.present)
        return bad("entry %s: expected a ZIP64 extra field for its %zu values of 0xFFFFFFFF, got "
                   "none",
                   quoted, needed);
    if (z.present && z.length != 8 * needed)
        return bad("entry %s: expected a ZIP64 extra field of %zu bytes (8 per value of "
                   "0xFFFFFFFF), got %zu",
                   quoted, 8 * needed, z.length);
    const unsigned char *value = z.data;
    for (int i = 0; i < 3; i++)
        if (*fields[i] == U32_UNKNOWN) {
            *fields[i] = le64(value);
            value += 8;
        }
    if (compressed != size)
        return bad("entry %s: expected equal stored and original sizes (stored entry), got %llu "
                   "and %llu",
                   quoted, (ull)compressed, (ull)size);
    e->size = size;
    e->local_offset = offset;
    *consumed = total;
    return NULL;
}

/* Checks the local header and data descriptor of entry `e`, which must lie
 * before `limit` (the central directory), and gives the entry's data and
 * the end of its last byte. */
static porta_status *read_local(unsigned char *b, uint64_t limit, const central_entry *e,
                                zip_entry *out, uint64_t *entry_end) {
    char quoted[UTF8_EXCERPT_CAP];
    utf8_excerpt((const char *)e->name, e->name_length, quoted, sizeof quoted);
    uint64_t at = e->local_offset;
    if (at > limit || limit - at < LOCAL_SIZE)
        return bad("entry %s: expected its %d-byte local header at offset %llu before the central "
                   "directory (offset %llu)",
                   quoted, LOCAL_SIZE, (ull)at, (ull)limit);
    const unsigned char *h = b + at;
    if (le32(h) != SIG_LOCAL)
        return bad("entry %s: expected the local header signature PK\\3\\4 at offset %llu, got "
                   "0x%08x",
                   quoted, (ull)at, le32(h));
    uint16_t flags = le16(h + 6), method = le16(h + 8);
    if (flags != e->flags)
        return bad("entry %s: expected the local header's flags 0x%04x to match the central "
                   "directory's 0x%04x",
                   quoted, flags, e->flags);
    if (method != e->method)
        return bad("entry %s: expected the local header's method %u to match the central "
                   "directory's %u",
                   quoted, method, e->method);
    size_t name_length = le16(h + 26), extra_length = le16(h + 28);
    uint64_t data_start = at + LOCAL_SIZE + name_length + extra_length;
    if (data_start > limit)
        return bad("entry %s: expected its local header (%llu bytes with name and extra field) to "
                   "end before the central directory (offset %llu)",
                   quoted, (ull)(data_start - at), (ull)limit);
    if (name_length != e->name_length || memcmp(h + LOCAL_SIZE, e->name, name_length)) {
        char local[UTF8_EXCERPT_CAP];
        return bad("entry %s: expected the local header's name to match the central directory's, "
                   "got %s",
                   quoted, utf8_excerpt((const char *)h + LOCAL_SIZE, name_length, local,
                                        sizeof local));
    }
    zip64_block z;
    PORTA_TRY(read_extra(h + LOCAL_SIZE + name_length, extra_length, "local", quoted, &z));
    if (e->size > limit - data_start)
        return bad("entry %s: expected its %llu bytes of data (from offset %llu) to end before "
                   "the central directory (offset %llu)",
                   quoted, (ull)e->size, (ull)data_start, (ull)limit);
    uint64_t data_end = data_start + e->size;
    uint32_t crc = le32(h + 14);
    uint64_t compressed = le32(h + 18), size = le32(h + 22);
    if (e->flags & FLAG_DESCRIPTOR) {
        /* The local header's values are placeholders (zero, or all ones for
         * ZIP64); the descriptor after the data holds the real ones, with
         * 64-bit sizes when the local header has a ZIP64 block. */
        bool crc_ok = crc == 0 || crc == e->crc;
        bool sizes_ok = (compressed == 0 || compressed == U32_UNKNOWN || compressed == e->size) &&
                        (size == 0 || size == U32_UNKNOWN || size == e->size);
        if (!crc_ok || !sizes_ok)
            return bad("entry %s: expected the local header's CRC and sizes to be placeholders "
                       "or the central directory's, got 0x%08x, %llu, %llu",
                       quoted, crc, (ull)compressed, (ull)size);
        uint64_t width = z.present ? 24 : 16;
        if (limit - data_end < width)
            return bad("entry %s: expected a %llu-byte data descriptor after its data (offset "
                       "%llu), got %llu bytes before the central directory",
                       quoted, (ull)width, (ull)data_end, (ull)(limit - data_end));
        const unsigned char *d = b + data_end;
        if (le32(d) != SIG_DESCRIPTOR)
            return bad("entry %s: expected the data descriptor signature PK\\7\\8 at offset %llu, "
                       "got 0x%08x",
                       quoted, (ull)data_end, le32(d));
        crc = le32(d + 4);
        compressed = z.present ? le64(d + 8) : le32(d + 8);
        size = z.present ? le64(d + 16) : le32(d + 12);
        *entry_end = data_end + width;
    } else {
        if (compressed == U32_UNKNOWN || size == U32_UNKNOWN) {
            if (!z.present || z.length < 16)
                return bad("entry %s: expected a local ZIP64 extra field with both sizes, got %s",
                           quoted, z.present ? "a shorter one" : "none");
            size = le64(z.data);
            compressed = le64(z.data + 8);
        }
        *entry_end = data_end;
    }
    if (crc != e->crc || compressed != e->size || size != e->size)
        return bad("entry %s: expected the local CRC-32 and sizes to match the central "
                   "directory's (0x%08x, %llu bytes), got 0x%08x, %llu and %llu",
                   quoted, e->crc, (ull)e->size, crc, (ull)compressed, (ull)size);
    out->data = b + data_start;
    out->size = e->size;
    out->data_offset = data_start;
    out->crc32 = e->crc;
    return NULL;
}

typedef struct span {
    uint64_t start, end;
    size_t index;
} span;

static int by_start(const void *a, const void *b) {
    const span *x = a, *y = b;
    return (x->start > y->start) - (x->start < y->start);
}

static int by_name(const void *a, const void *b) {
    const zip_entry *x = *(const zip_entry *const *)a, *y = *(const zip_entry *const *)b;
    return strcmp(x->name, y->name);
}

/* The entries must tile [0, central directory): a byte no entry accounts
 * for could hide data, and overlapping entries would alias each other. */
static porta_status *check_coverage(const zip_directory *d, span *spans, uint64_t cd_offset) {
    qsort(spans, d->count, sizeof *spans, by_start);
    uint64_t expected = 0;
    const char *previous = NULL;
    for (size_t i = 0; i < d->count; i++) {
        const char *name = d->entries[spans[i].index].name;
        char quoted[UTF8_EXCERPT_CAP], before[UTF8_EXCERPT_CAP];
        if (spans[i].start != expected) {
            if (!previous)
                return bad("expected the first entry at offset 0, got %s at offset %llu",
                           utf8_excerpt(name, strlen(name), quoted, sizeof quoted),
                           (ull)spans[i].start);
            return bad("expected entries to follow each other without gap or overlap: %s ends at "
                       "offset %llu, the next, %s, starts at %llu",
                       utf8_excerpt(previous, strlen(previous), before, sizeof before),
                       (ull)expected, utf8_excerpt(name, strlen(name), quoted, sizeof quoted),
                       (ull)spans[i].start);
        }
        expected = spans[i].end;
        previous = name;
    }
    if (expected != cd_offset)
        return bad("expected the central directory right after the last entry (offset %llu), got "
                   "it at offset %llu",
                   (ull)expected, (ull)cd_offset);
    return NULL;
}

static porta_status *check_names_unique(zip_directory *d) {
    for (size_t i = 0; i < d->count; i++) d->sorted[i] = &d->entries[i];
    qsort(d->sorted, d->count, sizeof *d->sorted, by_name);
    for (size_t i = 1; i < d->count; i++)
        if (!strcmp(d->sorted[i - 1]->name, d->sorted[i]->name)) {
            char quoted[UTF8_EXCERPT_CAP];
            const char *name = d->sorted[i]->name;
            return bad("expected unique entry names, got %s twice",
                       utf8_excerpt(name, strlen(name), quoted, sizeof quoted));
        }
    return NULL;
}

static porta_status *check_crcs(const zip_directory *d) {
    for (size_t i = 0; i < d->count; i++) {
        const zip_entry *e = &d->entries[i];
        uint32_t crc = zip_crc32(0, e->data, (size_t)e->size);
        if (crc != e->crc32) {
            char quoted[UTF8_EXCERPT_CAP];
            return bad("entry %s: expected CRC-32 0x%08x (the central directory's), got 0x%08x "
                       "over its %llu bytes",
                       utf8_excerpt(e->name, e->name_length, quoted, sizeof quoted), e->crc32, crc,
                       (ull)e->size);
        }
    }
    return NULL;
}

static porta_status *read_entries(unsigned char *b, const end_records *end, zip_directory *d,
                                  span *spans) {
    const unsigned char *p = b + end->cd_offset;
    uint64_t left = end->cd_size;
    char *name_out = d->names;
    for (size_t i = 0; i < d->count; i++) {
        central_entry e = {0};
        size_t consumed = 0;
        PORTA_TRY(read_central(p, left, i, &e, &consumed));
        zip_entry *out = &d->entries[i];
        memcpy(name_out, e.name, e.name_length);
        name_out[e.name_length] = '\0';
        out->name = name_out;
        out->name_length = e.name_length;
        name_out += e.name_length + 1;
        spans[i].start = e.local_offset;
        spans[i].index = i;
        PORTA_TRY(read_local(b, end->cd_offset, &e, out, &spans[i].end));
        p += consumed;
        left -= consumed;
    }
    if (left)
        return bad("expected the central directory's %llu entries to fill it, got %llu bytes "
                   "left over",
                   (ull)d->count, (ull)left);
    return NULL;
}

porta_status *zip_directory_read(unsigned char *bytes, size_t size, zip_directory *out) {
    memset(out, 0, sizeof *out);
    end_records end = {0};
    PORTA_TRY(read_end(bytes, size, &end));
    zip_directory d = {.count = (size_t)end.count};
    /* Each name is shorter than its central entry, so the central
     * directory's size bounds the names' total. */
    size_t n = d.count ? d.count : 1;
    d.entries = calloc(n, sizeof *d.entries);
    d.sorted = calloc(n, sizeof *d.sorted);
    d.names = malloc((size_t)end.cd_size + 1);
    span *spans = calloc(n, sizeof *spans);
    porta_status *status = NULL;
    if (!d.entries || !d.sorted || !d.names || !spans) {
        status = porta_error(PORTA_ERR_OUT_OF_MEMORY, "no memory for %zu entries", d.count);
        goto done;
    }
    CORE_TRY_GOTO(status, read_entries(bytes, &end, &d, spans), done);
    CORE_TRY_GOTO(status, check_coverage(&d, spans, end.cd_offset), done);
    CORE_TRY_GOTO(status, check_names_unique(&d), done);
    CORE_TRY_GOTO(status, check_crcs(&d), done);
done:
    free(spans);
    if (status)
        zip_directory_free(&d);
    else
        *out = d;
    return status;
}

void zip_directory_free(zip_directory *d) {
    free(d->entries);
    free(d->sorted);
    free(d->names);
    memset(d, 0, sizeof *d);
}
