/* The public server (porta_serve.h): the served models, a batcher per
 * model and the metrics, behind the endpoints. */
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "serve/endpoints.h"
#include "serve/generate_stream.h"

struct porta_server {
    serve_server parts;
};

void porta_server_free(porta_server *s) {
    if (!s) return;
    serve_server *p = &s->parts;
    for (int i = 0; p->batchers && i < p->model_count; i++) serve_batcher_stop(p->batchers[i]);
    for (int i = 0; p->generators && i < p->model_count; i++) {
        porta_generator_free(p->generators[i]);
        porta_model_free(p->generator_models[i]);
    }
    for (int i = 0; p->models && i < p->model_count; i++) serve_model_free(p->models[i]);
    serve_metrics_free(p->metrics);
    free(p->batchers);
    free(p->generators);
    free(p->generator_models);
    free(p->models);
    free(s);
}

static porta_status *check_options(const porta_server_options *o) {
    if (!o || !o->device || o->model_count < 1 || !o->model_paths)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "porta_server_create: expected options with a device and at least "
                           "one model path");
    if (o->max_batch < 1 || o->max_queue < 0 || !(o->batch_delay_seconds >= 0) ||
        !(o->request_timeout_seconds >= 0))
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "porta_server_create: expected max_batch >= 1, max_queue >= 0 and "
                           "delays >= 0, given %d, %d, %g s, %g s",
                           o->max_batch, o->max_queue, o->batch_delay_seconds,
                           o->request_timeout_seconds);
    return NULL;
}

/* Whether the model is a decode step with its KV cache, by its inputs'
 * names as torch_porta.export_causal_lm writes them. */
static bool is_decode_step(const serve_model *model) {
    static const char *const names[] = {"ids", "positions", "keys", "values"};
    if (model->input_count != 4) return false;
    for (int i = 0; i < 4; i++)
        if (strcmp(model->inputs[i].name, names[i])) return false;
    return true;
}

/* A generator for each decode-step model, on its own copy of the model
 * (a model runs on one thread at a time; the batcher has the other). */
static porta_status *start_generators(serve_server *p, const porta_server_options *o) {
    for (int i = 0; i < p->model_count; i++) {
        if (!is_decode_step(p->models[i])) continue;
        PORTA_TRY(porta_model_load(o->model_paths[i], &p->generator_models[i]));
        PORTA_TRY(porta_error_context(porta_generator_create(p->generator_models[i], o->device,
                                                             o->max_batch, &p->generators[i]),
                                      "model '%s', decoding %d sequences together (max_batch)",
                                      p->models[i]->name, o->max_batch));
        /* After creating the generator, which runs the model once. */
        if (o->request_timeout_seconds > 0)
            PORTA_TRY(porta_model_set_time_limit(p->generator_models[i],
                                                 o->request_timeout_seconds));
    }
    return NULL;
}

static porta_status *load(porta_server *s, const porta_server_options *o) {
    serve_server *p = &s->parts;
    for (int i = 0; i < o->model_count; i++) {
        serve_model *model = NULL;
        PORTA_TRY(serve_model_open(o->model_paths[i], o->device, &model));
        p->models[p->model_count++] = model;
        if (o->request_timeout_seconds > 0)
            PORTA_TRY(porta_model_set_time_limit(model->model, o->request_timeout_seconds));
        for (int k = 0; k < i; k++)
            if (!strcmp(p->models[k]->name, model->name))
                return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                                   "%s and %s are both named '%s': models are named by their "
                                   "file name, which must differ",
                                   o->model_paths[k], o->model_paths[i], model->name);
    }
    const char **names = calloc((size_t)p->model_count + 1, sizeof *names);
    if (!names) return porta_error(PORTA_ERR_OUT_OF_MEMORY, "server: out of memory");
    for (int i = 0; i < p->model_count; i++) names[i] = p->models[i]->name;
    porta_status *status = serve_metrics_create(names, p->model_count, &p->metrics);
    free(names);
    PORTA_TRY(status);
    serve_batcher_options batching = {o->max_batch, o->batch_delay_seconds, o->max_queue};
    for (int i = 0; i < p->model_count; i++)
        PORTA_TRY(serve_batcher_start(p->models[i], batching, p->metrics, i, &p->batchers[i]));
    return start_generators(p, o);
}

porta_status *porta_server_create(const porta_server_options *o, porta_server **out) {
    if (out) *out = NULL;
    if (!out) return porta_error(PORTA_ERR_INVALID_ARGUMENT, "porta_server_create: out is NULL");
    PORTA_TRY(check_options(o));
    porta_server *s = calloc(1, sizeof *s);
    if (s) s->parts.models = calloc((size_t)o->model_count, sizeof *s->parts.models);
    if (s) s->parts.batchers = calloc((size_t)o->model_count, sizeof *s->parts.batchers);
    if (s) s->parts.generators = calloc((size_t)o->model_count, sizeof *s->parts.generators);
    if (s)
        s->parts.generator_models =
            calloc((size_t)o->model_count, sizeof *s->parts.generator_models);
    porta_status *status = s && s->parts.models && s->parts.batchers && s->parts.generators &&
                                   s->parts.generator_models
                               ? load(s, o)
                               : porta_error(PORTA_ERR_OUT_OF_MEMORY, "server: out of memory");
    if (status) {
        porta_server_free(s);
        return status;
    }
    *out = s;
    return NULL;
}

int porta_server_model_count(const porta_server *s) { return s ? s->parts.model_count : 0; }

const char *porta_server_model_name(const porta_server *s, int index) {
    if (!s || index < 0 || index >= s->parts.model_count) return NULL;
    return s->parts.models[index]->name;
}

bool porta_server_model_batched(const porta_server *s, int index) {
    if (!s || index < 0 || index >= s->parts.model_count) return false;
    return s->parts.models[index]->batchable;
}

bool porta_server_model_generates(const porta_server *s, int index) {
    if (!s || index < 0 || index >= s->parts.model_count) return false;
    return s->parts.generators[index] != NULL;
}

void porta_server_handle(porta_server *s, const char *method, const char *path,
                         const char *header_length, const char *body, size_t length,
                         bool stopping, porta_server_reply *out) {
    serve_route(&s->parts, method, path, header_length, body, length, stopping, out);
}

bool porta_server_begin(porta_server *s, const char *method, const char *path,
                        const char *header_length, const char *body, size_t length, bool stopping,
                        porta_server_reply *out, porta_server_ready ready, void *user) {
    return serve_route_begin(&s->parts, method, path, header_length, body, length, stopping, out,
                             ready, user);
}

porta_server_stream *porta_server_stream_start(porta_server *s, const char *path,
                                               const char *body, size_t length, bool stopping,
                                               porta_server_reply *out) {
    return serve_generate_stream_start(&s->parts, path, body, length, stopping, out);
}

void porta_server_record(porta_server *s, int model, int http_status, double seconds) {
    serve_metrics_request(s->parts.metrics, model, http_status, seconds);
}
