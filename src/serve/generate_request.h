/* Triton's generate extension on token ids: the request body
 *   {"input_ids": [1, 2, 3], "parameters": {"max_tokens": 16,
 *    "temperature": 0, "top_k": 0, "top_p": 1, "seed": 0, "stop": [0]}}
 * (every parameter optional) decoded into a prompt and options. */
#ifndef PORTA_SERVE_GENERATE_REQUEST_H
#define PORTA_SERVE_GENERATE_REQUEST_H

#include <stddef.h>

#include "porta_generate.h"

typedef struct serve_generate_request {
    int64_t *prompt;
    int prompt_length;
    int64_t *stops;
    porta_generate_options options; /* options.stop_ids points at stops */
} serve_generate_request;

/* Errors name the field: "input_ids[2]: expected an integer >= 0, given
 * -1". Free with serve_generate_request_clear, on failure too. */
porta_status *serve_generate_request_parse(const char *body, size_t length,
                                           serve_generate_request *out);
void serve_generate_request_clear(serve_generate_request *request);

#endif
