/* Encoding an inference response (protocol.h): each output asked for with
 * its datatype and shape, its data inline as a flat row-major array or,
 * when asked, as raw bytes after the JSON. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"
#include "core/status.h"
#include "core/text.h"
#include "serve/protocol.h"

static void append_data(core_text *json, const serve_tensor *t) {
    size_t size = porta_dtype_size(t->dtype), count = size ? t->bytes / size : 0;
    text_puts(json, "[");
    for (size_t i = 0; i < count; i++) {
        const char *p = (const char *)t->data + i * size;
        if (i) text_puts(json, ",");
        if (t->dtype == PORTA_BOOL) {
            text_puts(json, *(const uint8_t *)p ? "true" : "false");
        } else if (!porta_dtype_is_float(t->dtype)) {
            text_printf(json, "%lld", (long long)(t->dtype == PORTA_I64 ? *(const int64_t *)p
                                                  : (int64_t)core_load_as_double(t->dtype, p)));
        } else {
            double v = core_load_as_double(t->dtype, p);
            /* Enough digits to read each value back exactly; JSON has no
             * NaN or infinity, so those are null. */
            if (!isfinite(v)) text_puts(json, "null");
            else text_printf(json, t->dtype == PORTA_F64 ? "%.17g" : "%.9g", v);
        }
    }
    text_puts(json, "]");
}

static const serve_tensor *find_output(const serve_tensor *outputs, int count, const char *name) {
    for (int i = 0; i < count; i++)
        if (!strcmp(outputs[i].name, name)) return &outputs[i];
    return NULL;
}

static void append_output(core_text *json, core_text *binary, const serve_tensor *t,
                          bool as_binary, bool first) {
    text_puts(json, first ? "{\"name\":" : ",{\"name\":");
    text_json_cstring(json, t->name);
    text_printf(json, ",\"datatype\":\"%s\",\"shape\":[", serve_datatype_name(t->dtype));
    for (int d = 0; d < t->rank; d++) text_printf(json, d ? ",%lld" : "%lld", (long long)t->sizes[d]);
    text_puts(json, "]");
    if (as_binary) {
        text_printf(json, ",\"parameters\":{\"binary_data_size\":%zu}}", t->bytes);
        text_append(binary, t->data, t->bytes);
    } else {
        text_puts(json, ",\"data\":");
        append_data(json, t);
        text_puts(json, "}");
    }
}

void serve_reply_head(core_text *t, const char *model_name, const char *model_version) {
    text_puts(t, "{\"model_name\":");
    text_json_cstring(t, model_name);
    text_puts(t, ",\"model_version\":");
    text_json_cstring(t, model_version);
}

void serve_token_event(core_text *t, const char *model_name, const char *model_version,
                       int64_t token) {
    text_puts(t, "data: ");
    serve_reply_head(t, model_name, model_version);
    text_printf(t, ",\"output_ids\":[%lld]}\n\n", (long long)token);
}

porta_status *serve_response_encode(const char *model_name, const char *model_version,
                                    const serve_request *request, const serve_tensor *outputs,
                                    int output_count, char **body, size_t *length,
                                    size_t *json_length) {
    *body = NULL;
    core_text json = {0}, binary = {0};
    serve_reply_head(&json, model_name, model_version);
    if (request->id) {
        text_puts(&json, ",\"id\":");
        text_json_cstring(&json, request->id);
    }
    text_puts(&json, ",\"outputs\":[");
    if (request->output_count) {
        for (int i = 0; i < request->output_count; i++) {
            const serve_tensor *t = find_output(outputs, output_count, request->outputs[i].name);
            if (!t) {
                text_free(&json);
                text_free(&binary);
                return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                                   "outputs: the model has no output '%.64s'",
                                   request->outputs[i].name);
            }
            append_output(&json, &binary, t, request->outputs[i].binary, i == 0);
        }
    } else {
        for (int i = 0; i < output_count; i++)
            append_output(&json, &binary, &outputs[i], request->binary_default, i == 0);
    }
    text_puts(&json, "]}");
    porta_status *status = text_failure(&binary, "an inference response");
    if (status) {
        text_free(&json);
        return status;
    }
    *json_length = json.length;
    text_append(&json, binary.chars, binary.length);
    *length = json.length;
    text_free(&binary);
    return text_take(&json, "an inference response", body);
}
