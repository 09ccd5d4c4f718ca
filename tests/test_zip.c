/* The ZIP reader: archives of every layout PyTorch and other writers use,
 * PyTorch's own (tests/data/tiny.pt2), and a corpus of damaged archives
 * made here from valid ones, each rejected with a message naming what is
 * wrong. */
#include <libgen.h>
#include <stdlib.h>
#include <string.h>

#include "io/zip.h"
#include "test.h"

/* ---- helpers ---- */

static const char payload_a[] = "first entry's bytes";
static const unsigned char payload_b[] = {0, 1, 2, 3, 0xFF, 0x80, 0x7F, 'P', 'K', 3, 4};

static unsigned char *build(const zip_write_entry *entries, size_t count, zip_write_options options,
                            size_t *size) {
    unsigned char *bytes = NULL;
    porta_status *status = zip_write_memory(entries, count, &options, &bytes, size);
    if (status) {
        test_fail(__FILE__, __LINE__, "zip_write_memory: %s", porta_status_message(status));
        porta_status_free(status);
        return NULL;
    }
    return bytes;
}

/* Two entries, as PyTorch lays them out unless `options` say otherwise. */
static const zip_write_options torch_layout = {
    .descriptor = true, .zip64_end = true, .alignment = 64};
static const zip_write_options plain_layout = {0};

static unsigned char *two_entries(zip_write_options options, size_t *size) {
    zip_write_entry entries[2] = {{"m/a", payload_a, sizeof payload_a},
                                  {"m/data/b", payload_b, sizeof payload_b}};
    return build(entries, 2, options, size);
}

/* The offset of the nth (0-based) occurrence of a record signature. */
static size_t find_signature(const unsigned char *bytes, size_t size, uint32_t signature, int nth) {
    for (size_t i = 0; i + 4 <= size; i++) {
        uint32_t v = (uint32_t)bytes[i] | (uint32_t)bytes[i + 1] << 8 |
                     (uint32_t)bytes[i + 2] << 16 | (uint32_t)bytes[i + 3] << 24;
        if (v == signature && nth-- == 0) return i;
    }
    test_fail(__FILE__, __LINE__, "signature 0x%08x not found", signature);
    return 0;
}

static void put_le(unsigned char *p, uint64_t v, int bytes) {
    for (int i = 0; i < bytes; i++) p[i] = (unsigned char)(v >> (8 * i));
}

enum {
    SIG_LOCAL = 0x04034b50,
    SIG_CENTRAL = 0x02014b50,
    SIG_END = 0x06054b50,
    SIG_END64 = 0x06064b50,
    SIG_LOCATOR = 0x07064b50,
    SIG_DESCRIPTOR = 0x08074b50,
};

static porta_status *parse(const unsigned char *bytes, size_t size) {
    zip_archive *archive = NULL;
    porta_status *status = zip_parse(bytes, size, &archive);
    zip_close(archive);
    return status;
}

/* ---- valid archives ---- */

TEST(test_zip_reads_every_layout) {
    static const char utf8_name[] = "m/caf\xC3\xA9/\xE2\x82\xAC";
    zip_write_entry entries[4] = {{"m/a", payload_a, sizeof payload_a},
                                  {"m/empty", "", 0},
                                  {utf8_name, payload_b, sizeof payload_b},
                                  {"m/.data/version", "6\n", 2}};
    for (int layout = 0; layout < 16; layout++) {
        zip_write_options options = {.descriptor = layout & 1,
                                     .zip64_end = (layout >> 1) & 1,
                                     .zip64_entries = (layout >> 2) & 1,
                                     .alignment = (layout >> 3) & 1 ? 64 : 0};
        size_t size;
        unsigned char *bytes = build(entries, 4, options, &size);
        if (!bytes) return;
        zip_archive *archive = NULL;
        porta_status *status = zip_parse(bytes, size, &archive);
        CHECK_MSG(!status, "layout %d: %s", layout, status ? porta_status_message(status) : "");
        porta_status_free(status);
        if (archive) {
            CHECK(zip_count(archive) == 4);
            for (size_t i = 0; i < 4; i++) {
                const zip_entry *e = zip_entry_at(archive, i);
                CHECK(!strcmp(e->name, entries[i].name));
                CHECK(e->size == entries[i].size);
                CHECK(!memcmp(e->data, entries[i].data, entries[i].size));
                CHECK(!memcmp(bytes + e->data_offset, entries[i].data, entries[i].size));
                CHECK(zip_find(archive, entries[i].name) == e);
                if (options.alignment) CHECK(e->data_offset % 64 == 0);
            }
            CHECK(zip_find(archive, "m/missing") == NULL);
            CHECK(zip_entry_at(archive, 4) == NULL);
        }
        zip_close(archive);
        free(bytes);
    }
}

TEST(test_zip_reads_an_empty_archive) {
    size_t size;
    unsigned char *bytes = build(NULL, 0, torch_layout, &size);
    if (!bytes) return;
    zip_archive *archive = NULL;
    CHECK_OK(zip_parse(bytes, size, &archive));
    CHECK(zip_count(archive) == 0);
    zip_close(archive);
    free(bytes);
}

/* The fixture written by torch.export.save, mapped from its file. */
TEST(test_zip_opens_an_archive_written_by_pytorch) {
    char source[] = __FILE__;
    char path[1024];
    snprintf(path, sizeof path, "%s/data/tiny.pt2", dirname(source));
    zip_archive *archive = NULL;
    CHECK_OK(zip_open(path, &archive));
    CHECK(zip_count(archive) > 8);
    const zip_entry *format = zip_find(archive, "tiny/archive_format");
    CHECK(format && format->size == 3 && !memcmp(format->data, "pt2", 3));
    /* PyTorch aligns every record's data to 64 bytes. */
    for (size_t i = 0; i < zip_count(archive); i++)
        CHECK(zip_entry_at(archive, i)->data_offset % 64 == 0);
    zip_close(archive);
    CHECK_ERR(zip_open("/nonexistent/archive.pt2", &archive), PORTA_ERR_IO, "cannot open");
    CHECK_ERR(zip_open(NULL, &archive), PORTA_ERR_INVALID_ARGUMENT, "expected a path");
}

TEST(test_zip_crc32_matches_the_standard_check_value) {
    CHECK(zip_crc32(0, "123456789", 9) == 0xCBF43926u);
    CHECK(zip_crc32(0, "", 0) == 0);
    /* Continuing over pieces gives the CRC of the whole. */
    CHECK(zip_crc32(zip_crc32(0, "1234", 4), "56789", 5) == 0xCBF43926u);
}

/* ---- damaged archives ---- */

TEST(test_zip_rejects_every_truncation) {
    for (int layout = 0; layout < 2; layout++) {
        size_t size;
        unsigned char *bytes = two_entries(layout ? torch_layout : plain_layout, &size);
        if (!bytes) return;
        for (size_t cut = 0; cut < size; cut++) {
            porta_status *status = parse(bytes, cut);
            CHECK_MSG(status != NULL, "layout %d: a cut at %zu of %zu bytes was accepted", layout,
                      cut, size);
            if (status)
                CHECK_MSG(strstr(porta_status_message(status), "expected"),
                          "cut at %zu: unclear message: %s", cut, porta_status_message(status));
            porta_status_free(status);
        }
        free(bytes);
    }
}

TEST(test_zip_rejects_bad_names) {
    static const struct {
        const char *name;
        const char *needle;
    } cases[] = {
        {"m/../etc/passwd", "'..' path component"},
        {"..", "'..' path component"},
        {"m/./a", "'.' or '..'"},
        {"/etc/passwd", "absolute path"},
        {"m\\a", "backslash"},
        {"m//a", "empty path component"},
        {"m/a/", "empty path component"},
        {"m/\xFF", "UTF-8 name"},
        {"m/\xC0\xAF", "UTF-8 name"}, /* overlong '/' */
        {"", "empty one"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        zip_write_entry entry = {cases[i].name, payload_a, sizeof payload_a};
        size_t size;
        unsigned char *bytes = build(&entry, 1, torch_layout, &size);
        if (!bytes) return;
        CHECK_ERR(parse(bytes, size), PORTA_ERR_INVALID_ARGUMENT, cases[i].needle);
        free(bytes);
    }
    /* A NUL inside a name, in both headers. */
    zip_write_entry entry = {"m/aXb", payload_a, sizeof payload_a};
    size_t size;
    unsigned char *bytes = build(&entry, 1, plain_layout, &size);
    if (!bytes) return;
    bytes[30 + 3] = 0;
    bytes[find_signature(bytes, size, SIG_CENTRAL, 0) + 46 + 3] = 0;
    CHECK_ERR(parse(bytes, size), PORTA_ERR_INVALID_ARGUMENT, "without NUL");
    free(bytes);
    /* The same name twice. */
    zip_write_entry twice[2] = {{"m/a", "1", 1}, {"m/a", "2", 1}};
    bytes = build(twice, 2, torch_layout, &size);
    if (!bytes) return;
    CHECK_ERR(parse(bytes, size), PORTA_ERR_INVALID_ARGUMENT, "\"m/a\" twice");
    free(bytes);
}

/* One damage to a valid two-entry archive, and the message it must give. */
typedef struct damage {
    const char *what;
    bool torch; /* torch_layout, else plain_layout */
    bool zip64_entries;
    void (*apply)(unsigned char *bytes, size_t *size);
    porta_code code;
    const char *needle;
} damage;

static size_t central(unsigned char *b, size_t size, int nth) {
    return find_signature(b, size, SIG_CENTRAL, nth);
}

static void flip_data_byte(unsigned char *b, size_t *size) {
    (void)size;
    b[30 + 3] ^= 0x20; /* the first entry's data (plain layout, 3-byte name) */
}
static void deflate_method(unsigned char *b, size_t *size) {
    put_le(b + central(b, *size, 1) + 10, 8, 2);
}
static void encrypted_flag(unsigned char *b, size_t *size) {
    b[central(b, *size, 0) + 8] |= 1;
}
static void unknown_flag(unsigned char *b, size_t *size) {
    b[central(b, *size, 0) + 8] |= 2;
    b[6] |= 2;
}
static void local_flags_differ(unsigned char *b, size_t *size) {
    (void)size;
    b[7] ^= 0x08;
}
static void local_name_differs(unsigned char *b, size_t *size) {
    (void)size;
    b[30 + 2] = 'z';
}
static void offset_past_the_end(unsigned char *b, size_t *size) {
    put_le(b + central(b, *size, 1) + 42, 0x7FFFFFF0u, 4);
}
static void offset_to_the_other_entry(unsigned char *b, size_t *size) {
    put_le(b + central(b, *size, 1) + 42, 0, 4);
}
static void huge_sizes(unsigned char *b, size_t *size) {
    size_t c = central(b, *size, 0);
    put_le(b + c + 20, 0xFFFFFFF0u, 4);
    put_le(b + c + 24, 0xFFFFFFF0u, 4);
}
static void stored_sizes_differ(unsigned char *b, size_t *size) {
    put_le(b + central(b, *size, 0) + 20, 3, 4);
}
static void bad_local_signature(unsigned char *b, size_t *size) {
    (void)size;
    b[0] = 'Q';
}
static void bad_descriptor_signature(unsigned char *b, size_t *size) {
    b[find_signature(b, *size, SIG_DESCRIPTOR, 0)] = 'Q';
}
static void descriptor_crc_differs(unsigned char *b, size_t *size) {
    b[find_signature(b, *size, SIG_DESCRIPTOR, 0) + 4] ^= 1;
}
static void central_crc_differs(unsigned char *b, size_t *size) {
    b[central(b, *size, 0) + 16] ^= 1;
}
static void extra_block_runs_past(unsigned char *b, size_t *size) {
    /* The central ZIP64 block (zip64_entries) claims more than the field. */
    put_le(b + central(b, *size, 0) + 46 + 3 + 2, 200, 2);
}
static void zip64_size_overflows(unsigned char *b, size_t *size) {
    size_t c = central(b, *size, 0) + 46 + 3 + 4; /* the ZIP64 values */
    put_le(b + c, UINT64_MAX - 8, 8);
    put_le(b + c + 8, UINT64_MAX - 8, 8);
}
static void zip64_offset_huge(unsigned char *b, size_t *size) {
    put_le(b + central(b, *size, 1) + 46 + 8 + 4 + 16, (uint64_t)1 << 63, 8);
}
static void too_many_entries(unsigned char *b, size_t *size) {
    put_le(b + *size - 22 + 8, 0x7FFF, 2);
    put_le(b + *size - 22 + 10, 0x7FFF, 2);
}
static void one_entry_fewer(unsigned char *b, size_t *size) {
    put_le(b + *size - 22 + 8, 1, 2);
    put_le(b + *size - 22 + 10, 1, 2);
}
static void second_disk(unsigned char *b, size_t *size) { put_le(b + *size - 22 + 4, 1, 2); }
static void central_offset_wrong(unsigned char *b, size_t *size) {
    b[*size - 22 + 16] ^= 4;
}
static void trailing_byte(unsigned char *b, size_t *size) {
    b[*size] = 0; /* the buffer has room for it */
    (*size)++;
}
static void no_end_record(unsigned char *b, size_t *size) { b[*size - 22] = 'Q'; }
static void gap_before_central_directory(unsigned char *b, size_t *size) {
    /* Four bytes inserted before the central directory, which moves. */
    size_t c = central(b, *size, 0);
    memmove(b + c + 4, b + c, *size - c);
    memset(b + c, 0, 4);
    *size += 4;
    put_le(b + *size - 22 + 16, c + 4, 4);
}
static void locator_points_elsewhere(unsigned char *b, size_t *size) {
    put_le(b + find_signature(b, *size, SIG_LOCATOR, 0) + 8, 3, 8);
}
static void zip64_count_differs(unsigned char *b, size_t *size) {
    put_le(b + find_signature(b, *size, SIG_END64, 0) + 32, 3, 8);
    put_le(b + find_signature(b, *size, SIG_END64, 0) + 24, 3, 8);
}
static void zip64_record_size_wrong(unsigned char *b, size_t *size) {
    put_le(b + find_signature(b, *size, SIG_END64, 0) + 4, 45, 8);
}

static const damage damages[] = {
    {"bad CRC", false, false, flip_data_byte, PORTA_ERR_INVALID_ARGUMENT, "expected CRC-32"},
    {"deflate", true, false, deflate_method, PORTA_ERR_UNSUPPORTED, "method 8 (deflate)"},
    {"encrypted", true, false, encrypted_flag, PORTA_ERR_UNSUPPORTED, "encrypted"},
    {"unknown flag", false, false, unknown_flag, PORTA_ERR_UNSUPPORTED, "got 0x0802"},
    {"local flags", true, false, local_flags_differ, PORTA_ERR_INVALID_ARGUMENT,
     "local header's flags"},
    {"local name", false, false, local_name_differs, PORTA_ERR_INVALID_ARGUMENT,
     "local header's name"},
    {"offset past the end", false, false, offset_past_the_end, PORTA_ERR_INVALID_ARGUMENT,
     "local header at offset 2147483632"},
    {"two entries on one header", false, false, offset_to_the_other_entry,
     PORTA_ERR_INVALID_ARGUMENT, "local header's name"},
    {"huge sizes", false, false, huge_sizes, PORTA_ERR_INVALID_ARGUMENT,
     "expected its 4294967280 bytes of data"},
    {"stored sizes differ", false, false, stored_sizes_differ, PORTA_ERR_INVALID_ARGUMENT,
     "equal stored and original sizes"},
    {"local signature", false, false, bad_local_signature, PORTA_ERR_INVALID_ARGUMENT,
     "local header signature"},
    {"descriptor signature", true, false, bad_descriptor_signature, PORTA_ERR_INVALID_ARGUMENT,
     "data descriptor signature"},
    {"descriptor CRC", true, false, descriptor_crc_differs, PORTA_ERR_INVALID_ARGUMENT,
     "local CRC-32 and sizes to match"},
    {"central CRC", false, false, central_crc_differs, PORTA_ERR_INVALID_ARGUMENT,
     "local CRC-32 and sizes to match"},
    {"extra block past its field", true, true, extra_block_runs_past, PORTA_ERR_INVALID_ARGUMENT,
     "running past"},
    {"ZIP64 sizes overflow", true, true, zip64_size_overflows, PORTA_ERR_INVALID_ARGUMENT,
     "to end before the central directory"},
    {"ZIP64 offset huge", true, true, zip64_offset_huge, PORTA_ERR_INVALID_ARGUMENT,
     "local header at offset 9223372036854775808"},
    {"too many entries", false, false, too_many_entries, PORTA_ERR_INVALID_ARGUMENT,
     "entries in a central directory of"},
    {"one entry fewer", false, false, one_entry_fewer, PORTA_ERR_INVALID_ARGUMENT,
     "bytes left over"},
    {"second disk", false, false, second_disk, PORTA_ERR_INVALID_ARGUMENT, "single-disk"},
    {"central directory offset", false, false, central_offset_wrong, PORTA_ERR_INVALID_ARGUMENT,
     "to end where the end records begin"},
    {"trailing byte", false, false, trailing_byte, PORTA_ERR_INVALID_ARGUMENT,
     "whose comment ends the file"},
    {"no end record", false, false, no_end_record, PORTA_ERR_INVALID_ARGUMENT,
     "end of central directory record"},
    {"gap", false, false, gap_before_central_directory, PORTA_ERR_INVALID_ARGUMENT,
     "central directory right after the last entry"},
    {"locator", true, false, locator_points_elsewhere, PORTA_ERR_INVALID_ARGUMENT,
     "ZIP64 end record's signature"},
    {"ZIP64 count", true, false, zip64_count_differs, PORTA_ERR_INVALID_ARGUMENT,
     "to match the ZIP64 record's 3"},
    {"ZIP64 record size", true, false, zip64_record_size_wrong, PORTA_ERR_INVALID_ARGUMENT,
     "size field to reach the locator"},
};

TEST(test_zip_rejects_each_damage) {
    for (size_t i = 0; i < sizeof damages / sizeof damages[0]; i++) {
        const damage *d = &damages[i];
        zip_write_options options = d->torch ? torch_layout : plain_layout;
        options.zip64_entries = d->zip64_entries;
        size_t size;
        unsigned char *valid = two_entries(options, &size);
        if (!valid) return;
        CHECK_MSG(!parse(valid, size), "%s: the undamaged archive was rejected", d->what);
        unsigned char *bytes = malloc(size + 8);
        if (!bytes) {
            free(valid);
            return;
        }
        memcpy(bytes, valid, size);
        d->apply(bytes, &size);
        porta_status *status = parse(bytes, size);
        CHECK_MSG(status, "%s: accepted", d->what);
        if (status) {
            CHECK_MSG(porta_status_code(status) == d->code &&
                          strstr(porta_status_message(status), d->needle),
                      "%s: expected code %d and \"%s\", got %d: %s", d->what, (int)d->code,
                      d->needle, (int)porta_status_code(status), porta_status_message(status));
            porta_status_free(status);
        }
        free(bytes);
        free(valid);
    }
}

/* An entry whose local record lies inside another entry's data: each
 * header is valid, only the overlap betrays it. */
TEST(test_zip_rejects_overlapping_entries) {
    zip_write_entry inner = {"m/b", payload_b, sizeof payload_b};
    size_t inner_size;
    unsigned char *inner_bytes = build(&inner, 1, plain_layout, &inner_size);
    if (!inner_bytes) return;
    size_t record = 30 + 3 + sizeof payload_b; /* its local header and data */
    zip_write_entry entries[2] = {{"m/a", inner_bytes, record}, inner};
    size_t size;
    unsigned char *bytes = build(entries, 2, plain_layout, &size);
    if (bytes) {
        CHECK(!parse(bytes, size));
        /* b's central entry now points at the copy inside a's data. */
        put_le(bytes + central(bytes, size, 1) + 42, 30 + 3, 4);
        CHECK_ERR(parse(bytes, size), PORTA_ERR_INVALID_ARGUMENT, "without gap or overlap");
    }
    free(bytes);
    free(inner_bytes);
}

TEST(test_zip_argument_errors) {
    zip_archive *archive = NULL;
    CHECK_ERR(zip_parse(NULL, 4, &archive), PORTA_ERR_INVALID_ARGUMENT, "expected data");
    CHECK_ERR(zip_parse("", 0, NULL), PORTA_ERR_INVALID_ARGUMENT, "expected data");
    CHECK_ERR(zip_parse("", 0, &archive), PORTA_ERR_INVALID_ARGUMENT, "at least 22 bytes");
    CHECK(zip_count(NULL) == 0);
    CHECK(zip_entry_at(NULL, 0) == NULL);
    CHECK(zip_find(NULL, "a") == NULL);
    zip_close(NULL);
}
