/* The HTTP front end of `porta serve` on libmicrohttpd: one thread polls
 * every connection (epoll); a request that waits for a model run or a
 * decode loop is suspended, not a thread, and resumed by the thread that
 * answered it (docs/serve.md says why). It routes the Open Inference
 * Protocol's endpoints to src/serve/, writes an access log line per
 * request on stderr, and stops gracefully on SIGTERM/SIGINT. */
#include <stdio.h>

#include "cli.h"
#include "serve_app.h"

#ifndef PORTA_HAVE_MICROHTTPD

int serve_http_run(serve_app *app) {
    (void)app;
    fprintf(stderr, "porta serve: this porta was built without HTTP support: install "
                    "libmicrohttpd (Debian/Ubuntu: libmicrohttpd-dev) and rebuild\n");
    return 1;
}

#else

#include <arpa/inet.h>
#include <microhttpd.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>


/* Who resumes a suspended connection: the handler, which suspends it
 * before publishing SUSPENDED, or the thread with the answer, which
 * publishes ANSWERED; whichever comes second resumes, so a connection is
 * never resumed before it is suspended. */
enum { RUNNING, SUSPENDED, ANSWERED };

/* One request's state, from its first callback to its completion. */
typedef struct request_state {
    struct MHD_Connection *connection;
    double started;
    char *body;
    size_t length, capacity;
    bool too_large;
    bool begun;                /* handed to the server; `reply` is its answer */
    atomic_int handoff;        /* RUNNING, SUSPENDED, ANSWERED */
    porta_server_reply reply;
} request_state;

/* A generate_stream's events on their way out. */
typedef struct stream_state {
    struct MHD_Connection *connection;
    porta_server_stream *stream;
    atomic_int handoff;
} stream_state;

static atomic_int in_flight;
static atomic_bool stopping;

/* A value for the access log: printable ASCII as is, the rest (spaces,
 * quotes, control bytes, a hostile client's anything) as \xHH. */
static void log_value(FILE *out, const char *s) {
    fputc('"', out);
    for (const unsigned char *c = (const unsigned char *)s; c && *c; c++) {
        if (*c > 0x20 && *c < 0x7f && *c != '"' && *c != '\\') fputc(*c, out);
        else fprintf(out, "\\x%02x", *c);
    }
    fputc('"', out);
}

/* Written with one write(2): stderr is unbuffered, and a character at a
 * time cost tens of system calls per request. */
static void access_log(const serve_app *app, const char *method, const char *url,
                       const porta_server_reply *reply, size_t bytes_in, double seconds) {
    char stamp[32];
    struct timespec t;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &t);
    gmtime_r(&t.tv_sec, &tm);
    strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
    char *line = NULL;
    size_t length = 0;
    FILE *out = open_memstream(&line, &length);
    if (!out) return;
    fprintf(out, "time=%s.%03ldZ method=", stamp, t.tv_nsec / 1000000);
    log_value(out, method);
    fputs(" path=", out);
    log_value(out, url);
    fprintf(out, " status=%d bytes_in=%zu bytes_out=%zu ms=%.3f", reply->status, bytes_in,
            reply->length, seconds * 1e3);
    if (reply->model >= 0) {
        fputs(" model=", out);
        log_value(out, porta_server_model_name(app->server, reply->model));
        fprintf(out, " batch=%d", reply->batch);
    }
    fputc('\n', out);
    if (!fclose(out)) fwrite(line, 1, length, stderr);
    free(line);
}

/* Counts the request in /metrics and writes its access log line. */
static void finish(const serve_app *app, const char *method, const char *url,
                   const porta_server_reply *reply, const request_state *state) {
    double seconds = cli_now_seconds() - state->started;
    porta_server_record(app->server, reply->model, reply->status, seconds);
    access_log(app, method, url, reply, state->length, seconds);
}

static enum MHD_Result send_reply(struct MHD_Connection *connection, porta_server_reply *reply) {
    struct MHD_Response *response = MHD_create_response_from_buffer(
        reply->length, reply->body, MHD_RESPMEM_MUST_FREE);
    if (!response) return MHD_NO; /* the body is freed with the request */
    reply->body = NULL;
    MHD_add_response_header(response, "Content-Type", reply->content_type);
    if (reply->json_length != reply->length) {
        char length[32];
        snprintf(length, sizeof length, "%zu", reply->json_length);
        MHD_add_response_header(response, "Inference-Header-Content-Length", length);
    }
    enum MHD_Result result = MHD_queue_response(connection, (unsigned)reply->status, response);
    MHD_destroy_response(response);
    return result;
}

/* The answering thread's side of the hand-off (the enum above). */
static void answered(struct MHD_Connection *connection, atomic_int *handoff) {
    if (atomic_exchange(handoff, ANSWERED) == SUSPENDED) MHD_resume_connection(connection);
}

/* The handler's side: the connection sleeps until answered (or at once,
 * when the answer is already in). */
static void suspend(struct MHD_Connection *connection, atomic_int *handoff) {
    MHD_suspend_connection(connection);
    if (atomic_exchange(handoff, SUSPENDED) == ANSWERED) MHD_resume_connection(connection);
}

static void request_answered(void *user) {
    request_state *state = user;
    answered(state->connection, &state->handoff);
}

static void stream_answered(void *user) {
    stream_state *state = user;
    answered(state->connection, &state->handoff);
}

/* The events made so far; with none yet, the connection is suspended
 * until the generating thread has more (returning 0 alone would have the
 * polling thread spin). */
static ssize_t read_events(void *cls, uint64_t position, char *buffer, size_t capacity) {
    (void)position;
    stream_state *state = cls;
    bool ended = false;
    atomic_store(&state->handoff, RUNNING);
    size_t n = porta_server_stream_poll(state->stream, buffer, capacity, &ended, stream_answered,
                                        state);
    if (n) return (ssize_t)n;
    if (ended) return MHD_CONTENT_READER_END_OF_STREAM;
    suspend(state->connection, &state->handoff);
    return 0;
}

/* Streams being freed off the polling thread; the server waits for them
 * before it returns (and its caller frees the generators). */
static atomic_int streams_freeing;

static void *free_stream_thread(void *arg) {
    stream_state *state = arg;
    porta_server_stream_free(state->stream);
    free(state);
    atomic_fetch_sub(&streams_freeing, 1);
    return NULL;
}

/* Freeing a stream waits for its generation to end, which for a client
 * that left mid-stream is its remaining tokens: on a thread of its own,
 * so the polling thread goes on serving the other connections. */
static void free_stream(void *cls) {
    atomic_fetch_add(&streams_freeing, 1);
    pthread_t thread;
    pthread_attr_t attr;
    bool started = false;
    if (!pthread_attr_init(&attr)) {
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        started = !pthread_create(&thread, &attr, free_stream_thread, cls);
        pthread_attr_destroy(&attr);
    }
    if (!started) free_stream_thread(cls);
}

static enum MHD_Result send_stream(struct MHD_Connection *connection, porta_server_stream *stream) {
    stream_state *state = malloc(sizeof *state);
    struct MHD_Response *response = NULL;
    if (state) {
        *state = (stream_state){.connection = connection, .stream = stream};
        response = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, read_events, state,
                                                      free_stream);
    }
    if (!response) {
        porta_server_stream_free(stream);
        free(state);
        return MHD_NO;
    }
    MHD_add_response_header(response, "Content-Type", "text/event-stream");
    MHD_add_response_header(response, "Cache-Control", "no-cache");
    enum MHD_Result result = MHD_queue_response(connection, MHD_HTTP_OK, response);
    MHD_destroy_response(response);
    return result;
}

static bool is_stream(const char *method, const char *url) {
    size_t n = strlen(url), suffix = strlen("/generate_stream");
    return !strcmp(method, "POST") && n >= suffix && !strcmp(url + n - suffix, "/generate_stream");
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *connection, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_data_size,
                                  void **con_cls) {
    serve_app *app = cls;
    request_state *state = *con_cls;
    if (!state) { /* the headers are in: the body (if any) follows */
        if (!(state = calloc(1, sizeof *state))) return MHD_NO;
        state->started = cli_now_seconds();
        *con_cls = state;
        atomic_fetch_add(&in_flight, 1);
        const char *declared =
            MHD_lookup_connection_value(connection, MHD_HEADER_KIND, "Content-Length");
        if (declared && strtoull(declared, NULL, 10) > app->max_body_bytes)
            state->too_large = true;
        return MHD_YES;
    }
    if (*upload_data_size) {
        size_t chunk = *upload_data_size;
        *upload_data_size = 0;
        if (state->too_large || chunk > app->max_body_bytes - state->length) {
            state->too_large = true;
            return MHD_YES;
        }
        if (state->length + chunk > state->capacity) {
            size_t capacity = state->capacity ? state->capacity : 4096;
            while (capacity < state->length + chunk) capacity *= 2;
            char *grown = realloc(state->body, capacity);
            if (!grown) return MHD_NO;
            state->body = grown;
            state->capacity = capacity;
        }
        memcpy(state->body + state->length, upload_data, chunk);
        state->length += chunk;
        return MHD_YES;
    }
    porta_server_reply *reply = &state->reply;
    if (state->begun) { /* resumed: the answer is in */
    } else if (state->too_large) {
        /* Refused here: the body never reaches the server. */
        memset(reply, 0, sizeof *reply);
        reply->status = 413;
        reply->model = -1;
        reply->content_type = "application/json";
        if ((reply->body = malloc(128)))
            reply->length = reply->json_length = (size_t)snprintf(
                reply->body, 128,
                "{\"error\":\"request body larger than the limit of %zu bytes (--max-body-mib)\"}",
                app->max_body_bytes);
    } else if (is_stream(method, url)) {
        /* Logged and counted when the events start: the stream's status. */
        porta_server_stream *stream =
            porta_server_stream_start(app->server, url, state->body ? state->body : "",
                                      state->length, atomic_load(&stopping), reply);
        if (stream) {
            finish(app, method, url, reply, state);
            return send_stream(connection, stream);
        }
    } else {
        const char *header = MHD_lookup_connection_value(connection, MHD_HEADER_KIND,
                                                         "Inference-Header-Content-Length");
        state->begun = true;
        state->connection = connection;
        if (porta_server_begin(app->server, method, url, header, state->body ? state->body : "",
                               state->length, atomic_load(&stopping), reply, request_answered,
                               state)) {
            suspend(connection, &state->handoff);
            return MHD_YES;
        }
    }
    finish(app, method, url, reply, state);
    return send_reply(connection, reply);
}

static void on_completed(void *cls, struct MHD_Connection *connection, void **con_cls,
                         enum MHD_RequestTerminationCode code) {
    request_state *state = *con_cls;
    if (!state) return;
    /* A reply never sent: its client left while the request waited. */
    free(state->reply.body);
    free(state->body);
    free(state);
    *con_cls = NULL;
    atomic_fetch_sub(&in_flight, 1);
}

static bool bind_address(const char *host, int port, struct sockaddr_storage *address,
                         unsigned *flags) {
    memset(address, 0, sizeof *address);
    struct sockaddr_in *v4 = (struct sockaddr_in *)address;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)address;
    if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons((uint16_t)port);
        return true;
    }
    if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons((uint16_t)port);
        *flags |= MHD_USE_IPv6;
        return true;
    }
    return false;
}

int serve_http_run(serve_app *app) {
    struct sockaddr_storage address;
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL |
                     MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ITC | MHD_USE_ERROR_LOG;
    if (!bind_address(app->host, app->port, &address, &flags)) {
        fprintf(stderr, "porta serve: --host should be an IPv4 or IPv6 address such as "
                        "127.0.0.1, given '%s'\n", app->host);
        return 2;
    }
    struct MHD_Daemon *daemon = MHD_start_daemon(
        flags, (uint16_t)app->port, NULL, NULL, on_request, app,
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&address,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)app->max_connections,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)app->idle_timeout_s,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, app->max_header_bytes, MHD_OPTION_END);
    if (!daemon) {
        fprintf(stderr, "porta serve: cannot listen on %s port %d (in use, or not an address "
                        "of this machine?)\n", app->host, app->port);
        return 1;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    fprintf(stderr, "porta serve: listening on http://%s%s%s:%u\n",
            strchr(app->host, ':') ? "[" : "", app->host, strchr(app->host, ':') ? "]" : "",
            info ? (unsigned)info->port : (unsigned)app->port);
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    int signal_number = 0;
    sigwait(&stop, &signal_number);
    /* Stop accepting, then let the requests already taken finish (a keep-
     * alive connection's next request is answered 503 meanwhile). */
    atomic_store(&stopping, true);
    fprintf(stderr, "porta serve: %s: stopping; finishing %d request(s) in flight\n",
            strsignal(signal_number), atomic_load(&in_flight));
    int listener = MHD_quiesce_daemon(daemon);
    while (atomic_load(&in_flight) > 0) {
        struct timespec pause = {0, 10 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
    MHD_stop_daemon(daemon);
    while (atomic_load(&streams_freeing) > 0) {
        struct timespec pause = {0, 10 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
    if (listener >= 0) close(listener);
    fprintf(stderr, "porta serve: stopped\n");
    return 0;
}

#endif
