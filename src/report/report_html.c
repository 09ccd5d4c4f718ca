/* The comparison as one self-contained HTML page: a table and inline SVG
 * plots (throughput, throughput against cost, energy per step, each step's
 * latency). No scripts, fonts, images or links: it renders offline. Every
 * plotted value is an SVG element of class "bar" or "point" carrying its
 * device and value, so the page can be checked as well as looked at. */
#include <math.h>
#include <stdio.h>

#include "porta_report.h"
#include "core/text.h"

#define WIDTH 640
#define HEIGHT 300
#define LEFT 80
#define RIGHT 20
#define TOP 30
#define BOTTOM 60

static const char *const palette[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd",
                                      "#ff7f0e", "#8c564b", "#e377c2", "#17becf"};
static const char *color(int i) { return palette[i % (int)(sizeof palette / sizeof *palette)]; }

static const char *const style =
    "body{font-family:sans-serif;margin:24px;color:#222;background:#fff}"
    "table{border-collapse:collapse;margin-bottom:16px}"
    "td,th{border:1px solid #bbb;padding:4px 8px;text-align:right}"
    "td.text,th.text{text-align:left}"
    "svg.plot{border:1px solid #ccc;margin:8px 16px 8px 0;background:#fafafa}"
    "svg text{font-family:sans-serif;font-size:12px}"
    ".note{color:#555;font-size:13px}";

static void svg_open(core_text *t, const char *id, const char *title) {
    text_printf(t, "<svg class=\"plot\" id=\"%s\" xmlns=\"http://www.w3.org/2000/svg\" "
                "width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">\n"
                "<text x=\"%d\" y=\"18\" font-weight=\"bold\">", id, WIDTH, HEIGHT, WIDTH,
                HEIGHT, LEFT);
    text_html(t, title);
    text_printf(t, "</text>\n<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#333\"/>"
                "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#333\"/>\n",
                LEFT, TOP, LEFT, HEIGHT - BOTTOM, LEFT, HEIGHT - BOTTOM, WIDTH - RIGHT,
                HEIGHT - BOTTOM);
}

/* Axis label and ticks at 0, max/2, max along y. */
static void y_axis(core_text *t, double max, const char *unit) {
    for (int k = 0; k <= 2; k++) {
        double y = HEIGHT - BOTTOM - k * (HEIGHT - TOP - BOTTOM) / 2.0;
        text_printf(t, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%.3g</text>\n", LEFT - 6,
                    y + 4, max * k / 2);
    }
    text_printf(t, "<text x=\"14\" y=\"%d\" transform=\"rotate(-90 14 %d)\" "
                "text-anchor=\"middle\">", (HEIGHT - BOTTOM + TOP) / 2, (HEIGHT - BOTTOM + TOP) / 2);
    text_html(t, unit);
    text_printf(t, "</text>\n");
}

static void empty_message(core_text *t, const char *message) {
    text_printf(t, "<text class=\"empty\" x=\"%d\" y=\"%d\">", LEFT + 10, (HEIGHT - BOTTOM + TOP) / 2);
    text_html(t, message);
    text_printf(t, "</text>\n");
}

/* Bars of `values` (NaN: a note in the bar's place instead). */
static void bar_plot(core_text *t, const porta_report *r, const char *id, const char *title,
                     const char *unit, const double *values, const char *const *missing) {
    svg_open(t, id, title);
    double max = 0;
    for (int i = 0; i < r->count; i++)
        if (isfinite(values[i]) && values[i] > max) max = values[i];
    if (max <= 0) max = 1;
    y_axis(t, max, unit);
    double slot = (double)(WIDTH - LEFT - RIGHT) / (r->count ? r->count : 1);
    double plot_height = HEIGHT - TOP - BOTTOM;
    for (int i = 0; i < r->count; i++) {
        const porta_report_device *d = &r->devices[i];
        double x = LEFT + i * slot + slot * 0.15, w = slot * 0.7;
        if (isfinite(values[i])) {
            double h = values[i] / max * plot_height;
            text_printf(t, "<rect class=\"bar\" data-device=\"%s\" data-value=\"%.6g\" x=\"%.1f\" "
                        "y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"><title>%s: %.4g "
                        "</title></rect>\n", d->id, values[i], x, HEIGHT - BOTTOM - h, w, h,
                        color(i), d->id, values[i]);
        } else {
            text_printf(t, "<text class=\"missing\" x=\"%.1f\" y=\"%d\" font-size=\"11\">",
                        x, HEIGHT - BOTTOM - 8);
            text_html(t, missing && missing[i] ? missing[i] : "not measured");
            text_printf(t, "</text>\n");
        }
        text_printf(t, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s (%s)</text>\n",
                    x + w / 2, HEIGHT - BOTTOM + 18, d->id, d->backend);
    }
    text_printf(t, "</svg>\n");
}

/* Throughput (up) against cost per million samples (right): better is up
 * and to the left. */
static void cost_plot(core_text *t, const porta_report *r) {
    char title[96];
    snprintf(title, sizeof title, "Throughput vs cost per million samples (%s)",
             r->currency[0] ? r->currency : "no price file");
    svg_open(t, "throughput-cost", title);
    double max_x = 0, max_y = 0;
    int plotted = 0;
    for (int i = 0; i < r->count; i++) {
        const porta_report_device *d = &r->devices[i];
        if (!d->cost_known || !isfinite(d->cost_per_million_samples) ||
            !isfinite(d->samples_per_second))
            continue;
        plotted++;
        if (d->cost_per_million_samples > max_x) max_x = d->cost_per_million_samples;
        if (d->samples_per_second > max_y) max_y = d->samples_per_second;
    }
    max_x = max_x > 0 ? max_x * 1.1 : 1;
    max_y = max_y > 0 ? max_y * 1.1 : 1;
    y_axis(t, max_y, "samples/s");
    for (int k = 0; k <= 2; k++)
        text_printf(t, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%.3g</text>\n",
                    LEFT + k * (WIDTH - LEFT - RIGHT) / 2.0, HEIGHT - BOTTOM + 18, max_x * k / 2);
    text_printf(t, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">cost per million samples"
                "</text>\n", (LEFT + WIDTH - RIGHT) / 2, HEIGHT - BOTTOM + 40);
    if (!plotted) empty_message(t, "no device has a price: give a price file (--prices)");
    for (int i = 0; i < r->count; i++) {
        const porta_report_device *d = &r->devices[i];
        if (!d->cost_known || !isfinite(d->cost_per_million_samples) ||
            !isfinite(d->samples_per_second))
            continue;
        double x = LEFT + d->cost_per_million_samples / max_x * (WIDTH - LEFT - RIGHT);
        double y = HEIGHT - BOTTOM - d->samples_per_second / max_y * (HEIGHT - TOP - BOTTOM);
        text_printf(t, "<circle class=\"point\" data-device=\"%s\" data-value=\"%.6g\" "
                    "cx=\"%.1f\" cy=\"%.1f\" r=\"7\" fill=\"%s\"><title>%s</title></circle>"
                    "<text x=\"%.1f\" y=\"%.1f\">%s</text>\n", d->id, d->samples_per_second, x,
                    y, color(i), d->id, x + 10, y - 8, d->id);
    }
    text_printf(t, "</svg>\n");
}

/* Each measured step's time per device, in order: warm-up effects and
 * outliers show as the line's shape. */
static void latency_plot(core_text *t, const porta_report *r) {
    svg_open(t, "latency", "Latency of each measured step");
    double max_y = 0;
    int max_steps = 1;
    for (int i = 0; i < r->count; i++) {
        const porta_report_device *d = &r->devices[i];
        if (d->steps > max_steps) max_steps = d->steps;
        for (int s = 0; s < d->steps; s++)
            if (d->step_seconds[s] * 1e3 > max_y) max_y = d->step_seconds[s] * 1e3;
    }
    max_y = max_y > 0 ? max_y * 1.1 : 1;
    y_axis(t, max_y, "ms");
    text_printf(t, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">step</text>\n",
                (LEFT + WIDTH - RIGHT) / 2, HEIGHT - BOTTOM + 40);
    double span = (WIDTH - LEFT - RIGHT) / (double)(max_steps > 1 ? max_steps - 1 : 1);
    for (int i = 0; i < r->count; i++) {
        const porta_report_device *d = &r->devices[i];
        if (!d->steps) continue;
        text_printf(t, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"",
                    color(i));
        for (int s = 0; s < d->steps; s++)
            text_printf(t, "%.1f,%.1f ", LEFT + s * span,
                        HEIGHT - BOTTOM - d->step_seconds[s] * 1e3 / max_y * (HEIGHT - TOP - BOTTOM));
        text_printf(t, "\"/>\n");
        for (int s = 0; s < d->steps; s++)
            text_printf(t, "<circle class=\"point\" data-device=\"%s\" data-value=\"%.6g\" "
                        "cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>\n", d->id,
                        d->step_seconds[s] * 1e3, LEFT + s * span,
                        HEIGHT - BOTTOM - d->step_seconds[s] * 1e3 / max_y * (HEIGHT - TOP - BOTTOM),
                        color(i));
        text_printf(t, "<text x=\"%d\" y=\"%d\" fill=\"%s\">%s</text>\n", WIDTH - RIGHT - 90,
                    TOP + 14 * (i + 1), color(i), d->id);
    }
    text_printf(t, "</svg>\n");
}

static void table_cell(core_text *t, double value, const char *fmt, const char *missing) {
    text_printf(t, "<td>");
    if (isfinite(value)) text_printf(t, fmt, value);
    else text_html(t, missing);
    text_printf(t, "</td>");
}

static void summary_table(core_text *t, const porta_report *r) {
    text_printf(t, "<table id=\"summary\"><tr><th class=\"text\">device</th><th class=\"text\">"
                "backend</th><th>samples/s</th><th>p50 ms</th><th>p99 ms</th><th>peak memory"
                "</th><th>J/step</th><th>cost per 1M samples</th><th class=\"text\">name</th>"
                "</tr>\n");
    for (int i = 0; i < r->count; i++) {
        const porta_report_device *d = &r->devices[i];
        text_printf(t, "<tr><td class=\"text\">%s</td><td class=\"text\">", d->id);
        text_html(t, d->backend);
        text_printf(t, "</td>");
        if (d->error[0]) {
            text_printf(t, "<td colspan=\"6\" class=\"text\">failed: ");
            text_html(t, d->error);
            text_printf(t, "</td>");
        } else {
            table_cell(t, d->samples_per_second, "%.1f", "-");
            table_cell(t, d->latency_p50_ms, "%.2f", "-");
            table_cell(t, d->latency_p99_ms, "%.2f", "-");
            table_cell(t, d->peak_memory_bytes >= 0 ? d->peak_memory_bytes / 1048576.0 : NAN,
                       "%.1f MiB", "-");
            table_cell(t, d->energy_measured ? d->joules_per_step : NAN, "%.4g",
                       "not measurable");
            table_cell(t, d->cost_known ? d->cost_per_million_samples : NAN, "%.4g",
                       "no price");
        }
        text_printf(t, "<td class=\"text\">");
        text_html(t, d->name);
        text_printf(t, "</td></tr>\n");
    }
    text_printf(t, "</table>\n<ul class=\"note\">\n");
    for (int i = 0; i < r->count; i++) {
        const porta_report_device *d = &r->devices[i];
        text_printf(t, "<li>%s energy: %s", d->id, d->energy_measured ? "" : "not measurable: ");
        text_html(t, d->energy_note);
        text_printf(t, "; cost: ");
        text_html(t, d->cost_note[0] ? d->cost_note : "no price file given");
        text_printf(t, "</li>\n");
    }
    text_printf(t, "</ul>\n");
}

porta_status *porta_report_html(const porta_report *r, char **out) {
    core_text t = {0};
    text_printf(&t, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                "<title>Porta comparison</title><style>%s</style></head><body>\n"
                "<h1>Porta comparison</h1>\n<p>workload: ", style);
    text_html(&t, r->workload);
    text_printf(&t, "</p>\n");
    summary_table(&t, r);
    double values[r->count ? r->count : 1];
    const char *missing[r->count ? r->count : 1];
    for (int i = 0; i < r->count; i++) {
        values[i] = r->devices[i].error[0] ? NAN : r->devices[i].samples_per_second;
        missing[i] = r->devices[i].error[0] ? "failed" : "not measured";
    }
    bar_plot(&t, r, "throughput", "Throughput", "samples/s", values, missing);
    cost_plot(&t, r);
    for (int i = 0; i < r->count; i++) {
        values[i] = r->devices[i].energy_measured ? r->devices[i].joules_per_step : NAN;
        missing[i] = "not measurable";
    }
    bar_plot(&t, r, "energy", "Energy per step", "J/step", values, missing);
    latency_plot(&t, r);
    text_printf(&t, "</body></html>\n");
    return text_take(&t, "comparison HTML", out);
}
