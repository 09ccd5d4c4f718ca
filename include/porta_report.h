/* A comparison of one workload across devices: what was measured on each
 * (throughput, latency, peak memory, energy, cost), its JSON form
 * (docs/compare.md) and its renderings: a terminal table and a
 * self-contained HTML page with inline SVG plots.
 *
 * Measurements enter as raw figures (each step's seconds, samples per step,
 * joules over the measured steps or why there is no reading); everything
 * derived (samples/s, percentiles, joules per step, cost) is computed here
 * once, so `porta compare` and torch_porta.compare report alike. Public
 * for those two front ends (tools/porta, python/csrc/compare.c). */
#ifndef PORTA_REPORT_H
#define PORTA_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "porta.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PORTA_REPORT_TEXT_CAP 256

typedef struct porta_report_device {
    char id[32];                  /* "porta:1" */
    char backend[32];
    char name[PORTA_REPORT_TEXT_CAP];
    char error[PORTA_REPORT_TEXT_CAP];  /* the run failed: why ("" when it ran) */
    /* Raw measurements. */
    double *step_seconds;         /* one per measured step, owned */
    int steps;
    double samples_per_step;
    int64_t peak_memory_bytes;    /* -1: not known */
    bool energy_measured;
    double energy_joules;         /* over the measured steps */
    char energy_source[16];       /* "rapl", "nvml" */
    char energy_note[PORTA_REPORT_TEXT_CAP]; /* what the reading covers, or why none */
    /* Derived (report_derive). */
    double samples_per_second, latency_p50_ms, latency_p99_ms, joules_per_step;
    bool cost_known;
    double price_per_hour, cost_per_million_samples;
    char cost_note[PORTA_REPORT_TEXT_CAP];   /* which price rule, or why no cost */
} porta_report_device;

typedef struct porta_report {
    char workload[PORTA_REPORT_TEXT_CAP];
    char currency[16];
    porta_report_device *devices;
    int count, capacity;
} porta_report;

PORTA_API porta_status *porta_report_new(const char *workload, porta_report **out);
PORTA_API void porta_report_free(porta_report *report);
/* A new device entry (zeroed, no steps, peak memory unknown), owned by the
 * report; valid until the next add. */
PORTA_API porta_status *porta_report_add_device(porta_report *report, const char *id,
                                                const char *backend, const char *name,
                                                porta_report_device **out);
/* Copies the measured step times in. */
PORTA_API porta_status *porta_report_set_steps(porta_report_device *device,
                                               const double *seconds, int steps,
                                               double samples_per_step);
/* Fills the derived figures of every device from its raw ones. */
PORTA_API void porta_report_derive(porta_report *report);

/* Applies a price file (docs/compare.md): each device gets the price of the
 * first rule that matches it, and its cost per million samples. */
PORTA_API porta_status *porta_report_apply_prices(porta_report *report, const char *json,
                                                  size_t length);

/* JSON out and back in (raw and derived figures; derived ones are
 * recomputed on reading). */
PORTA_API porta_status *porta_report_to_json(const porta_report *report, char **out);
PORTA_API porta_status *porta_report_from_json(const char *json, size_t length,
                                               porta_report **out);

/* Renderings; *out is freed with free(). */
PORTA_API porta_status *porta_report_table(const porta_report *report, char **out);
PORTA_API porta_status *porta_report_html(const porta_report *report, char **out);

/* The p-th percentile (0..100) of `count` values by linear interpolation
 * between closest ranks; NaN for no values. */
PORTA_API double porta_report_percentile(const double *values, int count, double p);

/* Choosing a device by measurement (torch_porta.select_device, "porta:auto").
 *
 * Measurements are stored in the cache directory's select/measurements.json
 * ($PORTA_CACHE_DIR, see runtime/kernel_cache.h), keyed by the device
 * ("backend|name|porta VERSION": a new Porta may change speed) and then by
 * workload. A device without a record for the standard workload is measured
 * once, here, and the record kept; comparisons (porta compare,
 * torch_porta.compare) store theirs under their own workload name. */

/* The standard workload's name in the store. */
#define PORTA_SELECT_STANDARD "standard: MLP 256-512-10 (tanh) forward, batch 64"

/* The visible device best for `objective` ("throughput": most samples/s;
 * "latency": lowest median step; "cost": least cost per million samples
 * under the price file at prices_path; "energy": fewest joules per sample,
 * among devices with a reading) by the records of `workload` (NULL: the
 * standard one, measured where missing when `measure`). */
PORTA_API porta_status *porta_select_device(const char *objective, const char *workload,
                                            const char *prices_path, bool measure, int *index);

/* What porta_select_device weighs: for each visible device i < count,
 * scores[i] is its figure for `objective`, lower is better (throughput:
 * minus samples per second; latency: median step in ms; cost: cost per
 * million samples; energy: joules per sample), NaN where it has none.
 * Fails as porta_select_device does when no device has a figure. */
PORTA_API porta_status *porta_select_scores(const char *objective, const char *workload,
                                            const char *prices_path, bool measure,
                                            double *scores, int count);

/* Stores every device of a comparison that ran under its workload. */
PORTA_API porta_status *porta_select_record(const porta_report *report);

#ifdef __cplusplus
}
#endif

#endif
