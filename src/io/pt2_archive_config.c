/* Reading a .pt2 payload config: {"config": {fqn: PayloadMeta}} with
 * PayloadMeta = {"path_name", "is_param", "use_pickle", "tensor_meta"} and
 * TensorMeta = {"dtype", "sizes", "requires_grad", "device", "strides",
 * "storage_offset", "layout"} (torch/_export/serde/schema.py). Every field
 * is checked, and every view is proven to lie inside its storage before
 * anything uses it. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "io/pt2_archive_config.h"
#include "io/utf8.h"

enum { CONFIG_MAX_DEPTH = 16, LAYOUT_STRIDED = 7 };

static const struct {
    int64_t scalar_type;
    porta_dtype dtype;
    const char *torch_name;
} scalar_types[] = {
    {1, PORTA_U8, "uint8"},    {2, PORTA_I8, "int8"},       {3, PORTA_I16, "int16"},
    {4, PORTA_I32, "int32"},   {5, PORTA_I64, "int64"},     {6, PORTA_F16, "float16"},
    {7, PORTA_F32, "float32"}, {8, PORTA_F64, "float64"},   {12, PORTA_BOOL, "bool"},
    {13, PORTA_BF16, "bfloat16"},
};
enum { SCALAR_TYPE_COUNT = sizeof scalar_types / sizeof scalar_types[0] };

bool pt2_dtype_from_scalar_type(int64_t value, porta_dtype *out) {
    for (int i = 0; i < SCALAR_TYPE_COUNT; i++)
        if (scalar_types[i].scalar_type == value) {
            *out = scalar_types[i].dtype;
            return true;
        }
    return false;
}

/* Messages name the tensor and the config it comes from. */
typedef struct reader {
    const pt2_config_source *source;
    char tensor[UTF8_EXCERPT_CAP];
} reader;

static porta_status *bad(const reader *r, porta_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static porta_status *bad(const reader *r, porta_code code, const char *fmt, ...) {
    char message[640];
    va_list args;
    va_start(args, fmt);
    vsnprintf(message, sizeof message, fmt, args);
    va_end(args);
    return porta_error(code, "%s, tensor %s: %s", r->source->config_path, r->tensor, message);
}

static bool key_is(const json_member *m, const char *key) {
    return m->key_length == strlen(key) && !memcmp(m->key, key, m->key_length);
}

/* Rejects members other than `keys` (the schema's fields, all required). */
static porta_status *check_fields(const reader *r, const json_value *object, const char *what,
                                  const char *const *keys, int count) {
    if (object->type != JSON_OBJECT)
        return bad(r, PORTA_ERR_INVALID_ARGUMENT, "expected %s to be an object, got %s", what,
                   json_type_name(object->type));
    for (size_t i = 0; i < object->as.object.count; i++) {
        const json_member *m = &object->as.object.members[i];
        bool known = false;
        for (int k = 0; k < count; k++) known |= key_is(m, keys[k]);
        if (!known) {
            char key[UTF8_EXCERPT_CAP];
            return bad(r, PORTA_ERR_INVALID_ARGUMENT, "expected only the schema's fields in %s, got %s",
                       what, utf8_excerpt(m->key, m->key_length, key, sizeof key));
        }
    }
    for (int k = 0; k < count; k++)
        if (!json_object_get(object, keys[k]))
            return bad(r, PORTA_ERR_INVALID_ARGUMENT, "expected the field \"%s\" in %s, got none",
                       keys[k], what);
    return NULL;
}

static porta_status *read_bool(const reader *r, const json_value *v, const char *what, bool *out) {
    if (v->type != JSON_TRUE && v->type != JSON_FALSE)
        return bad(r, PORTA_ERR_INVALID_ARGUMENT, "expected \"%s\" to be true or false, got %s", what,
                   json_type_name(v->type));
    *out = v->type == JSON_TRUE;
    return NULL;
}

static porta_status *read_integer(const reader *r, const json_value *v, const char *what,
                                  int64_t *out) {
    if (v->type != JSON_NUMBER || !v->as.number.is_integer)
        return bad(r, PORTA_ERR_INVALID_ARGUMENT, "expected %s to be an integer within int64, got %s",
                   what, v->type == JSON_NUMBER ? "another number" : json_type_name(v->type));
    *out = v->as.number.integer;
    return NULL;
}

/* A SymInt that must be concrete: {"as_int": n} with n >= 0. */
static porta_status *read_sym_int(const reader *r, const json_value *v, const char *what,
                                  int64_t *out) {
    if (v->type != JSON_OBJECT || v->as.object.count != 1)
        return bad(r, PORTA_ERR_INVALID_ARGUMENT, "expected %s to be {\"as_int\": n}, got %s", what,
                   v->type == JSON_OBJECT ? "another object" : json_type_name(v->type));
    const json_member *m = &v->as.object.members[0];
    if (!key_is(m, "as_int"))
        return bad(r, PORTA_ERR_UNSUPPORTED,
                   "expected %s to be a concrete integer {\"as_int\": n}, got a symbolic one", what);
    PORTA_TRY(read_integer(r, m->value, what, out));
    if (*out < 0)
        return bad(r, PORTA_ERR_INVALID_ARGUMENT, "expected %s to be non-negative, got %lld", what,
                   (long long)*out);
    return NULL;
}

static porta_status *read_sym_ints(const reader *r, const json_value *v, const char *what,
                                   int64_t *values, int *rank) {
    if (v->type != JSON_ARRAY)
        return bad(r, PORTA_ERR_INVALID_ARGUMENT, "expected \"%s\" to be an array, got %s", what,
                   json_type_name(v->type));
    if (v->as.array.count > PORTA_MAX_RANK)
        return bad(r, PORTA_ERR_UNSUPPORTED, "expected at most %d dimensions in \"%s\", got %zu",
                   PORTA_MAX_RANK, what, v->as.array.count);
    *rank = (int)v->as.array.count;
    for (int d = 0; d < *rank; d++) {
        char item[48];
        snprintf(item, sizeof item, "\"%s\"[%d]", what, d);
        PORTA_TRY(read_sym_int(r, v->as.array.items[d], item, &values[d]));
    }
    return NULL;
}

static porta_status *read_dtype(const reader *r, const json_value *v, porta_dtype *out) {
    int64_t value = 0;
    PORTA_TRY(read_integer(r, v, "\"dtype\"", &value));
    if (pt2_dtype_from_scalar_type(value, out)) return NULL;
    return bad(r, PORTA_ERR_DTYPE,
               "expected a dtype among uint8 int8 int16 int32 int64 float16 bfloat16 float32 "
               "float64 bool (schema.ScalarType 1-8, 12, 13), got ScalarType %lld",
               (long long)value);
}

/* The largest element index the view reaches must be inside the storage;
 * every product and sum is checked against overflow first. */
static porta_status *check_view(const reader *r, pt2_tensor_info *t) {
    size_t element = porta_dtype_size(t->dtype);
    if (t->storage_bytes % element)
        return bad(r, PORTA_ERR_INVALID_ARGUMENT,
                   "expected the storage %s to hold whole %s elements (%zu bytes each), got %llu "
                   "bytes",
                   t->entry, porta_dtype_name(t->dtype), element,
                   (unsigned long long)t->storage_bytes);
    uint64_t storage_numel = t->storage_bytes / element;
    uint64_t numel = 1, last = (uint64_t)t->storage_offset;
    for (int d = 0; d < t->rank; d++) {
        uint64_t size = (uint64_t)t->sizes[d], stride = (uint64_t)t->strides[d];
        if (size && numel > (uint64_t)INT64_MAX / size)
            return bad(r, PORTA_ERR_INVALID_ARGUMENT,
                       "expected a shape whose element count fits in 63 bits, got an overflowing "
                       "product at dimension %d",
                       d);
        numel *= size;
        if (size && stride && (size - 1) > ((uint64_t)INT64_MAX - last) / stride)
            return bad(r, PORTA_ERR_INVALID_ARGUMENT,
                       "expected the view's last element index to fit in 63 bits, got an "
                       "overflow at dimension %d (size %lld, stride %lld)",
                       d, (long long)size, (long long)stride);
        if (size) last += (size - 1) * stride;
    }
    if (numel == 0) return NULL;
    if (storage_numel == 0)
        return bad(r, PORTA_ERR_INVALID_ARGUMENT,
                   "expected storage for %llu elements, got an empty entry %s (a tensor exported "
                   "without its data)",
                   (unsigned long long)numel, t->entry);
    if (last >= storage_numel)
        return bad(r, PORTA_ERR_OUT_OF_RANGE,
                   "expected the view (offset %lld, last element %llu) inside its storage %s of "
                   "%llu elements, got it reaching past the end",
                   (long long)t->storage_offset, (unsigned long long)last, t->entry,
                   (unsigned long long)storage_numel);
    return NULL;
}

static porta_status *read_tensor_meta(const reader *r, const json_value *meta, pt2_tensor_info *t) {
    static const char *const fields[] = {"dtype",   "sizes",          "requires_grad", "device",
                                         "strides", "storage_offset", "layout"};
    PORTA_TRY(check_fields(r, meta, "\"tensor_meta\"", fields, 7));
    PORTA_TRY(read_dtype(r, json_object_get(meta, "dtype"), &t->dtype));
    PORTA_TRY(read_sym_ints(r, json_object_get(meta, "sizes"), "sizes", t->sizes, &t->rank));
    int stride_rank;
    PORTA_TRY(read_sym_ints(r, json_object_get(meta, "strides"), "strides", t->strides,
                            &stride_rank));
    if (stride_rank != t->rank)
        return bad(r, PORTA_ERR_INVALID_ARGUMENT,
                   "expected one stride per dimension (%d), got %d strides", t->rank, stride_rank);
    PORTA_TRY(read_sym_int(r, json_object_get(meta, "storage_offset"), "\"storage_offset\"",
                           &t->storage_offset));
    PORTA_TRY(read_bool(r, json_object_get(meta, "requires_grad"), "requires_grad",
                        &t->requires_grad));
    const json_value *device = json_object_get(meta, "device");
    if (device->type != JSON_OBJECT)
        return bad(r, PORTA_ERR_INVALID_ARGUMENT, "expected \"device\" to be an object, got %s",
                   json_type_name(device->type));
    int64_t layout = 0;
    PORTA_TRY(read_integer(r, json_object_get(meta, "layout"), "\"layout\"", &layout));
    if (layout != LAYOUT_STRIDED)
        return bad(r, PORTA_ERR_UNSUPPORTED,
                   "expected a strided tensor (schema.Layout %d), got layout %lld", LAYOUT_STRIDED,
                   (long long)layout);
    return check_view(r, t);
}

/* Only the names torch writes: weight_<i> or tensor_<i>; custom_obj_<i>
 * and opaque_obj_<i> (constants that are pickled objects). */
static bool is_object_name(const char *name) {
    return !strncmp(name, "custom_obj_", 11) || !strncmp(name, "opaque_obj_", 11);
}

static porta_status *read_payload(const reader *r, const json_value *meta, pt2_tensor_info *t) {
    static const char *const fields[] = {"path_name", "is_param", "use_pickle", "tensor_meta"};
    PORTA_TRY(check_fields(r, meta, "the payload", fields, 4));
    const json_value *path = json_object_get(meta, "path_name");
    if (path->type != JSON_STRING)
        return bad(r, PORTA_ERR_INVALID_ARGUMENT, "expected \"path_name\" to be a string, got %s",
                   json_type_name(path->type));
    char quoted[UTF8_EXCERPT_CAP];
    utf8_excerpt(path->as.string.chars, path->as.string.length, quoted, sizeof quoted);
    if (!path->as.string.length || strlen(path->as.string.chars) != path->as.string.length ||
        strchr(path->as.string.chars, '/'))
        return bad(r, PORTA_ERR_INVALID_ARGUMENT,
                   "expected \"path_name\" to be a file name (no '/', NUL or empty), got %s",
                   quoted);
    PORTA_TRY(read_bool(r, json_object_get(meta, "is_param"), "is_param", &t->is_param));
    bool use_pickle = false;
    PORTA_TRY(read_bool(r, json_object_get(meta, "use_pickle"), "use_pickle", &use_pickle));
    const pt2_config_source *s = r->source;
    size_t length = strlen(s->root) + strlen(s->directory) + path->as.string.length + 1;
    char *entry = malloc(length);
    if (!entry) return porta_error(PORTA_ERR_OUT_OF_MEMORY, "no memory for an entry name");
    snprintf(entry, length, "%s%s%s", s->root, s->directory, path->as.string.chars);
    t->entry = entry; /* owned by the info from here on */
    const zip_entry *storage = zip_find(s->zip, entry);
    if (!storage)
        return bad(r, PORTA_ERR_INVALID_ARGUMENT, "expected the archive to hold its entry %s, found none",
                   entry);
    t->storage_bytes = storage->size;
    bool object = s->kind == PT2_CONSTANT && is_object_name(path->as.string.chars);
    const char *prefix = s->kind == PT2_WEIGHT ? "weight_" : "tensor_";
    if (!object && strncmp(path->as.string.chars, prefix, strlen(prefix)))
        return bad(r, PORTA_ERR_INVALID_ARGUMENT,
                   "expected \"path_name\" to start with %s%s, got %s", prefix,
                   s->kind == PT2_CONSTANT ? ", custom_obj_ or opaque_obj_" : "", quoted);
    if (use_pickle || object) {
        t->pickled = true; /* refused when taken; its tensor_meta is never needed */
        return NULL;
    }
    const json_value *tensor_meta = json_object_get(meta, "tensor_meta");
    if (tensor_meta->type == JSON_NULL)
        return bad(r, PORTA_ERR_INVALID_ARGUMENT,
                   "expected a \"tensor_meta\" for raw (unpickled) storage, got null");
    return read_tensor_meta(r, tensor_meta, t);
}

static porta_status *grow(pt2_tensor_info **tensors, int count, size_t more) {
    if (more > (size_t)(INT32_MAX - count))
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "expected fewer than 2^31 tensors, got more");
    pt2_tensor_info *grown = realloc(*tensors, ((size_t)count + more + 1) * sizeof *grown);
    if (!grown) return porta_error(PORTA_ERR_OUT_OF_MEMORY, "no memory for %zu tensors", more);
    memset(grown + count, 0, (more + 1) * sizeof *grown);
    *tensors = grown;
    return NULL;
}

porta_status *pt2_config_read(const pt2_config_source *source, const char *text, size_t length,
                              json_document **document, pt2_tensor_info **tensors, int *count) {
    porta_status *status = json_parse(text, length, CONFIG_MAX_DEPTH, document);
    if (status) return porta_error_context(status, "%s", source->config_path);
    const json_value *root = json_document_root(*document);
    reader r = {.source = source};
    snprintf(r.tensor, sizeof r.tensor, "(none)");
    static const char *const fields[] = {"config"};
    PORTA_TRY(check_fields(&r, root, "the config", fields, 1));
    const json_value *config = json_object_get(root, "config");
    if (config->type != JSON_OBJECT)
        return bad(&r, PORTA_ERR_INVALID_ARGUMENT, "expected \"config\" to be an object, got %s",
                   json_type_name(config->type));
    PORTA_TRY(grow(tensors, *count, config->as.object.count));
    for (size_t i = 0; i < config->as.object.count; i++) {
        const json_member *m = &config->as.object.members[i];
        utf8_excerpt(m->key, m->key_length, r.tensor, sizeof r.tensor);
        pt2_tensor_info *t = &(*tensors)[*count];
        memset(t, 0, sizeof *t);
        t->name = m->key;
        t->kind = source->kind;
        (*count)++; /* counted now so that its entry string is freed on error */
        if (!m->key_length || strlen(m->key) != m->key_length)
            return bad(&r, PORTA_ERR_INVALID_ARGUMENT,
                       "expected a name without NUL characters, got an empty one or one with NUL");
        PORTA_TRY(read_payload(&r, m->value, t));
    }
    return NULL;
}
