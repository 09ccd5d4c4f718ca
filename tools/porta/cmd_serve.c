/* porta serve MODEL... : serves models over the Open Inference Protocol
 * (KServe v2). Parses the options, makes the server (porta_serve.h: each
 * model loaded on the device, a batching queue per model) and hands it to
 * the HTTP front end (cmd_serve_http.c). */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "serve_app.h"

enum { MAX_MODELS = 64 };

typedef struct serve_options {
    const char *paths[MAX_MODELS];
    int path_count;
    const char *device;
    int max_batch, batch_delay_ms, threads, max_queue, max_body_mib, max_header_kib,
        max_connections, idle_timeout_s;
    double request_timeout_s;
} serve_options;

static int parse_port(const char *value, int *out) {
    char *end;
    long port = strtol(value, &end, 10);
    if (!*value || *end || port < 0 || port > 65535)
        return cli_usage("serve", "--port should be a port from 0 to 65535, given '%s'", value);
    *out = (int)port;
    return 0;
}

static int parse_options(int argc, char **argv, serve_options *o, serve_app *app) {
    for (int a = 1; a < argc; a++) {
        const char *option = argv[a];
        if (option[0] != '-') {
            if (o->path_count == MAX_MODELS)
                return cli_usage("serve", "at most %d models, given more", MAX_MODELS);
            o->paths[o->path_count++] = option;
            continue;
        }
        if (a + 1 >= argc) return cli_usage("serve", "%s needs a value", option);
        const char *value = argv[++a];
        struct {
            const char *name;
            int least, *out;
        } counts[] = {
            {"--max-batch", 1, &o->max_batch},
            {"--batch-delay-ms", 0, &o->batch_delay_ms},
            {"--threads", 1, &o->threads},
            {"--max-queue", 1, &o->max_queue},
            {"--max-body-mib", 1, &o->max_body_mib},
            {"--max-header-kib", 4, &o->max_header_kib},
            {"--max-connections", 1, &o->max_connections},
            {"--idle-timeout-s", 1, &o->idle_timeout_s},
        };
        int code = -1;
        for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++)
            if (!strcmp(option, counts[k].name))
                code = cli_count("serve", option, value, counts[k].least, counts[k].out);
        if (code < 0) {
            if (!strcmp(option, "--device")) o->device = value, code = 0;
            else if (!strcmp(option, "--host")) app->host = value, code = 0;
            else if (!strcmp(option, "--port")) code = parse_port(value, &app->port);
            else if (!strcmp(option, "--request-timeout-s"))
                code = cli_seconds("serve", option, value, &o->request_timeout_s);
            else return cli_usage("serve", "unexpected argument '%s'", option);
        }
        if (code) return code;
    }
    if (!o->path_count) return cli_usage("serve", "missing MODEL");
    return 0;
}

int cmd_serve(int argc, char **argv) {
    serve_options o = {.device = "porta:0", .max_batch = 8, .batch_delay_ms = 0,
                       .max_queue = 256, .max_body_mib = 64, .max_header_kib = 16,
                       .max_connections = 256, .idle_timeout_s = 30};
    serve_app app = {.host = "127.0.0.1", .port = 8000};
    /* Blocked before any thread starts (the devices' worker threads
     * included), so every thread inherits the mask and the front end alone
     * takes them, with sigwait. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    signal(SIGPIPE, SIG_IGN);
    int code = parse_options(argc, argv, &o, &app);
    porta_device *device = NULL;
    if (!code) code = cli_device("serve", o.device, &device);
    if (!code && o.threads) {
        porta_status *status = porta_set_num_threads(o.threads);
        if (status) code = cli_fail("serve", status);
    }
    if (code) return code;
    app.max_body_bytes = (size_t)o.max_body_mib << 20;
    app.max_header_bytes = (size_t)o.max_header_kib << 10;
    app.max_connections = o.max_connections;
    app.idle_timeout_s = o.idle_timeout_s;
    porta_server_options options = {o.paths, o.path_count, device, o.max_batch,
                                    o.batch_delay_ms / 1000.0, o.max_queue, o.request_timeout_s};
    porta_status *status = porta_server_create(&options, &app.server);
    if (status) return cli_fail("serve", status);
    for (int i = 0; i < porta_server_model_count(app.server); i++)
        fprintf(stderr, "porta serve: model '%s' from %s: %s%s\n",
                porta_server_model_name(app.server, i), o.paths[i],
                porta_server_model_batched(app.server, i) ? "batched along dim 0"
                                                          : "not batched (no batch dim)",
                porta_server_model_generates(app.server, i)
                    ? "; generates (a KV-cache decode step, --max-batch sequences together)"
                    : "");
    code = serve_http_run(&app);
    porta_server_free(app.server);
    return code;
}
