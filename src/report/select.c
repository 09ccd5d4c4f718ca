/* Device choice from stored measurements (select.h). */
#include "porta_report.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/status.h"
#include "io/json.h"
#include "core/text.h"
#include "porta_energy.h"
#include "runtime/kernel_cache.h"

/* One stored record. */
typedef struct record {
    char key[PORTA_REPORT_TEXT_CAP + 64];
    char workload[PORTA_REPORT_TEXT_CAP];
    double samples_per_second, latency_p50_ms, joules_per_sample; /* NaN: none */
    char energy_unavailable[PORTA_REPORT_TEXT_CAP];
    double measured_at;
} record;

typedef struct store {
    record *records;
    int count, capacity;
} store;

static porta_status *store_path(char *path, size_t cap) {
    char dir[1024];
    PORTA_TRY(rt_kernel_cache_dir("select", dir, sizeof dir));
    int n = snprintf(path, cap, "%s/measurements.json", dir);
    return n > 0 && (size_t)n < cap ? NULL
                                    : porta_error(PORTA_ERR_IO, "measurement store path too long");
}

static void device_key(const porta_device_info *info, char *key, size_t cap) {
    snprintf(key, cap, "%s|%s|porta %s", info->backend, info->name, porta_version_string());
}

static record *store_find(store *s, const char *key, const char *workload) {
    for (int i = 0; i < s->count; i++)
        if (!strcmp(s->records[i].key, key) && !strcmp(s->records[i].workload, workload))
            return &s->records[i];
    return NULL;
}

static porta_status *store_put(store *s, const record *r) {
    record *slot = store_find(s, r->key, r->workload);
    if (!slot) {
        if (s->count == s->capacity) {
            int capacity = s->capacity ? 2 * s->capacity : 8;
            record *grown = realloc(s->records, (size_t)capacity * sizeof *grown);
            if (!grown) return porta_error(PORTA_ERR_OUT_OF_MEMORY, "out of memory for records");
            s->records = grown;
            s->capacity = capacity;
        }
        slot = &s->records[s->count++];
    }
    *slot = *r;
    return NULL;
}

static double number_or_nan(const json_value *object, const char *key) {
    const json_value *v = json_object_get(object, key);
    return v && v->type == JSON_NUMBER ? v->as.number.value : NAN;
}

/* Reads the store; a missing or unreadable file is an empty store (it is a
 * cache: measuring again is the remedy). */
static porta_status *store_load(store *s) {
    memset(s, 0, sizeof *s);
    char path[1100];
    PORTA_TRY(store_path(path, sizeof path));
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *text = malloc(1 << 22);
    size_t length = text ? fread(text, 1, 1 << 22, f) : 0;
    fclose(f);
    json_document *document = NULL;
    porta_status *status = text ? json_parse(text, length, 8, &document) : NULL;
    free(text);
    if (status || !document) {
        porta_status_free(status);
        return NULL;
    }
    const json_value *root = json_document_root(document);
    for (size_t d = 0; !status && root->type == JSON_OBJECT && d < root->as.object.count; d++) {
        const json_member *device = &root->as.object.members[d];
        for (size_t w = 0; !status && device->value->type == JSON_OBJECT &&
                           w < device->value->as.object.count; w++) {
            const json_member *workload = &device->value->as.object.members[w];
            const json_value *figures = workload->value;
            record r = {0};
            snprintf(r.key, sizeof r.key, "%s", device->key);
            snprintf(r.workload, sizeof r.workload, "%s", workload->key);
            r.samples_per_second = number_or_nan(figures, "samples_per_second");
            r.latency_p50_ms = number_or_nan(figures, "latency_p50_ms");
            r.joules_per_sample = number_or_nan(figures, "joules_per_sample");
            r.measured_at = number_or_nan(figures, "measured_at");
            const json_value *why = json_object_get(figures, "energy_unavailable");
            if (why && why->type == JSON_STRING)
                snprintf(r.energy_unavailable, sizeof r.energy_unavailable, "%s",
                         why->as.string.chars);
            if (isfinite(r.samples_per_second) && r.samples_per_second > 0)
                status = store_put(s, &r);
        }
    }
    json_document_free(document);
    return status;
}

static porta_status *store_save(const store *s) {
    char path[1100], dir[1024];
    PORTA_TRY(rt_kernel_cache_dir("select", dir, sizeof dir));
    PORTA_TRY(store_path(path, sizeof path));
    core_text t = {0};
    text_printf(&t, "{");
    bool first_key = true;
    for (int i = 0; i < s->count; i++) {
        bool seen = false;
        for (int j = 0; j < i; j++) seen = seen || !strcmp(s->records[j].key, s->records[i].key);
        if (seen) continue; /* written with its first record */
        text_printf(&t, "%s\n ", first_key ? "" : ",");
        first_key = false;
        text_json_cstring(&t, s->records[i].key);
        text_printf(&t, ": {");
        bool first = true;
        for (int j = i; j < s->count; j++) {
            const record *r = &s->records[j];
            if (strcmp(r->key, s->records[i].key)) continue;
            text_printf(&t, "%s\n  ", first ? "" : ",");
            first = false;
            text_json_cstring(&t, r->workload);
            text_printf(&t, ": {\"samples_per_second\": ");
            text_json_number(&t, r->samples_per_second);
            text_printf(&t, ", \"latency_p50_ms\": ");
            text_json_number(&t, r->latency_p50_ms);
            text_printf(&t, ", \"joules_per_sample\": ");
            text_json_number(&t, r->joules_per_sample);
            text_printf(&t, ", \"energy_unavailable\": ");
            if (r->energy_unavailable[0]) text_json_cstring(&t, r->energy_unavailable);
            else text_printf(&t, "null");
            text_printf(&t, ", \"measured_at\": ");
            text_json_number(&t, r->measured_at);
            text_printf(&t, "}");
        }
        text_printf(&t, "}");
    }
    text_printf(&t, "\n}\n");
    char *text = NULL;
    PORTA_TRY(text_take(&t, "measurement store", &text));
    /* Whole file or none: processes share the store. */
    porta_status *status = rt_kernel_cache_write(dir, "measurements.json", text, strlen(text));
    free(text);
    return status;
}

static record record_of(const porta_device_info *info, const porta_report_device *d,
                        const char *workload) {
    record r = {0};
    device_key(info, r.key, sizeof r.key);
    snprintf(r.workload, sizeof r.workload, "%s", workload);
    r.samples_per_second = d->samples_per_second;
    r.latency_p50_ms = d->latency_p50_ms;
    r.joules_per_sample = d->energy_measured ? d->joules_per_step / d->samples_per_step : NAN;
    if (!d->energy_measured)
        snprintf(r.energy_unavailable, sizeof r.energy_unavailable, "%s", d->energy_note);
    r.measured_at = (double)time(NULL);
    return r;
}

porta_status *porta_select_record(const porta_report *report) {
    store s;
    PORTA_TRY(store_load(&s));
    porta_status *status = NULL;
    for (int i = 0; !status && i < report->count; i++) {
        const porta_report_device *d = &report->devices[i];
        if (d->error[0] || !(d->samples_per_second > 0)) continue;
        porta_device_info info = {.backend = d->backend, .name = d->name};
        record r = record_of(&info, d, report->workload);
        status = store_put(&s, &r);
    }
    if (!status) status = store_save(&s);
    free(s.records);
    return status;
}

/* ---- the standard workload ---- */

static double now_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static porta_status *random_on(porta_device *device, int64_t rows, int64_t cols, uint64_t seed,
                               porta_tensor **out) {
    PORTA_TRY(porta_tensor_full(device, PORTA_F32, 2, (int64_t[]){rows, cols}, 0.0, out));
    return porta_random_uniform(*out, seed, 0, -1.0, 1.0);
}

static porta_status *forward(porta_tensor *const *t, porta_device *device) {
    porta_tensor *h = NULL, *a = NULL, *y = NULL;
    porta_status *status = porta_matmul(t[0], t[1], &h);
    if (!status) status = porta_unary(PORTA_TANH, h, &a);
    if (!status) status = porta_matmul(a, t[2], &y);
    if (!status) status = porta_device_synchronize(device);
    if (h) porta_tensor_release(h);
    if (a) porta_tensor_release(a);
    if (y) porta_tensor_release(y);
    return status;
}

enum { STANDARD_WARMUP = 3, STANDARD_STEPS = 10 };

/* Runs the standard workload on device `index` into `report`. */
static porta_status *measure_standard(int index, porta_report *report) {
    porta_device *device;
    porta_device_info info;
    PORTA_TRY(porta_device_get(index, &device));
    PORTA_TRY(porta_device_info_get(device, &info));
    char id[32];
    snprintf(id, sizeof id, "porta:%d", index);
    porta_report_device *d;
    PORTA_TRY(porta_report_add_device(report, id, info.backend, info.name, &d));
    porta_tensor *t[3] = {NULL, NULL, NULL};
    porta_status *status = random_on(device, 64, 256, 1, &t[0]);
    if (!status) status = random_on(device, 256, 512, 2, &t[1]);
    if (!status) status = random_on(device, 512, 10, 3, &t[2]);
    double seconds[STANDARD_STEPS];
    porta_energy_sample start, end;
    char why[PORTA_ENERGY_REASON_CAP] = "";
    bool metered = false;
    for (int step = 0; !status && step < STANDARD_WARMUP + STANDARD_STEPS; step++) {
        if (step == STANDARD_WARMUP)
            metered = porta_energy_read_device(&info, &start, why, sizeof why);
        double begin = now_seconds();
        status = forward(t, device);
        if (step >= STANDARD_WARMUP) seconds[step - STANDARD_WARMUP] = now_seconds() - begin;
    }
    if (!status && metered &&
        porta_energy_read_device(&info, &end, why, sizeof why)) {
        double joules = porta_energy_joules(&start, &end);
        d->energy_measured = joules >= 0;
        d->energy_joules = joules;
        snprintf(d->energy_note, sizeof d->energy_note, "%s", porta_energy_source_note(end.source));
    } else {
        snprintf(d->energy_note, sizeof d->energy_note, "%s", why);
    }
    if (!status) status = porta_report_set_steps(d, seconds, STANDARD_STEPS, 64);
    for (int i = 0; i < 3; i++)
        if (t[i]) porta_tensor_release(t[i]);
    return status ? porta_error_context(status, "measuring %s", id) : NULL;
}

/* ---- choosing ---- */

static const char *const objectives[] = {"throughput", "latency", "cost", "energy"};

static porta_status *read_text_file(const char *path, char **text, size_t *length) {
    FILE *f = fopen(path, "rb");
    if (!f) return porta_error(PORTA_ERR_IO, "select_device: cannot open the price file %s", path);
    *text = malloc(1 << 20);
    *length = *text ? fread(*text, 1, 1 << 20, f) : 0;
    fclose(f);
    return *text ? NULL : porta_error(PORTA_ERR_OUT_OF_MEMORY, "out of memory");
}

/* Cost per million samples of each candidate under the price file. */
static porta_status *costs(const char *prices_path, const record *const *found, int count,
                           double *cost) {
    porta_report *priced = NULL;
    char *text = NULL;
    size_t length = 0;
    porta_status *status = read_text_file(prices_path, &text, &length);
    if (!status) status = porta_report_new("", &priced);
    for (int i = 0; !status && i < count; i++) {
        cost[i] = NAN;
        if (!found[i]) continue;
        porta_device *device;
        porta_device_info info;
        status = porta_device_get(i, &device);
        if (!status) status = porta_device_info_get(device, &info);
        char id[32];
        snprintf(id, sizeof id, "porta:%d", i);
        porta_report_device *d;
        if (!status) status = porta_report_add_device(priced, id, info.backend, info.name, &d);
        double step = 1.0 / found[i]->samples_per_second;
        if (!status) status = porta_report_set_steps(d, &step, 1, 1);
    }
    if (!status) status = porta_report_apply_prices(priced, text, length);
    for (int i = 0, k = 0; !status && i < count; i++)
        if (found[i]) {
            const porta_report_device *d = &priced->devices[k++];
            cost[i] = d->cost_known ? d->cost_per_million_samples : NAN;
        }
    porta_report_free(priced);
    free(text);
    return status ? porta_error_context(status, "in %s", prices_path) : NULL;
}

porta_status *porta_select_scores(const char *objective, const char *workload,
                                  const char *prices_path, bool measure, double *scores,
                                  int score_count) {
    int which = -1;
    for (int i = 0; i < 4; i++)
        if (objective && !strcmp(objective, objectives[i])) which = i;
    if (which < 0)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "select_device: objective must be one of "
                           "throughput, latency, cost, energy, not '%s'", objective ? objective : "");
    if (which == 2 && !prices_path)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "select_device: objective 'cost' needs a "
                           "price file (see docs/compare.md)");
    bool standard = !workload;
    if (standard) workload = PORTA_SELECT_STANDARD;
    int count = porta_device_count();
    store s;
    PORTA_TRY(store_load(&s));
    porta_report *measured = NULL;
    porta_status *status = porta_report_new(workload, &measured);
    const record **found = calloc((size_t)count + 1, sizeof *found);
    double *score = calloc((size_t)count + 1, sizeof *score);
    porta_device_info *infos = calloc((size_t)count + 1, sizeof *infos);
    if (!status && (!found || !score || !infos))
        status = porta_error(PORTA_ERR_OUT_OF_MEMORY, "out of memory");
    /* Measure what is missing first: records are pointers into the store. */
    bool changed = false;
    for (int i = 0; !status && i < count; i++) {
        porta_device *device;
        status = porta_device_get(i, &device);
        if (!status) status = porta_device_info_get(device, &infos[i]);
        if (status) break;
        char key[sizeof s.records[0].key];
        device_key(&infos[i], key, sizeof key);
        if (!store_find(&s, key, workload) && standard && measure) {
            status = measure_standard(i, measured);
            if (!status) {
                porta_report_derive(measured);
                record r = record_of(&infos[i], &measured->devices[measured->count - 1], workload);
                status = store_put(&s, &r);
                changed = true;
            }
        }
    }
    if (!status && changed) status = store_save(&s);
    int candidates = 0;
    for (int i = 0; !status && i < count; i++) {
        char key[sizeof s.records[0].key];
        device_key(&infos[i], key, sizeof key);
        found[i] = store_find(&s, key, workload);
        candidates += found[i] != NULL;
    }
    if (!status && !candidates)
        status = porta_error(PORTA_ERR_UNAVAILABLE, "select_device: no measurements for workload "
                             "'%s'; compare on it first", workload);
    if (!status && which == 2) status = costs(prices_path, found, count, score);
    core_text reasons = {0};
    int best = -1;
    for (int i = 0; !status && i < count; i++) {
        if (!found[i]) continue;
        double value = which == 0   ? -found[i]->samples_per_second
                       : which == 1 ? found[i]->latency_p50_ms
                       : which == 2 ? score[i]
                                    : found[i]->joules_per_sample;
        if (which == 3 && !isfinite(value))
            text_printf(&reasons, "%sporta:%d: %s", reasons.length ? "; " : "", i,
                        found[i]->energy_unavailable);
        if (isfinite(value) && (best < 0 || value < score[best])) best = i;
        score[i] = value;
    }
    if (!status && best < 0)
        status = which == 3 ? porta_error(PORTA_ERR_UNAVAILABLE, "select_device: no device has "
                                          "an energy reading here (%s)",
                                          reasons.chars ? reasons.chars : "")
                            : porta_error(PORTA_ERR_UNAVAILABLE, "select_device: no device has "
                                          "a price in %s", prices_path);
    free(reasons.chars);
    for (int i = 0; !status && i < score_count; i++)
        scores[i] = i < count && found[i] && isfinite(score[i]) ? score[i] : NAN;
    porta_report_free(measured);
    free(found);
    free(score);
    free(infos);
    free(s.records);
    return status;
}

porta_status *porta_select_device(const char *objective, const char *workload,
                                  const char *prices_path, bool measure, int *index) {
    int count = porta_device_count();
    double *scores = calloc((size_t)count + 1, sizeof *scores);
    if (!scores) return porta_error(PORTA_ERR_OUT_OF_MEMORY, "out of memory");
    porta_status *status = porta_select_scores(objective, workload, prices_path, measure,
                                               scores, count);
    int best = -1;
    for (int i = 0; !status && i < count; i++)
        if (isfinite(scores[i]) && (best < 0 || scores[i] < scores[best])) best = i;
    if (!status) *index = best;
    free(scores);
    return status;
}
