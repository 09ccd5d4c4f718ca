/* The comparison as JSON (docs/compare.md): written with every raw and
 * derived figure; read back from its raw figures, the derived ones
 * recomputed, so a file edited by hand cannot disagree with itself. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "io/json.h"
#include "porta_report.h"
#include "core/text.h"

#define FORMAT_NAME "porta-compare"
#define FORMAT_VERSION 1

static void write_device(core_text *t, const porta_report_device *d) {
    text_printf(t, "    {\"device\": ");
    text_json_cstring(t, d->id);
    text_printf(t, ", \"backend\": ");
    text_json_cstring(t, d->backend);
    text_printf(t, ", \"name\": ");
    text_json_cstring(t, d->name);
    text_printf(t, ",\n     \"error\": ");
    if (d->error[0]) text_json_cstring(t, d->error);
    else text_printf(t, "null");
    text_printf(t, ", \"steps\": %d, \"samples_per_step\": ", d->steps);
    text_json_number(t, d->samples_per_step);
    text_printf(t, ",\n     \"step_seconds\": [");
    for (int s = 0; s < d->steps; s++) {
        text_printf(t, s ? ", " : "");
        text_json_number(t, d->step_seconds[s]);
    }
    text_printf(t, "],\n     \"samples_per_second\": ");
    text_json_number(t, d->samples_per_second);
    text_printf(t, ", \"latency_ms\": {\"p50\": ");
    text_json_number(t, d->latency_p50_ms);
    text_printf(t, ", \"p99\": ");
    text_json_number(t, d->latency_p99_ms);
    text_printf(t, "}, \"peak_memory_bytes\": ");
    if (d->peak_memory_bytes >= 0) text_printf(t, "%lld", (long long)d->peak_memory_bytes);
    else text_printf(t, "null");
    text_printf(t, ",\n     \"energy\": {");
    if (d->energy_measured) {
        text_printf(t, "\"joules\": ");
        text_json_number(t, d->energy_joules);
        text_printf(t, ", \"joules_per_step\": ");
        text_json_number(t, d->joules_per_step);
        text_printf(t, ", \"source\": ");
        text_json_cstring(t, d->energy_source);
        text_printf(t, ", \"note\": ");
    } else {
        text_printf(t, "\"joules\": null, \"joules_per_step\": null, \"unavailable\": ");
    }
    text_json_cstring(t, d->energy_note);
    text_printf(t, "},\n     \"cost\": {");
    if (d->cost_known) {
        text_printf(t, "\"price_per_hour\": ");
        text_json_number(t, d->price_per_hour);
        text_printf(t, ", \"per_million_samples\": ");
        text_json_number(t, d->cost_per_million_samples);
        text_printf(t, ", \"rule\": ");
    } else {
        text_printf(t, "\"price_per_hour\": null, \"per_million_samples\": null, \"unavailable\": ");
    }
    text_json_cstring(t, d->cost_note[0] ? d->cost_note : "no price file given");
    text_printf(t, "}}");
}

porta_status *porta_report_to_json(const porta_report *report, char **out) {
    core_text t = {0};
    text_printf(&t, "{\"format\": \"%s\", \"version\": %d,\n \"workload\": ", FORMAT_NAME,
                FORMAT_VERSION);
    text_json_cstring(&t, report->workload);
    text_printf(&t, ", \"currency\": ");
    if (report->currency[0]) text_json_cstring(&t, report->currency);
    else text_printf(&t, "null");
    text_printf(&t, ",\n \"devices\": [\n");
    for (int i = 0; i < report->count; i++) {
        if (i) text_printf(&t, ",\n");
        write_device(&t, &report->devices[i]);
    }
    text_printf(&t, "\n ]}\n");
    return text_take(&t, "comparison JSON", out);
}

/* ---- reading ---- */

static porta_status *bad(const json_value *at, const char *what) {
    return porta_error(PORTA_ERR_INVALID_ARGUMENT, "comparison JSON: %s (at byte %zu)", what,
                       at ? at->offset : 0);
}

/* Copies an optional string member; wrong types are errors. */
static porta_status *get_string(const json_value *object, const char *key, char *dst, size_t cap,
                                bool required) {
    const json_value *v = json_object_get(object, key);
    dst[0] = '\0';
    if (!v || v->type == JSON_NULL) {
        if (!required) return NULL;
        char what[96];
        snprintf(what, sizeof what, "missing string \"%s\"", key);
        return bad(object, what);
    }
    if (v->type != JSON_STRING) {
        char what[96];
        snprintf(what, sizeof what, "\"%s\" must be a string, not %s", key, json_type_name(v->type));
        return bad(v, what);
    }
    snprintf(dst, cap, "%s", v->as.string.chars);
    return NULL;
}

static porta_status *read_device(porta_report *report, const json_value *item) {
    if (item->type != JSON_OBJECT) return bad(item, "each device must be an object");
    char id[32], backend[32], name[PORTA_REPORT_TEXT_CAP];
    PORTA_TRY(get_string(item, "device", id, sizeof id, true));
    PORTA_TRY(get_string(item, "backend", backend, sizeof backend, true));
    PORTA_TRY(get_string(item, "name", name, sizeof name, false));
    porta_report_device *d;
    PORTA_TRY(porta_report_add_device(report, id, backend, name, &d));
    PORTA_TRY(get_string(item, "error", d->error, sizeof d->error, false));

    const json_value *steps = json_object_get(item, "step_seconds");
    const json_value *per_step = json_object_get(item, "samples_per_step");
    if (steps && steps->type != JSON_ARRAY) return bad(steps, "\"step_seconds\" must be an array");
    if (per_step && per_step->type != JSON_NUMBER)
        return bad(per_step, "\"samples_per_step\" must be a number");
    int count = steps ? (int)steps->as.array.count : 0;
    if (steps && steps->as.array.count > 100000000)
        return bad(steps, "\"step_seconds\" holds more than 1e8 steps");
    double *seconds = count ? malloc((size_t)count * sizeof *seconds) : NULL;
    if (count && !seconds) return porta_error(PORTA_ERR_OUT_OF_MEMORY, "out of memory for steps");
    for (int s = 0; s < count; s++) {
        const json_value *v = steps->as.array.items[s];
        if (v->type != JSON_NUMBER) {
            free(seconds);
            return bad(v, "step times must be numbers of seconds");
        }
        seconds[s] = v->as.number.value;
    }
    porta_status *status = porta_report_set_steps(d, seconds, count,
                                                  per_step ? per_step->as.number.value : 1.0);
    free(seconds);
    PORTA_TRY(status);

    const json_value *peak = json_object_get(item, "peak_memory_bytes");
    if (peak && peak->type == JSON_NUMBER && peak->as.number.is_integer &&
        peak->as.number.integer >= 0)
        d->peak_memory_bytes = peak->as.number.integer;
    else if (peak && peak->type != JSON_NULL)
        return bad(peak, "\"peak_memory_bytes\" must be an integer >= 0 or null");

    const json_value *energy = json_object_get(item, "energy");
    if (energy && energy->type != JSON_OBJECT) return bad(energy, "\"energy\" must be an object");
    const json_value *joules = json_object_get(energy, "joules");
    if (joules && joules->type == JSON_NUMBER) {
        if (!(joules->as.number.value >= 0)) return bad(joules, "\"joules\" must be >= 0");
        d->energy_measured = true;
        d->energy_joules = joules->as.number.value;
        PORTA_TRY(get_string(energy, "source", d->energy_source, sizeof d->energy_source, true));
        PORTA_TRY(get_string(energy, "note", d->energy_note, sizeof d->energy_note, false));
    } else if (joules && joules->type != JSON_NULL) {
        return bad(joules, "\"joules\" must be a number or null");
    } else {
        PORTA_TRY(get_string(energy, "unavailable", d->energy_note, sizeof d->energy_note, false));
        if (!d->energy_note[0])
            snprintf(d->energy_note, sizeof d->energy_note, "not measured");
    }

    const json_value *cost = json_object_get(item, "cost");
    const json_value *price = json_object_get(cost, "price_per_hour");
    if (price && price->type == JSON_NUMBER && price->as.number.value >= 0) {
        d->cost_known = true;
        d->price_per_hour = price->as.number.value;
        PORTA_TRY(get_string(cost, "rule", d->cost_note, sizeof d->cost_note, false));
    } else if (price && price->type != JSON_NULL) {
        return bad(price, "\"price_per_hour\" must be a number >= 0 or null");
    } else {
        PORTA_TRY(get_string(cost, "unavailable", d->cost_note, sizeof d->cost_note, false));
    }
    return NULL;
}

porta_status *porta_report_from_json(const char *text, size_t length, porta_report **out) {
    json_document *document;
    PORTA_TRY(json_parse(text, length, 16, &document));
    const json_value *root = json_document_root(document);
    porta_report *report = NULL;
    porta_status *status = NULL;
    const json_value *format = json_object_get(root, "format");
    const json_value *version = json_object_get(root, "version");
    const json_value *devices = json_object_get(root, "devices");
    if (!format || format->type != JSON_STRING || strcmp(format->as.string.chars, FORMAT_NAME)) {
        status = bad(root, "expected \"format\": \"" FORMAT_NAME "\"");
        goto done;
    }
    if (!version || version->type != JSON_NUMBER || !version->as.number.is_integer ||
        version->as.number.integer != FORMAT_VERSION) {
        status = porta_error(PORTA_ERR_UNSUPPORTED,
                             "comparison JSON: version %g is not supported (expected %d)",
                             version && version->type == JSON_NUMBER ? version->as.number.value
                                                                     : NAN,
                             FORMAT_VERSION);
        goto done;
    }
    if (!devices || devices->type != JSON_ARRAY) {
        status = bad(root, "\"devices\" must be an array");
        goto done;
    }
    char workload[PORTA_REPORT_TEXT_CAP];
    CORE_TRY_GOTO(status, get_string(root, "workload", workload, sizeof workload, false), done);
    CORE_TRY_GOTO(status, porta_report_new(workload, &report), done);
    CORE_TRY_GOTO(status, get_string(root, "currency", report->currency,
                                      sizeof report->currency, false), done);
    for (size_t i = 0; i < devices->as.array.count; i++)
        CORE_TRY_GOTO(status, read_device(report, devices->as.array.items[i]), done);
    porta_report_derive(report);
done:
    json_document_free(document);
    if (status) {
        porta_report_free(report);
        return status;
    }
    *out = report;
    return NULL;
}
