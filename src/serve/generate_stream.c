/* generate_stream with its events sent as they are made (porta_serve.h):
 * a thread runs the generation, each token appends an event to a buffer
 * that the HTTP side reads from, waiting while it is empty (or, polling,
 * asking to be called back when it is not). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "core/text.h"
#include "serve/endpoints.h"
#include "serve/generate_request.h"
#include "serve/generate_stream.h"
#include "serve/protocol.h"

struct porta_server_stream {
    porta_generator *generator;
    serve_generate_request request;
    const char *model_name, *model_version; /* the server's, which outlives the stream */
    pthread_mutex_t lock;
    pthread_cond_t more;
    pthread_t thread;
    core_text events;
    size_t read; /* bytes of events handed out */
    bool done;
    /* Set by porta_server_stream_poll finding nothing to read: called once
     * when there is more. */
    porta_server_ready ready;
    void *ready_user;
};

/* Wakes the readers after s->lock's holder added events or ended the
 * stream; unlocks it. The poller's callback runs without the lock, so it
 * may take its own locks (the HTTP side's) in any order. */
static void more_ready(porta_server_stream *s) {
    porta_server_ready ready = s->ready;
    void *user = s->ready_user;
    s->ready = NULL;
    pthread_cond_broadcast(&s->more);
    pthread_mutex_unlock(&s->lock);
    if (ready) ready(user);
}

static void append(porta_server_stream *s, const char *text) {
    pthread_mutex_lock(&s->lock);
    text_puts(&s->events, text);
    more_ready(s);
}

static void on_token(void *context, int64_t token) {
    porta_server_stream *s = context;
    pthread_mutex_lock(&s->lock);
    serve_token_event(&s->events, s->model_name, s->model_version, token);
    more_ready(s);
}

static void *generate(void *arg) {
    porta_server_stream *s = arg;
    serve_generate_request *r = &s->request;
    int64_t *tokens = NULL;
    int count = 0;
    porta_status *status = porta_generate(s->generator, r->prompt, r->prompt_length, &r->options,
                                          on_token, s, &tokens, &count);
    free(tokens);
    if (status) {
        core_text event = {0};
        text_puts(&event, "data: {\"error\":");
        text_json_cstring(&event, porta_status_message(status));
        text_puts(&event, "}\n\n");
        char *text = NULL;
        porta_status_free(text_take(&event, "an event", &text));
        if (text) append(s, text);
        free(text);
        porta_status_free(status);
    }
    pthread_mutex_lock(&s->lock);
    s->done = true;
    more_ready(s);
    return NULL;
}

static void stream_destroy(porta_server_stream *s) {
    serve_generate_request_clear(&s->request);
    text_free(&s->events);
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->more);
    free(s);
}

porta_server_stream *serve_generate_stream_start(serve_server *server, const char *path,
                                                 const char *body, size_t length, bool stopping,
                                                 serve_reply *r) {
    memset(r, 0, sizeof *r);
    r->model = -1;
    const char *rest = "";
    int index = -1;
    if (!strncmp(path, "/v2/models/", 11) && !stopping) {
        serve_reply probe;
        index = serve_find_model(server, path + 11, &rest, &probe);
        if (index < 0) free(probe.body);
    }
    if (index < 0 || strcmp(rest, "/generate_stream") || !server->generators[index]) {
        serve_route(server, "POST", path, NULL, body, length, stopping, r);
        return NULL;
    }
    r->model = index;
    porta_server_stream *s = calloc(1, sizeof *s);
    if (!s) {
        serve_reply_error(r, 503, "generate_stream: out of memory");
        return NULL;
    }
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->more, NULL);
    s->generator = server->generators[index];
    porta_status *status = serve_generate_request_parse(body, length, &s->request);
    if (!status)
        status = porta_generate_check(s->generator, s->request.prompt, s->request.prompt_length,
                                      &s->request.options);
    s->model_name = server->models[index]->name;
    s->model_version = server->models[index]->version;
    if (!status && pthread_create(&s->thread, NULL, generate, s))
        status = porta_error(PORTA_ERR_UNAVAILABLE, "generate_stream: cannot start a thread");
    if (status) {
        serve_reply_status(r, status);
        stream_destroy(s);
        return NULL;
    }
    r->status = 200;
    r->content_type = "text/event-stream";
    return s;
}

size_t porta_server_stream_read(porta_server_stream *s, char *buffer, size_t capacity) {
    pthread_mutex_lock(&s->lock);
    while (s->events.length == s->read && !s->done) pthread_cond_wait(&s->more, &s->lock);
    size_t n = s->events.length - s->read;
    if (n > capacity) n = capacity;
    memcpy(buffer, s->events.chars + s->read, n);
    s->read += n;
    pthread_mutex_unlock(&s->lock);
    return n;
}

size_t porta_server_stream_poll(porta_server_stream *s, char *buffer, size_t capacity,
                                bool *ended, porta_server_ready ready, void *user) {
    pthread_mutex_lock(&s->lock);
    size_t n = s->events.length - s->read;
    if (n > capacity) n = capacity;
    if (n) memcpy(buffer, s->events.chars + s->read, n);
    s->read += n;
    *ended = !n && s->done;
    if (!n && !s->done) {
        s->ready = ready;
        s->ready_user = user;
    }
    pthread_mutex_unlock(&s->lock);
    return n;
}

void porta_server_stream_free(porta_server_stream *s) {
    if (!s) return;
    pthread_join(s->thread, NULL);
    stream_destroy(s);
}
