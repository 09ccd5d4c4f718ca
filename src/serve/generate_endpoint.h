/* POST /v2/models/NAME/generate and /generate_stream: Triton's generate
 * extension on token ids (generate_request.h) answered by the model's
 * generator (the generation series of /metrics are metrics.c's). */
#ifndef PORTA_SERVE_GENERATE_ENDPOINT_H
#define PORTA_SERVE_GENERATE_ENDPOINT_H

#include <stdbool.h>
#include <stddef.h>

#include "porta_generate.h"
#include "porta_serve.h"

/* Answers with `generator` (not NULL). generate: {"model_name", "model_version", "output_ids": [...]};
 * stream (text/event-stream): one event "data: {..., "output_ids": [id]}"
 * per token, in order. */
void serve_generate(porta_generator *generator, const char *model, const char *version,
                    const char *body, size_t length, bool stream, porta_server_reply *r);

#endif
