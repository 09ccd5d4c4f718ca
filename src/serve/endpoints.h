/* The Open Inference Protocol's REST endpoints as plain functions: a
 * method, a (decoded) path, the Inference-Header-Content-Length header and
 * the body in; a status code, a content type and a body out
 * (porta_server_handle). The HTTP library lives in the porta tool
 * (tools/porta/cmd_serve_http.c); keeping it out of here lets the tests
 * drive every endpoint without sockets. */
#ifndef PORTA_SERVE_ENDPOINTS_H
#define PORTA_SERVE_ENDPOINTS_H

#include <stdbool.h>
#include <stddef.h>

#include "serve/batcher.h"
#include "serve/metrics.h"
#include "serve/served_model.h"
#include "porta_generate.h"
#include "porta_serve.h"

typedef struct serve_server {
    serve_model **models;
    serve_batcher **batchers; /* one per model */
    /* One per model: the model loaded a second time, decoding sequences
     * (generate endpoints), when it is a KV-cache decode step; else NULL. */
    porta_generator **generators;
    porta_model **generator_models;
    int model_count;
    serve_metrics *metrics;
} serve_server;

typedef porta_server_reply serve_reply;

/* A reply {"error": message}. */
void serve_reply_error(serve_reply *reply, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The status code for a failed request's status: 400 for a request that
 * is wrong, 503 for one worth trying again later (busy, out of memory,
 * over the time limit), else 500. */
int serve_http_status_of(const porta_status *status);
/* A reply {"error": the status's message} with serve_http_status_of's
 * code; frees the status. */
void serve_reply_status(serve_reply *reply, porta_status *status);

/* The model a NAME[/versions/V] path (after /v2/models/) names, -1 with
 * the reply filled when none; *rest is what follows. */
int serve_find_model(const serve_server *server, const char *path, const char **rest,
                     serve_reply *reply);
/* Called, from another thread, once *reply holds the answer to a request
 * that serve_route_begin left waiting. */
typedef void (*serve_reply_ready)(void *user);

/* serve_route without waiting: a request that waits for a model run
 * (inference, queued for its batch worker) or a decode loop (generate, on
 * a thread of its own) returns true at once, and ready(user) is called
 * once *out is filled; method, path, header_length and body must stay
 * valid until then. Any other request is answered before it returns false
 * (ready is not called). */
bool serve_route_begin(const serve_server *server, const char *method, const char *path,
                       const char *header_length, const char *body, size_t length, bool stopping,
                       serve_reply *out, serve_reply_ready ready, void *user);

/* Answers one request, waiting for it. `stopping`: the server is shutting down (ready is
 * then 503). header_length is the Inference-Header-Content-Length header's
 * text, or NULL. */
void serve_route(const serve_server *server, const char *method, const char *path,
                 const char *header_length, const char *body, size_t length, bool stopping,
                 serve_reply *out);

#endif
