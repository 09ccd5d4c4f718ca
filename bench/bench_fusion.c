/* Fused against eager execution of the same primitives, in one run:
 * an elementwise chain feeding a row sum ((a*b+1).relu().sum(1)*2 on
 * [64, 8192]), a row softmax on [4096, 1024], a layer-norm-like
 * normalization on [4096, 1024], and Linear + bias + relu ([512, 1024] @
 * [1024, 1024]). Each is timed as median of several runs after a warm-up
 * (which compiles the fused kernels); the ratio eager/fused is the speedup.
 * Kernels compile into a fresh cache directory under $TMPDIR. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"
#include "porta.h"

#define REPS 11

typedef struct inputs {
    porta_tensor *a, *b, *x, *w, *bias, *one, *zero, *two, *eps;
} inputs;

static porta_tensor *random_tensor(porta_device *device, int rank, const int64_t *sizes,
                                   unsigned seed) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= sizes[i];
    float *host = malloc((size_t)n * sizeof *host);
    for (int64_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        host[i] = (float)(seed >> 8) / (float)(1u << 24) * 2 - 1;
    }
    porta_tensor *t;
    die_on(porta_tensor_from_host(device, PORTA_F32, rank, sizes, host, &t), "from_host");
    free(host);
    return t;
}

static porta_tensor *scalar(porta_device *device, double value) {
    porta_tensor *t;
    die_on(porta_tensor_full(device, PORTA_F32, 0, NULL, value, &t), "full");
    return t;
}

/* Each workload issues its primitives and releases its intermediates; the
 * result is released by the caller after the flush. */
static porta_tensor *sum_of_relu(const inputs *in) {
    porta_tensor *ab = NULL, *plus = NULL, *relu = NULL, *sum = NULL, *out = NULL;
    die_on(porta_binary(PORTA_MUL, in->a, in->b, &ab), "mul");
    die_on(porta_binary(PORTA_ADD, ab, in->one, &plus), "add");
    die_on(porta_binary(PORTA_MAXIMUM, plus, in->zero, &relu), "relu");
    die_on(porta_reduce(PORTA_REDUCE_SUM, relu, (const int[]){1}, 1, false, &sum), "sum");
    die_on(porta_binary(PORTA_MUL, sum, in->two, &out), "mul");
    porta_tensor *dead[] = {ab, plus, relu, sum};
    for (int i = 0; i < 4; i++) porta_tensor_release(dead[i]);
    return out;
}

static porta_tensor *softmax(const inputs *in) {
    porta_tensor *max = NULL, *shifted = NULL, *e = NULL, *sum = NULL, *out = NULL;
    const int axis[] = {1};
    die_on(porta_reduce(PORTA_REDUCE_MAX, in->x, axis, 1, true, &max), "max");
    die_on(porta_binary(PORTA_SUB, in->x, max, &shifted), "sub");
    die_on(porta_unary(PORTA_EXP, shifted, &e), "exp");
    die_on(porta_reduce(PORTA_REDUCE_SUM, e, axis, 1, true, &sum), "sum");
    die_on(porta_binary(PORTA_DIV, e, sum, &out), "div");
    porta_tensor *dead[] = {max, shifted, e, sum};
    for (int i = 0; i < 4; i++) porta_tensor_release(dead[i]);
    return out;
}

/* (x - mean) / sqrt(var + eps) over rows. */
static porta_tensor *normalize(const inputs *in) {
    porta_tensor *sum = NULL, *mean = NULL, *centered = NULL, *square = NULL, *sq_sum = NULL;
    porta_tensor *var = NULL, *var_eps = NULL, *rstd = NULL, *out = NULL;
    const int axis[] = {1};
    porta_tensor *n = scalar(porta_tensor_device(in->x), 1.0 / 1024);
    die_on(porta_reduce(PORTA_REDUCE_SUM, in->x, axis, 1, true, &sum), "sum");
    die_on(porta_binary(PORTA_MUL, sum, n, &mean), "mean");
    die_on(porta_binary(PORTA_SUB, in->x, mean, &centered), "sub");
    die_on(porta_binary(PORTA_MUL, centered, centered, &square), "square");
    die_on(porta_reduce(PORTA_REDUCE_SUM, square, axis, 1, true, &sq_sum), "sum");
    die_on(porta_binary(PORTA_MUL, sq_sum, n, &var), "var");
    die_on(porta_binary(PORTA_ADD, var, in->eps, &var_eps), "eps");
    die_on(porta_unary(PORTA_RSQRT, var_eps, &rstd), "rsqrt");
    die_on(porta_binary(PORTA_MUL, centered, rstd, &out), "scale");
    porta_tensor *dead[] = {n, sum, mean, centered, square, sq_sum, var, var_eps, rstd};
    for (int i = 0; i < 9; i++) porta_tensor_release(dead[i]);
    return out;
}

static porta_tensor *linear_relu(const inputs *in) {
    porta_tensor *mm = NULL, *biased = NULL, *out = NULL;
    die_on(porta_matmul(in->a, in->w, &mm), "matmul");
    die_on(porta_binary(PORTA_ADD, mm, in->bias, &biased), "bias");
    die_on(porta_binary(PORTA_MAXIMUM, biased, in->zero, &out), "relu");
    porta_tensor_release(mm);
    porta_tensor_release(biased);
    return out;
}

static double time_workload(porta_tensor *(*workload)(const inputs *), const inputs *in,
                            bool fused) {
    double samples[REPS];
    die_on(porta_set_fusion(fused), "set_fusion");
    for (int rep = -2; rep < REPS; rep++) { /* two warm-ups: compile, then cache */
        double start = now_seconds();
        porta_tensor *out = workload(in);
        die_on(porta_flush(), "flush");
        if (rep >= 0) samples[rep] = now_seconds() - start;
        porta_tensor_release(out);
    }
    die_on(porta_set_fusion(false), "set_fusion");
    return median(samples, REPS);
}

int main(void) {
    char dir[256];
    snprintf(dir, sizeof dir, "%s/porta-bench-fusion-XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(dir)) return 1;
    setenv("PORTA_CACHE_DIR", dir, 1);
    porta_device *device;
    die_on(porta_device_get(0, &device), "device");
    inputs in = {
        .a = random_tensor(device, 2, (const int64_t[]){64, 8192}, 1),
        .b = random_tensor(device, 2, (const int64_t[]){64, 8192}, 2),
        .x = random_tensor(device, 2, (const int64_t[]){4096, 1024}, 3),
        .one = scalar(device, 1), .zero = scalar(device, 0), .two = scalar(device, 2),
        .eps = scalar(device, 1e-5),
    };
    struct {
        const char *name;
        porta_tensor *(*fn)(const inputs *);
    } workloads[] = {{"(a*b+1).relu().sum(1)*2 [64,8192]", sum_of_relu},
                     {"softmax rows [4096,1024]", softmax},
                     {"normalize rows [4096,1024]", normalize},
                     {"linear+bias+relu [64,8192]@[8192,512]", linear_relu}};
    in.w = random_tensor(device, 2, (const int64_t[]){8192, 512}, 4);
    in.bias = random_tensor(device, 1, (const int64_t[]){512}, 5);
    printf("%-40s %12s %12s %8s\n", "workload", "eager ms", "fused ms", "speedup");
    for (size_t i = 0; i < sizeof workloads / sizeof *workloads; i++) {
        double eager = time_workload(workloads[i].fn, &in, false);
        double fused = time_workload(workloads[i].fn, &in, true);
        printf("%-40s %12.3f %12.3f %7.2fx\n", workloads[i].name, eager * 1e3, fused * 1e3,
               eager / fused);
    }
    porta_tensor *all[] = {in.a, in.b, in.x, in.w, in.bias, in.one, in.zero, in.two, in.eps};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) porta_tensor_release(all[i]);
    char command[320];
    snprintf(command, sizeof command, "rm -rf '%s'", dir);
    return system(command) == 0 ? 0 : 1;
}
