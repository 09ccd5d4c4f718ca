/* The server's metrics, rendered in Prometheus' text format (version
 * 0.0.4) for GET /metrics: requests and errors per model, HTTP responses per
 * status code, queue depth, batches and their sizes, request latency, and
 * the memory libporta holds on devices and the host, and the generators'
 * tokens, steps and sequences. Safe to update from
 * any thread. */
#ifndef PORTA_SERVE_METRICS_H
#define PORTA_SERVE_METRICS_H

#include <stdint.h>

#include "porta.h"
#include "porta_generate.h"

typedef struct serve_metrics serve_metrics;

/* One set of per-model series for each name (copied). */
porta_status *serve_metrics_create(const char *const *model_names, int model_count,
                                   serve_metrics **out);
void serve_metrics_free(serve_metrics *metrics);

/* A finished HTTP request: its status code, and for an inference request
 * (model >= 0) its model and latency. */
void serve_metrics_request(serve_metrics *metrics, int model, int http_status, double seconds);
/* A batch run for `model`: how many requests were stacked, rows in all. */
void serve_metrics_batch(serve_metrics *metrics, int model, int requests, int64_t rows);
/* Requests waiting in `model`'s queue now. */
void serve_metrics_queue_depth(serve_metrics *metrics, int model, int depth);
/* The text; *out is free()d by the caller. generators: NULL, or one per
 * model (NULL for a model that does not generate), whose series follow:
 * porta_serve_generated_tokens_total, ..._generate_steps_total,
 * ..._generate_active_sequences, ..._generate_max_active_sequences. */
porta_status *serve_metrics_render(serve_metrics *metrics, porta_generator *const *generators,
                                   char **out);

#endif
