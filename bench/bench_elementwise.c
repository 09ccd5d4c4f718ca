/* Elementwise throughput against the machine's memory bandwidth: a
 * STREAM-style triad in plain C on the same thread pool sets the bar, then
 * porta_binary add and mul on 16M floats into a preallocated out are
 * measured side by side (3 arrays moved each), plus a few other layouts and
 * the per-call overhead of a 1-element add. Medians of several runs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/cpu/threadpool.h"
#include "bench_util.h"
#include "runtime/tensor.h"

#define N (1 << 24)
#define REPS 15
#define THREADS 2

typedef struct triad {
    float *a;
    const float *b, *c;
    float s;
} triad;

static void triad_range(void *ctx, int64_t begin, int64_t end, int thread) {
    (void)thread;
    triad *t = ctx;
    float *restrict a = t->a;
    const float *restrict b = t->b, *restrict c = t->c;
    const float s = t->s;
    /* Fixed-size blocks: gcc vectorizes them at -O2, as it does porta's loops. */
    int64_t i = begin;
    for (; i + 32 <= end; i += 32)
        for (int64_t j = i; j < i + 32; j++) a[j] = b[j] + s * c[j];
    for (; i < end; i++) a[i] = b[i] + s * c[i];
}

static double time_one_triad(triad *t) {
    double start = now_seconds();
    cpu_parallel_for(N, N / THREADS, triad_range, t);
    return now_seconds() - start;
}

static double time_one_binary(porta_binary_op op, porta_tensor *a, porta_tensor *b,
                              porta_tensor *out) {
    double start = now_seconds();
    die_on(porta_binary(op, a, b, &out), porta_binary_op_name(op));
    return now_seconds() - start;
}

/* The triad, add and mul take turns within each repetition, so a machine
 * whose load drifts during the run weighs on all three alike. */
static void time_triad_add_mul(triad *t, porta_tensor *a, porta_tensor *b, porta_tensor *out,
                               double *triad_s, double *add_s, double *mul_s) {
    double triads[REPS], adds[REPS], muls[REPS];
    time_one_triad(t); /* first touch */
    time_one_binary(PORTA_ADD, a, b, out);
    for (int r = 0; r < REPS; r++) {
        triads[r] = time_one_triad(t);
        adds[r] = time_one_binary(PORTA_ADD, a, b, out);
        muls[r] = time_one_binary(PORTA_MUL, a, b, out);
    }
    *triad_s = median(triads, REPS);
    *add_s = median(adds, REPS);
    *mul_s = median(muls, REPS);
}

static double time_binary(porta_binary_op op, porta_tensor *a, porta_tensor *b, porta_tensor *out) {
    double samples[REPS];
    time_one_binary(op, a, b, out); /* warm-up */
    for (int r = 0; r < REPS; r++) samples[r] = time_one_binary(op, a, b, out);
    return median(samples, REPS);
}

static double time_unary(porta_unary_op op, porta_tensor *x, porta_tensor *out) {
    double samples[REPS];
    die_on(porta_unary(op, x, &out), "warm-up");
    for (int r = 0; r < REPS; r++) {
        double start = now_seconds();
        die_on(porta_unary(op, x, &out), porta_unary_op_name(op));
        samples[r] = now_seconds() - start;
    }
    return median(samples, REPS);
}

static double time_copy(porta_tensor *src, porta_tensor *dst) {
    double samples[REPS];
    die_on(porta_copy(src, dst), "warm-up");
    for (int r = 0; r < REPS; r++) {
        double start = now_seconds();
        die_on(porta_copy(src, dst), "copy");
        samples[r] = now_seconds() - start;
    }
    return median(samples, REPS);
}

/* Nanoseconds per call of a 1-element add into a preallocated out, or
 * allocating a new out each call. */
static double time_tiny_add(porta_device *cpu, bool preallocated) {
    const int calls = 200000;
    int64_t one = 1;
    float value = 1.0f;
    porta_tensor *a, *out;
    die_on(porta_tensor_from_host(cpu, PORTA_F32, 1, &one, &value, &a), "tiny");
    die_on(porta_tensor_empty(cpu, PORTA_F32, 1, &one, &out), "tiny out");
    double samples[5];
    for (int r = 0; r < 5; r++) {
        double start = now_seconds();
        for (int i = 0; i < calls; i++) {
            porta_tensor *dst = preallocated ? out : NULL;
            die_on(porta_binary(PORTA_ADD, a, a, &dst), "tiny add");
            if (!preallocated) porta_tensor_release(dst);
        }
        samples[r] = (now_seconds() - start) / calls * 1e9;
    }
    porta_tensor_release(a);
    porta_tensor_release(out);
    return median(samples, 5);
}

static void row(const char *name, double seconds, double bytes, double triad_gbs) {
    double gbs = bytes / seconds * 1e-9;
    printf("  %-38s %9.3f ms %9.1f GB/s %7.0f%%\n", name, seconds * 1e3, gbs,
           100.0 * gbs / triad_gbs);
}

int main(void) {
    die_on(porta_set_num_threads(THREADS), "threads");
    porta_device *cpu;
    die_on(porta_device_get(0, &cpu), "device");
    int64_t n = N, square[2] = {4096, 4096};
    porta_tensor *a, *b, *out, *half_a, *half_out, *scalar;
    die_on(porta_tensor_empty(cpu, PORTA_F32, 1, &n, &a), "a");
    die_on(porta_tensor_empty(cpu, PORTA_F32, 1, &n, &b), "b");
    die_on(porta_tensor_empty(cpu, PORTA_F32, 1, &n, &out), "out");
    die_on(porta_tensor_empty(cpu, PORTA_F16, 1, &n, &half_a), "half");
    die_on(porta_tensor_empty(cpu, PORTA_F16, 1, &n, &half_out), "half out");
    die_on(porta_tensor_empty(cpu, PORTA_F32, 0, NULL, &scalar), "scalar");
    die_on(porta_fill(a, 1.5), "fill");
    die_on(porta_fill(b, 2.5), "fill");
    die_on(porta_fill(out, 0), "fill");
    die_on(porta_fill(half_a, 0.5), "fill");
    die_on(porta_fill(half_out, 0), "fill");
    die_on(porta_fill(scalar, 3), "fill");

    /* The triad runs on the arrays the porta tensors own, so both touch
     * the same pages. */
    triad t = {(float *)(void *)core_tensor_data(out), (const float *)(void *)core_tensor_data(a),
               (const float *)(void *)core_tensor_data(b), 3.0f};
    double triad_s, add_s, mul_s;
    time_triad_add_mul(&t, a, b, out, &triad_s, &add_s, &mul_s);
    double moved = 3.0 * 4.0 * N, triad_gbs = moved / triad_s * 1e-9;

    porta_tensor *transposed, *square_out;
    int64_t t_sizes[2] = {4096, 4096}, t_strides[2] = {1, 4096};
    die_on(porta_tensor_view(porta_tensor_buffer(a), PORTA_F32, 2, t_sizes, t_strides, 0, &transposed),
           "transposed");
    die_on(porta_tensor_empty(cpu, PORTA_F32, 2, square, &square_out), "square out");

    printf("elementwise on %d float32 elements (%d MiB per array), %d threads, median of %d\n",
           N, N * 4 >> 20, THREADS, REPS);
    printf("  %-38s %12s %14s %8s\n", "kernel", "time", "bandwidth", "of triad");
    row("triad a = b + s*c (plain C, pool)", triad_s, moved, triad_gbs);
    row("porta add f32 (out given)", add_s, moved, triad_gbs);
    row("porta mul f32 (out given)", mul_s, moved, triad_gbs);
    row("porta add f32 + rank-0 scalar", time_binary(PORTA_ADD, a, scalar, out), 2.0 * 4 * N, triad_gbs);
    row("porta add f32, transposed input", time_binary(PORTA_ADD, transposed, transposed, square_out),
        2.0 * 4 * N, triad_gbs);
    row("porta exp f32", time_unary(PORTA_EXP, a, out), 2.0 * 4 * N, triad_gbs);
    row("porta add f16", time_binary(PORTA_ADD, half_a, half_a, half_out), 2.0 * 2 * N, triad_gbs);
    row("porta copy f32 -> f16", time_copy(a, half_out), 6.0 * N, triad_gbs);
    printf("  (bandwidth counts bytes of distinct arrays read and written)\n");
    printf("1-element add: %.0f ns per call into a given out, %.0f ns allocating the out\n",
           time_tiny_add(cpu, true), time_tiny_add(cpu, false));

    porta_tensor_release(transposed);
    porta_tensor_release(square_out);
    porta_tensor_release(a);
    porta_tensor_release(b);
    porta_tensor_release(out);
    porta_tensor_release(half_a);
    porta_tensor_release(half_out);
    porta_tensor_release(scalar);
    return 0;
}
