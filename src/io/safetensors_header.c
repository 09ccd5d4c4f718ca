/* Validation of a safetensors file's header and layout. Every number taken
 * from the file is checked before it is used in arithmetic, and every
 * product and sum is overflow-checked, so a hostile header can only be
 * rejected, never make the reader address memory outside the file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "io/safetensors.h"
#include "io/utf8.h"

/* Arrays and objects in a valid header nest three deep at most. */
enum { HEADER_MAX_DEPTH = 8 };

static const struct {
    const char *name;
    porta_dtype dtype;
} dtype_names[] = {
    {"BOOL", PORTA_BOOL}, {"U8", PORTA_U8},   {"I8", PORTA_I8},     {"I16", PORTA_I16},
    {"I32", PORTA_I32},   {"I64", PORTA_I64}, {"F16", PORTA_F16},   {"BF16", PORTA_BF16},
    {"F32", PORTA_F32},   {"F64", PORTA_F64}, {"C64", PORTA_C64},
};
enum { DTYPE_NAME_COUNT = sizeof dtype_names / sizeof dtype_names[0] };

const char *st_dtype_name(porta_dtype dtype) {
    for (int i = 0; i < DTYPE_NAME_COUNT; i++)
        if (dtype_names[i].dtype == dtype) return dtype_names[i].name;
    return NULL;
}

bool st_dtype_from_name(const char *name, size_t length, porta_dtype *out) {
    for (int i = 0; i < DTYPE_NAME_COUNT; i++)
        if (strlen(dtype_names[i].name) == length && !memcmp(dtype_names[i].name, name, length)) {
            *out = dtype_names[i].dtype;
            return true;
        }
    return false;
}

static porta_status *invalid(const char *fmt, const char *name, const char *detail) {
    char quoted[UTF8_EXCERPT_CAP];
    return porta_error(PORTA_ERR_INVALID_ARGUMENT, fmt,
                       utf8_excerpt(name, strlen(name), quoted, sizeof quoted), detail);
}

/* A non-negative integer that fits int64, or an error naming `what`. */
static porta_status *read_count(const json_value *v, const char *tensor, const char *what,
                                int64_t *out) {
    if (v->type != JSON_NUMBER || !v->as.number.is_integer || v->as.number.integer < 0) {
        char detail[96];
        if (v->type != JSON_NUMBER)
            snprintf(detail, sizeof detail, "%s", json_type_name(v->type));
        else if (v->as.number.is_integer)
            snprintf(detail, sizeof detail, "%lld", (long long)v->as.number.integer);
        else
            snprintf(detail, sizeof detail, "%.17g (not an integer within int64)",
                     v->as.number.value);
        char quoted[UTF8_EXCERPT_CAP];
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "tensor %s: expected a non-negative integer in %s, got %s",
                           utf8_excerpt(tensor, strlen(tensor), quoted, sizeof quoted), what,
                           detail);
    }
    *out = v->as.number.integer;
    return NULL;
}

static porta_status *read_dtype(const json_value *v, const char *name, st_tensor *t) {
    if (v->type != JSON_STRING)
        return invalid("tensor %s: expected \"dtype\" to be a string, got %s", name,
                       json_type_name(v->type));
    if (st_dtype_from_name(v->as.string.chars, v->as.string.length, &t->dtype)) return NULL;
    char quoted[UTF8_EXCERPT_CAP], given[UTF8_EXCERPT_CAP];
    return porta_error(PORTA_ERR_DTYPE,
                       "tensor %s: expected a dtype among BOOL U8 I8 I16 I32 I64 F16 BF16 F32 "
                       "F64 C64, got %s",
                       utf8_excerpt(name, strlen(name), quoted, sizeof quoted),
                       utf8_excerpt(v->as.string.chars, v->as.string.length, given, sizeof given));
}

static porta_status *read_shape(const json_value *v, const char *name, st_tensor *t) {
    if (v->type != JSON_ARRAY)
        return invalid("tensor %s: expected \"shape\" to be an array, got %s", name,
                       json_type_name(v->type));
    if (v->as.array.count > PORTA_MAX_RANK) {
        char quoted[UTF8_EXCERPT_CAP];
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "tensor %s: expected at most %d dimensions, got %zu",
                           utf8_excerpt(name, strlen(name), quoted, sizeof quoted),
                           PORTA_MAX_RANK, v->as.array.count);
    }
    t->rank = (int)v->as.array.count;
    for (int d = 0; d < t->rank; d++)
        PORTA_TRY(read_count(v->as.array.items[d], name, "\"shape\"", &t->sizes[d]));
    return NULL;
}

static porta_status *read_offsets(const json_value *v, const char *name, st_tensor *t) {
    if (v->type != JSON_ARRAY || v->as.array.count != 2) {
        char detail[64];
        if (v->type == JSON_ARRAY)
            snprintf(detail, sizeof detail, "an array of %zu", v->as.array.count);
        else
            snprintf(detail, sizeof detail, "%s", json_type_name(v->type));
        return invalid("tensor %s: expected \"data_offsets\" to be [begin, end], got %s", name,
                       detail);
    }
    int64_t begin, end;
    PORTA_TRY(read_count(v->as.array.items[0], name, "\"data_offsets\"", &begin));
    PORTA_TRY(read_count(v->as.array.items[1], name, "\"data_offsets\"", &end));
    if (end < begin) {
        char quoted[UTF8_EXCERPT_CAP];
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "tensor %s: expected data_offsets begin <= end, got [%lld, %lld]",
                           utf8_excerpt(name, strlen(name), quoted, sizeof quoted),
                           (long long)begin, (long long)end);
    }
    t->begin = (uint64_t)begin;
    t->end = (uint64_t)end;
    return NULL;
}

/* The byte size product(shape) * dtype size must equal end - begin; the
 * product is folded left to right with overflow checks, as the reference
 * implementation does, and must fit int64 (Porta's sizes). */
static porta_status *check_size(const st_tensor *t) {
    char quoted[UTF8_EXCERPT_CAP], shape[CORE_SHAPE_STR_CAP];
    uint64_t bytes = porta_dtype_size(t->dtype);
    for (int d = 0; d < t->rank; d++) {
        uint64_t size = (uint64_t)t->sizes[d];
        if (size && bytes > (uint64_t)INT64_MAX / size)
            return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                               "tensor %s: expected a shape whose byte size fits in 63 bits, got "
                               "%s of %s (the product overflows)",
                               utf8_excerpt(t->name, strlen(t->name), quoted, sizeof quoted),
                               core_format_shape(shape, sizeof shape, t->rank, t->sizes),
                               st_dtype_name(t->dtype));
        bytes *= size;
    }
    if (bytes != t->end - t->begin)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "tensor %s: expected %llu bytes for shape %s of %s, got data_offsets "
                           "[%llu, %llu] of %llu bytes",
                           utf8_excerpt(t->name, strlen(t->name), quoted, sizeof quoted),
                           (unsigned long long)bytes,
                           core_format_shape(shape, sizeof shape, t->rank, t->sizes),
                           st_dtype_name(t->dtype), (unsigned long long)t->begin,
                           (unsigned long long)t->end, (unsigned long long)(t->end - t->begin));
    return NULL;
}

typedef porta_status *(*field_reader)(const json_value *, const char *, st_tensor *);
static const field_reader readers[3] = {read_dtype, read_shape, read_offsets};

static porta_status *read_tensor(const json_member *m, st_tensor *t) {
    t->name = m->key;
    if (strlen(m->key) != m->key_length) {
        char quoted[UTF8_EXCERPT_CAP];
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "tensor %s: expected a name without NUL characters, got one",
                           utf8_excerpt(m->key, m->key_length, quoted, sizeof quoted));
    }
    const json_value *v = m->value;
    if (v->type != JSON_OBJECT)
        return invalid("tensor %s: expected an object with dtype, shape and data_offsets, got %s",
                       m->key, json_type_name(v->type));
    bool seen[3] = {false, false, false};
    static const char *const fields[3] = {"dtype", "shape", "data_offsets"};
    for (size_t i = 0; i < v->as.object.count; i++) {
        const json_member *f = &v->as.object.members[i];
        int which = -1;
        for (int k = 0; k < 3; k++)
            if (f->key_length == strlen(fields[k]) && !memcmp(f->key, fields[k], f->key_length))
                which = k;
        if (which < 0) {
            char field[UTF8_EXCERPT_CAP];
            return invalid("tensor %s: expected only the fields dtype, shape and data_offsets, "
                           "got %s",
                           m->key, utf8_excerpt(f->key, f->key_length, field, sizeof field));
        }
        seen[which] = true;
        PORTA_TRY(readers[which](f->value, m->key, t));
    }
    for (int k = 0; k < 3; k++)
        if (!seen[k]) return invalid("tensor %s: expected the field \"%s\", got none", m->key,
                                     fields[k]);
    return check_size(t);
}

static porta_status *read_metadata(const json_value *v, st_header *h) {
    if (v->type != JSON_OBJECT)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "expected \"__metadata__\" to be an object of strings, got %s",
                           json_type_name(v->type));
    h->metadata_count = v->as.object.count;
    if (!h->metadata_count) return NULL;
    h->metadata = malloc(h->metadata_count * sizeof *h->metadata);
    if (!h->metadata)
        return porta_error(PORTA_ERR_OUT_OF_MEMORY, "no memory for the metadata's %zu entries",
                           h->metadata_count);
    for (size_t i = 0; i < h->metadata_count; i++) {
        const json_member *m = &v->as.object.members[i];
        char key[UTF8_EXCERPT_CAP];
        utf8_excerpt(m->key, m->key_length, key, sizeof key);
        if (m->value->type != JSON_STRING)
            return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                               "\"__metadata__\" entry %s: expected a string value, got %s", key,
                               json_type_name(m->value->type));
        if (strlen(m->key) != m->key_length ||
            strlen(m->value->as.string.chars) != m->value->as.string.length)
            return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                               "\"__metadata__\" entry %s: expected a key and value without NUL "
                               "characters, got one",
                               key);
        h->metadata[i] = (porta_safetensors_pair){m->key, m->value->as.string.chars};
    }
    return NULL;
}

static int compare_ranges(const void *a, const void *b) {
    const st_tensor *x = a, *y = b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return (x->json_index > y->json_index) - (x->json_index < y->json_index);
}

static int compare_names(const void *a, const void *b) {
    return strcmp((*(const st_tensor *const *)a)->name, (*(const st_tensor *const *)b)->name);
}

/* Ranges sorted by begin must tile [0, data_size) exactly. */
static porta_status *check_layout(const st_header *h, uint64_t data_size) {
    uint64_t expected = 0;
    const char *previous = NULL;
    char quoted[UTF8_EXCERPT_CAP], before[UTF8_EXCERPT_CAP];
    for (size_t i = 0; i < h->count; i++) {
        const st_tensor *t = &h->tensors[i];
        utf8_excerpt(t->name, strlen(t->name), quoted, sizeof quoted);
        if (t->end > data_size)
            return porta_error(PORTA_ERR_OUT_OF_RANGE,
                               "tensor %s: expected data_offsets within the %llu-byte data "
                               "section, got [%llu, %llu]",
                               quoted, (unsigned long long)data_size,
                               (unsigned long long)t->begin, (unsigned long long)t->end);
        if (t->begin != expected) {
            unsigned long long distance =
                t->begin > expected ? t->begin - expected : expected - t->begin;
            const char *kind = t->begin > expected ? "a gap" : "an overlap";
            if (!previous)
                return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                                   "tensor %s: expected the first data to begin at byte 0, got "
                                   "%llu (%s of %llu bytes)",
                                   quoted, (unsigned long long)t->begin, kind, distance);
            return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                               "tensor %s: expected its data to begin at byte %llu where %s "
                               "ends, got %llu (%s of %llu bytes)",
                               quoted, (unsigned long long)expected,
                               utf8_excerpt(previous, strlen(previous), before, sizeof before),
                               (unsigned long long)t->begin, kind, distance);
        }
        expected = t->end;
        previous = t->name;
    }
    if (expected != data_size)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "expected the tensors to cover the %llu-byte data section exactly, "
                           "got %llu bytes covered (%llu bytes left over)",
                           (unsigned long long)data_size, (unsigned long long)expected,
                           (unsigned long long)(data_size - expected));
    return NULL;
}

static porta_status *read_header(const unsigned char *bytes, size_t size, st_header *h) {
    if (size < 8)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "expected at least 8 bytes (the header length), got a %zu-byte file",
                           size);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = n << 8 | bytes[i]; /* little-endian */
    if (n > PORTA_SAFETENSORS_MAX_HEADER)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "expected a header length of at most %u bytes, got %llu",
                           PORTA_SAFETENSORS_MAX_HEADER, (unsigned long long)n);
    if (n > size - 8)
        return porta_error(PORTA_ERR_OUT_OF_RANGE,
                           "expected a header length within the file's %zu bytes after the "
                           "length, got %llu (past the end of the file)",
                           size - 8, (unsigned long long)n);
    h->data_start = 8 + n;
    /* As the reference implementation requires: no leading whitespace. */
    if (n > 0 && bytes[8] != '{') {
        char got[16];
        snprintf(got, sizeof got, bytes[8] >= 0x21 && bytes[8] < 0x7F ? "'%c'" : "byte 0x%02X",
                 bytes[8]);
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "expected the header to start with '{', got %s", got);
    }
    porta_status *status = json_parse((const char *)bytes + 8, (size_t)n, HEADER_MAX_DEPTH, &h->json);
    if (status) return porta_error_context(status, "header");
    const json_value *root = json_document_root(h->json);
    if (root->type != JSON_OBJECT)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "expected the header to be a JSON object, got %s",
                           json_type_name(root->type));
    const json_member *members = root->as.object.members;
    h->tensors = malloc((root->as.object.count ? root->as.object.count : 1) * sizeof *h->tensors);
    if (!h->tensors)
        return porta_error(PORTA_ERR_OUT_OF_MEMORY, "no memory for %zu tensor descriptions",
                           root->as.object.count);
    for (size_t i = 0; i < root->as.object.count; i++) {
        if (!strcmp(members[i].key, "__metadata__") && members[i].key_length == 12) {
            PORTA_TRY(read_metadata(members[i].value, h));
            continue;
        }
        st_tensor *t = &h->tensors[h->count];
        memset(t, 0, sizeof *t);
        t->json_index = i;
        PORTA_TRY(read_tensor(&members[i], t));
        h->count++;
    }
    qsort(h->tensors, h->count, sizeof *h->tensors, compare_ranges);
    PORTA_TRY(check_layout(h, (uint64_t)size - h->data_start));
    h->by_name = malloc((h->count ? h->count : 1) * sizeof *h->by_name);
    if (!h->by_name) return porta_error(PORTA_ERR_OUT_OF_MEMORY, "no memory for the name index");
    for (size_t i = 0; i < h->count; i++) h->by_name[i] = &h->tensors[i];
    /* Names are unique: the parser rejects duplicate keys. */
    qsort(h->by_name, h->count, sizeof *h->by_name, compare_names);
    return NULL;
}

porta_status *st_header_parse(const unsigned char *bytes, size_t size, st_header *out) {
    st_header h;
    memset(&h, 0, sizeof h);
    porta_status *status = read_header(bytes, size, &h);
    if (status) {
        st_header_free(&h);
        return status;
    }
    *out = h;
    return NULL;
}

void st_header_free(st_header *header) {
    json_document_free(header->json);
    free(header->tensors);
    free(header->by_name);
    free(header->metadata);
    memset(header, 0, sizeof *header);
}

const st_tensor *st_header_find(const st_header *header, const char *name) {
    size_t low = 0, high = header->count;
    while (low < high) {
        size_t mid = low + (high - low) / 2;
        const st_tensor *t = header->by_name[mid];
        int c = strcmp(name, t->name);
        if (!c) return t;
        if (c < 0)
            high = mid;
        else
            low = mid + 1;
    }
    return NULL;
}
