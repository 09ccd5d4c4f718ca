/* The comparison report: derived figures, prices, JSON round trip and
 * errors, the terminal table and the HTML page's plots. */
#include <stdlib.h>
#include <string.h>

#include "porta_report.h"
#include "test.h"

static int count_of(const char *text, const char *needle) {
    int n = 0;
    for (const char *p = strstr(text, needle); p; p = strstr(p + 1, needle)) n++;
    return n;
}

/* Two devices: one with a RAPL reading, one without. */
static porta_report *sample_report(void) {
    porta_report *report = NULL;
    porta_report_device *d;
    porta_status *status = porta_report_new("demo <cnn> & \"friends\"", &report);
    if (!status) status = porta_report_add_device(report, "porta:0", "cpu", "Test CPU", &d);
    if (!status) {
        const double seconds[] = {0.010, 0.030, 0.020, 0.040, 0.100};
        status = porta_report_set_steps(d, seconds, 5, 64);
        d->peak_memory_bytes = 3 << 20;
        d->energy_measured = true;
        d->energy_joules = 10.0;
        strcpy(d->energy_source, "rapl");
        strcpy(d->energy_note, "RAPL package counter, shared");
    }
    if (!status) status = porta_report_add_device(report, "porta:1", "opencl", "pthread-Test", &d);
    if (!status) {
        const double seconds[] = {0.5, 0.5};
        status = porta_report_set_steps(d, seconds, 2, 64);
        strcpy(d->energy_note, "no energy counter for the OpenCL device");
    }
    if (status) {
        test_fail(__FILE__, __LINE__, "%s", porta_status_message(status));
        porta_status_free(status);
        porta_report_free(report);
        return NULL;
    }
    porta_report_derive(report);
    return report;
}

TEST(test_report_derived_figures) {
    const double values[] = {4, 1, 3, 2};
    CHECK(fabs(porta_report_percentile(values, 4, 50) - 2.5) < 1e-12);
    CHECK(fabs(porta_report_percentile(values, 4, 100) - 4) < 1e-12);
    CHECK(fabs(porta_report_percentile(values, 4, 0) - 1) < 1e-12);
    CHECK(isnan(porta_report_percentile(values, 0, 50)));
    porta_report *report = sample_report();
    if (!report) return;
    const porta_report_device *cpu = &report->devices[0], *cl = &report->devices[1];
    CHECK_MSG(fabs(cpu->samples_per_second - 5 * 64 / 0.2) < 1e-9, "%g", cpu->samples_per_second);
    CHECK(fabs(cpu->latency_p50_ms - 30) < 1e-9);
    CHECK_MSG(fabs(cpu->latency_p99_ms - (40 + 0.96 * 60)) < 1e-9, "%g", cpu->latency_p99_ms);
    CHECK(fabs(cpu->joules_per_step - 2.0) < 1e-12);
    CHECK(isnan(cl->joules_per_step) && fabs(cl->samples_per_second - 128) < 1e-9);
    porta_report_device *d;
    CHECK_ERR(porta_report_add_device(report, "porta:2", "x", "y", &d) ? NULL
                  : porta_report_set_steps(d, (double[]){-1}, 1, 1),
              PORTA_ERR_INVALID_ARGUMENT, "step 0 took -1 s");
    porta_report_free(report);
}

TEST(test_report_prices) {
    porta_report *report = sample_report();
    if (!report) return;
    const char *prices = "{\"currency\": \"EUR\", \"prices\": ["
                         "{\"match\": {\"backend\": \"opencl\"}, \"per_hour\": 0.72, \"label\": \"gpu\"},"
                         "{\"match\": {\"name\": \"test cpu\"}, \"per_hour\": 3.6}]}";
    CHECK_OK(porta_report_apply_prices(report, prices, strlen(prices)));
    CHECK(!strcmp(report->currency, "EUR"));
    const porta_report_device *cpu = &report->devices[0], *cl = &report->devices[1];
    CHECK(cpu->cost_known && cl->cost_known);
    /* 3.6/hour = 0.001/s at 1600 samples/s: 0.625 per million samples. */
    CHECK_MSG(fabs(cpu->cost_per_million_samples - 0.625) < 1e-9, "%g",
              cpu->cost_per_million_samples);
    CHECK(fabs(cl->cost_per_million_samples - 0.72 / 3600 / 128 * 1e6) < 1e-9);
    CHECK_MSG(strstr(cl->cost_note, "gpu 0.72 EUR/hour (rule 1)"), "%s", cl->cost_note);
    const char *none = "{\"currency\": \"USD\", \"prices\": [{\"match\": {\"device\": \"porta:9\"},"
                       " \"per_hour\": 1}]}";
    CHECK_OK(porta_report_apply_prices(report, none, strlen(none)));
    CHECK(!report->devices[0].cost_known &&
          strstr(report->devices[0].cost_note, "no price rule matches"));
    const char *bad[][2] = {
        {"[]", "expected an object"},
        {"{\"prices\": []}", "\"currency\""},
        {"{\"currency\": \"USD\", \"prices\": {}}", "\"prices\" must be an array"},
        {"{\"currency\": \"USD\", \"prices\": [{\"per_hour\": -1}]}", "\"per_hour\", a number >= 0"},
        {"{\"currency\": \"USD\", \"prices\": [{\"per_hour\": 1, \"match\": {\"gpu\": \"x\"}}]}",
         "unknown \"match\" key \"gpu\""},
        {"{\"currency\": \"USD\", \"prices\": [{\"per_hour\": 1, \"cost\": 2}]}", "rules hold only"},
        {"{\"currency\": \"USD\", ", NULL},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK_ERR(porta_report_apply_prices(report, bad[i][0], strlen(bad[i][0])),
                  PORTA_ERR_INVALID_ARGUMENT, bad[i][1]);
    porta_report_free(report);
}

TEST(test_report_json_round_trip) {
    porta_report *report = sample_report();
    if (!report) return;
    const char *prices = "{\"currency\": \"USD\", \"prices\": [{\"match\": {\"backend\": \"cpu\"},"
                         " \"per_hour\": 3.6}]}";
    CHECK_OK(porta_report_apply_prices(report, prices, strlen(prices)));
    char *json = NULL, *again = NULL;
    porta_report *back = NULL;
    CHECK_OK(porta_report_to_json(report, &json));
    CHECK_MSG(strstr(json, "\"format\": \"porta-compare\", \"version\": 1") &&
                  strstr(json, "\"workload\": \"demo <cnn> & \\\"friends\\\"\"") &&
                  strstr(json, "\"unavailable\": \"no energy counter for the OpenCL device\""),
              "%s", json);
    porta_status *status = porta_report_from_json(json, strlen(json), &back);
    if (!status) status = porta_report_to_json(back, &again);
    CHECK_MSG(!status, "%s", status ? porta_status_message(status) : "");
    porta_status_free(status);
    if (again) CHECK_MSG(!strcmp(json, again), "first:\n%s\nsecond:\n%s", json, again);
    if (back) {
        CHECK(back->count == 2 && back->devices[0].steps == 5 &&
              back->devices[0].peak_memory_bytes == (3 << 20) && back->devices[0].energy_measured &&
              !back->devices[1].energy_measured && back->devices[0].cost_known &&
              !back->devices[1].cost_known);
        CHECK(fabs(back->devices[0].cost_per_million_samples - 0.625) < 1e-9);
    }
    free(json);
    free(again);
    porta_report_free(back);
    porta_report_free(report);
    const char *bad[][2] = {
        {"{\"format\": \"other\"}", "expected \"format\": \"porta-compare\""},
        {"{\"format\": \"porta-compare\", \"version\": 2, \"devices\": []}", "version 2"},
        {"{\"format\": \"porta-compare\", \"version\": 1, \"devices\": [{\"device\": \"porta:0\"}]}",
         "missing string \"backend\""},
        {"{\"format\": \"porta-compare\", \"version\": 1, \"devices\": [{\"device\": \"porta:0\", "
         "\"backend\": \"cpu\", \"step_seconds\": [0.1, \"x\"]}]}", "step times must be numbers"},
        {"{\"format\": \"porta-compare\", \"version\": 1, \"devices\": [{\"device\": \"porta:0\", "
         "\"backend\": \"cpu\", \"energy\": {\"joules\": -3, \"source\": \"rapl\"}}]}",
         "\"joules\" must be >= 0"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        porta_report *never = NULL;
        status = porta_report_from_json(bad[i][0], strlen(bad[i][0]), &never);
        CHECK_MSG(status && strstr(porta_status_message(status), bad[i][1]), "case %zu: %s", i,
                  status ? porta_status_message(status) : "accepted");
        porta_status_free(status);
    }
}

TEST(test_report_table_and_html) {
    porta_report *report = sample_report();
    if (!report) return;
    strcpy(report->devices[1].error, "");
    char *table = NULL, *html = NULL;
    CHECK_OK(porta_report_table(report, &table));
    CHECK_MSG(strstr(table, "1600.0") && strstr(table, "30.00") && strstr(table, "3.0 MiB") &&
                  strstr(table, "porta:1 energy: not measurable: no energy counter") &&
                  strstr(table, "porta:0 energy: RAPL package counter"),
              "%s", table);
    porta_status *status = porta_report_html(report, &html);
    CHECK_MSG(!status, "%s", status ? porta_status_message(status) : "");
    porta_status_free(status);
    if (html) {
        CHECK(count_of(html, "<svg class=\"plot\"") == 4);
        /* Throughput: two bars; energy: one bar, one "not measurable";
         * latency: one point per step; no prices: no cost points. */
        CHECK_MSG(count_of(html, "<rect class=\"bar\"") == 3, "%s", html);
        CHECK(count_of(html, "<circle class=\"point\"") == 7);
        CHECK(strstr(html, "no device has a price") != NULL);
        CHECK(strstr(html, "demo &lt;cnn&gt; &amp; &quot;friends&quot;") != NULL);
        /* Offline: no scripts, and no address but SVG's namespace name. */
        CHECK(!strstr(html, "<script"));
        CHECK(count_of(html, "http://") == count_of(html, "xmlns=\"http://www.w3.org/2000/svg\""));
        CHECK(!strstr(html, "https://") && !strstr(html, "src="));
    }
    free(table);
    free(html);
    porta_report_free(report);
}
