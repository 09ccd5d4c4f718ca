/* `porta serve`'s endpoints without sockets (src/serve/endpoints.c): a small
 * model with a batch dim loaded and served, every endpoint answered, the
 * outputs of JSON and binary requests checked against the arithmetic,
 * concurrent requests stacked into one run and split back, and the errors:
 * 400 naming the input with the expected and given shape or datatype, 404,
 * 405, 503 when the queue is full or the server is stopping. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "porta_io.h"
#include "serve/endpoints.h"
#include "test.h"

/* relu(x @ w + b) and x @ w + b, x [batch, 3] with batch from 1 to 8. */
static const char *const GRAPH =
    "{\"version\": [1, 0],"
    " \"symbols\": [{\"name\": \"batch\", \"min\": 1, \"max\": 8}],"
    " \"inputs\": [{\"name\": \"x\", \"dtype\": \"float32\", \"shape\": [\"batch\", 3]}],"
    " \"weights\": [{\"name\": \"w\", \"dtype\": \"float32\", \"shape\": [3, 2]},"
    "               {\"name\": \"b\", \"dtype\": \"float32\", \"shape\": [2]}],"
    " \"nodes\": ["
    "  {\"op\": \"mm\", \"args\": [{\"tensor\": \"x\"}, {\"tensor\": \"w\"}], \"outputs\": [\"xw\"]},"
    "  {\"op\": \"add.Tensor\", \"args\": [{\"tensor\": \"xw\"}, {\"tensor\": \"b\"}, {\"int\": 1}],"
    "   \"outputs\": [\"y\"]},"
    "  {\"op\": \"relu\", \"args\": [{\"tensor\": \"y\"}], \"outputs\": [\"r\"]}"
    " ],"
    " \"outputs\": [\"r\", \"y\"]}";
static const float W[6] = {1, -1, 0.5f, 2, -2, 0.25f};
static const float B[2] = {0.5f, -0.5f};

typedef struct fixture {
    char dir[256], path[300];
    serve_model *model;
    serve_batcher *batcher;
    serve_metrics *metrics;
    serve_server server;
} fixture;

static bool fixture_open(fixture *f, serve_batcher_options options) {
    memset(f, 0, sizeof *f);
    const char *base = getenv("TMPDIR");
    snprintf(f->dir, sizeof f->dir, "%s/porta_serve_XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(f->dir)) return false;
    snprintf(f->path, sizeof f->path, "%s/mlp.porta", f->dir);
    porta_tensor *w = NULL, *b = NULL;
    porta_status *status = porta_tensor_from_host(test_cpu(), PORTA_F32, 2, (int64_t[]){3, 2}, W, &w);
    if (!status) status = porta_tensor_from_host(test_cpu(), PORTA_F32, 1, (int64_t[]){2}, B, &b);
    porta_safetensors_pair metadata[2] = {{"porta.format", "1.0"}, {"porta.graph", GRAPH}};
    porta_safetensors_entry weights[2] = {{"w", w}, {"b", b}};
    if (!status) status = porta_safetensors_save(f->path, weights, 2, metadata, 2);
    if (w) porta_tensor_release(w);
    if (b) porta_tensor_release(b);
    if (!status) status = serve_model_open(f->path, test_cpu(), &f->model);
    const char *names[1] = {"mlp"};
    if (!status) status = serve_metrics_create(names, 1, &f->metrics);
    if (!status) status = serve_batcher_start(f->model, options, f->metrics, 0, &f->batcher);
    if (status) {
        test_fail(__FILE__, __LINE__, "%s", porta_status_message(status));
        porta_status_free(status);
        return false;
    }
    f->server = (serve_server){.models = &f->model, .batchers = &f->batcher, .model_count = 1,
                               .metrics = f->metrics};
    return true;
}

static void fixture_close(fixture *f) {
    serve_batcher_stop(f->batcher);
    serve_model_free(f->model);
    serve_metrics_free(f->metrics);
    test_remove_tree(f->dir);
}

static serve_reply route(fixture *f, const char *method, const char *path, const char *body) {
    serve_reply r;
    serve_route(&f->server, method, path, NULL, body ? body : "", body ? strlen(body) : 0, false,
                &r);
    return r;
}

/* The reply's status and (when `needle`) that its body holds needle. */
#define CHECK_REPLY(reply, code, needle)                                                   \
    do {                                                                                   \
        serve_reply r_ = (reply);                                                          \
        const char *needle_ = (needle);                                                    \
        CHECK_MSG(r_.status == (code), "status %d, expected %d: %.*s", r_.status, (code),  \
                  (int)r_.length, r_.body ? r_.body : "");                                 \
        CHECK_MSG(!needle_ || (r_.body && strstr(r_.body, needle_)), "body '%.*s' lacks '%s'", \
                  (int)r_.length, r_.body ? r_.body : "", needle_ ? needle_ : "");         \
        free(r_.body);                                                                     \
    } while (0)

static const serve_batcher_options no_batching = {1, 0, 16};

TEST(serve_endpoints_health_and_metadata) {
    fixture f;
    if (!fixture_open(&f, no_batching)) return;
    CHECK_REPLY(route(&f, "GET", "/v2/health/live", NULL), 200, "\"live\":true");
    CHECK_REPLY(route(&f, "GET", "/v2/health/ready", NULL), 200, "\"ready\":true");
    CHECK_REPLY(route(&f, "GET", "/v2", NULL), 200, "\"extensions\":[\"binary_tensor_data\"]");
    CHECK_REPLY(route(&f, "GET", "/v2/models/mlp", NULL), 200,
                "\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[-1,3]}],"
                "\"outputs\":[{\"name\":\"r\",\"datatype\":\"FP32\",\"shape\":[-1,2]},"
                "{\"name\":\"y\",\"datatype\":\"FP32\",\"shape\":[-1,2]}]");
    CHECK_REPLY(route(&f, "GET", "/v2/models/mlp/versions/1", NULL), 200, "\"versions\":[\"1\"]");
    CHECK_REPLY(route(&f, "GET", "/v2/models/mlp/ready", NULL), 200, "\"ready\":true");
    CHECK_REPLY(route(&f, "GET", "/v2/models/mlp/versions/1/ready", NULL), 200, "\"ready\":true");
    CHECK_REPLY(route(&f, "GET", "/v2/models/other", NULL), 404, "no model named 'other'");
    CHECK_REPLY(route(&f, "GET", "/v2/models/mlp/versions/2", NULL), 404, "no version '2'");
    CHECK_REPLY(route(&f, "GET", "/v2/models/mlp/generate", NULL), 404, "no endpoint 'generate'");
    CHECK_REPLY(route(&f, "GET", "/v2/models/mlp/infer", NULL), 405, "infer takes POST, not GET");
    CHECK_REPLY(route(&f, "GET", "/v3", NULL), 404, "no endpoint GET /v3");
    /* Paths are any bytes; the reply quoting one stays UTF-8. */
    CHECK_REPLY(route(&f, "GET", "/v2/models/\xff\xc3", NULL), 404, "no model named '?" "?'");
    CHECK_REPLY(route(&f, "GET", "/metrics", NULL), 200, "porta_serve_queue_depth{model=\"mlp\"} 0");
    serve_reply stopping;
    serve_route(&f.server, "GET", "/v2/health/ready", NULL, "", 0, true, &stopping);
    CHECK_REPLY(stopping, 503, "stopping");
    fixture_close(&f);
}

static void expected(const float *x, int rows, float *relu, float *linear) {
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < 2; j++) {
            float sum = B[j];
            for (int k = 0; k < 3; k++) sum += x[i * 3 + k] * W[k * 2 + j];
            linear[i * 2 + j] = sum;
            relu[i * 2 + j] = sum > 0 ? sum : 0;
        }
}

TEST(serve_endpoints_infer_json_and_binary) {
    fixture f;
    if (!fixture_open(&f, no_batching)) return;
    CHECK_REPLY(route(&f, "POST", "/v2/models/mlp/infer",
                      "{\"id\":\"7\",\"inputs\":[{\"name\":\"x\",\"shape\":[2,3],"
                      "\"datatype\":\"FP32\",\"data\":[[1,2,3],[-1,0.5,2]]}]}"),
                200,
                "\"id\":\"7\",\"outputs\":[{\"name\":\"r\",\"datatype\":\"FP32\",\"shape\":[2,2],"
                "\"data\":[0,3.25,0,2]},{\"name\":\"y\",\"datatype\":\"FP32\",\"shape\":[2,2],"
                "\"data\":[-3.5,3.25,-4.25,2]}]");
    const char json[] = "{\"inputs\":[{\"name\":\"x\",\"shape\":[1,3],\"datatype\":\"FP32\","
                        "\"parameters\":{\"binary_data_size\":12}}],"
                        "\"outputs\":[{\"name\":\"y\",\"parameters\":{\"binary_data\":true}}]}";
    float x[3] = {0.25f, -4, 1}, relu[2], linear[2];
    expected(x, 1, relu, linear);
    char body[sizeof json - 1 + sizeof x], header[16];
    memcpy(body, json, sizeof json - 1);
    memcpy(body + sizeof json - 1, x, sizeof x);
    snprintf(header, sizeof header, "%zu", sizeof json - 1);
    serve_reply r;
    serve_route(&f.server, "POST", "/v2/models/mlp/versions/1/infer", header, body, sizeof body,
                false, &r);
    CHECK_MSG(r.status == 200, "status %d: %.*s", r.status, (int)r.length, r.body);
    CHECK(r.length == r.json_length + 8 && !strcmp(r.content_type, "application/octet-stream"));
    CHECK(r.status != 200 || !memcmp(r.body + r.json_length, linear, 8));
    free(r.body);
    serve_route(&f.server, "POST", "/v2/models/mlp/infer", "12x", body, sizeof body, false, &r);
    CHECK_REPLY(r, 400, "Inference-Header-Content-Length should be a byte count");
    fixture_close(&f);
}

TEST(serve_endpoints_errors_name_what_was_expected) {
    fixture f;
    if (!fixture_open(&f, no_batching)) return;
    struct {
        const char *body, *needle;
        int status;
    } cases[] = {
        {"{\"inputs\":[{\"name\":\"x\",\"shape\":[1,4],\"datatype\":\"FP32\","
         "\"data\":[1,2,3,4]}]}",
         "input 'x': expected shape [-1, 3], given [1, 4] (dim 1)", 400},
        {"{\"inputs\":[{\"name\":\"x\",\"shape\":[9,3],\"datatype\":\"FP32\","
         "\"data\":[1,2,3,4,5,6,7,8,9,1,2,3,4,5,6,7,8,9,1,2,3,4,5,6,7,8,9]}]}",
         "input 'x': dim 0 (batch) should be from 1 to 8, given [9, 3]", 400},
        {"{\"inputs\":[{\"name\":\"x\",\"shape\":[3],\"datatype\":\"FP32\",\"data\":[1,2,3]}]}",
         "expected shape [-1, 3] (2 dims, -1 any size), given [3]", 400},
        {"{\"inputs\":[{\"name\":\"x\",\"shape\":[1,3],\"datatype\":\"INT64\",\"data\":[1,2,3]}]}",
         "input 'x': expected datatype FP32, given INT64", 400},
        {"{\"inputs\":[{\"name\":\"z\",\"shape\":[1,3],\"datatype\":\"FP32\",\"data\":[1,2,3]}]}",
         "expects an input named 'x', none was given", 400},
        {"{\"inputs\":[]}", "takes 1 input(s) ('x'), 0 given", 400},
        {"{\"inputs\":[{\"name\":\"x\",\"shape\":[1,3],\"datatype\":\"FP32\",\"data\":[1,2,3]}],"
         "\"outputs\":[{\"name\":\"q\"}]}",
         "the model has no output 'q'", 400},
        {"{\"inputs\":[{\"name\":\"x\"", "request JSON", 400},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        CHECK_REPLY(route(&f, "POST", "/v2/models/mlp/infer", cases[i].body), cases[i].status,
                    cases[i].needle);
    serve_reply r;
    serve_route(&f.server, "POST", "/v2/models/mlp/infer", NULL, "{}", 2, true, &r);
    CHECK_REPLY(r, 503, "the server is stopping");
    fixture_close(&f);
    /* No room in the queue: refused at once with 503. */
    if (!fixture_open(&f, (serve_batcher_options){1, 0, 0})) return;
    CHECK_REPLY(route(&f, "POST", "/v2/models/mlp/infer",
                      "{\"inputs\":[{\"name\":\"x\",\"shape\":[1,3],\"datatype\":\"FP32\","
                      "\"data\":[1,2,3]}]}"),
                503, "0 requests are queued, the limit");
    fixture_close(&f);
}

typedef struct client {
    fixture *f;
    int index;
    serve_reply reply;
} client;

static void *send_one(void *arg) {
    client *c = arg;
    char body[256];
    snprintf(body, sizeof body,
             "{\"inputs\":[{\"name\":\"x\",\"shape\":[1,3],\"datatype\":\"FP32\","
             "\"data\":[%d,1,-1]}],\"outputs\":[{\"name\":\"y\"}]}",
             c->index);
    serve_route(&c->f->server, "POST", "/v2/models/mlp/infer", NULL, body, strlen(body), false,
                &c->reply);
    return NULL;
}

TEST(serve_endpoints_stack_concurrent_requests) {
    /* A window far longer than the requests take to arrive: the four land
     * in one batch, which runs as soon as it is full. */
    fixture f;
    if (!fixture_open(&f, (serve_batcher_options){4, 30.0, 16})) return;
    client clients[4];
    pthread_t threads[4];
    for (int i = 0; i < 4; i++) {
        clients[i] = (client){.f = &f, .index = i};
        pthread_create(&threads[i], NULL, send_one, &clients[i]);
    }
    for (int i = 0; i < 4; i++) pthread_join(threads[i], NULL);
    for (int i = 0; i < 4; i++) {
        float x[3] = {(float)i, 1, -1}, relu[2], linear[2];
        expected(x, 1, relu, linear);
        char want[128];
        snprintf(want, sizeof want, "\"shape\":[1,2],\"data\":[%.9g,%.9g]", linear[0], linear[1]);
        CHECK(clients[i].reply.batch == 4);
        CHECK_REPLY(clients[i].reply, 200, want);
    }
    CHECK_REPLY(route(&f, "GET", "/metrics", NULL), 200,
                "porta_serve_batch_size_bucket{model=\"mlp\",le=\"4\"} 1");
    fixture_close(&f);
}

/* Counts serve_route_begin's ready callbacks. */
typedef struct answers {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    int count;
} answers;

static void answered(void *user) {
    answers *a = user;
    pthread_mutex_lock(&a->lock);
    a->count++;
    pthread_cond_signal(&a->changed);
    pthread_mutex_unlock(&a->lock);
}

TEST(serve_endpoints_begin_queues_without_waiting) {
    /* One thread begins four requests: none waits for its run (the window
     * is 30 s), the fourth fills the batch, and the worker answers all
     * four, each reply written from its rows of the batch's output. */
    fixture f;
    if (!fixture_open(&f, (serve_batcher_options){4, 30.0, 16})) return;
    answers done = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
    char bodies[4][256];
    serve_reply replies[4];
    for (int i = 0; i < 4; i++) {
        snprintf(bodies[i], sizeof bodies[i],
                 "{\"inputs\":[{\"name\":\"x\",\"shape\":[1,3],\"datatype\":\"FP32\","
                 "\"data\":[%d,1,-1]}],\"outputs\":[{\"name\":\"y\"}]}",
                 i);
        CHECK(serve_route_begin(&f.server, "POST", "/v2/models/mlp/infer", NULL, bodies[i],
                                strlen(bodies[i]), false, &replies[i], answered, &done));
    }
    pthread_mutex_lock(&done.lock);
    while (done.count < 4) pthread_cond_wait(&done.changed, &done.lock);
    pthread_mutex_unlock(&done.lock);
    for (int i = 0; i < 4; i++) {
        float x[3] = {(float)i, 1, -1}, relu[2], linear[2];
        expected(x, 1, relu, linear);
        char want[128];
        snprintf(want, sizeof want, "\"shape\":[1,2],\"data\":[%.9g,%.9g]", linear[0], linear[1]);
        CHECK(replies[i].batch == 4);
        CHECK_REPLY(replies[i], 200, want);
    }
    /* Refused requests are answered at once, without the callback. */
    serve_reply refused;
    CHECK(!serve_route_begin(&f.server, "POST", "/v2/models/mlp/infer", NULL, "{", 1, false,
                             &refused, answered, &done));
    CHECK_REPLY(refused, 400, NULL);
    CHECK(done.count == 4);
    fixture_close(&f);
}

/* One mapping from a status to a status code, shared by /infer and the
 * generate endpoints: 400 for a request that is wrong, 503 for one worth
 * trying again, 500 for the rest. */
TEST(serve_endpoints_status_codes) {
    struct {
        porta_code code;
        int http;
    } cases[] = {{PORTA_ERR_INVALID_ARGUMENT, 400}, {PORTA_ERR_SHAPE, 400},
                 {PORTA_ERR_DTYPE, 400},            {PORTA_ERR_UNSUPPORTED, 400},
                 /* an index in the request (a token id) out of range */
                 {PORTA_ERR_OUT_OF_RANGE, 400},
                 {PORTA_ERR_UNAVAILABLE, 503},      {PORTA_ERR_OUT_OF_MEMORY, 503},
                 {PORTA_ERR_INTERNAL, 500},         {PORTA_ERR_IO, 500}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        porta_status *status = porta_error(cases[i].code, "case %zu", i);
        CHECK_MSG(serve_http_status_of(status) == cases[i].http, "code %d: %d, expected %d",
                  (int)cases[i].code, serve_http_status_of(status), cases[i].http);
        serve_reply r = {0};
        serve_reply_status(&r, status);
        CHECK_REPLY(r, cases[i].http, "case");
    }
}

/* --request-timeout-s (porta_model_set_time_limit): a run over the limit
 * stops and the request is answered 503, worth trying again. */
TEST(serve_endpoints_time_limit_answers_503) {
    fixture f;
    if (!fixture_open(&f, no_batching)) return;
    const char *body = "{\"inputs\":[{\"name\":\"x\",\"shape\":[1,3],\"datatype\":\"FP32\","
                       "\"data\":[1,2,3]}]}";
    CHECK_OK(porta_model_set_time_limit(f.model->model, 1e-9));
    CHECK_REPLY(route(&f, "POST", "/v2/models/mlp/infer", body), 503, "over its time limit");
    CHECK_OK(porta_model_set_time_limit(f.model->model, 0));
    CHECK_REPLY(route(&f, "POST", "/v2/models/mlp/infer", body), 200, "\"shape\":[1,2]");
    fixture_close(&f);
}

/* Requests submitted straight to the batcher; the replies of the first
 * batch wait at a gate, which keeps the batcher busy meanwhile. */
typedef struct gated {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    bool open;
    int entered, answered;
    int batch_of[9];
} gated;

typedef struct gated_request {
    gated *gate;
    int index;
    float x[3];
    serve_tensor input;
} gated_request;

static void gated_done(void *context, const serve_tensor *outputs, int batch_requests,
                       porta_status *status) {
    gated_request *q = context;
    gated *g = q->gate;
    porta_status_free(status);
    pthread_mutex_lock(&g->lock);
    g->entered++;
    pthread_cond_broadcast(&g->changed);
    while (q->index < 4 && !g->open) pthread_cond_wait(&g->changed, &g->lock);
    g->batch_of[q->index] = outputs ? batch_requests : -1;
    g->answered++;
    pthread_cond_broadcast(&g->changed);
    pthread_mutex_unlock(&g->lock);
}

static void gated_submit(fixture *f, gated_request *q) {
    q->input = (serve_tensor){.dtype = PORTA_F32, .rank = 2, .sizes = {1, 3}, .data = q->x,
                              .bytes = sizeof q->x};
    CHECK_OK(serve_batcher_submit(f->batcher, &q->input, 1, gated_done, q));
}

TEST(serve_batcher_starts_at_once_when_requests_waited_for_the_worker) {
    /* Batch 1 (full) runs and its replies wait at the gate; batch 2 (full)
     * and then one more request queue meanwhile. That request has waited
     * for the busy batcher already: once the gate opens it runs as soon as
     * the worker is free, not after its 30 s window. */
    fixture f;
    if (!fixture_open(&f, (serve_batcher_options){4, 30.0, 16})) return;
    gated g = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false, 0, 0, {0}};
    gated_request requests[9];
    for (int i = 0; i < 9; i++) requests[i] = (gated_request){.gate = &g, .index = i, .x = {(float)i, 1, -1}};
    for (int i = 0; i < 4; i++) gated_submit(&f, &requests[i]);
    pthread_mutex_lock(&g.lock);
    while (g.entered < 1) pthread_cond_wait(&g.changed, &g.lock);
    pthread_mutex_unlock(&g.lock);
    for (int i = 4; i < 9; i++) gated_submit(&f, &requests[i]);
    pthread_mutex_lock(&g.lock);
    g.open = true;
    pthread_cond_broadcast(&g.changed);
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 10;
    while (g.answered < 9 && pthread_cond_timedwait(&g.changed, &g.lock, &deadline) == 0) {
    }
    int answered = g.answered;
    pthread_mutex_unlock(&g.lock);
    CHECK_MSG(answered == 9, "%d of 9 requests answered within 10 s", answered);
    fixture_close(&f);
    for (int i = 0; i < 8; i++) CHECK_MSG(g.batch_of[i] == 4, "request %d: batch of %d", i, g.batch_of[i]);
    CHECK(g.batch_of[8] == 1);
}
