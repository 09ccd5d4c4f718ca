/* The generate endpoints (generate_endpoint.h). */
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
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

void serve_generate_metrics(core_text *t, porta_generator *const *generators,
                            const char *const *names, int count) {
    static const char *const series[][2] = {
        {"porta_serve_generated_tokens_total", "counter"},
        {"porta_serve_generate_steps_total", "counter"},
        {"porta_serve_generate_active_sequences", "gauge"},
        {"porta_serve_generate_max_active_sequences", "gauge"},
    };
    static const char *const help[] = {
        "Tokens generated.", "Decode steps run (each over every sequence being decoded).",
        "Sequences being decoded now.", "The most sequences one decode step has run."};
    for (size_t s = 0; s < sizeof series / sizeof *series; s++) {
        bool any = false;
        for (int i = 0; i < count; i++) {
            if (!generators[i]) continue;
            if (!any) text_printf(t, "# HELP %s %s\n# TYPE %s %s\n", series[s][0], help[s],
                                  series[s][0], series[s][1]);
            any = true;
            porta_generate_stats st;
            porta_generator_stats(generators[i], &st);
            unsigned long long values[] = {st.tokens, st.steps, (unsigned long long)st.active,
                                           (unsigned long long)st.max_active};
            text_printf(t, "%s{model=", series[s][0]);
            text_json_cstring(t, names[i]);
            text_printf(t, "} %llu\n", values[s]);
        }
    }
}
