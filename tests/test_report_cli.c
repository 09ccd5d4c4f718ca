/* porta compare: a hand-written .porta model on every device, its table,
 * JSON (read back by the report's own reader), HTML, prices, energy read
 * through a synthetic powercap tree, and its usage errors. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "porta_io.h"
#include "porta_report.h"
#include "test.h"

/* relu(x @ w), x [4, 3], w [3, 2]. */
static const char *const GRAPH =
    "{\"version\": [1, 0],"
    " \"inputs\": [{\"name\": \"x\", \"dtype\": \"float32\", \"shape\": [4, 3]}],"
    " \"weights\": [{\"name\": \"w\", \"dtype\": \"float32\", \"shape\": [3, 2]}],"
    " \"nodes\": ["
    "  {\"op\": \"mm\", \"args\": [{\"tensor\": \"x\"}, {\"tensor\": \"w\"}], \"outputs\": [\"xw\"]},"
    "  {\"op\": \"relu\", \"args\": [{\"tensor\": \"xw\"}], \"outputs\": [\"r\"]}"
    " ],"
    " \"outputs\": [\"r\"]}";

static int run_cli(const char *args, char *output, size_t cap) {
    char command[4096];
    snprintf(command, sizeof command, "'%s' %s", PORTA_CLI_PATH, args);
    return test_run_command(command, output, cap);
}

static char *read_all(const char *path, size_t *length) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *text = malloc(1 << 20);
    *length = text ? fread(text, 1, (1 << 20) - 1, f) : 0;
    if (text) text[*length] = '\0';
    fclose(f);
    return text;
}

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    if (!f) {
        test_fail(__FILE__, __LINE__, "cannot write %s", path);
        return;
    }
    fputs(text, f);
    fclose(f);
}

TEST(test_report_cli_compares_a_model_on_every_device) {
    char dir[] = "/tmp/porta-compare-XXXXXX";
    if (!mkdtemp(dir)) {
        test_fail(__FILE__, __LINE__, "no temporary directory");
        return;
    }
    char model[256], prices[256], json[256], html[256], rapl[256], args[2048];
    snprintf(model, sizeof model, "%s/m.porta", dir);
    snprintf(prices, sizeof prices, "%s/prices.json", dir);
    snprintf(json, sizeof json, "%s/out.json", dir);
    snprintf(html, sizeof html, "%s/out.html", dir);
    snprintf(rapl, sizeof rapl, "%s/intel-rapl:0", dir);
    porta_tensor *w = NULL;
    const float w_data[6] = {1, -1, 0.5f, 2, -2, 0.25f};
    CHECK_OK(porta_tensor_from_host(test_cpu(), PORTA_F32, 2, (int64_t[]){3, 2}, w_data, &w));
    porta_safetensors_entry weights[1] = {{"w", w}};
    porta_safetensors_pair metadata[2] = {{"porta.format", "1.0"}, {"porta.graph", GRAPH}};
    porta_status *status = porta_safetensors_save(model, weights, 1, metadata, 2);
    porta_tensor_release(w);
    CHECK_OK(status);
    write_text(prices, "{\"currency\": \"EUR\", \"prices\": [{\"match\": {\"backend\": \"cpu\"}, "
                       "\"per_hour\": 0.5}]}");
    /* A powercap tree whose counter stands still: the CPU's reading is
     * real plumbing (source rapl) and exactly 0 J. */
    mkdir(rapl, 0755);
    char file[600];
    snprintf(file, sizeof file, "%s/energy_uj", rapl);
    write_text(file, "123456\n");
    snprintf(file, sizeof file, "%s/max_energy_range_uj", rapl);
    write_text(file, "262143328850\n");
    setenv("PORTA_POWERCAP_ROOT", dir, 1);
    test_cache_begin(); /* porta compare records its figures there */

    static char out[65536];
    snprintf(args, sizeof args, "compare '%s' --devices all --iterations 3 --warmup 1 "
             "--prices '%s' --json '%s' --html '%s'", model, prices, json, html);
    int code = run_cli(args, out, sizeof out);
    unsetenv("PORTA_POWERCAP_ROOT");
    CHECK_MSG(code == 0, "exit %d: %s", code, out);
    CHECK_MSG(strstr(out, "EUR/1M samples") && strstr(out, "porta:0  cpu"), "%s", out);

    size_t length = 0;
    char *text = read_all(json, &length);
    porta_report *report = NULL;
    if (!text) {
        test_fail(__FILE__, __LINE__, "no JSON written at %s", json);
        test_cache_end();
        test_remove_tree(dir);
        return;
    }
    status = porta_report_from_json(text, length, &report);
    free(text);
    if (status) {
        test_cache_end();
        test_remove_tree(dir);
    }
    CHECK_OK(status);
    CHECK(report->count == porta_device_count());
    for (int i = 0; i < report->count; i++) {
        const porta_report_device *d = &report->devices[i];
        CHECK_MSG(!d->error[0], "%s: %s", d->id, d->error);
        CHECK(d->steps == 3 && d->samples_per_step == 4 && d->samples_per_second > 0);
        CHECK(d->latency_p50_ms > 0 && d->latency_p99_ms >= d->latency_p50_ms);
        CHECK(d->peak_memory_bytes >= 0);
        /* The price rule matches the CPU only; others say so. */
        CHECK(d->cost_known == !strcmp(d->backend, "cpu"));
        if (!strcmp(d->backend, "cpu")) {
            CHECK_MSG(d->energy_measured && d->energy_joules == 0 &&
                          !strcmp(d->energy_source, "rapl"),
                      "%s energy: %s", d->id, d->energy_note);
            CHECK(fabs(d->cost_per_million_samples - 0.5 / 3600 / d->samples_per_second * 1e6) <
                  1e-12);
        } else {
            CHECK(strstr(d->cost_note, "no price rule matches") != NULL);
        }
    }
    porta_report_free(report);
    /* porta:auto: the one device chosen by measurement (stored in the
     * kernel cache's directory, here the test's). */
    snprintf(args, sizeof args, "compare '%s' --devices porta:auto:latency --iterations 2 "
             "--json '%s'", model, json);
    code = run_cli(args, out, sizeof out);
    CHECK_MSG(code == 0, "exit %d: %s", code, out);
    /* The comparison above was recorded under the model's path. */
    int chosen = -1;
    status = porta_select_device("throughput", model, NULL, false, &chosen);
    CHECK_MSG(!status && chosen >= 0, "%s", status ? porta_status_message(status) : "");
    porta_status_free(status);
    test_cache_end();
    text = read_all(json, &length);
    report = NULL;
    status = text ? porta_report_from_json(text, length, &report) : NULL;
    free(text);
    CHECK(!status && report && report->count == 1 && report->devices[0].steps == 2);
    porta_status_free(status);
    porta_report_free(report);
    text = read_all(html, &length);
    CHECK(text && strstr(text, "<svg class=\"plot\" id=\"throughput-cost\"") &&
          strstr(text, "<circle class=\"point\" data-device=\"porta:0\""));
    free(text);
    test_remove_tree(dir);
}

TEST(test_report_cli_usage_errors) {
    char out[4096];
    CHECK(run_cli("compare --help", out, sizeof out) == 0 && strstr(out, "usage: porta compare"));
    CHECK(run_cli("compare", out, sizeof out) == 2 && strstr(out, "missing MODEL"));
    CHECK(run_cli("compare m.porta --iterations 0", out, sizeof out) == 2 &&
          strstr(out, "--iterations expects a count of 1..1000000, got '0'"));
    CHECK(run_cli("compare m.porta --devices porta:99", out, sizeof out) == 2);
    CHECK_MSG(run_cli("compare m.porta --devices porta:auto:speed", out, sizeof out) == 2 &&
                  strstr(out, "objective must be one of throughput, latency, cost, energy"),
              "%s", out);
    CHECK_MSG(run_cli("compare /nonexistent/m.porta --prices /nonexistent/p.json", out,
                      sizeof out) == 1 && strstr(out, "cannot open /nonexistent/p.json"),
              "%s", out);
}
