/* A request's inputs against the served model (serve_model_check), and the
 * model's metadata for the protocol (serve_model_metadata). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "core/text.h"
#include "model/model.h"
#include "serve/served_model.h"

static porta_status *check_input(const serve_model *m, int index, const serve_tensor *t,
                                 int64_t *symbol_sizes) {
    const serve_tensor_info *info = &m->inputs[index];
    const model_program *g = m->model->graph;
    char expected[320], given[320];
    core_format_shape(expected, sizeof expected, info->rank, info->sizes);
    core_format_shape(given, sizeof given, t->rank, t->sizes);
    if (t->dtype != info->dtype)
        return porta_error(PORTA_ERR_DTYPE, "input '%s': expected datatype %s, given %s",
                           info->name, serve_datatype_name(info->dtype),
                           serve_datatype_name(t->dtype));
    if (t->rank != info->rank)
        return porta_error(PORTA_ERR_SHAPE,
                           "input '%s': expected shape %s (%d dims, -1 any size), given %s",
                           info->name, expected, info->rank, given);
    for (int d = 0; d < t->rank; d++) {
        int s = info->symbols[d];
        if (s < 0) {
            if (t->sizes[d] != info->sizes[d])
                return porta_error(PORTA_ERR_SHAPE,
                                   "input '%s': expected shape %s, given %s (dim %d)", info->name,
                                   expected, given, d);
            continue;
        }
        const model_symbol *symbol = &g->symbols[s];
        if (t->sizes[d] < symbol->min || t->sizes[d] > symbol->max)
            return porta_error(PORTA_ERR_SHAPE,
                               "input '%s': dim %d (%s) should be from %lld to %lld, given %s",
                               info->name, d, symbol->name, (long long)symbol->min,
                               (long long)symbol->max, given);
        if (symbol_sizes[s] >= 0 && symbol_sizes[s] != t->sizes[d])
            return porta_error(PORTA_ERR_SHAPE,
                               "input '%s': dim %d (%s) is %lld, another input has %s = %lld",
                               info->name, d, symbol->name, (long long)t->sizes[d], symbol->name,
                               (long long)symbol_sizes[s]);
        symbol_sizes[s] = t->sizes[d];
    }
    return NULL;
}

porta_status *serve_model_check(const serve_model *m, serve_request *r, int64_t *rows) {
    *rows = 1;
    if (r->input_count != m->input_count) {
        core_text names = {0};
        for (int i = 0; i < m->input_count; i++)
            text_printf(&names, i ? ", '%s'" : "'%s'", m->inputs[i].name);
        porta_status *status = porta_error(
            PORTA_ERR_INVALID_ARGUMENT, "model '%s' takes %d input(s) (%s), %d given", m->name,
            m->input_count, names.chars ? names.chars : "", r->input_count);
        text_free(&names);
        return status;
    }
    /* Into the model's order, by name. */
    for (int i = 0; i < m->input_count; i++) {
        int found = -1;
        for (int k = i; k < r->input_count && found < 0; k++)
            if (!strcmp(r->inputs[k].name, m->inputs[i].name)) found = k;
        if (found < 0)
            return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                               "model '%s' expects an input named '%s', none was given", m->name,
                               m->inputs[i].name);
        serve_tensor swap = r->inputs[i];
        r->inputs[i] = r->inputs[found];
        r->inputs[found] = swap;
    }
    const model_program *g = m->model->graph;
    int64_t *symbol_sizes = malloc(((size_t)g->symbol_count + 1) * sizeof *symbol_sizes);
    if (!symbol_sizes) return porta_error(PORTA_ERR_OUT_OF_MEMORY, "request: out of memory");
    for (int s = 0; s < g->symbol_count; s++) symbol_sizes[s] = -1;
    porta_status *status = NULL;
    for (int i = 0; !status && i < m->input_count; i++)
        status = check_input(m, i, &r->inputs[i], symbol_sizes);
    free(symbol_sizes);
    if (!status && m->batchable) *rows = r->inputs[0].sizes[0];
    return status;
}

static void append_infos(core_text *json, const serve_tensor_info *infos, int count) {
    text_puts(json, "[");
    for (int i = 0; i < count; i++) {
        text_puts(json, i ? ",{\"name\":" : "{\"name\":");
        text_json_cstring(json, infos[i].name);
        text_printf(json, ",\"datatype\":\"%s\",\"shape\":[", serve_datatype_name(infos[i].dtype));
        for (int d = 0; d < infos[i].rank; d++)
            text_printf(json, d ? ",%lld" : "%lld", (long long)infos[i].sizes[d]);
        text_puts(json, "]}");
    }
    text_puts(json, "]");
}

porta_status *serve_model_metadata(const serve_model *m, char **json) {
    core_text text = {0};
    text_puts(&text, "{\"name\":");
    text_json_cstring(&text, m->name);
    text_puts(&text, ",\"versions\":[");
    text_json_cstring(&text, m->version);
    text_puts(&text, "],\"platform\":");
    text_json_cstring(&text, porta_model_format(m->model));
    text_puts(&text, ",\"inputs\":");
    append_infos(&text, m->inputs, m->input_count);
    text_puts(&text, ",\"outputs\":");
    append_infos(&text, m->outputs, m->output_count);
    text_printf(&text, ",\"parameters\":{\"max_batch_size\":%lld}}",
                (long long)(m->batchable ? m->batch_max : 0));
    return text_take(&text, "model metadata", json);
}
