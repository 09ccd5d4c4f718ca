/* generate_stream with events sent as they are made (porta_serve.h's
 * porta_server_stream_*): the server side of porta_server_stream_start. */
#ifndef PORTA_SERVE_GENERATE_STREAM_H
#define PORTA_SERVE_GENERATE_STREAM_H

#include "serve/endpoints.h"

porta_server_stream *serve_generate_stream_start(serve_server *server, const char *path,
                                                 const char *body, size_t length, bool stopping,
                                                 serve_reply *reply);

#endif
