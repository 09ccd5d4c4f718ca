/* `porta serve`'s generate endpoints without sockets: the tiny KV-cache
 * model of tiny_lm.h (next token = fed token + 1 mod 5) served by
 * porta_server_create, answered on /generate and /generate_stream, its
 * series in /metrics, the same without waiting (porta_server_begin,
 * porta_server_stream_poll), and requests with a bad field refused with
 * 400 naming it. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "porta_serve.h"
#include "test.h"
#include "tiny_lm.h"

static porta_server *open_server_timed(char *dir, size_t cap, double timeout_seconds) {
    char path[400];
    if (!tiny_lm_save(dir, cap, path, sizeof path)) return NULL;
    const char *paths[1] = {path};
    porta_server_options o = {paths, 1, test_cpu(), 4, 0.001, 16, timeout_seconds};
    porta_server *server = NULL;
    porta_status *status = porta_server_create(&o, &server);
    if (status) {
        test_fail(__FILE__, __LINE__, "%s", porta_status_message(status));
        porta_status_free(status);
    }
    return server;
}

static porta_server *open_server(char *dir, size_t cap) { return open_server_timed(dir, cap, 0); }

static porta_server_reply post(porta_server *s, const char *path, const char *body) {
    porta_server_reply r;
    porta_server_handle(s, body ? "POST" : "GET", path, NULL, body ? body : "",
                        body ? strlen(body) : 0, false, &r);
    return r;
}

#define CHECK_REPLY(reply, code, needle)                                                   \
    do {                                                                                   \
        porta_server_reply r_ = (reply);                                                   \
        CHECK_MSG(r_.status == (code) && r_.body && strstr(r_.body, (needle)),             \
                  "status %d, expected %d with '%s': %.*s", r_.status, (code), (needle),   \
                  (int)r_.length, r_.body ? r_.body : "");                                 \
        free(r_.body);                                                                     \
    } while (0)

TEST(serve_generate_answers_generate_and_stream) {
    char dir[256];
    porta_server *s = open_server(dir, sizeof dir);
    if (!s) return;
    CHECK(porta_server_model_generates(s, 0) && !porta_server_model_generates(s, 1));
    const char *path = "/v2/models/tiny/generate";
    CHECK_REPLY(post(s, path, "{\"input_ids\":[3,1],\"parameters\":{\"max_tokens\":3}}"), 200,
                "{\"model_name\":\"tiny\",\"model_version\":\"1\",\"output_ids\":[2,3,4]}");
    CHECK_REPLY(post(s, path, "{\"input_ids\":[2],\"parameters\":{\"max_tokens\":9,\"stop\":[4],"
                              "\"temperature\":0,\"top_k\":0,\"top_p\":1,\"seed\":5}}"),
                200, "\"output_ids\":[3,4]}");
    porta_server_reply stream = post(s, "/v2/models/tiny/generate_stream",
                                     "{\"input_ids\":[0],\"parameters\":{\"max_tokens\":2}}");
    CHECK(stream.status == 200 && !strcmp(stream.content_type, "text/event-stream"));
    CHECK_MSG(stream.body && !strcmp(stream.body,
                                     "data: {\"model_name\":\"tiny\",\"model_version\":\"1\","
                                     "\"output_ids\":[1]}\n\n"
                                     "data: {\"model_name\":\"tiny\",\"model_version\":\"1\","
                                     "\"output_ids\":[2]}\n\n"),
              "stream: %s", stream.body ? stream.body : "");
    free(stream.body);
    CHECK_REPLY(post(s, "/metrics", NULL), 200, "porta_serve_generated_tokens_total{model=\"tiny\"} 7");
    CHECK_REPLY(post(s, "/metrics", NULL), 200, "porta_serve_generate_active_sequences{model=\"tiny\"} 0");
    CHECK_REPLY(post(s, "/metrics", NULL), 200,
                "# TYPE porta_serve_generate_max_active_sequences gauge\n"
                "porta_serve_generate_max_active_sequences{model=\"tiny\"} 1\n");
    porta_server_free(s);
    test_remove_tree(dir);
}

/* Reads a stream to its end, a few bytes at a time. */
static char *read_all(porta_server_stream *stream) {
    static char text[4096];
    size_t length = 0, n;
    while ((n = porta_server_stream_read(stream, text + length, 7)) > 0) length += n;
    text[length] = 0;
    porta_server_stream_free(stream);
    return text;
}

TEST(serve_generate_stream_sends_events_as_made) {
    char dir[256];
    porta_server *s = open_server(dir, sizeof dir);
    if (!s) return;
    const char *body = "{\"input_ids\":[3],\"parameters\":{\"max_tokens\":2}}";
    porta_server_reply r;
    porta_server_stream *stream = porta_server_stream_start(
        s, "/v2/models/tiny/versions/1/generate_stream", body, strlen(body), false, &r);
    CHECK(stream && r.status == 200 && r.model == 0);
    const char *expected = "data: {\"model_name\":\"tiny\",\"model_version\":\"1\","
                                    "\"output_ids\":[4]}\n\n"
                                    "data: {\"model_name\":\"tiny\",\"model_version\":\"1\","
                                    "\"output_ids\":[0]}\n\n";
    const char *got = stream ? read_all(stream) : "";
    CHECK_MSG(!strcmp(got, expected), "stream: %s", got);
    const char *bad = "{\"input_ids\":[3],\"parameters\":{\"top_k\":-1}}";
    CHECK(!porta_server_stream_start(s, "/v2/models/tiny/generate_stream", bad, strlen(bad),
                                     false, &r));
    CHECK_REPLY(r, 400, "parameters.top_k");
    CHECK(!porta_server_stream_start(s, "/v2/models/none/generate_stream", body, strlen(body),
                                     false, &r));
    CHECK_REPLY(r, 404, "no model named 'none'");
    CHECK(!porta_server_stream_start(s, "/v2/models/tiny/generate_stream", body, strlen(body),
                                     true, &r));
    CHECK_REPLY(r, 503, "stopping");
    porta_server_free(s);
    test_remove_tree(dir);
}

/* Counts the ready callbacks of porta_server_begin and _stream_poll. */
typedef struct readiness {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    int calls;
} readiness;

static void on_ready(void *user) {
    readiness *r = user;
    pthread_mutex_lock(&r->lock);
    r->calls++;
    pthread_cond_signal(&r->changed);
    pthread_mutex_unlock(&r->lock);
}

static void wait_calls(readiness *r, int calls) {
    pthread_mutex_lock(&r->lock);
    while (r->calls < calls) pthread_cond_wait(&r->changed, &r->lock);
    pthread_mutex_unlock(&r->lock);
}

/* What an event-driven front end does: /generate is begun without waiting
 * and answered through the callback; a stream is polled, each empty poll
 * followed by exactly one callback when there is more. */
TEST(serve_generate_answers_without_waiting) {
    char dir[256];
    porta_server *s = open_server(dir, sizeof dir);
    if (!s) return;
    readiness ready = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
    const char *body = "{\"input_ids\":[3,1],\"parameters\":{\"max_tokens\":3}}";
    porta_server_reply r;
    CHECK(porta_server_begin(s, "POST", "/v2/models/tiny/generate", NULL, body, strlen(body),
                             false, &r, on_ready, &ready));
    wait_calls(&ready, 1);
    CHECK_REPLY(r, 200, "\"output_ids\":[2,3,4]}");
    CHECK(!porta_server_begin(s, "GET", "/v2/health/live", NULL, "", 0, false, &r, on_ready,
                              &ready));
    CHECK_REPLY(r, 200, "\"live\":true");

    ready.calls = 0;
    const char *stream_body = "{\"input_ids\":[3],\"parameters\":{\"max_tokens\":2}}";
    porta_server_stream *stream = porta_server_stream_start(
        s, "/v2/models/tiny/generate_stream", stream_body, strlen(stream_body), false, &r);
    CHECK(stream && r.status == 200);
    char text[4096];
    size_t length = 0;
    int empty_polls = 0;
    for (bool ended = false; stream && !ended;) {
        size_t n = porta_server_stream_poll(stream, text + length, 7, &ended, on_ready, &ready);
        length += n;
        if (!n && !ended) wait_calls(&ready, ++empty_polls);
    }
    text[length] = 0;
    porta_server_stream_free(stream);
    CHECK_MSG(!strcmp(text, "data: {\"model_name\":\"tiny\",\"model_version\":\"1\","
                            "\"output_ids\":[4]}\n\n"
                            "data: {\"model_name\":\"tiny\",\"model_version\":\"1\","
                            "\"output_ids\":[0]}\n\n"),
              "stream: %s", text);
    CHECK(ready.calls == empty_polls);
    porta_server_free(s);
    test_remove_tree(dir);
}

TEST(serve_generate_refuses_bad_fields) {
    char dir[256];
    porta_server *s = open_server(dir, sizeof dir);
    if (!s) return;
    const char *path = "/v2/models/tiny/generate";
    CHECK_REPLY(post(s, path, "{\"parameters\":{}}"), 400,
                "input_ids: expected an array of token ids, given nothing");
    CHECK_REPLY(post(s, path, "{\"input_ids\":[1,-2]}"), 400,
                "input_ids[1]: expected an integer >= 0, given another number");
    CHECK_REPLY(post(s, path, "{\"input_ids\":[9]}"), 400,
                "input_ids[0]: expected a token id from 0 to 4, given 9");
    CHECK_REPLY(post(s, path, "{\"input_ids\":[1],\"parameters\":{\"top_p\":2}}"), 400,
                "parameters.top_p: expected a number from 1e-09 to 1");
    CHECK_REPLY(post(s, path, "{\"input_ids\":[1],\"parameters\":{\"beam\":2}}"), 400,
                "parameters: expected max_tokens, temperature, top_k, top_p, seed or stop, "
                "given 'beam'");
    CHECK_REPLY(post(s, path, "{\"input_ids\":[1],\"parameters\":{\"max_tokens\":0}}"), 400,
                "parameters.max_tokens: expected an integer from 1");
    CHECK_REPLY(post(s, path, "{\"input_ids\":"), 400, "request body");
    porta_server_reply get;
    porta_server_handle(s, "GET", path, NULL, "", 0, false, &get);
    CHECK_REPLY(get, 405, "generate takes POST, not GET");
    porta_server_free(s);
    test_remove_tree(dir);
}

/* --request-timeout-s bounds the decode steps too: a step over the limit
 * stops and /generate answers 503 (try again later). */
TEST(serve_generate_time_limit_answers_503) {
    char dir[256];
    porta_server *s = open_server_timed(dir, sizeof dir, 1e-9);
    if (!s) return;
    const char *body = "{\"input_ids\":[3,1],\"parameters\":{\"max_tokens\":3}}";
    CHECK_REPLY(post(s, "/v2/models/tiny/generate", body), 503, "over its time limit");
    porta_server_free(s);
    test_remove_tree(dir);
}
