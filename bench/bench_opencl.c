/* float32 GEMM on every porta device, against the CPU backend, in one run.
 *
 * Square GEMMs of 128, 256, 512 and 1024 and a [4096 x 512] @ [512 x 512]
 * run through porta_matmul on each device porta_device_count() reports,
 * from the same operands. A sample is the time of one or more calls plus
 * porta_device_synchronize (so a device that queues work is timed until it
 * has finished); the figure is the median of SAMPLES samples, taken in
 * rounds that visit every device in turn, so drifting machine load falls on
 * all alike, each after a short pause. Two warm-up calls come first: the first one's time (which
 * builds the device's kernels, into a fresh cache) is shown apart. The
 * result is each device's GFLOP/s and its ratio to the reference device,
 * the first one of backend "cpu" (porta:0); every device's output is
 * checked against the reference's. A backend with no device here (no
 * OpenCL library or platform, say) is reported as absent.
 *
 *   bench_opencl */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"
#include "porta.h"

#define MAX_DEVICES 16
#define SAMPLES 7
#define WARMUPS 2
/* Calls per sample: enough that one sample takes about this long, so
 * small shapes are not timed at the clock's and the scheduler's grain. */
#define MIN_SAMPLE_SECONDS 0.02
#define MAX_CALLS_PER_SAMPLE 200
/* Before each sample: idle worker threads (PoCL's, porta's pool) spin for
 * a while after their last task and would steal cycles from the next
 * device's sample. */
#define PAUSE_SECONDS 0.2
/* Relative to the reference output's largest magnitude: float32 sums of
 * up to 1024 products in another order differ far less than this. */
#define MAX_RELATIVE_ERROR 1e-4

typedef struct shape {
    int64_t m, n, k;
} shape;

static const shape shapes[] = {
    {128, 128, 128}, {256, 256, 256}, {512, 512, 512}, {1024, 1024, 1024}, {4096, 512, 512},
};

/* Backends this benchmark looks for; each is reported, present or absent. */
static const char *const expected_backends[] = {"cpu", "opencl"};

typedef struct device_run {
    porta_device *device;
    porta_device_info info;
    porta_tensor *a, *b;
    int calls_per_sample;
    double first_call, samples[SAMPLES];
    float *result; /* the output, row-major, for the comparison */
} device_run;

static void *allocate(size_t bytes) {
    void *p = malloc(bytes);
    if (!p) {
        fprintf(stderr, "out of host memory (%zu bytes)\n", bytes);
        exit(1);
    }
    return p;
}

static void fill_random(float *data, int64_t count, unsigned seed) {
    for (int64_t i = 0; i < count; i++) {
        seed = seed * 1664525u + 1013904223u;
        data[i] = (float)(seed >> 8) / (float)(1u << 24) * 2 - 1;
    }
}

static void pause_briefly(void) {
    struct timespec t = {0, (long)(PAUSE_SECONDS * 1e9)};
    nanosleep(&t, NULL);
}

/* Seconds for `calls` products, until the device has finished them. */
static double time_calls(device_run *run, int calls) {
    double start = now_seconds();
    for (int i = 0; i < calls; i++) {
        porta_tensor *out = NULL;
        die_on(porta_matmul(run->a, run->b, &out), "matmul");
        porta_tensor_release(out); /* the device keeps its memory until the product is done */
    }
    die_on(porta_device_synchronize(run->device), "synchronize");
    return now_seconds() - start;
}

static void read_result(device_run *run, const shape *s) {
    porta_tensor *out = NULL;
    die_on(porta_matmul(run->a, run->b, &out), "matmul");
    size_t bytes = (size_t)(s->m * s->n) * sizeof(float);
    run->result = allocate(bytes);
    die_on(porta_tensor_to_host(out, run->result, bytes), "to_host");
    porta_tensor_release(out);
}

/* Largest |x - reference| over the reference's largest |value|. */
static double relative_error(const float *x, const float *reference, int64_t count) {
    double worst = 0, scale = 0;
    for (int64_t i = 0; i < count; i++) {
        worst = fmax(worst, fabs((double)x[i] - (double)reference[i]));
        scale = fmax(scale, fabs((double)reference[i]));
    }
    return scale > 0 ? worst / scale : worst;
}

/* Returns whether every device's output matched the reference's. */
static bool bench_shape(device_run *runs, int count, int reference, const shape *s) {
    int64_t a_sizes[] = {s->m, s->k}, b_sizes[] = {s->k, s->n};
    float *a = allocate((size_t)(s->m * s->k) * sizeof *a);
    float *b = allocate((size_t)(s->k * s->n) * sizeof *b);
    fill_random(a, s->m * s->k, 1);
    fill_random(b, s->k * s->n, 2);
    for (int d = 0; d < count; d++) {
        device_run *run = &runs[d];
        die_on(porta_tensor_from_host(run->device, PORTA_F32, 2, a_sizes, a, &run->a), "a");
        die_on(porta_tensor_from_host(run->device, PORTA_F32, 2, b_sizes, b, &run->b), "b");
        die_on(porta_device_synchronize(run->device), "synchronize");
        run->first_call = time_calls(run, 1);
        double second = time_calls(run, WARMUPS - 1);
        double calls = ceil(MIN_SAMPLE_SECONDS / fmax(second, 1e-9));
        run->calls_per_sample = (int)fmin(fmax(calls, 1), MAX_CALLS_PER_SAMPLE);
    }
    free(a);
    free(b);
    for (int sample = 0; sample < SAMPLES; sample++)
        for (int d = 0; d < count; d++) {
            pause_briefly();
            runs[d].samples[sample] =
                time_calls(&runs[d], runs[d].calls_per_sample) / runs[d].calls_per_sample;
        }
    for (int d = 0; d < count; d++) read_result(&runs[d], s);

    char label[64];
    snprintf(label, sizeof label, "[%lld x %lld] @ [%lld x %lld]", (long long)s->m,
             (long long)s->k, (long long)s->k, (long long)s->n);
    double flop = 2.0 * (double)s->m * (double)s->n * (double)s->k;
    double reference_gflops = flop / median(runs[reference].samples, SAMPLES) * 1e-9;
    bool all_match = true;
    for (int d = 0; d < count; d++) {
        device_run *run = &runs[d];
        double seconds = median(run->samples, SAMPLES), gflops = flop / seconds * 1e-9;
        double error = relative_error(run->result, runs[reference].result, s->m * s->n);
        bool match = error <= MAX_RELATIVE_ERROR;
        all_match = all_match && match;
        printf("%-30s porta:%-3d %-8s %10.2f %9.3f %4d %9.2f %8.2f %9.1e%s\n", d ? "" : label,
               run->info.index, run->info.backend, run->first_call * 1e3, seconds * 1e3,
               run->calls_per_sample, gflops, gflops / reference_gflops, error,
               match ? "" : " MISMATCH");
    }
    for (int d = 0; d < count; d++) {
        porta_tensor_release(runs[d].a);
        porta_tensor_release(runs[d].b);
        free(runs[d].result);
        runs[d].result = NULL;
    }
    return all_match;
}

/* Lists the devices, and every expected backend that has none as absent. */
static int find_devices(device_run *runs, int *reference) {
    int count = 0, total = porta_device_count();
    *reference = -1;
    for (int index = 0; index < total && count < MAX_DEVICES; index++) {
        device_run *run = &runs[count];
        porta_status *status = porta_device_get(index, &run->device);
        if (!status) status = porta_device_info_get(run->device, &run->info);
        if (status) {
            printf("porta:%d absent: %s\n", index, porta_status_message(status));
            porta_status_free(status);
            continue;
        }
        printf("porta:%d  %-7s %-40s %3d compute units\n", run->info.index, run->info.backend,
               run->info.name, run->info.compute_units);
        if (*reference < 0 && strcmp(run->info.backend, "cpu") == 0) *reference = count;
        count++;
    }
    for (size_t e = 0; e < sizeof expected_backends / sizeof *expected_backends; e++) {
        bool present = false;
        for (int d = 0; d < count; d++)
            present = present || strcmp(runs[d].info.backend, expected_backends[e]) == 0;
        if (!present) printf("%-9s absent (no device of this backend here)\n",
                             expected_backends[e]);
    }
    return count;
}

int main(void) {
    char dir[256];
    snprintf(dir, sizeof dir, "%s/porta-bench-opencl-XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(dir)) return 1;
    setenv("PORTA_CACHE_DIR", dir, 1); /* the first call builds kernels: a cold cache */

    device_run runs[MAX_DEVICES] = {0};
    int reference;
    int count = find_devices(runs, &reference);
    int failed = 0;
    if (reference < 0) {
        printf("no device of backend cpu: nothing to compare with\n");
        failed = 1;
    } else {
        printf("\nfloat32 GEMM: median of %d samples after %d warm-up calls (the first one "
               "builds kernels, cold cache); ratio = GFLOP/s / porta:%d's (%s)\n",
               SAMPLES, WARMUPS, runs[reference].info.index, runs[reference].info.backend);
        printf("%-30s %-9s %-8s %10s %9s %4s %9s %8s %9s\n", "shape", "device", "backend",
               "1st ms", "ms/call", "x", "GFLOP/s", "ratio", "rel err");
        for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++)
            if (!bench_shape(runs, count, reference, &shapes[i])) failed = 1;
        printf("x: calls per sample; rel err: largest difference from porta:%d's output over "
               "its largest magnitude (MISMATCH above %.0e)\n",
               runs[reference].info.index, MAX_RELATIVE_ERROR);
    }
    char command[320];
    snprintf(command, sizeof command, "rm -rf '%s'", dir);
    if (system(command) != 0) failed = 1;
    return failed;
}
