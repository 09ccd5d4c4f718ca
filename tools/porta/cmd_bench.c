/* porta bench MODEL --devices all: latency (p50, p99), throughput and peak
 * memory of a model on each device, as a table and optionally JSON. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "porta_io.h"

/* Returns the status of a failed call. */
#define PORTA_CLI_TRY(expr)                    \
    do {                                       \
        porta_status *cli_try_status_ = (expr); \
        if (cli_try_status_) return cli_try_status_; \
    } while (0)

typedef struct bench_options {
    const char *model_path, *devices, *json, *input;
    int iterations, warmup;
    cli_size sizes[16];
    int size_count;
} bench_options;

typedef struct bench_result {
    int index;
    char backend[32], name[128];
    double p50_ms, p99_ms, mean_ms, runs_per_s, samples_per_s;
    double peak_mib;
} bench_result;

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Times o->iterations runs after o->warmup untimed ones (which also load
 * the weights onto the device and build its kernels). */
static porta_status *bench_device(const bench_options *o, porta_model *model,
                                  porta_device *device, porta_tensor **inputs,
                                  porta_tensor **outputs, double *times, int64_t batch,
                                  bench_result *r) {
    porta_device_info info;
    PORTA_CLI_TRY(porta_device_info_get(device, &info));
    r->index = info.index;
    snprintf(r->backend, sizeof r->backend, "%s", info.backend);
    snprintf(r->name, sizeof r->name, "%s", info.name);
    for (int i = 0; i < o->warmup; i++) PORTA_CLI_TRY(cli_run_once(model, device, inputs, outputs));
    porta_memory_reset_peak();
    uint64_t base = porta_memory_allocated();
    for (int i = 0; i < o->iterations; i++) {
        double start = cli_now_seconds();
        PORTA_CLI_TRY(cli_run_once(model, device, inputs, outputs));
        times[i] = cli_now_seconds() - start;
    }
    r->peak_mib = (double)(porta_memory_peak() - base) / (1 << 20);
    double sum = 0;
    for (int i = 0; i < o->iterations; i++) sum += times[i];
    qsort(times, (size_t)o->iterations, sizeof *times, compare_doubles);
    int last = o->iterations - 1;
    r->p50_ms = 1e3 * times[(int)lround(0.50 * last)];
    r->p99_ms = 1e3 * times[(int)lround(0.99 * last)];
    r->mean_ms = 1e3 * sum / o->iterations;
    r->runs_per_s = o->iterations / sum;
    r->samples_per_s = r->runs_per_s * (double)batch;
    return NULL;
}

/* s as a JSON string: a path may hold quotes, backslashes or controls. */
static void put_json_string(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

/* The JSON is printed into memory, then written as one file. */
static int write_json(const bench_options *o, const bench_result *results, int count,
                      int64_t batch) {
    char *text = NULL;
    size_t length = 0;
    FILE *f = open_memstream(&text, &length);
    if (!f) {
        fprintf(stderr, "porta bench: out of memory\n");
        return 1;
    }
    fputs("{\"model\": ", f);
    put_json_string(f, o->model_path);
    fprintf(f, ", \"iterations\": %d, \"warmup\": %d, \"batch\": %lld, \"devices\": [",
            o->iterations, o->warmup, (long long)batch);
    for (int i = 0; i < count; i++) {
        const bench_result *r = &results[i];
        fprintf(f, "%s\n  {\"device\": \"porta:%d\", \"backend\": ", i ? "," : "", r->index);
        put_json_string(f, r->backend);
        fprintf(f,
                ", \"p50_ms\": %.4f, \"p99_ms\": %.4f, \"mean_ms\": %.4f, \"runs_per_s\": %.3f, "
                "\"samples_per_s\": %.3f, \"peak_memory_mib\": %.3f}",
                r->p50_ms, r->p99_ms, r->mean_ms, r->runs_per_s, r->samples_per_s, r->peak_mib);
    }
    fprintf(f, "\n]}\n");
    bool printed = !ferror(f);
    if (fclose(f) || !printed) {
        free(text);
        fprintf(stderr, "porta bench: out of memory\n");
        return 1;
    }
    porta_status *status = porta_file_write(o->json, text, length);
    free(text);
    return status ? cli_fail("bench", status) : 0;
}

static int parse_options(int argc, char **argv, bench_options *o) {
    *o = (bench_options){.devices = "porta:0", .iterations = 20, .warmup = 3};
    for (int a = 1; a < argc; a++) {
        const char *arg = argv[a];
        bool takes_value = !strcmp(arg, "--devices") || !strcmp(arg, "--json") ||
                           !strcmp(arg, "--iterations") || !strcmp(arg, "--warmup") ||
                           !strcmp(arg, "--input") || !strcmp(arg, "--size");
        if (takes_value && a + 1 >= argc) return cli_usage("bench", "%s needs a value", arg);
        const char *value = takes_value ? argv[++a] : NULL;
        if (!strcmp(arg, "--devices")) o->devices = value;
        else if (!strcmp(arg, "--json")) o->json = value;
        else if (!strcmp(arg, "--input")) o->input = value;
        else if (!strcmp(arg, "--iterations") || !strcmp(arg, "--warmup")) {
            bool iterations = !strcmp(arg, "--iterations");
            int code = cli_count("bench", arg, value, iterations ? 1 : 0,
                                 iterations ? &o->iterations : &o->warmup);
            if (code) return code;
        } else if (!strcmp(arg, "--size")) {
            if (o->size_count == 16) return cli_usage("bench", "at most 16 --size options");
            int code = cli_parse_size("bench", value, &o->sizes[o->size_count++]);
            if (code) return code;
        } else if (arg[0] == '-' || o->model_path) {
            return cli_usage("bench", "unexpected argument '%s'", arg);
        } else {
            o->model_path = arg;
        }
    }
    return o->model_path ? 0 : cli_usage("bench", "missing MODEL");
}

int cmd_bench(int argc, char **argv) {
    bench_options o;
    int code = parse_options(argc, argv, &o);
    if (code) return code;
    porta_device *devices[CLI_MAX_DEVICES];
    int device_count;
    if ((code = cli_devices("bench", o.devices, devices, &device_count))) return code;
    porta_model *model = NULL;
    porta_status *status = porta_model_load(o.model_path, &model);
    if (status) return cli_fail("bench", status);
    if ((code = cli_check_sizes("bench", model, o.sizes, o.size_count))) {
        porta_model_free(model);
        return code;
    }
    int n_in = porta_model_input_count(model), n_out = porta_model_output_count(model);
    porta_tensor **inputs = calloc((size_t)n_in + 1, sizeof *inputs);
    porta_tensor **outputs = calloc((size_t)n_out + 1, sizeof *outputs);
    double *times = malloc((size_t)o.iterations * sizeof *times);
    bench_result results[CLI_MAX_DEVICES];
    int64_t batch = 1;
    if (!inputs || !outputs || !times) {
        fprintf(stderr, "porta bench: out of memory\n");
        code = 1;
    } else if (o.input) {
        code = cli_read_inputs("bench", model, o.input, inputs);
        porta_model_input_info info;
        if (!code && n_in && !porta_model_input_info_get(model, 0, &info) &&
            porta_tensor_rank(inputs[0]))
            batch = porta_tensor_sizes(inputs[0])[0];
    } else if ((status = cli_random_inputs(model, o.sizes, o.size_count, inputs, &batch))) {
        code = cli_fail("bench", status);
    }
    int done = 0;
    for (int d = 0; !code && d < device_count; d++) {
        status = bench_device(&o, model, devices[d], inputs, outputs, times, batch, &results[d]);
        if (status) code = cli_fail("bench", status);
        else done++;
    }
    if (!code) {
        printf("model %s, batch %lld, %d iterations after %d warm-up\n", o.model_path,
               (long long)batch, o.iterations, o.warmup);
        printf("%-8s %-8s %10s %10s %10s %10s %12s %10s  %s\n", "device", "backend", "p50 ms",
               "p99 ms", "mean ms", "runs/s", "samples/s", "peak MiB", "name");
        for (int d = 0; d < done; d++) {
            const bench_result *r = &results[d];
            printf("porta:%-2d %-8s %10.3f %10.3f %10.3f %10.1f %12.1f %10.2f  %s\n", r->index,
                   r->backend, r->p50_ms, r->p99_ms, r->mean_ms, r->runs_per_s,
                   r->samples_per_s, r->peak_mib, r->name);
        }
        if (o.json) code = write_json(&o, results, done, batch);
    }
    if (inputs) cli_release(inputs, n_in);
    free(inputs);
    free(outputs);
    free(times);
    porta_model_free(model);
    return code;
}
