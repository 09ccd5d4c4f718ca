/* The generate endpoints (generate_endpoint.h). */
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "core/text.h"
#include "serve/endpoints.h"
#include "serve/generate_endpoint.h"
#include "serve/generate_request.h"
#include "serve/protocol.h"

void serve_generate(porta_generator *generator, const char *model, const char *version,
                    const char *body, size_t length, bool stream, porta_server_reply *r) {
    serve_generate_request request;
    porta_status *status = serve_generate_request_parse(body, length, &request);
    int64_t *tokens = NULL;
    int count = 0;
    if (!status)
        status = porta_generate(generator, request.prompt, request.prompt_length,
                                &request.options, NULL, NULL, &tokens, &count);
    serve_generate_request_clear(&request);
    if (status) {
        serve_reply_status(r, status);
        return;
    }
    core_text t = {0};
    if (stream) {
        /* Events are written once generation ends: the reply is one body. */
        for (int i = 0; i < count; i++) serve_token_event(&t, model, version, tokens[i]);
    } else {
        serve_reply_head(&t, model, version);
        text_puts(&t, ",\"output_ids\":[");
        for (int i = 0; i < count; i++) text_printf(&t, "%s%lld", i ? "," : "", (long long)tokens[i]);
        text_puts(&t, "]}");
    }
    free(tokens);
    char *text = NULL;
    status = text_take(&t, "a generate reply", &text);
    if (status) {
        serve_reply_status(r, status);
        return;
    }
    r->status = 200;
    r->content_type = stream ? "text/event-stream" : "application/json";
    r->body = text;
    r->length = r->json_length = strlen(text);
}
