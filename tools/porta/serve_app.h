/* What `porta serve` hands its HTTP front end: the server (its models,
 * batching queues and metrics, porta_serve.h), and the listener's settings
 * and limits. */
#ifndef PORTA_TOOL_SERVE_APP_H
#define PORTA_TOOL_SERVE_APP_H

#include <stddef.h>

#include "porta_serve.h"

typedef struct serve_app {
    porta_server *server;
    const char *host;
    int port;               /* 0: any free port (the one bound is printed) */
    size_t max_body_bytes;  /* larger bodies: 413 */
    size_t max_header_bytes;
    int max_connections;
    int idle_timeout_s;     /* a connection silent this long is closed */
} serve_app;

/* Serves until SIGTERM or SIGINT (which the caller has blocked in every
 * thread), then stops accepting, finishes the requests in flight and
 * returns 0; 1 when the listener cannot start. Where porta was built
 * without libmicrohttpd it says so and returns 1. */
int serve_http_run(serve_app *app);

#endif
