/* porta compare MODEL: the same model on every chosen device, reported side
 * by side with libporta's comparison report (src/report/): throughput,
 * latency p50/p99, peak memory, energy per run where the platform has a
 * counter (RAPL, NVML), cost per million samples from a price file; as a
 * table, JSON (docs/compare.md) and an offline HTML page. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "porta_report.h"
#include "porta_energy.h"
#include "porta_progress.h"
#include "cli.h"
#include "porta_io.h"


int porta_cmd_compare(int argc, char **argv);

typedef struct compare_options {
    const char *model_path, *devices, *prices, *json, *html, *input;
    int iterations, warmup;
} compare_options;

static int parse_options(int argc, char **argv, compare_options *o) {
    *o = (compare_options){.devices = "all", .iterations = 20, .warmup = 3};
    for (int a = 1; a < argc; a++) {
        const char *arg = argv[a];
        bool takes_value = !strcmp(arg, "--devices") || !strcmp(arg, "--prices") ||
                           !strcmp(arg, "--json") || !strcmp(arg, "--html") ||
                           !strcmp(arg, "--iterations") || !strcmp(arg, "--warmup") ||
                           !strcmp(arg, "--input");
        if (takes_value && a + 1 >= argc) return cli_usage("compare", "%s needs a value", arg);
        const char *value = takes_value ? argv[++a] : NULL;
        if (!strcmp(arg, "--devices")) o->devices = value;
        else if (!strcmp(arg, "--prices")) o->prices = value;
        else if (!strcmp(arg, "--json")) o->json = value;
        else if (!strcmp(arg, "--html")) o->html = value;
        else if (!strcmp(arg, "--input")) o->input = value;
        else if (!strcmp(arg, "--iterations") || !strcmp(arg, "--warmup")) {
            bool iterations = !strcmp(arg, "--iterations");
            int code = cli_count("compare", arg, value, iterations ? 1 : 0,
                                 iterations ? &o->iterations : &o->warmup);
            if (code) return code;
        } else if (arg[0] == '-' || o->model_path) {
            return cli_usage("compare", "unexpected argument '%s'", arg);
        } else {
            o->model_path = arg;
        }
    }
    return o->model_path ? 0 : cli_usage("compare", "missing MODEL");
}

/* Measures one device into a new report entry; a failure at run time is
 * the entry's error, not the command's. */
static porta_status *measure(const compare_options *o, porta_model *model, porta_device *device,
                             porta_tensor **inputs, porta_tensor **outputs, double *seconds,
                             int64_t batch, porta_report *report, porta_progress *progress) {
    porta_device_info info;
    PORTA_TRY(porta_device_info_get(device, &info));
    char id[32];
    snprintf(id, sizeof id, "porta:%d", info.index);
    porta_report_device *entry;
    PORTA_TRY(porta_report_add_device(report, id, info.backend, info.name, &entry));
    porta_status *failed = NULL;
    for (int i = 0; !failed && i < o->warmup; i++) {
        failed = cli_run_once(model, device, inputs, outputs);
        porta_progress_advance(progress, 1);
    }
    porta_energy_sample start, end;
    char why[PORTA_ENERGY_REASON_CAP];
    bool metered = false;
    if (!failed) {
        porta_memory_reset_peak();
        metered = porta_energy_read_device(&info, &start, why, sizeof why);
    }
    uint64_t base = porta_memory_allocated();
    for (int i = 0; !failed && i < o->iterations; i++) {
        double begin = cli_now_seconds();
        failed = cli_run_once(model, device, inputs, outputs);
        seconds[i] = cli_now_seconds() - begin;
        porta_progress_advance(progress, 1);
    }
    if (failed) {
        snprintf(entry->error, sizeof entry->error, "%s", porta_status_message(failed));
        porta_status_free(failed);
        return NULL;
    }
    entry->peak_memory_bytes = (int64_t)(porta_memory_peak() - base);
    if (metered &&
        porta_energy_read_device(&info, &end, why, sizeof why)) {
        double joules = porta_energy_joules(&start, &end);
        entry->energy_measured = joules >= 0;
        entry->energy_joules = joules;
        snprintf(entry->energy_source, sizeof entry->energy_source, "%s",
                 porta_energy_source_name(end.source));
        snprintf(entry->energy_note, sizeof entry->energy_note, "%s",
                 joules >= 0 ? porta_energy_source_note(end.source)
                             : "the counters changed during the run");
    } else {
        snprintf(entry->energy_note, sizeof entry->energy_note, "%s", why);
    }
    return porta_report_set_steps(entry, seconds, o->iterations, (double)batch);
}

static porta_status *read_file(const char *path, char **text, size_t *length) {
    FILE *f = fopen(path, "rb");
    if (!f) return porta_error(PORTA_ERR_IO, "cannot open %s", path);
    char *data = NULL;
    size_t used = 0, cap = 0;
    for (;;) {
        if (used == cap) {
            cap = cap ? 2 * cap : 4096;
            if (cap > ((size_t)1 << 24)) {
                free(data);
                fclose(f);
                return porta_error(PORTA_ERR_IO, "%s is larger than 16 MiB", path);
            }
            char *grown = realloc(data, cap);
            if (!grown) {
                free(data);
                fclose(f);
                return porta_error(PORTA_ERR_OUT_OF_MEMORY, "out of memory reading %s", path);
            }
            data = grown;
        }
        size_t got = fread(data + used, 1, cap - used, f);
        used += got;
        if (got == 0) break;
    }
    fclose(f);
    *text = data;
    *length = used;
    return NULL;
}

static porta_status *write_rendering(const char *path, porta_status *(*render)(
                                         const porta_report *, char **),
                                     const porta_report *report) {
    char *text = NULL;
    PORTA_TRY(render(report, &text));
    porta_status *status = NULL;
    if (path) status = porta_file_write(path, text, strlen(text));
    else if (fputs(text, stdout) < 0)
        status = porta_error(PORTA_ERR_IO, "cannot write stdout: %s", strerror(errno));
    free(text);
    return status;
}

static porta_status *compare(const compare_options *o, porta_model *model,
                             porta_device **devices, int device_count, porta_report *report,
                             int *code) {
    int n_in = porta_model_input_count(model), n_out = porta_model_output_count(model);
    porta_tensor **inputs = calloc((size_t)n_in + 1, sizeof *inputs);
    porta_tensor **outputs = calloc((size_t)n_out + 1, sizeof *outputs);
    double *seconds = malloc((size_t)o->iterations * sizeof *seconds);
    porta_status *status = NULL;
    int64_t batch = 1;
    if (!inputs || !outputs || !seconds) {
        status = porta_error(PORTA_ERR_OUT_OF_MEMORY, "out of memory");
    } else if (o->input) {
        *code = cli_read_inputs("compare", model, o->input, inputs);
        if (!*code && n_in && porta_tensor_rank(inputs[0])) batch = porta_tensor_sizes(inputs[0])[0];
    } else {
        status = cli_random_inputs(model, NULL, 0, inputs, &batch);
    }
    /* A line on a terminal while the runs go on (quiet when redirected). */
    porta_progress progress;
    porta_progress_begin(&progress, "comparing devices",
                         (int64_t)device_count * (o->warmup + o->iterations));
    for (int d = 0; !status && !*code && d < device_count; d++)
        status = measure(o, model, devices[d], inputs, outputs, seconds, batch, report, &progress);
    porta_progress_end(&progress);
    if (inputs) cli_release(inputs, n_in);
    free(inputs);
    free(outputs);
    free(seconds);
    return status;
}

int porta_cmd_compare(int argc, char **argv) {
    compare_options o;
    int code = parse_options(argc, argv, &o);
    if (code) return code;
    porta_device *devices[CLI_MAX_DEVICES];
    int device_count;
    if ((code = cli_devices("compare", o.devices, devices, &device_count))) return code;
    char *prices = NULL;
    size_t prices_length = 0;
    porta_model *model = NULL;
    porta_report *report = NULL;
    porta_status *status = NULL;
    if (o.prices) status = read_file(o.prices, &prices, &prices_length);
    if (!status) status = porta_model_load(o.model_path, &model);
    if (!status) status = porta_report_new(o.model_path, &report);
    if (!status) status = compare(&o, model, devices, device_count, report, &code);
    if (!status && !code) {
        porta_report_derive(report);
        if (prices) status = porta_report_apply_prices(report, prices, prices_length);
        if (status) status = porta_error_context(status, "in %s", o.prices);
    }
    if (!status && !code) status = write_rendering(NULL, porta_report_table, report);
    if (!status && !code && o.json) status = write_rendering(o.json, porta_report_to_json, report);
    if (!status && !code && o.html) status = write_rendering(o.html, porta_report_html, report);
    /* Kept for porta:auto and select_device(workload=MODEL); a cache that
     * cannot be written costs only the record. */
    if (!status && !code) {
        porta_status *unrecorded = porta_select_record(report);
        if (unrecorded)
            fprintf(stderr, "porta compare: not recorded for porta:auto: %s\n",
                    porta_status_message(unrecorded));
        porta_status_free(unrecorded);
    }
    if (status) code = cli_fail("compare", status);
    for (int d = 0; !code && report && d < report->count; d++)
        if (report->devices[d].error[0]) code = 1;
    porta_report_free(report);
    porta_model_free(model);
    free(prices);
    return code;
}
