/* Decoding a generate request (generate_request.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "io/json.h"
#include "serve/generate_request.h"

/* Requests nest no deeper than parameters' lists. */
#define MAX_DEPTH 4
#define MAX_IDS 65536

static porta_status *id_list(const json_value *v, const char *field, int64_t **out, int *count) {
    if (!v || v->type != JSON_ARRAY)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "%s: expected an array of token ids, given %s",
                           field, v ? json_type_name(v->type) : "nothing");
    if (v->as.array.count > MAX_IDS)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "%s: expected at most %d ids, given %zu",
                           field, MAX_IDS, v->as.array.count);
    *out = malloc((v->as.array.count + 1) * sizeof **out);
    if (!*out) return porta_error(PORTA_ERR_OUT_OF_MEMORY, "%s: out of memory", field);
    for (size_t i = 0; i < v->as.array.count; i++) {
        const json_value *item = v->as.array.items[i];
        if (item->type != JSON_NUMBER || !item->as.number.is_integer ||
            item->as.number.integer < 0)
            return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                               "%s[%zu]: expected an integer >= 0, given %s", field, i,
                               item->type == JSON_NUMBER ? "another number"
                                                         : json_type_name(item->type));
        (*out)[i] = item->as.number.integer;
    }
    *count = (int)v->as.array.count;
    return NULL;
}

static porta_status *number(const json_value *params, const char *key, double least, double most,
                            bool integer, double *out) {
    const json_value *v = json_object_get(params, key);
    if (!v) return NULL;
    if (v->type != JSON_NUMBER || (integer && v->as.number.value != floor(v->as.number.value)) ||
        !(v->as.number.value >= least && v->as.number.value <= most))
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "parameters.%s: expected %s from %g to %g, given %s", key,
                           integer ? "an integer" : "a number", least, most,
                           v->type == JSON_NUMBER ? "one outside" : json_type_name(v->type));
    *out = v->as.number.value;
    return NULL;
}

static porta_status *parameters(const json_value *p, serve_generate_request *r) {
    if (p->type != JSON_OBJECT)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "parameters: expected an object, given %s",
                           json_type_name(p->type));
    static const char *const known[] = {"max_tokens", "temperature", "top_k", "top_p", "seed",
                                        "stop"};
    for (size_t i = 0; i < p->as.object.count; i++) {
        bool found = false;
        for (size_t k = 0; k < sizeof known / sizeof *known; k++)
            found |= !strcmp(p->as.object.members[i].key, known[k]);
        if (!found)
            return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                               "parameters: expected max_tokens, temperature, top_k, top_p, seed "
                               "or stop, given '%.64s'",
                               p->as.object.members[i].key);
    }
    porta_generate_options *o = &r->options;
    double max_tokens = o->max_tokens, top_k = o->top_k, seed = 0;
    PORTA_TRY(number(p, "max_tokens", 1, 1000000, true, &max_tokens));
    PORTA_TRY(number(p, "temperature", 0, 1e6, false, &o->temperature));
    PORTA_TRY(number(p, "top_k", 0, 1000000000, true, &top_k));
    PORTA_TRY(number(p, "top_p", 1e-9, 1, false, &o->top_p));
    PORTA_TRY(number(p, "seed", 0, 9007199254740992.0, true, &seed));
    o->max_tokens = (int)max_tokens;
    o->top_k = (int)top_k;
    o->seed = (uint64_t)seed;
    const json_value *stop = json_object_get(p, "stop");
    if (stop) PORTA_TRY(id_list(stop, "parameters.stop", &r->stops, &o->stop_count));
    o->stop_ids = r->stops;
    return NULL;
}

static porta_status *decode(const json_value *root, serve_generate_request *r) {
    if (root->type != JSON_OBJECT)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "request: expected a JSON object, given %s",
                           json_type_name(root->type));
    for (size_t i = 0; i < root->as.object.count; i++) {
        const char *key = root->as.object.members[i].key;
        if (strcmp(key, "input_ids") && strcmp(key, "parameters") && strcmp(key, "id"))
            return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                               "request: expected input_ids, parameters or id, given '%.64s'", key);
    }
    PORTA_TRY(id_list(json_object_get(root, "input_ids"), "input_ids", &r->prompt,
                      &r->prompt_length));
    const json_value *p = json_object_get(root, "parameters");
    return p ? parameters(p, r) : NULL;
}

porta_status *serve_generate_request_parse(const char *body, size_t length,
                                           serve_generate_request *out) {
    memset(out, 0, sizeof *out);
    out->options = porta_generate_options_default();
    json_document *doc = NULL;
    porta_status *status = porta_error_context(json_parse(body, length, MAX_DEPTH, &doc),
                                               "request body");
    if (!status) status = decode(json_document_root(doc), out);
    json_document_free(doc);
    return status;
}

void serve_generate_request_clear(serve_generate_request *r) {
    free(r->prompt);
    free(r->stops);
    memset(r, 0, sizeof *r);
}
