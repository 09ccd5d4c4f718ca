/* Decoding an inference request (protocol.h): the JSON's inputs, their
 * data inline (flat or nested arrays, row-major) or as binary data after
 * the JSON, and the outputs asked for. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"
#include "core/status.h"
#include "io/json.h"
#include "serve/protocol.h"

/* Nesting a request needs: the request, an input, its data nested one
 * level per dim, with room to spare. */
enum { REQUEST_MAX_DEPTH = PORTA_MAX_RANK + 8, REQUEST_MAX_TENSORS = 4096 };
/* Elements one tensor may hold, far past any model's input but well within
 * size_t arithmetic. */
#define REQUEST_MAX_ELEMENTS ((int64_t)1 << 40)

static const struct {
    const char *name;
    porta_dtype dtype;
} datatypes[] = {
    {"BOOL", PORTA_BOOL}, {"UINT8", PORTA_U8},  {"INT8", PORTA_I8},   {"INT16", PORTA_I16},
    {"INT32", PORTA_I32}, {"INT64", PORTA_I64}, {"FP16", PORTA_F16},  {"BF16", PORTA_BF16},
    {"FP32", PORTA_F32},  {"FP64", PORTA_F64},
};
static const char *const missing_datatypes[] = {"UINT16", "UINT32", "UINT64", "BYTES"};

const char *serve_datatype_name(porta_dtype dtype) {
    for (size_t i = 0; i < sizeof datatypes / sizeof datatypes[0]; i++)
        if (datatypes[i].dtype == dtype) return datatypes[i].name;
    return "?";
}

porta_status *serve_datatype_parse(const char *name, const char *what, porta_dtype *out) {
    for (size_t i = 0; i < sizeof datatypes / sizeof datatypes[0]; i++)
        if (!strcmp(datatypes[i].name, name)) {
            *out = datatypes[i].dtype;
            return NULL;
        }
    for (size_t i = 0; i < sizeof missing_datatypes / sizeof missing_datatypes[0]; i++)
        if (!strcmp(missing_datatypes[i], name))
            return porta_error(PORTA_ERR_UNSUPPORTED,
                               "%s: datatype %s is not supported by Porta (BOOL, UINT8, INT8, "
                               "INT16, INT32, INT64, FP16, BF16, FP32, FP64 are)",
                               what, name);
    return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                       "%s: datatype '%.64s' is not one of the protocol's (BOOL, UINT8, INT8, "
                       "INT16, INT32, INT64, FP16, BF16, FP32, FP64, ...)",
                       what, name);
}

void serve_tensor_clear(serve_tensor *tensor) {
    free(tensor->name);
    if (tensor->owner) porta_tensor_release(tensor->owner);
    else free(tensor->data);
    memset(tensor, 0, sizeof *tensor);
}

void serve_tensors_clear(serve_tensor *tensors, int count) {
    for (int i = 0; tensors && i < count; i++) serve_tensor_clear(&tensors[i]);
}

void serve_request_free(serve_request *request) {
    if (!request) return;
    serve_tensors_clear(request->inputs, request->input_count);
    for (int i = 0; i < request->output_count; i++) free(request->outputs[i].name);
    free(request->inputs);
    free(request->outputs);
    free(request->id);
    free(request);
}

/* member `key` of `object` when it has type `type`; NULL when absent;
 * an error when present with another type. */
static porta_status *member(const json_value *object, const char *key, json_type type,
                            const char *what, bool required, const json_value **out) {
    *out = json_object_get(object, key);
    if (!*out) return required ? porta_error(PORTA_ERR_INVALID_ARGUMENT,
                                             "%s: expected a member \"%s\", found none", what, key)
                               : NULL;
    bool ok = (*out)->type == type ||
              (type == JSON_TRUE && (*out)->type == JSON_FALSE);
    if (ok) return NULL;
    return porta_error(PORTA_ERR_INVALID_ARGUMENT, "%s: \"%s\" should be %s, found %s", what,
                       key, type == JSON_TRUE ? "true or false" : json_type_name(type),
                       json_type_name((*out)->type));
}

/* Counts the leaves of (possibly nested) array data. */
static porta_status *count_leaves(const json_value *v, int64_t *count) {
    if (v->type != JSON_ARRAY) {
        (*count)++;
        return NULL;
    }
    for (size_t i = 0; i < v->as.array.count; i++)
        PORTA_TRY(count_leaves(v->as.array.items[i], count));
    return NULL;
}

static porta_status *store_leaf(const json_value *v, serve_tensor *t, int64_t index) {
    char *p = (char *)t->data + (size_t)index * porta_dtype_size(t->dtype);
    const char *name = serve_datatype_name(t->dtype);
    if (t->dtype == PORTA_BOOL) {
        if (v->type != JSON_TRUE && v->type != JSON_FALSE)
            return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                               "input '%s': element %lld should be true or false (BOOL), found %s",
                               t->name, (long long)index, json_type_name(v->type));
        *(uint8_t *)p = v->type == JSON_TRUE;
        return NULL;
    }
    if (v->type != JSON_NUMBER)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "input '%s': element %lld should be a number (%s), found %s", t->name,
                           (long long)index, name, json_type_name(v->type));
    if (porta_dtype_is_float(t->dtype)) {
        core_store_from_double(t->dtype, p, v->as.number.value);
        return NULL;
    }
    int64_t lo = 0, hi = 0;
    switch (t->dtype) {
    case PORTA_U8: lo = 0, hi = UINT8_MAX; break;
    case PORTA_I8: lo = INT8_MIN, hi = INT8_MAX; break;
    case PORTA_I16: lo = INT16_MIN, hi = INT16_MAX; break;
    case PORTA_I32: lo = INT32_MIN, hi = INT32_MAX; break;
    default: lo = INT64_MIN, hi = INT64_MAX; break;
    }
    if (!v->as.number.is_integer || v->as.number.integer < lo || v->as.number.integer > hi)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "input '%s': element %lld should be an integer from %lld to %lld "
                           "(%s), found %.17g",
                           t->name, (long long)index, (long long)lo, (long long)hi, name,
                           v->as.number.value);
    switch (t->dtype) {
    case PORTA_U8: *(uint8_t *)p = (uint8_t)v->as.number.integer; break;
    case PORTA_I8: *(int8_t *)p = (int8_t)v->as.number.integer; break;
    case PORTA_I16: *(int16_t *)p = (int16_t)v->as.number.integer; break;
    case PORTA_I32: *(int32_t *)p = (int32_t)v->as.number.integer; break;
    default: *(int64_t *)p = v->as.number.integer; break;
    }
    return NULL;
}

static porta_status *store_leaves(const json_value *v, serve_tensor *t, int64_t *index) {
    if (v->type != JSON_ARRAY) return store_leaf(v, t, (*index)++);
    for (size_t i = 0; i < v->as.array.count; i++)
        PORTA_TRY(store_leaves(v->as.array.items[i], t, index));
    return NULL;
}

static porta_status *parse_shape(const json_value *shape, serve_tensor *t, int64_t *numel) {
    if (shape->as.array.count > PORTA_MAX_RANK)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "input '%s': shape has %zu dims, at most %d are supported", t->name,
                           shape->as.array.count, PORTA_MAX_RANK);
    t->rank = (int)shape->as.array.count;
    *numel = 1;
    for (int d = 0; d < t->rank; d++) {
        const json_value *dim = shape->as.array.items[d];
        if (dim->type != JSON_NUMBER || !dim->as.number.is_integer || dim->as.number.integer < 0)
            return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                               "input '%s': shape[%d] should be an integer >= 0, found %s",
                               t->name, d, dim->type == JSON_NUMBER ? "another number"
                                                                     : json_type_name(dim->type));
        t->sizes[d] = dim->as.number.integer;
        if (t->sizes[d] > REQUEST_MAX_ELEMENTS ||
            (t->sizes[d] && *numel > REQUEST_MAX_ELEMENTS / t->sizes[d]))
            return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                               "input '%s': shape holds more than %lld elements", t->name,
                               (long long)REQUEST_MAX_ELEMENTS);
        *numel *= t->sizes[d];
    }
    return NULL;
}

typedef struct binary_cursor {
    const char *bytes;
    size_t length, used;
} binary_cursor;

static porta_status *parse_input(const json_value *v, int index, binary_cursor *binary,
                                 serve_tensor *t) {
    char what[64];
    snprintf(what, sizeof what, "inputs[%d]", index);
    if (v->type != JSON_OBJECT)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "%s: expected an object, found %s", what,
                           json_type_name(v->type));
    const json_value *name, *shape, *datatype, *data, *parameters, *size = NULL;
    PORTA_TRY(member(v, "name", JSON_STRING, what, true, &name));
    PORTA_TRY(member(v, "shape", JSON_ARRAY, what, true, &shape));
    PORTA_TRY(member(v, "datatype", JSON_STRING, what, true, &datatype));
    PORTA_TRY(member(v, "parameters", JSON_OBJECT, what, false, &parameters));
    if (parameters) PORTA_TRY(member(parameters, "binary_data_size", JSON_NUMBER, what, false, &size));
    if (!(t->name = strdup(name->as.string.chars)))
        return porta_error(PORTA_ERR_OUT_OF_MEMORY, "%s: out of memory", what);
    char named[96];
    snprintf(named, sizeof named, "input '%.64s'", t->name);
    PORTA_TRY(serve_datatype_parse(datatype->as.string.chars, named, &t->dtype));
    int64_t numel = 0;
    PORTA_TRY(parse_shape(shape, t, &numel));
    t->bytes = (size_t)numel * porta_dtype_size(t->dtype);
    if (size) {
        if (json_object_get(v, "data"))
            return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                               "%s: has both \"data\" and binary_data_size; expected one", named);
        if (!size->as.number.is_integer || size->as.number.integer < 0 ||
            (uint64_t)size->as.number.integer != t->bytes)
            return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                               "%s: binary_data_size should be %zu (shape and %s), found %.17g",
                               named, t->bytes, datatype->as.string.chars,
                               size->as.number.value);
        if (t->bytes > binary->length - binary->used)
            return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                               "%s: binary data of %zu bytes expected, %zu bytes are left "
                               "after the JSON",
                               named, t->bytes, binary->length - binary->used);
        if (!(t->data = malloc(t->bytes ? t->bytes : 1)))
            return porta_error(PORTA_ERR_OUT_OF_MEMORY, "%s: out of memory", named);
        if (t->bytes) memcpy(t->data, binary->bytes + binary->used, t->bytes);
        binary->used += t->bytes;
        return NULL;
    }
    PORTA_TRY(member(v, "data", JSON_ARRAY, named, true, &data));
    int64_t leaves = 0;
    PORTA_TRY(count_leaves(data, &leaves));
    if (leaves != numel)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "%s: data has %lld elements, its shape needs %lld", named,
                           (long long)leaves, (long long)numel);
    if (!(t->data = calloc(1, t->bytes ? t->bytes : 1)))
        return porta_error(PORTA_ERR_OUT_OF_MEMORY, "%s: out of memory", named);
    int64_t at = 0;
    return store_leaves(data, t, &at);
}

static porta_status *parse_outputs(const json_value *outputs, serve_request *r) {
    if (outputs->as.array.count > REQUEST_MAX_TENSORS)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "outputs: %zu listed, at most %d",
                           outputs->as.array.count, REQUEST_MAX_TENSORS);
    r->outputs = calloc(outputs->as.array.count + 1, sizeof *r->outputs);
    if (!r->outputs) return porta_error(PORTA_ERR_OUT_OF_MEMORY, "outputs: out of memory");
    for (size_t i = 0; i < outputs->as.array.count; i++) {
        char what[64];
        snprintf(what, sizeof what, "outputs[%zu]", i);
        const json_value *o = outputs->as.array.items[i], *name, *parameters, *binary = NULL;
        if (o->type != JSON_OBJECT)
            return porta_error(PORTA_ERR_INVALID_ARGUMENT, "%s: expected an object, found %s", what,
                               json_type_name(o->type));
        PORTA_TRY(member(o, "name", JSON_STRING, what, true, &name));
        PORTA_TRY(member(o, "parameters", JSON_OBJECT, what, false, &parameters));
        if (parameters) PORTA_TRY(member(parameters, "binary_data", JSON_TRUE, what, false, &binary));
        serve_output_spec *spec = &r->outputs[r->output_count];
        if (!(spec->name = strdup(name->as.string.chars)))
            return porta_error(PORTA_ERR_OUT_OF_MEMORY, "outputs: out of memory");
        r->output_count++;
        spec->binary = binary ? binary->type == JSON_TRUE : r->binary_default;
        for (int k = 0; k + 1 < r->output_count; k++)
            if (!strcmp(r->outputs[k].name, spec->name))
                return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                                   "outputs: '%.64s' is listed twice", spec->name);
    }
    return NULL;
}

static porta_status *parse_root(const json_value *root, binary_cursor *binary, serve_request *r) {
    if (root->type != JSON_OBJECT)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "request: expected a JSON object, found %s",
                           json_type_name(root->type));
    const json_value *id, *parameters, *binary_output = NULL, *inputs, *outputs;
    PORTA_TRY(member(root, "id", JSON_STRING, "request", false, &id));
    PORTA_TRY(member(root, "parameters", JSON_OBJECT, "request", false, &parameters));
    if (parameters)
        PORTA_TRY(member(parameters, "binary_data_output", JSON_TRUE, "request parameters", false,
                         &binary_output));
    r->binary_default = binary_output && binary_output->type == JSON_TRUE;
    PORTA_TRY(member(root, "inputs", JSON_ARRAY, "request", true, &inputs));
    PORTA_TRY(member(root, "outputs", JSON_ARRAY, "request", false, &outputs));
    if (id && !(r->id = strdup(id->as.string.chars)))
        return porta_error(PORTA_ERR_OUT_OF_MEMORY, "request: out of memory");
    size_t count = inputs->as.array.count;
    if (count > REQUEST_MAX_TENSORS)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "inputs: %zu given, at most %d", count,
                           REQUEST_MAX_TENSORS);
    if (!(r->inputs = calloc(count + 1, sizeof *r->inputs)))
        return porta_error(PORTA_ERR_OUT_OF_MEMORY, "inputs: out of memory");
    for (size_t i = 0; i < count; i++) {
        r->input_count++;
        PORTA_TRY(parse_input(inputs->as.array.items[i], (int)i, binary, &r->inputs[i]));
        for (size_t k = 0; k < i; k++)
            if (!strcmp(r->inputs[k].name, r->inputs[i].name))
                return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                                   "inputs: '%.64s' is given twice", r->inputs[i].name);
    }
    if (binary->used != binary->length)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "request: %zu bytes of binary data follow the JSON, the inputs' "
                           "binary_data_size take %zu",
                           binary->length, binary->used);
    return outputs ? parse_outputs(outputs, r) : NULL;
}

porta_status *serve_request_parse(const char *body, size_t length, size_t json_length,
                                  serve_request **out) {
    *out = NULL;
    if (json_length > length)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "Inference-Header-Content-Length is %zu, the body has only %zu bytes",
                           json_length, length);
    json_document *document = NULL;
    porta_status *status = json_parse(body, json_length, REQUEST_MAX_DEPTH, &document);
    if (status) return porta_error_context(status, "request JSON");
    serve_request *r = calloc(1, sizeof *r);
    if (!r) {
        json_document_free(document);
        return porta_error(PORTA_ERR_OUT_OF_MEMORY, "request: out of memory");
    }
    binary_cursor binary = {body + json_length, length - json_length, 0};
    status = parse_root(json_document_root(document), &binary, r);
    json_document_free(document);
    if (status) {
        serve_request_free(r);
        return status;
    }
    *out = r;
    return NULL;
}
