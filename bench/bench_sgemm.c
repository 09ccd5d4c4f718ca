/* Measures cpu_sgemm against OpenBLAS's cblas_sgemm on row-major operands,
 * both with the same number of threads, and checks that they agree.
 *
 *   bench_sgemm              the standard shapes
 *   bench_sgemm 2048 8x4096x4096 ...   only these (N or MxNxK)
 *
 * Run it with OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset: they can make
 * OpenBLAS pick slower kernels than its own detection would. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "backends/cpu/gemm/gemm.h"
#include "backends/cpu/threadpool.h"

#ifdef PORTA_HAVE_OPENBLAS
/* Declared here rather than through <cblas.h>, which may be another BLAS's
 * header without openblas_set_num_threads. */
enum { CBLAS_ROW_MAJOR = 101, CBLAS_NO_TRANS = 111 };
void cblas_sgemm(int order, int trans_a, int trans_b, int m, int n, int k, float alpha,
                 const float *a, int lda, const float *b, int ldb, float beta, float *c, int ldc);
void openblas_set_num_threads(int threads);
#endif

typedef struct shape {
    int64_t m, n, k;
} shape;

static const shape standard_shapes[] = {
    {256, 256, 256},   {512, 512, 512},  {1024, 1024, 1024}, {2048, 2048, 2048},
    {4096, 4096, 4096}, {8, 4096, 4096}, {4096, 64, 4096},   {128, 128, 128},
};

/* Each library gets about this long per shape, in ROUNDS turns that
 * alternate with the other library, so that drifting machine load (other
 * work, frequency) hits both alike; the reported figure is the median over
 * all calls. */
#define SECONDS_PER_SHAPE 0.45
#define ROUNDS 3
#define MIN_CALLS_PER_ROUND 2
#define MAX_CALLS 3000

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

#ifdef PORTA_HAVE_OPENBLAS
static void pause_seconds(double seconds) {
    struct timespec t = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
    nanosleep(&t, NULL);
}
#endif

typedef struct operands {
    shape s;
    const float *a, *b;
    float *c;
} operands;

typedef void (*sgemm_fn)(const operands *ops);

static void run_porta(const operands *ops) {
    const shape *s = &ops->s;
    porta_status *status = cpu_sgemm(s->m, s->n, s->k, ops->a, s->k, 1, ops->b, s->n, 1, 0.0f,
                                     ops->c, s->n, 1);
    if (status) {
        fprintf(stderr, "cpu_sgemm failed: %s\n", porta_status_message(status));
        exit(1);
    }
}

#ifdef PORTA_HAVE_OPENBLAS
static void run_openblas(const operands *ops) {
    const shape *s = &ops->s;
    cblas_sgemm(CBLAS_ROW_MAJOR, CBLAS_NO_TRANS, CBLAS_NO_TRANS, (int)s->m, (int)s->n,
                (int)s->k, 1.0f, ops->a, (int)s->k, ops->b, (int)s->n, 0.0f, ops->c, (int)s->n);
}
#endif

static int compare_doubles(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* Call times of one library on one shape. */
typedef struct timings {
    double seconds[MAX_CALLS];
    int count;
    int calls_per_round; /* sized by the warm-up call */
} timings;

static void warm_up(sgemm_fn fn, const operands *ops, timings *t) {
    double start = now();
    fn(ops);
    double once = now() - start;
    int calls = (int)(SECONDS_PER_SHAPE / ROUNDS / (once > 1e-9 ? once : 1e-9));
    t->calls_per_round = calls < MIN_CALLS_PER_ROUND       ? MIN_CALLS_PER_ROUND
                         : calls > MAX_CALLS / ROUNDS ? MAX_CALLS / ROUNDS
                                                           : calls;
    t->count = 0;
}

static void run_round(sgemm_fn fn, const operands *ops, timings *t) {
    for (int r = 0; r < t->calls_per_round; r++) {
        double start = now();
        fn(ops);
        t->seconds[t->count++] = now() - start;
    }
}

static double median_gflops(timings *t, const shape *s) {
    qsort(t->seconds, (size_t)t->count, sizeof t->seconds[0], compare_doubles);
    return 2.0 * (double)s->m * (double)s->n * (double)s->k / t->seconds[t->count / 2] * 1e-9;
}

static float *random_matrix(int64_t count, unsigned *seed) {
    float *x = malloc((size_t)count * sizeof *x);
    if (!x) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    for (int64_t i = 0; i < count; i++) x[i] = (float)rand_r(seed) / (float)RAND_MAX * 2.0f - 1.0f;
    return x;
}

#ifdef PORTA_HAVE_OPENBLAS
/* max |got - want| / max |want|: a norm-wise error, as elementwise ratios
 * blow up where entries cancel to near zero. */
static double relative_error(const float *got, const float *want, int64_t count) {
    double diff = 0.0, scale = 0.0;
    for (int64_t i = 0; i < count; i++) {
        double d = fabs((double)got[i] - (double)want[i]), w = fabs((double)want[i]);
        if (d > diff || isnan(d)) diff = d;
        if (w > scale) scale = w;
    }
    return diff / (scale > 0.0 ? scale : 1.0);
}

#else
/* Without OpenBLAS, a few entries of C against dot products in double,
 * relative to the largest of them. */
static double sampled_error(const operands *ops) {
    const shape *s = &ops->s;
    unsigned seed = 99;
    double diff = 0.0, scale = 0.0;
    for (int sample = 0; sample < 64; sample++) {
        int64_t i = rand_r(&seed) % s->m, j = rand_r(&seed) % s->n;
        double want = 0.0;
        for (int64_t p = 0; p < s->k; p++)
            want += (double)ops->a[i * s->k + p] * (double)ops->b[p * s->n + j];
        double d = fabs((double)ops->c[i * s->n + j] - want);
        if (d > diff || isnan(d)) diff = d;
        if (fabs(want) > scale) scale = fabs(want);
    }
    return diff / (scale > 0.0 ? scale : 1.0);
}
#endif

/* Timings are large; one set per library, reused shape after shape. */
static timings porta_times;
#ifdef PORTA_HAVE_OPENBLAS
static timings openblas_times;
#endif

static void bench_shape(shape s) {
    unsigned seed = 12345;
    float *a = random_matrix(s.m * s.k, &seed), *b = random_matrix(s.k * s.n, &seed);
    float *c = random_matrix(s.m * s.n, &seed);
    operands ops = {s, a, b, c};
    char name[64];
    snprintf(name, sizeof name, "%lldx%lldx%lld", (long long)s.m, (long long)s.n, (long long)s.k);
#ifdef PORTA_HAVE_OPENBLAS
    float *reference = random_matrix(s.m * s.n, &seed);
    operands ref_ops = {s, a, b, reference};
    warm_up(run_porta, &ops, &porta_times);
    warm_up(run_openblas, &ref_ops, &openblas_times);
    for (int round = 0; round < ROUNDS; round++) {
        /* OpenBLAS's idle workers spin for a while after each call and
         * would steal cycles from porta's next round. */
        pause_seconds(0.2);
        run_round(run_porta, &ops, &porta_times);
        run_round(run_openblas, &ref_ops, &openblas_times);
    }
    double porta = median_gflops(&porta_times, &s);
    double openblas = median_gflops(&openblas_times, &s);
    printf("%-16s %10.1f %10.1f %8.2f %12.2e\n", name, porta, openblas, porta / openblas,
           relative_error(c, reference, s.m * s.n));
    free(reference);
#else
    warm_up(run_porta, &ops, &porta_times);
    for (int round = 0; round < ROUNDS; round++) run_round(run_porta, &ops, &porta_times);
    printf("%-16s %10.1f %10s %8s %12.2e\n", name, median_gflops(&porta_times, &s), "-", "-",
           sampled_error(&ops));
#endif
    fflush(stdout);
    free(a);
    free(b);
    free(c);
}

static bool parse_shape(const char *text, shape *s) {
    long long m, n, k;
    char extra;
    if (sscanf(text, "%lldx%lldx%lld%c", &m, &n, &k, &extra) == 3 && m > 0 && n > 0 && k > 0) {
        *s = (shape){m, n, k};
        return true;
    }
    if (sscanf(text, "%lld%c", &m, &extra) == 1 && m > 0) {
        *s = (shape){m, m, m};
        return true;
    }
    return false;
}

int main(int argc, char **argv) {
    int threads = cpu_thread_count();
#ifdef PORTA_HAVE_OPENBLAS
    openblas_set_num_threads(threads);
#endif
    printf("sgemm, row-major, %d thread%s; GFLOP/s is the median of repeated calls\n", threads,
           threads == 1 ? "" : "s");
    printf("%-16s %10s %10s %8s %12s\n", "MxNxK", "porta", "OpenBLAS", "ratio", "max rel err");
    if (argc > 1) {
        for (int i = 1; i < argc; i++) {
            shape s;
            if (!parse_shape(argv[i], &s)) {
                fprintf(stderr, "usage: %s [N | MxNxK]...\n", argv[0]);
                return 2;
            }
            bench_shape(s);
        }
    } else {
        for (size_t i = 0; i < sizeof standard_shapes / sizeof standard_shapes[0]; i++)
            bench_shape(standard_shapes[i]);
    }
    return 0;
}
