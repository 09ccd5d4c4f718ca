/*
 * porta_serve.h - serving models over the Open Inference Protocol
 * (KServe v2): the endpoints as a function, without the HTTP transport.
 *
 * The conventions of porta.h apply. A server loads each model once on one
 * device, runs a batching queue per model (requests arriving within the
 * batch window are stacked along the model's batch dim: dim 0 of every
 * input, one symbol found nowhere else in the inputs, that every output's
 * dim 0 follows), and answers requests given as a method, a path and a
 * body. `porta serve` puts libmicrohttpd in front of it (docs/serve.md).
 * porta_server_handle and porta_server_begin may be called from many
 * threads at once.
 */
#ifndef PORTA_SERVE_H
#define PORTA_SERVE_H

#include <stdbool.h>
#include <stddef.h>

#include "porta.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct porta_server porta_server;

typedef struct porta_server_options {
    const char *const *model_paths; /* .porta or .pt2 files; named by file name */
    int model_count;
    porta_device *device;
    int max_batch;               /* rows per run; 1: no batching */
    double batch_delay_seconds;  /* the batch window */
    int max_queue;               /* requests waiting per model; more get 503 */
    double request_timeout_seconds; /* a model run still going stops (503); 0: none */
} porta_server_options;

/* Loads and warms up every model (two runs each on zeros, to learn the
 * outputs' dtypes and dynamic dims) and starts its batching queue. */
PORTA_API porta_status *porta_server_create(const porta_server_options *options,
                                            porta_server **out);
/* Finishes the requests queued, then frees everything. */
PORTA_API void porta_server_free(porta_server *server);

PORTA_API int porta_server_model_count(const porta_server *server);
PORTA_API const char *porta_server_model_name(const porta_server *server, int index);
/* Whether model `index` stacks requests along a batch dim. */
PORTA_API bool porta_server_model_batched(const porta_server *server, int index);
/* Whether model `index` answers the generate endpoints (a KV-cache decode
 * step, docs/serve.md "Generation"). */
PORTA_API bool porta_server_model_generates(const porta_server *server, int index);

typedef struct porta_server_reply {
    int status;               /* HTTP status code */
    const char *content_type; /* static text */
    char *body;               /* free() it */
    size_t length;
    size_t json_length; /* < length: binary data follows (Inference-Header-Content-Length) */
    int model;          /* the model an inference request was for, else -1 */
    int batch;          /* requests its run stacked (inference only) */
} porta_server_reply;

/* Answers one request: method "GET"/"POST", the decoded path, the
 * Inference-Header-Content-Length header's text (NULL when absent), the
 * body. `stopping`: the server is shutting down (ready and inference then
 * answer 503). */
PORTA_API void porta_server_handle(porta_server *server, const char *method, const char *path,
                                   const char *header_length, const char *body, size_t length,
                                   bool stopping, porta_server_reply *out);
/* Called, from another thread, when what the caller waits for is ready. */
typedef void (*porta_server_ready)(void *user);

/* porta_server_handle without waiting, for event-driven front ends: a
 * request that waits for a model run (inference, queued for the batch)
 * or a decode loop (generate) returns true at once, and ready(user) is
 * called from another thread once *out is filled (method, path,
 * header_length and body must stay valid until then). Any other request
 * is answered before it returns false (ready is not called). */
PORTA_API bool porta_server_begin(porta_server *server, const char *method, const char *path,
                                  const char *header_length, const char *body, size_t length,
                                  bool stopping, porta_server_reply *out,
                                  porta_server_ready ready, void *user);

/* POST .../generate_stream with its events sent as they are made: a
 * stream when the request can start (*out untouched), else NULL with *out
 * the reply to send (what porta_server_handle answers: 400 naming the
 * field, 404, 503 while stopping). porta_server_stream_read copies up to
 * `capacity` bytes of the events ("data: {...}\n\n", one per token) into
 * `buffer`, waiting for the next token; 0 at the end. An error after the
 * first event ends the stream with an event {"error": "..."}.
 * porta_server_stream_free waits for the generation to end. */
typedef struct porta_server_stream porta_server_stream;
PORTA_API porta_server_stream *porta_server_stream_start(porta_server *server, const char *path,
                                                         const char *body, size_t length,
                                                         bool stopping, porta_server_reply *out);
PORTA_API size_t porta_server_stream_read(porta_server_stream *stream, char *buffer,
                                          size_t capacity);
/* porta_server_stream_read without waiting: the bytes ready now; when
 * none are, 0 with *ended telling whether the stream is over, and when it
 * is not, ready(user) is called once (from the generating thread, no lock
 * held) as soon as more is ready or the stream ends. */
PORTA_API size_t porta_server_stream_poll(porta_server_stream *stream, char *buffer,
                                          size_t capacity, bool *ended,
                                          porta_server_ready ready, void *user);
PORTA_API void porta_server_stream_free(porta_server_stream *stream);

/* Counts a finished HTTP request in /metrics: its status and, for an
 * inference request (model >= 0), its latency. */
PORTA_API void porta_server_record(porta_server *server, int model, int http_status,
                                   double seconds);

#ifdef __cplusplus
}
#endif

#endif
