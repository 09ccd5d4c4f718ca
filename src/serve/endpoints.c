/* Routing and answering the protocol's endpoints (endpoints.h). */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "core/text.h"
#include "io/utf8.h"
#include "serve/endpoints.h"
#include "serve/generate_endpoint.h"

static const char json_type[] = "application/json";

static void reply_text(serve_reply *r, int status, char *body) {
    r->status = status;
    r->content_type = json_type;
    r->body = body;
    r->length = r->json_length = body ? strlen(body) : 0;
}

void serve_reply_error(serve_reply *r, int status, const char *fmt, ...) {
    char message[1024];
    va_list args;
    va_start(args, fmt);
    vsnprintf(message, sizeof message, fmt, args);
    va_end(args);
    /* A message may quote the request's path, which is any bytes; the JSON
     * reply must be UTF-8 (a cut-off multi-byte character counts too). */
    if (!utf8_is_valid(message, strlen(message), NULL))
        for (char *c = message; *c; c++)
            if ((unsigned char)*c >= 0x80) *c = '?';
    core_text text = {0};
    text_puts(&text, "{\"error\":");
    text_json_cstring(&text, message);
    text_puts(&text, "}");
    char *body = NULL;
    porta_status_free(text_take(&text, "an error reply", &body));
    reply_text(r, status, body);
}

int serve_http_status_of(const porta_status *status) {
    switch (porta_status_code(status)) {
    case PORTA_ERR_INVALID_ARGUMENT:
    case PORTA_ERR_OUT_OF_RANGE: /* an index in the request out of range */
    case PORTA_ERR_SHAPE:
    case PORTA_ERR_DTYPE:
    case PORTA_ERR_UNSUPPORTED: return 400;
    /* Busy, out of memory, over the time limit: worth trying again later. */
    case PORTA_ERR_UNAVAILABLE:
    case PORTA_ERR_OUT_OF_MEMORY: return 503;
    default: return 500;
    }
}

void serve_reply_status(serve_reply *r, porta_status *status) {
    serve_reply_error(r, serve_http_status_of(status), "%s", porta_status_message(status));
    porta_status_free(status);
}

static void reply_built(serve_reply *r, porta_status *status, char *body) {
    if (status) serve_reply_status(r, status);
    else reply_text(r, 200, body);
}

static void server_metadata(serve_reply *r) {
    core_text text = {0};
    text_printf(&text, "{\"name\":\"porta\",\"version\":\"%s\",\"extensions\":"
                       "[\"binary_tensor_data\"]}",
                porta_version_string());
    char *body = NULL;
    porta_status *status = text_take(&text, "server metadata", &body);
    reply_built(r, status, body);
}

/* An inference request between its queueing and its batch's end. */
typedef struct pending_infer {
    const serve_model *model;
    serve_request *request;
    serve_reply *reply;
    serve_reply_ready ready;
    void *user;
} pending_infer;

/* The batch worker's callback: the reply is encoded straight from this
 * request's rows of the batch's outputs (their one copy). */
static void infer_done(void *context, const serve_tensor *outputs, int batch_requests,
                       porta_status *status) {
    pending_infer *p = context;
    serve_reply *r = p->reply;
    r->batch = batch_requests;
    char *reply = NULL;
    size_t reply_length = 0, reply_json = 0;
    if (status) status = porta_error_context(status, "model '%s'", p->model->name);
    else
        status = serve_response_encode(p->model->name, p->model->version, p->request, outputs,
                                       p->model->output_count, &reply, &reply_length, &reply_json);
    if (status) {
        serve_reply_status(r, status);
    } else {
        reply_text(r, 200, reply);
        r->length = reply_length;
        r->json_length = reply_json;
        if (reply_json != reply_length) r->content_type = "application/octet-stream";
    }
    serve_request_free(p->request);
    serve_reply_ready ready = p->ready;
    void *user = p->user;
    free(p);
    ready(user);
}

/* Queues the request for the model's batch worker: true when it is queued
 * (infer_done answers it), false with the reply filled when it is refused. */
static bool infer(const serve_server *server, int index, const char *header_length,
                  const char *body, size_t length, serve_reply *r, serve_reply_ready ready,
                  void *user) {
    serve_model *model = server->models[index];
    size_t json_length = length;
    if (header_length) {
        char *end;
        unsigned long long value = strtoull(header_length, &end, 10);
        if (!*header_length || *end || header_length[0] == '-' || value > length) {
            serve_reply_error(r, 400,
                              "Inference-Header-Content-Length should be a byte count from 0 to "
                              "the body's %zu, given '%.32s'",
                              length, header_length);
            return false;
        }
        json_length = (size_t)value;
    }
    pending_infer *p = malloc(sizeof *p);
    int64_t rows = 1;
    serve_request *request = NULL;
    porta_status *status = p ? serve_request_parse(body, length, json_length, &request)
                             : porta_error(PORTA_ERR_OUT_OF_MEMORY, "out of memory");
    if (!status) status = serve_model_check(model, request, &rows);
    if (!status) {
        *p = (pending_infer){model, request, r, ready, user};
        status = serve_batcher_submit(server->batchers[index], request->inputs, rows, infer_done, p);
        if (!status) return true;
        status = porta_error_context(status, "model '%s'", model->name);
    }
    serve_reply_status(r, status);
    serve_request_free(request);
    free(p);
    return false;
}

/* A generate request, run by a thread of its own: its decode loop waits for
 * steps shared with other sequences. */
typedef struct pending_generate {
    porta_generator *generator;
    const serve_model *model;
    const char *body;
    size_t length;
    serve_reply *reply;
    serve_reply_ready ready;
    void *user;
} pending_generate;

static void *generate_thread(void *arg) {
    pending_generate *p = arg;
    serve_generate(p->generator, p->model->name, p->model->version, p->body, p->length, false,
                   p->reply);
    serve_reply_ready ready = p->ready;
    void *user = p->user;
    free(p);
    ready(user);
    return NULL;
}

static bool generate(porta_generator *generator, const serve_model *model, const char *body,
                     size_t length, serve_reply *r, serve_reply_ready ready, void *user) {
    pending_generate *p = malloc(sizeof *p);
    pthread_t thread;
    pthread_attr_t attr;
    if (p && !pthread_attr_init(&attr)) {
        *p = (pending_generate){generator, model, body, length, r, ready, user};
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        int err = pthread_create(&thread, &attr, generate_thread, p);
        pthread_attr_destroy(&attr);
        if (!err) return true;
    }
    free(p);
    serve_reply_error(r, 503, "model '%s': generate: cannot start a thread", model->name);
    return false;
}

int serve_find_model(const serve_server *server, const char *path, const char **rest,
                      serve_reply *r) {
    size_t name_length = strcspn(path, "/");
    int index = -1;
    for (int i = 0; i < server->model_count && index < 0; i++)
        if (strlen(server->models[i]->name) == name_length &&
            !memcmp(server->models[i]->name, path, name_length))
            index = i;
    if (index < 0) {
        serve_reply_error(r, 404, "no model named '%.*s' is served", (int)(name_length < 128 ? name_length : 128), path);
        return -1;
    }
    path += name_length;
    if (!strncmp(path, "/versions/", 10)) {
        const char *version = path + 10, *wanted = server->models[index]->version;
        size_t version_length = strcspn(version, "/");
        if (version_length != strlen(wanted) || memcmp(version, wanted, version_length)) {
            serve_reply_error(r, 404, "model '%s' has no version '%.*s' (its versions: %s)",
                              server->models[index]->name,
                              (int)(version_length < 64 ? version_length : 64), version, wanted);
            return -1;
        }
        path = version + version_length;
    }
    *rest = path;
    return index;
}

/* True when the request waits (inference, generate): `ready` answers it. */
static bool model_endpoint(const serve_server *server, const char *method, const char *path,
                           const char *header_length, const char *body, size_t length,
                           serve_reply *r, serve_reply_ready ready, void *user) {
    const char *rest;
    int index = serve_find_model(server, path, &rest, r);
    if (index < 0) return false;
    serve_model *model = server->models[index];
    bool get = !strcmp(method, "GET"), post = !strcmp(method, "POST");
    bool is_generate = !strcmp(rest, "/generate") || !strcmp(rest, "/generate_stream");
    porta_generator *generator = server->generators ? server->generators[index] : NULL;
    if (!*rest && get) {
        char *json = NULL;
        porta_status *status = serve_model_metadata(model, &json);
        reply_built(r, status, json);
    } else if (!strcmp(rest, "/ready") && get) {
        core_text text = {0};
        text_puts(&text, "{\"name\":");
        text_json_cstring(&text, model->name);
        text_puts(&text, ",\"ready\":true}");
        char *json = NULL;
        porta_status *status = text_take(&text, "model readiness", &json);
        reply_built(r, status, json);
    } else if (!strcmp(rest, "/infer") && post) {
        r->model = index;
        return infer(server, index, header_length, body, length, r, ready, user);
    } else if (is_generate && !generator) {
        serve_reply_error(r, 404,
                          "model '%s' has no endpoint '%s': it is not a decode step with a KV "
                          "cache (inputs ids, positions, keys, values, as "
                          "torch_porta.export_causal_lm writes)",
                          model->name, rest + 1);
    } else if (is_generate && post && !strcmp(rest, "/generate")) {
        r->model = index;
        return generate(generator, model, body, length, r, ready, user);
    } else if (is_generate && post) {
        /* generate_stream through here (not porta_server_stream_start): the
         * events in one body once generation ends. */
        r->model = index;
        serve_generate(generator, model->name, model->version, body, length, true, r);
    } else if (!*rest || !strcmp(rest, "/ready") || !strcmp(rest, "/infer") || is_generate) {
        serve_reply_error(r, 405, "%s takes %s, not %.16s", rest[0] ? rest + 1 : "model metadata",
                          *rest && strcmp(rest, "/ready") ? "POST" : "GET", method);
    } else {
        serve_reply_error(r, 404,
                          "model '%s' has no endpoint '%.64s' (metadata, ready, infer, generate, "
                          "generate_stream)",
                          model->name, rest + (rest[0] == '/'));
    }
    return false;
}

bool serve_route_begin(const serve_server *server, const char *method, const char *path,
                       const char *header_length, const char *body, size_t length, bool stopping,
                       serve_reply *r, serve_reply_ready ready, void *user) {
    memset(r, 0, sizeof *r);
    r->model = -1;
    bool get = !strcmp(method, "GET");
    if (!strncmp(path, "/v2/models/", 11)) {
        if (stopping && !strcmp(method, "POST"))
            serve_reply_error(r, 503, "the server is stopping");
        else
            return model_endpoint(server, method, path + 11, header_length, body, length, r,
                                  ready, user);
    } else if (!strcmp(path, "/v2/health/live") && get) {
        reply_text(r, 200, strdup("{\"live\":true}"));
    } else if (!strcmp(path, "/v2/health/ready") && get) {
        if (stopping) serve_reply_error(r, 503, "the server is stopping");
        else reply_text(r, 200, strdup("{\"ready\":true}"));
    } else if (!strcmp(path, "/v2") && get) {
        server_metadata(r);
    } else if (!strcmp(path, "/metrics") && get) {
        char *text = NULL;
        porta_status *status = serve_metrics_render(server->metrics, server->generators, &text);
        reply_built(r, status, text);
        if (r->status == 200) r->content_type = "text/plain; version=0.0.4";
    } else {
        serve_reply_error(r, 404, "no endpoint %.16s %.128s (the Open Inference Protocol's /v2/..., "
                                  "/metrics)",
                          method, path);
    }
    return false;
}

/* serve_route's wait for a request that serve_route_begin queued. */
typedef struct waiter {
    pthread_mutex_t lock;
    pthread_cond_t ready;
    bool done;
} waiter;

static void wake(void *user) {
    waiter *w = user;
    pthread_mutex_lock(&w->lock);
    w->done = true;
    pthread_cond_signal(&w->ready);
    pthread_mutex_unlock(&w->lock);
}

void serve_route(const serve_server *server, const char *method, const char *path,
                 const char *header_length, const char *body, size_t length, bool stopping,
                 serve_reply *r) {
    waiter w = {.done = false};
    pthread_mutex_init(&w.lock, NULL);
    pthread_cond_init(&w.ready, NULL);
    if (serve_route_begin(server, method, path, header_length, body, length, stopping, r, wake,
                          &w)) {
        pthread_mutex_lock(&w.lock);
        while (!w.done) pthread_cond_wait(&w.ready, &w.lock);
        pthread_mutex_unlock(&w.lock);
    }
    pthread_cond_destroy(&w.ready);
    pthread_mutex_destroy(&w.lock);
}
