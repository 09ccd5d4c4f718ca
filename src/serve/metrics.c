/* Counters and histograms behind one mutex (metrics.h): updates are a few
 * additions per request, far below a request's cost. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "core/text.h"
#include "serve/metrics.h"

static const double latency_bounds[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                        0.05,   0.1,   0.25,   0.5,   1,    2.5, 5, 10};
static const double batch_bounds[] = {1, 2, 4, 8, 16, 32, 64, 128, 256};
enum {
    LATENCY_BUCKETS = sizeof latency_bounds / sizeof latency_bounds[0],
    BATCH_BUCKETS = sizeof batch_bounds / sizeof batch_bounds[0],
    STATUS_CODES = 600
};

typedef struct model_series {
    char *name;
    uint64_t requests, errors, batches, batch_rows;
    int queue_depth;
    uint64_t latency_counts[LATENCY_BUCKETS + 1]; /* the last: above every bound */
    double latency_sum;
    uint64_t batch_counts[BATCH_BUCKETS + 1];
    uint64_t batch_requests;
} model_series;

struct serve_metrics {
    pthread_mutex_t lock;
    model_series *models;
    int model_count;
    uint64_t responses[STATUS_CODES];
};

porta_status *serve_metrics_create(const char *const *model_names, int model_count,
                                   serve_metrics **out) {
    *out = NULL;
    serve_metrics *m = calloc(1, sizeof *m);
    if (m) m->models = calloc((size_t)model_count + 1, sizeof *m->models);
    for (int i = 0; m && m->models && i < model_count; i++, m->model_count++) {
        if (!(m->models[i].name = strdup(model_names[i]))) break;
    }
    if (!m || !m->models || m->model_count != model_count) {
        serve_metrics_free(m);
        return porta_error(PORTA_ERR_OUT_OF_MEMORY, "metrics: out of memory");
    }
    pthread_mutex_init(&m->lock, NULL);
    *out = m;
    return NULL;
}

void serve_metrics_free(serve_metrics *m) {
    if (!m) return;
    for (int i = 0; m->models && i < m->model_count; i++) free(m->models[i].name);
    free(m->models);
    if (m->models) pthread_mutex_destroy(&m->lock);
    free(m);
}

static int bucket(const double *bounds, int count, double value) {
    int b = 0;
    while (b < count && value > bounds[b]) b++;
    return b;
}

void serve_metrics_request(serve_metrics *m, int model, int http_status, double seconds) {
    pthread_mutex_lock(&m->lock);
    if (http_status >= 0 && http_status < STATUS_CODES) m->responses[http_status]++;
    if (model >= 0 && model < m->model_count) {
        model_series *s = &m->models[model];
        s->requests++;
        if (http_status >= 400) s->errors++;
        s->latency_counts[bucket(latency_bounds, LATENCY_BUCKETS, seconds)]++;
        s->latency_sum += seconds;
    }
    pthread_mutex_unlock(&m->lock);
}

void serve_metrics_batch(serve_metrics *m, int model, int requests, int64_t rows) {
    pthread_mutex_lock(&m->lock);
    model_series *s = &m->models[model];
    s->batches++;
    s->batch_rows += (uint64_t)rows;
    s->batch_requests += (uint64_t)requests;
    s->batch_counts[bucket(batch_bounds, BATCH_BUCKETS, requests)]++;
    pthread_mutex_unlock(&m->lock);
}

void serve_metrics_queue_depth(serve_metrics *m, int model, int depth) {
    pthread_mutex_lock(&m->lock);
    m->models[model].queue_depth = depth;
    pthread_mutex_unlock(&m->lock);
}

/* A label value: backslash, double quote and newline escaped. */
static void label(core_text *t, const char *value) {
    text_puts(t, "model=\"");
    for (const char *c = value; *c; c++) {
        if (*c == '\\') text_puts(t, "\\\\");
        else if (*c == '"') text_puts(t, "\\\"");
        else if (*c == '\n') text_puts(t, "\\n");
        else text_append(t, c, 1);
    }
    text_puts(t, "\"");
}

static void histogram(core_text *t, const char *metric, const char *model, const double *bounds,
                      int count, const uint64_t *counts, double sum) {
    uint64_t cumulative = 0;
    for (int b = 0; b <= count; b++) {
        cumulative += counts[b];
        text_printf(t, "%s_bucket{", metric);
        label(t, model);
        if (b < count) text_printf(t, ",le=\"%g\"} %llu\n", bounds[b], (unsigned long long)cumulative);
        else text_printf(t, ",le=\"+Inf\"} %llu\n", (unsigned long long)cumulative);
    }
    text_printf(t, "%s_sum{", metric);
    label(t, model);
    text_printf(t, "} %.9g\n%s_count{", sum, metric);
    label(t, model);
    text_printf(t, "} %llu\n", (unsigned long long)cumulative);
}

static void counter(core_text *t, const char *metric, const char *model, uint64_t value) {
    text_printf(t, "%s{", metric);
    label(t, model);
    text_printf(t, "} %llu\n", (unsigned long long)value);
}

/* Each series once with its HELP and TYPE, a line per model generating. */
static void generate_series(core_text *t, const serve_metrics *m,
                            porta_generator *const *generators) {
    static const struct {
        const char *name, *type, *help;
    } series[] = {
        {"porta_serve_generated_tokens_total", "counter", "Tokens generated."},
        {"porta_serve_generate_steps_total", "counter",
         "Decode steps run (each over every sequence being decoded)."},
        {"porta_serve_generate_active_sequences", "gauge", "Sequences being decoded now."},
        {"porta_serve_generate_max_active_sequences", "gauge",
         "The most sequences one decode step has run."},
    };
    for (size_t k = 0; generators && k < sizeof series / sizeof series[0]; k++) {
        bool any = false;
        for (int i = 0; i < m->model_count; i++) {
            if (!generators[i]) continue;
            if (!any)
                text_printf(t, "# HELP %s %s\n# TYPE %s %s\n", series[k].name, series[k].help,
                            series[k].name, series[k].type);
            any = true;
            porta_generate_stats st;
            porta_generator_stats(generators[i], &st);
            uint64_t values[] = {st.tokens, st.steps, (uint64_t)st.active, (uint64_t)st.max_active};
            counter(t, series[k].name, m->models[i].name, values[k]);
        }
    }
}

porta_status *serve_metrics_render(serve_metrics *m, porta_generator *const *generators,
                                   char **out) {
    core_text t = {0};
    pthread_mutex_lock(&m->lock);
    text_puts(&t, "# HELP porta_serve_responses_total HTTP responses by status code.\n"
                  "# TYPE porta_serve_responses_total counter\n");
    for (int code = 0; code < STATUS_CODES; code++)
        if (m->responses[code])
            text_printf(&t, "porta_serve_responses_total{code=\"%d\"} %llu\n", code,
                        (unsigned long long)m->responses[code]);
    static const struct {
        const char *name, *type, *help;
    } series[] = {
        {"porta_serve_requests_total", "counter", "Inference requests."},
        {"porta_serve_request_errors_total", "counter", "Inference requests answered with an error."},
        {"porta_serve_queue_depth", "gauge", "Requests waiting for a batch."},
        {"porta_serve_batches_total", "counter", "Model runs, each one batch."},
        {"porta_serve_batch_rows_total", "counter", "Rows (batch dim) run, over all batches."},
    };
    for (size_t k = 0; k < sizeof series / sizeof series[0]; k++) {
        text_printf(&t, "# HELP %s %s\n# TYPE %s %s\n", series[k].name, series[k].help,
                    series[k].name, series[k].type);
        for (int i = 0; i < m->model_count; i++) {
            const model_series *s = &m->models[i];
            uint64_t values[] = {s->requests, s->errors, (uint64_t)s->queue_depth, s->batches,
                                 s->batch_rows};
            counter(&t, series[k].name, s->name, values[k]);
        }
    }
    text_puts(&t, "# HELP porta_serve_batch_size Requests stacked into one model run.\n"
                  "# TYPE porta_serve_batch_size histogram\n");
    for (int i = 0; i < m->model_count; i++)
        histogram(&t, "porta_serve_batch_size", m->models[i].name, batch_bounds, BATCH_BUCKETS,
                  m->models[i].batch_counts, (double)m->models[i].batch_requests);
    text_puts(&t, "# HELP porta_serve_request_duration_seconds Inference request latency, "
                  "from its body's arrival to its response.\n"
                  "# TYPE porta_serve_request_duration_seconds histogram\n");
    for (int i = 0; i < m->model_count; i++)
        histogram(&t, "porta_serve_request_duration_seconds", m->models[i].name, latency_bounds,
                  LATENCY_BUCKETS, m->models[i].latency_counts, m->models[i].latency_sum);
    pthread_mutex_unlock(&m->lock);
    text_printf(&t,
                "# HELP porta_serve_memory_bytes Bytes libporta holds in device and host buffers.\n"
                "# TYPE porta_serve_memory_bytes gauge\nporta_serve_memory_bytes %llu\n"
                "# HELP porta_serve_memory_peak_bytes The most bytes held at once.\n"
                "# TYPE porta_serve_memory_peak_bytes gauge\nporta_serve_memory_peak_bytes %llu\n",
                (unsigned long long)porta_memory_allocated(),
                (unsigned long long)porta_memory_peak());
    generate_series(&t, m, generators);
    return text_take(&t, "metrics", out);
}
