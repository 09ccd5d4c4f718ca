/* libFuzzer target for `porta serve`'s generate request parser (src/serve/
 * generate_request.c): any body is either refused with a message, or gives
 * a prompt of ids >= 0, stop ids >= 0 and options within their ranges. */
#include <stdint.h>
#include <stdlib.h>

#include "serve/generate_request.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    serve_generate_request request;
    porta_status *status = serve_generate_request_parse((const char *)data, size, &request);
    if (status) {
        if (!porta_status_message(status)) abort();
        porta_status_free(status);
    } else {
        const porta_generate_options *o = &request.options;
        if (request.prompt_length < 0 || (request.prompt_length && !request.prompt)) abort();
        for (int i = 0; i < request.prompt_length; i++)
            if (request.prompt[i] < 0) abort();
        for (int i = 0; i < o->stop_count; i++)
            if (o->stop_ids[i] < 0) abort();
        if (o->max_tokens < 1 || !(o->temperature >= 0) || o->top_k < 0 ||
            !(o->top_p > 0 && o->top_p <= 1))
            abort();
    }
    serve_generate_request_clear(&request);
    return 0;
}
