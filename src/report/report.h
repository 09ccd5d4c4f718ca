/* A comparison of one workload across devices: what was measured on each
 * (throughput, latency, peak memory, energy, cost), its JSON form
 * (docs/compare.md) and its renderings: a terminal table and a
 * self-contained HTML page with inline SVG plots.
 *
 * Measurements enter as raw figures (each step's seconds, samples per step,
 * joules over the measured steps or why there is no reading); everything
 * derived (samples/s, percentiles, joules per step, cost) is computed here
 * once, so `porta compare` and torch_porta.compare report alike. */
#ifndef PORTA_REPORT_REPORT_H
#define PORTA_REPORT_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "porta.h"

#define REPORT_TEXT_CAP 256

typedef struct report_device {
    char id[32];                  /* "porta:1" */
    char backend[32];
    char name[REPORT_TEXT_CAP];
    char error[REPORT_TEXT_CAP];  /* the run failed: why ("" when it ran) */
    /* Raw measurements. */
    double *step_seconds;         /* one per measured step, owned */
    int steps;
    double samples_per_step;
    int64_t peak_memory_bytes;    /* -1: not known */
    bool energy_measured;
    double energy_joules;         /* over the measured steps */
    char energy_source[16];       /* "rapl", "nvml" */
    char energy_note[REPORT_TEXT_CAP]; /* what the reading covers, or why none */
    /* Derived (report_derive). */
    double samples_per_second, latency_p50_ms, latency_p99_ms, joules_per_step;
    bool cost_known;
    double price_per_hour, cost_per_million_samples;
    char cost_note[REPORT_TEXT_CAP];   /* which price rule, or why no cost */
} report_device;

typedef struct porta_report {
    char workload[REPORT_TEXT_CAP];
    char currency[16];
    report_device *devices;
    int count, capacity;
} porta_report;

porta_status *porta_report_new(const char *workload, porta_report **out);
void porta_report_free(porta_report *report);
/* A new device entry (zeroed, no steps, peak memory unknown), owned by the
 * report; valid until the next add. */
porta_status *porta_report_add_device(porta_report *report, const char *id, const char *backend,
                                      const char *name, report_device **out);
/* Copies the measured step times in. */
porta_status *porta_report_set_steps(report_device *device, const double *seconds, int steps,
                                     double samples_per_step);
/* Fills the derived figures of every device from its raw ones. */
void porta_report_derive(porta_report *report);

/* Applies a price file (docs/compare.md): each device gets the price of the
 * first rule that matches it, and its cost per million samples. */
porta_status *porta_report_apply_prices(porta_report *report, const char *json, size_t length);

/* JSON out and back in (raw and derived figures; derived ones are
 * recomputed on reading). */
porta_status *porta_report_to_json(const porta_report *report, char **out);
porta_status *porta_report_from_json(const char *json, size_t length, porta_report **out);

/* Renderings; *out is freed with free(). */
porta_status *porta_report_table(const porta_report *report, char **out);
porta_status *porta_report_html(const porta_report *report, char **out);

/* The p-th percentile (0..100) of `count` values by linear interpolation
 * between closest ranks; NaN for no values. */
double porta_report_percentile(const double *values, int count, double p);

#endif
