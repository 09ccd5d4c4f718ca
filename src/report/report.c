/* The comparison's data: devices, raw measurements, derived figures and
 * prices (report.h). */
#include "porta_report.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/status.h"
#include "io/json.h"

porta_status *porta_report_new(const char *workload, porta_report **out) {
    porta_report *report = calloc(1, sizeof *report);
    if (!report) return porta_error(PORTA_ERR_OUT_OF_MEMORY, "out of memory for a report");
    snprintf(report->workload, sizeof report->workload, "%s", workload ? workload : "");
    *out = report;
    return NULL;
}

void porta_report_free(porta_report *report) {
    if (!report) return;
    for (int i = 0; i < report->count; i++) free(report->devices[i].step_seconds);
    free(report->devices);
    free(report);
}

porta_status *porta_report_add_device(porta_report *report, const char *id, const char *backend,
                                      const char *name, porta_report_device **out) {
    if (report->count == report->capacity) {
        int capacity = report->capacity ? 2 * report->capacity : 4;
        porta_report_device *grown = realloc(report->devices, (size_t)capacity * sizeof *grown);
        if (!grown) return porta_error(PORTA_ERR_OUT_OF_MEMORY, "out of memory for a device");
        report->devices = grown;
        report->capacity = capacity;
    }
    porta_report_device *device = &report->devices[report->count++];
    memset(device, 0, sizeof *device);
    snprintf(device->id, sizeof device->id, "%s", id ? id : "");
    snprintf(device->backend, sizeof device->backend, "%s", backend ? backend : "");
    snprintf(device->name, sizeof device->name, "%s", name ? name : "");
    device->peak_memory_bytes = -1;
    device->samples_per_step = 1;
    *out = device;
    return NULL;
}

porta_status *porta_report_set_steps(porta_report_device *device, const double *seconds,
                                     int steps, double samples_per_step) {
    if (steps < 0 || !(samples_per_step > 0))
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "%s: expected steps >= 0 and samples per step > 0, got %d and %g",
                           device->id, steps, samples_per_step);
    for (int i = 0; i < steps; i++)
        if (!(seconds[i] >= 0) || !isfinite(seconds[i]))
            return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                               "%s: step %d took %g s; expected a finite time >= 0", device->id,
                               i, seconds[i]);
    double *copy = NULL;
    if (steps) {
        copy = malloc((size_t)steps * sizeof *copy);
        if (!copy) return porta_error(PORTA_ERR_OUT_OF_MEMORY, "out of memory for step times");
        memcpy(copy, seconds, (size_t)steps * sizeof *copy);
    }
    free(device->step_seconds);
    device->step_seconds = copy;
    device->steps = steps;
    device->samples_per_step = samples_per_step;
    return NULL;
}

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double porta_report_percentile(const double *values, int count, double p) {
    if (count <= 0) return NAN;
    double *sorted = malloc((size_t)count * sizeof *sorted);
    if (!sorted) return NAN;
    memcpy(sorted, values, (size_t)count * sizeof *sorted);
    qsort(sorted, (size_t)count, sizeof *sorted, compare_doubles);
    double rank = p / 100.0 * (count - 1);
    int low = (int)floor(rank), high = low + 1 < count ? low + 1 : low;
    double result = sorted[low] + (rank - low) * (sorted[high] - sorted[low]);
    free(sorted);
    return result;
}

static void derive_cost(porta_report_device *device) {
    if (!device->cost_known) return;
    device->cost_per_million_samples =
        device->samples_per_second > 0
            ? device->price_per_hour / 3600.0 / device->samples_per_second * 1e6
            : NAN;
}

void porta_report_derive(porta_report *report) {
    for (int i = 0; i < report->count; i++) {
        porta_report_device *d = &report->devices[i];
        double total = 0;
        for (int s = 0; s < d->steps; s++) total += d->step_seconds[s];
        d->samples_per_second = d->steps && total > 0 ? d->steps * d->samples_per_step / total : NAN;
        d->latency_p50_ms = 1e3 * porta_report_percentile(d->step_seconds, d->steps, 50);
        d->latency_p99_ms = 1e3 * porta_report_percentile(d->step_seconds, d->steps, 99);
        d->joules_per_step = d->energy_measured && d->steps ? d->energy_joules / d->steps : NAN;
        derive_cost(d);
    }
}

/* ---- prices ---- */

static porta_status *price_error(const char *what, const json_value *at) {
    return porta_error(PORTA_ERR_INVALID_ARGUMENT, "price file: %s (at byte %zu)", what,
                       at ? at->offset : 0);
}

/* Whether a rule's "match" object fits the device: "backend" equal,
 * "name" a case-insensitive part of the device's name, "device" equal to
 * its id; a rule without "match" (or an empty one) matches every device. */
static porta_status *rule_matches(const json_value *match, const porta_report_device *d,
                                  bool *out) {
    *out = true;
    if (!match) return NULL;
    if (match->type != JSON_OBJECT) return price_error("\"match\" must be an object", match);
    for (size_t m = 0; m < match->as.object.count; m++) {
        const json_member *member = &match->as.object.members[m];
        if (member->value->type != JSON_STRING)
            return price_error("\"match\" values must be strings", member->value);
        const char *want = member->value->as.string.chars;
        if (!strcmp(member->key, "backend"))
            *out = *out && !strcmp(want, d->backend);
        else if (!strcmp(member->key, "device"))
            *out = *out && !strcmp(want, d->id);
        else if (!strcmp(member->key, "name"))
            *out = *out && strcasestr(d->name, want) != NULL;
        else {
            char what[128];
            snprintf(what, sizeof what, "unknown \"match\" key \"%.60s\" (expected backend, "
                     "device or name)", member->key);
            return price_error(what, member->value);
        }
    }
    return NULL;
}

porta_status *porta_report_apply_prices(porta_report *report, const char *text, size_t length) {
    json_document *document;
    PORTA_TRY(json_parse(text, length, 8, &document));
    const json_value *root = json_document_root(document);
    porta_status *status = NULL;
    const json_value *currency = json_object_get(root, "currency");
    const json_value *rules = json_object_get(root, "prices");
    if (root->type != JSON_OBJECT) {
        status = price_error("expected an object at the top", root);
        goto done;
    }
    if (!currency || currency->type != JSON_STRING || !currency->as.string.length ||
        currency->as.string.length >= sizeof report->currency) {
        status = price_error("\"currency\" must be a short non-empty string (\"USD\")", root);
        goto done;
    }
    if (!rules || rules->type != JSON_ARRAY) {
        status = price_error("\"prices\" must be an array of rules", root);
        goto done;
    }
    for (size_t r = 0; r < rules->as.array.count; r++) {
        const json_value *rule = rules->as.array.items[r];
        const json_value *per_hour = json_object_get(rule, "per_hour");
        if (rule->type != JSON_OBJECT || !per_hour || per_hour->type != JSON_NUMBER ||
            per_hour->as.number.value < 0) {
            status = price_error("each rule needs \"per_hour\", a number >= 0", rule);
            goto done;
        }
        for (size_t key = 0; key < rule->as.object.count; key++) {
            const char *name = rule->as.object.members[key].key;
            if (strcmp(name, "per_hour") && strcmp(name, "match") && strcmp(name, "label")) {
                status = price_error("rules hold only \"match\", \"per_hour\" and \"label\"", rule);
                goto done;
            }
        }
        bool fits;
        for (int i = 0; i < report->count; i++)
            CORE_TRY_GOTO(status, rule_matches(json_object_get(rule, "match"),
                                                &report->devices[i], &fits), done);
    }
    snprintf(report->currency, sizeof report->currency, "%s", currency->as.string.chars);
    for (int i = 0; i < report->count; i++) {
        porta_report_device *d = &report->devices[i];
        d->cost_known = false;
        snprintf(d->cost_note, sizeof d->cost_note, "no price rule matches this device");
        for (size_t r = 0; r < rules->as.array.count; r++) {
            const json_value *rule = rules->as.array.items[r];
            bool fits;
            porta_status *ignored = rule_matches(json_object_get(rule, "match"), d, &fits);
            porta_status_free(ignored); /* checked above */
            if (!fits) continue;
            const json_value *label = json_object_get(rule, "label");
            d->cost_known = true;
            d->price_per_hour = json_object_get(rule, "per_hour")->as.number.value;
            snprintf(d->cost_note, sizeof d->cost_note, "%.60s %g %s/hour (rule %zu)",
                     label && label->type == JSON_STRING ? label->as.string.chars : "price",
                     d->price_per_hour, report->currency, r + 1);
            break;
        }
    }
    porta_report_derive(report);
done:
    json_document_free(document);
    return status;
}
