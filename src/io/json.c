/* The strict JSON parser: recursive descent over the text, values placed
 * in an arena owned by the document, so freeing a tree is one walk over a
 * few large blocks and an error path frees everything at once. */
#include "io/json.h"

#include <locale.h>
#include <math.h>
#include <pthread.h>
#include <stdalign.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "io/utf8.h"

/* ---- the arena ---- */

typedef struct arena_block {
    struct arena_block *next;
    size_t used, capacity;
    alignas(max_align_t) unsigned char data[];
} arena_block;

struct json_document {
    arena_block *blocks;
    const json_value *root;
};

enum { ARENA_BLOCK_BYTES = 64 * 1024 };

static void *arena_alloc(json_document *document, size_t bytes) {
    const size_t align = alignof(max_align_t);
    if (bytes > SIZE_MAX - align) return NULL;
    bytes = (bytes + align - 1) & ~(align - 1);
    arena_block *block = document->blocks;
    if (!block || block->capacity - block->used < bytes) {
        size_t capacity = bytes > ARENA_BLOCK_BYTES ? bytes : ARENA_BLOCK_BYTES;
        if (capacity > SIZE_MAX - sizeof *block) return NULL;
        block = malloc(sizeof *block + capacity);
        if (!block) return NULL;
        block->used = 0;
        block->capacity = capacity;
        block->next = document->blocks;
        document->blocks = block;
    }
    void *p = block->data + block->used;
    block->used += bytes;
    return p;
}

void json_document_free(json_document *document) {
    if (!document) return;
    arena_block *block = document->blocks;
    while (block) {
        arena_block *next = block->next;
        free(block);
        block = next;
    }
    free(document);
}

const json_value *json_document_root(const json_document *document) {
    return document ? document->root : NULL;
}

/* ---- the parser's state ---- */

typedef struct parser {
    const unsigned char *text;
    size_t length, pos;
    int max_depth;
    json_document *document;
    /* Children of the arrays and objects still open, innermost last; a
     * closed container moves its own run into the arena. */
    const json_value **items;
    size_t item_count, item_capacity;
    json_member *members;
    size_t member_count, member_capacity;
    /* A decoded string or a number's text, before it reaches the arena. */
    char *scratch;
    size_t scratch_length, scratch_capacity;
} parser;

/* What stands at the parser's position, for "got ..." in messages. */
static const char *describe_here(const parser *p, char *buf, size_t cap) {
    if (p->pos >= p->length) return "the end of the text";
    unsigned char c = p->text[p->pos];
    if (c >= 0x21 && c < 0x7F)
        snprintf(buf, cap, "'%c'", c);
    else
        snprintf(buf, cap, "byte 0x%02X", c);
    return buf;
}

static porta_status *syntax_error(const parser *p, const char *expected) {
    char got[32];
    return porta_error(PORTA_ERR_INVALID_ARGUMENT, "JSON at byte %zu: expected %s, got %s", p->pos,
                       expected, describe_here(p, got, sizeof got));
}

static porta_status *no_memory(void) {
    return porta_error(PORTA_ERR_OUT_OF_MEMORY, "JSON: no memory for the parsed document");
}

static bool grow(void **array, size_t *capacity, size_t needed, size_t elem) {
    if (needed <= *capacity) return true;
    size_t next = *capacity ? *capacity : 16;
    while (next < needed) {
        if (next > SIZE_MAX / 2 / elem) return false;
        next *= 2;
    }
    void *grown = realloc(*array, next * elem);
    if (!grown) return false;
    *array = grown;
    *capacity = next;
    return true;
}

static porta_status *scratch_put(parser *p, const char *bytes, size_t n) {
    if (!grow((void **)&p->scratch, &p->scratch_capacity, p->scratch_length + n + 1, 1))
        return no_memory();
    memcpy(p->scratch + p->scratch_length, bytes, n);
    p->scratch_length += n;
    return NULL;
}

static void skip_whitespace(parser *p) {
    while (p->pos < p->length) {
        unsigned char c = p->text[p->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') return;
        p->pos++;
    }
}

static json_value *new_value(parser *p, json_type type, size_t offset) {
    json_value *v = arena_alloc(p->document, sizeof *v);
    if (!v) return NULL;
    memset(v, 0, sizeof *v);
    v->type = type;
    v->offset = offset;
    return v;
}

/* ---- strings ---- */

static int hex_digit(unsigned char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Reads the four hex digits of a \u escape whose 'u' is at p->pos - 1. */
static porta_status *read_hex4(parser *p, uint32_t *out) {
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        int d = p->pos < p->length ? hex_digit(p->text[p->pos]) : -1;
        if (d < 0) return syntax_error(p, "four hex digits after \\u");
        v = v * 16 + (uint32_t)d;
        p->pos++;
    }
    *out = v;
    return NULL;
}

static porta_status *read_escape(parser *p) {
    size_t start = p->pos - 1; /* the backslash */
    if (p->pos >= p->length) return syntax_error(p, "an escape character after '\\'");
    unsigned char c = p->text[p->pos++];
    char one;
    switch (c) {
    case '"': one = '"'; break;
    case '\\': one = '\\'; break;
    case '/': one = '/'; break;
    case 'b': one = '\b'; break;
    case 'f': one = '\f'; break;
    case 'n': one = '\n'; break;
    case 'r': one = '\r'; break;
    case 't': one = '\t'; break;
    case 'u': {
        uint32_t cp;
        PORTA_TRY(read_hex4(p, &cp));
        if (cp >= 0xDC00 && cp <= 0xDFFF)
            return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                               "JSON at byte %zu: expected a code point or a high surrogate in "
                               "\\u escape, got the unpaired low surrogate \\u%04X",
                               start, (unsigned)cp);
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            uint32_t low = 0;
            bool escaped = p->pos + 1 < p->length && p->text[p->pos] == '\\' &&
                           p->text[p->pos + 1] == 'u';
            if (escaped) {
                p->pos += 2;
                PORTA_TRY(read_hex4(p, &low));
            }
            if (low < 0xDC00 || low > 0xDFFF) {
                char got[16] = "none";
                if (escaped) snprintf(got, sizeof got, "\\u%04X", (unsigned)low);
                return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                                   "JSON at byte %zu: expected a low surrogate escape after the "
                                   "high surrogate \\u%04X, got %s",
                                   start, (unsigned)cp, got);
            }
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        }
        char encoded[4];
        return scratch_put(p, encoded, (size_t)utf8_encode(cp, encoded));
    }
    default:
        p->pos--;
        return syntax_error(p, "one of \" \\ / b f n r t u after '\\'");
    }
    return scratch_put(p, &one, 1);
}

/* Decodes the string whose opening quote is at p->pos into the scratch
 * buffer (NUL-terminated). */
static porta_status *read_string(parser *p) {
    p->pos++; /* the opening quote */
    p->scratch_length = 0;
    for (;;) {
        size_t run = p->pos;
        while (run < p->length && p->text[run] >= 0x20 && p->text[run] < 0x80 &&
               p->text[run] != '"' && p->text[run] != '\\')
            run++;
        PORTA_TRY(scratch_put(p, (const char *)p->text + p->pos, run - p->pos));
        p->pos = run;
        if (p->pos >= p->length) return syntax_error(p, "'\"' to close the string");
        unsigned char c = p->text[p->pos];
        if (c == '"') {
            p->pos++;
            break;
        }
        if (c == '\\') {
            p->pos++;
            PORTA_TRY(read_escape(p));
        } else if (c < 0x20) {
            return syntax_error(p, "a string character (control characters must be escaped)");
        } else {
            int n = utf8_sequence_length(p->text + p->pos, p->length - p->pos);
            if (!n) return syntax_error(p, "valid UTF-8 in the string");
            PORTA_TRY(scratch_put(p, (const char *)p->text + p->pos, (size_t)n));
            p->pos += (size_t)n;
        }
    }
    p->scratch[p->scratch_length] = '\0';
    return NULL;
}

/* Copies the scratch string into the arena. */
static const char *keep_string(parser *p) {
    char *s = arena_alloc(p->document, p->scratch_length + 1);
    if (s) memcpy(s, p->scratch, p->scratch_length + 1);
    return s;
}

/* ---- numbers ---- */

static pthread_once_t c_locale_once = PTHREAD_ONCE_INIT;
static locale_t c_locale;

static void make_c_locale(void) { c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0); }

/* strtod in the "C" locale, whatever locale the host program has set. */
static double parse_double(const char *s) {
    pthread_once(&c_locale_once, make_c_locale);
    return c_locale ? strtod_l(s, NULL, c_locale) : strtod(s, NULL);
}

static bool is_digit(const parser *p) {
    return p->pos < p->length && p->text[p->pos] >= '0' && p->text[p->pos] <= '9';
}

static porta_status *read_number(parser *p, json_value **out) {
    size_t start = p->pos;
    bool negative = p->pos < p->length && p->text[p->pos] == '-';
    if (negative) p->pos++;
    if (!is_digit(p)) return syntax_error(p, "a digit");
    if (p->text[p->pos] == '0') {
        p->pos++;
        if (is_digit(p)) return syntax_error(p, "no leading zero (a fraction, exponent or end)");
    } else {
        while (is_digit(p)) p->pos++;
    }
    bool integral = true;
    if (p->pos < p->length && p->text[p->pos] == '.') {
        integral = false;
        p->pos++;
        if (!is_digit(p)) return syntax_error(p, "a digit after the decimal point");
        while (is_digit(p)) p->pos++;
    }
    if (p->pos < p->length && (p->text[p->pos] == 'e' || p->text[p->pos] == 'E')) {
        integral = false;
        p->pos++;
        if (p->pos < p->length && (p->text[p->pos] == '+' || p->text[p->pos] == '-')) p->pos++;
        if (!is_digit(p)) return syntax_error(p, "a digit in the exponent");
        while (is_digit(p)) p->pos++;
    }
    p->scratch_length = 0;
    PORTA_TRY(scratch_put(p, (const char *)p->text + start, p->pos - start));
    p->scratch[p->scratch_length] = '\0';

    json_value *v = new_value(p, JSON_NUMBER, start);
    if (!v) return no_memory();
    v->as.number.value = parse_double(p->scratch);
    if (!isfinite(v->as.number.value))
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "JSON at byte %zu: expected a number within double range, got %.40s",
                           start, p->scratch);
    if (integral) {
        /* Accumulate the magnitude; int64 holds -2^63 but only 2^63 - 1. */
        uint64_t magnitude = 0, limit = negative ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
        bool fits = true;
        for (const char *d = p->scratch + negative; *d; d++) {
            uint64_t digit = (uint64_t)(*d - '0');
            if (magnitude > (limit - digit) / 10) {
                fits = false;
                break;
            }
            magnitude = magnitude * 10 + digit;
        }
        if (fits) {
            v->as.number.is_integer = true;
            v->as.number.integer = negative ? (int64_t)(0 - magnitude) : (int64_t)magnitude;
        }
    }
    *out = v;
    return NULL;
}

/* ---- containers ---- */

static int compare_members(const void *a, const void *b) {
    const json_member *x = *(const json_member *const *)a, *y = *(const json_member *const *)b;
    size_t n = x->key_length < y->key_length ? x->key_length : y->key_length;
    int c = memcmp(x->key, y->key, n);
    if (c) return c;
    return (x->key_length > y->key_length) - (x->key_length < y->key_length);
}

static porta_status *duplicate_key(const json_member *m, size_t object_offset) {
    char key[UTF8_EXCERPT_CAP];
    return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                       "JSON at byte %zu: expected unique keys in the object, got %s twice",
                       object_offset, utf8_excerpt(m->key, m->key_length, key, sizeof key));
}

/* Sorting a list of pointers keeps this O(n log n) for the objects with
 * thousands of members (a model's tensors). */
static porta_status *check_unique_keys(const json_member *members, size_t count,
                                       size_t object_offset) {
    if (count < 2) return NULL;
    if (count <= 8) {
        for (size_t i = 0; i < count; i++)
            for (size_t j = i + 1; j < count; j++)
                if (members[i].key_length == members[j].key_length &&
                    !memcmp(members[i].key, members[j].key, members[i].key_length))
                    return duplicate_key(&members[i], object_offset);
        return NULL;
    }
    const json_member **sorted = malloc(count * sizeof *sorted);
    if (!sorted) return no_memory();
    for (size_t i = 0; i < count; i++) sorted[i] = &members[i];
    qsort(sorted, count, sizeof *sorted, compare_members);
    porta_status *status = NULL;
    for (size_t i = 1; i < count && !status; i++)
        if (!compare_members(&sorted[i - 1], &sorted[i]))
            status = duplicate_key(sorted[i], object_offset);
    free(sorted);
    return status;
}

static porta_status *read_value(parser *p, int depth, const json_value **out);

static porta_status *enter(parser *p, int depth) {
    if (depth >= p->max_depth)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "JSON at byte %zu: expected arrays and objects nested at most %d "
                           "deep, got deeper",
                           p->pos, p->max_depth);
    p->pos++; /* '[' or '{' */
    skip_whitespace(p);
    return NULL;
}

static porta_status *read_array(parser *p, int depth, json_value **out) {
    size_t start = p->pos, first = p->item_count;
    PORTA_TRY(enter(p, depth));
    if (p->pos < p->length && p->text[p->pos] == ']') {
        p->pos++;
    } else {
        for (;;) {
            const json_value *item;
            PORTA_TRY(read_value(p, depth + 1, &item));
            if (!grow((void **)&p->items, &p->item_capacity, p->item_count + 1, sizeof *p->items))
                return no_memory();
            p->items[p->item_count++] = item;
            skip_whitespace(p);
            if (p->pos < p->length && p->text[p->pos] == ',') {
                p->pos++;
                continue;
            }
            if (p->pos < p->length && p->text[p->pos] == ']') {
                p->pos++;
                break;
            }
            return syntax_error(p, "',' or ']' in the array");
        }
    }
    json_value *v = new_value(p, JSON_ARRAY, start);
    size_t count = p->item_count - first;
    const json_value **items = count ? arena_alloc(p->document, count * sizeof *items) : NULL;
    if (!v || (count && !items)) return no_memory();
    if (count) memcpy(items, p->items + first, count * sizeof *items);
    p->item_count = first;
    v->as.array.items = items;
    v->as.array.count = count;
    *out = v;
    return NULL;
}

static porta_status *read_object(parser *p, int depth, json_value **out) {
    size_t start = p->pos, first = p->member_count;
    PORTA_TRY(enter(p, depth));
    if (p->pos < p->length && p->text[p->pos] == '}') {
        p->pos++;
    } else {
        for (;;) {
            if (p->pos >= p->length || p->text[p->pos] != '"')
                return syntax_error(p, "'\"' to start an object key");
            PORTA_TRY(read_string(p));
            json_member m = {.key = keep_string(p), .key_length = p->scratch_length};
            if (!m.key) return no_memory();
            skip_whitespace(p);
            if (p->pos >= p->length || p->text[p->pos] != ':')
                return syntax_error(p, "':' after the object key");
            p->pos++;
            PORTA_TRY(read_value(p, depth + 1, &m.value));
            if (!grow((void **)&p->members, &p->member_capacity, p->member_count + 1,
                      sizeof *p->members))
                return no_memory();
            p->members[p->member_count++] = m;
            skip_whitespace(p);
            if (p->pos < p->length && p->text[p->pos] == ',') {
                p->pos++;
                skip_whitespace(p);
                continue;
            }
            if (p->pos < p->length && p->text[p->pos] == '}') {
                p->pos++;
                break;
            }
            return syntax_error(p, "',' or '}' in the object");
        }
    }
    size_t count = p->member_count - first;
    if (count) PORTA_TRY(check_unique_keys(p->members + first, count, start));
    json_value *v = new_value(p, JSON_OBJECT, start);
    json_member *members = count ? arena_alloc(p->document, count * sizeof *members) : NULL;
    if (!v || (count && !members)) return no_memory();
    if (count) memcpy(members, p->members + first, count * sizeof *members);
    p->member_count = first;
    v->as.object.members = members;
    v->as.object.count = count;
    *out = v;
    return NULL;
}

static bool take_word(parser *p, const char *word) {
    size_t n = strlen(word);
    if (p->length - p->pos < n || memcmp(p->text + p->pos, word, n)) return false;
    p->pos += n;
    return true;
}

static porta_status *read_value(parser *p, int depth, const json_value **out) {
    skip_whitespace(p);
    if (p->pos >= p->length) return syntax_error(p, "a value");
    size_t start = p->pos;
    json_value *v = NULL;
    switch (p->text[p->pos]) {
    case '{': PORTA_TRY(read_object(p, depth, &v)); break;
    case '[': PORTA_TRY(read_array(p, depth, &v)); break;
    case '"':
        PORTA_TRY(read_string(p));
        v = new_value(p, JSON_STRING, start);
        if (!v || !(v->as.string.chars = keep_string(p))) return no_memory();
        v->as.string.length = p->scratch_length;
        break;
    case 't':
    case 'f':
    case 'n': {
        static const struct {
            const char *word;
            json_type type;
        } words[] = {{"true", JSON_TRUE}, {"false", JSON_FALSE}, {"null", JSON_NULL}};
        for (size_t i = 0; i < sizeof words / sizeof words[0] && !v; i++)
            if (take_word(p, words[i].word) && !(v = new_value(p, words[i].type, start)))
                return no_memory();
        if (!v) return syntax_error(p, "a value (true, false or null)");
        break;
    }
    default:
        if (p->text[p->pos] != '-' && !is_digit(p))
            return syntax_error(p, "a value (object, array, string, number, true, false, null)");
        PORTA_TRY(read_number(p, &v));
    }
    *out = v;
    return NULL;
}

porta_status *json_parse(const char *text, size_t length, int max_depth, json_document **out) {
    if ((!text && length) || !out || max_depth < 1)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "json_parse: expected text, an output pointer and a depth limit of at "
                           "least 1, got a NULL pointer or the limit %d",
                           max_depth);
    json_document *document = calloc(1, sizeof *document);
    if (!document) return no_memory();
    parser p = {.text = (const unsigned char *)text, .length = length, .max_depth = max_depth,
                .document = document};
    const json_value *root = NULL;
    porta_status *status = read_value(&p, 0, &root);
    if (!status) {
        skip_whitespace(&p);
        if (p.pos != p.length) status = syntax_error(&p, "the end of the text after the value");
    }
    free(p.items);
    free(p.members);
    free(p.scratch);
    if (status) {
        json_document_free(document);
        return status;
    }
    document->root = root;
    *out = document;
    return NULL;
}

const json_value *json_object_get(const json_value *object, const char *key) {
    if (!object || object->type != JSON_OBJECT) return NULL;
    size_t n = strlen(key);
    for (size_t i = 0; i < object->as.object.count; i++) {
        const json_member *m = &object->as.object.members[i];
        if (m->key_length == n && !memcmp(m->key, key, n)) return m->value;
    }
    return NULL;
}

const char *json_type_name(json_type type) {
    switch (type) {
    case JSON_NULL: return "null";
    case JSON_FALSE:
    case JSON_TRUE: return "a boolean";
    case JSON_NUMBER: return "a number";
    case JSON_STRING: return "a string";
    case JSON_ARRAY: return "an array";
    case JSON_OBJECT: return "an object";
    }
    return "an unknown value";
}
