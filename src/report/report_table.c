/* The comparison as a terminal table, with a note for every figure that
 * could not be given (report.h). */
#include <math.h>
#include <stdio.h>

#include "porta_report.h"
#include "core/text.h"

static void cell(core_text *t, int width, double value, const char *fmt) {
    char buf[64];
    if (isfinite(value)) snprintf(buf, sizeof buf, fmt, value);
    else snprintf(buf, sizeof buf, "-");
    text_printf(t, " %*s", width, buf);
}

static void memory_cell(core_text *t, int64_t bytes) {
    char buf[32];
    if (bytes < 0) snprintf(buf, sizeof buf, "-");
    else snprintf(buf, sizeof buf, "%.1f MiB", (double)bytes / (1 << 20));
    text_printf(t, " %10s", buf);
}

porta_status *porta_report_table(const porta_report *report, char **out) {
    core_text t = {0};
    char cost_header[32];
    snprintf(cost_header, sizeof cost_header, "%s/1M samples",
             report->currency[0] ? report->currency : "cost");
    if (report->workload[0]) text_printf(&t, "workload: %s\n", report->workload);
    text_printf(&t, "%-8s %-7s %11s %9s %9s %10s %11s %16s  %s\n", "device", "backend",
                "samples/s", "p50 ms", "p99 ms", "peak mem", "J/step", cost_header, "name");
    for (int i = 0; i < report->count; i++) {
        const porta_report_device *d = &report->devices[i];
        text_printf(&t, "%-8s %-7s", d->id, d->backend);
        if (d->error[0]) {
            text_printf(&t, " failed: %s\n", d->error);
            continue;
        }
        cell(&t, 11, d->samples_per_second, "%.1f");
        cell(&t, 9, d->latency_p50_ms, "%.2f");
        cell(&t, 9, d->latency_p99_ms, "%.2f");
        memory_cell(&t, d->peak_memory_bytes);
        if (d->energy_measured) cell(&t, 11, d->joules_per_step, "%.4g");
        else text_printf(&t, " %11s", "n/a");
        if (d->cost_known) cell(&t, 16, d->cost_per_million_samples, "%.4g");
        else text_printf(&t, " %16s", "n/a");
        text_printf(&t, "  %s\n", d->name);
    }
    for (int i = 0; i < report->count; i++) {
        const porta_report_device *d = &report->devices[i];
        if (d->error[0]) continue;
        text_printf(&t, "%s energy: %s%s\n", d->id,
                    d->energy_measured ? "" : "not measurable: ", d->energy_note);
        if (!d->cost_known && d->cost_note[0])
            text_printf(&t, "%s cost: not known: %s\n", d->id, d->cost_note);
    }
    return text_take(&t, "comparison table", out);
}
