/* libFuzzer target for the JSON parser: any bytes are either rejected with
 * a status or give a tree whose strings are valid UTF-8 and whose objects
 * have unique keys — the promises the formats built on it rely on. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "io/json.h"
#include "io/utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_value(const json_value *v, int depth) {
    if (depth > 16) abort(); /* the limit passed to json_parse */
    switch (v->type) {
    case JSON_STRING:
        if (!utf8_is_valid(v->as.string.chars, v->as.string.length, NULL)) abort();
        if (v->as.string.chars[v->as.string.length] != '\0') abort();
        break;
    case JSON_ARRAY:
        for (size_t i = 0; i < v->as.array.count; i++) check_value(v->as.array.items[i], depth + 1);
        break;
    case JSON_OBJECT:
        for (size_t i = 0; i < v->as.object.count; i++) {
            const json_member *m = &v->as.object.members[i];
            if (!utf8_is_valid(m->key, m->key_length, NULL)) abort();
            for (size_t j = 0; j < i && v->as.object.count < 256; j++) {
                const json_member *o = &v->as.object.members[j];
                if (o->key_length == m->key_length && !memcmp(o->key, m->key, m->key_length))
                    abort();
            }
            check_value(m->value, depth + 1);
        }
        break;
    default:
        break;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    json_document *document = NULL;
    porta_status *status = json_parse((const char *)data, size, 16, &document);
    if (status) {
        if (!porta_status_message(status)) abort();
        porta_status_free(status);
        return 0;
    }
    check_value(json_document_root(document), 0);
    json_document_free(document);
    return 0;
}
