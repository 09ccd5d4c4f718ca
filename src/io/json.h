/* A strict JSON parser (RFC 8259) for the file formats Porta reads: the
 * whole document is parsed into a tree owned by one json_document.
 *
 * Strict on purpose, because its input may be hostile: invalid UTF-8
 * (overlong forms, surrogates, code points past U+10FFFF), unpaired
 * \u surrogate escapes, unescaped control characters, duplicate keys in an
 * object, nesting deeper than the caller's limit, leading zeros and any
 * trailing text other than whitespace are all rejected with a message
 * naming the byte offset, what was expected and what was found. */
#ifndef PORTA_IO_JSON_H
#define PORTA_IO_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "porta.h"

typedef enum json_type {
    JSON_NULL = 0,
    JSON_FALSE,
    JSON_TRUE,
    JSON_NUMBER,
    JSON_STRING,
    JSON_ARRAY,
    JSON_OBJECT
} json_type;

typedef struct json_value json_value;

typedef struct json_member {
    const char *key; /* decoded, NUL-terminated (may also hold \u0000) */
    size_t key_length;
    const json_value *value;
} json_member;

struct json_value {
    json_type type;
    size_t offset; /* byte offset of the value in the text, for messages */
    union {
        struct {
            const char *chars; /* decoded UTF-8, NUL-terminated */
            size_t length;     /* bytes, excluding the terminator */
        } string;
        struct {
            double value;
            /* Written without fraction or exponent, and within int64. */
            bool is_integer;
            int64_t integer;
        } number;
        struct {
            const json_value *const *items;
            size_t count;
        } array;
        struct {
            const json_member *members; /* in document order */
            size_t count;
        } object;
    } as;
};

typedef struct json_document json_document;

/* Parses `length` bytes of text (not necessarily NUL-terminated). Arrays
 * and objects may nest at most max_depth levels. */
porta_status *json_parse(const char *text, size_t length, int max_depth, json_document **out);
const json_value *json_document_root(const json_document *document);
void json_document_free(json_document *document);

/* The member of an object named `key` (a C string), or NULL. */
const json_value *json_object_get(const json_value *object, const char *key);
/* "object", "string", ... for messages. */
const char *json_type_name(json_type type);

#endif
