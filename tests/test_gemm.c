/* cpu_sgemm against a double-precision reference: every ISA's kernel, one
 * to three threads, shapes around the tile and block edges, and operands in
 * every layout the strides can express. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/gemm/gemm.h"
#include "backends/cpu/gemm/gemm_kernel.h"
#include "backends/cpu/threadpool.h"
#include "test.h"

typedef enum layout {
    ROW_MAJOR,
    COL_MAJOR,
    STRIDED,     /* neither stride is 1 */
    REVERSED,    /* both strides negative */
    FLIPPED_COLS, /* unit row stride, negative column stride */
    BROADCAST,   /* row stride 0: every row is the same (inputs only) */
    LAYOUT_COUNT
} layout;

typedef struct matrix {
    int64_t rows, cols, rs, cs;
    float *storage; /* every element the strides can reach, and the gaps */
    int64_t length;
    float *origin; /* element (0, 0) */
} matrix;

static float element(const matrix *x, int64_t i, int64_t j) {
    return x->origin[i * x->rs + j * x->cs];
}

static matrix make_matrix(test_rng *rng, int64_t rows, int64_t cols, layout kind, bool nan_fill) {
    matrix x = {rows, cols, 0, 0, NULL, 0, NULL};
    int64_t pad = test_int(rng, 0, 3);
    switch (kind) {
    case ROW_MAJOR: x.rs = cols + pad; x.cs = 1; break;
    case COL_MAJOR: x.rs = 1; x.cs = rows + pad; break;
    case STRIDED: x.rs = 2; x.cs = 2 * rows + 1 + pad; break;
    case REVERSED: x.rs = -(cols + pad); x.cs = -1; break;
    case FLIPPED_COLS: x.rs = 1; x.cs = -(rows + pad); break;
    case BROADCAST: x.rs = 0; x.cs = 1; break;
    case LAYOUT_COUNT: break;
    }
    int64_t low = 0, high = 0;
    int64_t row_span = rows > 0 ? (rows - 1) * x.rs : 0, col_span = cols > 0 ? (cols - 1) * x.cs : 0;
    low += row_span < 0 ? row_span : 0;
    high += row_span > 0 ? row_span : 0;
    low += col_span < 0 ? col_span : 0;
    high += col_span > 0 ? col_span : 0;
    x.length = high - low + 1;
    x.storage = malloc((size_t)x.length * sizeof(float));
    for (int64_t i = 0; i < x.length; i++)
        x.storage[i] = nan_fill ? NAN : (float)test_uniform(rng, -1.0, 1.0);
    x.origin = x.storage - low;
    return x;
}

typedef struct gemm_case {
    int64_t m, n, k;
    layout a, b, c;
    float beta;
} gemm_case;

static const char *const layout_names[LAYOUT_COUNT] = {
    "row-major", "col-major", "strided", "reversed", "flipped-cols", "broadcast"};

/* Runs one case and compares every element of C with a double reference,
 * within a bound that grows with sqrt(k) times the terms' magnitude; also
 * checks that the gaps between C's elements were left alone. */
static void check_case(test_rng *rng, gemm_case t) {
    matrix a = make_matrix(rng, t.m, t.k, t.a, false);
    matrix b = make_matrix(rng, t.k, t.n, t.b, false);
    /* beta == 0 must ignore C completely, NaN included. */
    matrix c = make_matrix(rng, t.m, t.n, t.c, t.beta == 0.0f);
    float *before = malloc((size_t)c.length * sizeof(float));
    memcpy(before, c.storage, (size_t)c.length * sizeof(float));
    bool *written = calloc((size_t)c.length, sizeof(bool));

    porta_status *status = cpu_sgemm(t.m, t.n, t.k, a.origin, a.rs, a.cs, b.origin, b.rs, b.cs,
                                     t.beta, c.origin, c.rs, c.cs);
    CHECK_MSG(status == NULL, "%lldx%lldx%lld: %s", (long long)t.m, (long long)t.n,
              (long long)t.k, porta_status_message(status));
    porta_status_free(status);

    int failures = 0;
    for (int64_t i = 0; i < t.m; i++) {
        for (int64_t j = 0; j < t.n; j++) {
            double sum = 0.0, magnitude = 0.0;
            for (int64_t p = 0; p < t.k; p++) {
                double term = (double)element(&a, i, p) * (double)element(&b, p, j);
                sum += term;
                magnitude += fabs(term);
            }
            int64_t offset = (c.origin - c.storage) + i * c.rs + j * c.cs;
            written[offset] = true;
            if (t.beta != 0.0f) {
                sum += (double)t.beta * (double)before[offset];
                magnitude += fabs((double)t.beta * (double)before[offset]);
            }
            double got = (double)c.storage[offset];
            double tolerance = 1e-6 * sqrt((double)t.k + 1.0) * magnitude + 1e-30;
            if (!(fabs(got - sum) <= tolerance) && failures++ < 3)
                test_fail(__FILE__, __LINE__,
                          "%lldx%lldx%lld A %s, B %s, C %s, beta %g: C[%lld,%lld] = %.9g, "
                          "want %.9g (tolerance %.3g)",
                          (long long)t.m, (long long)t.n, (long long)t.k, layout_names[t.a],
                          layout_names[t.b], layout_names[t.c], (double)t.beta, (long long)i,
                          (long long)j, got, sum, tolerance);
        }
    }
    for (int64_t i = 0; i < c.length; i++) {
        if (!written[i] && memcmp(&c.storage[i], &before[i], sizeof(float)) != 0 &&
            failures++ < 3)
            test_fail(__FILE__, __LINE__, "%lldx%lldx%lld: wrote outside C at storage[%lld]",
                      (long long)t.m, (long long)t.n, (long long)t.k, (long long)i);
    }
    free(written);
    free(before);
    free(a.storage);
    free(b.storage);
    free(c.storage);
}

/* Shapes chosen to hit every kernel's tile edges (mr, nr of 8x4, 16x6 and
 * 32x12, plus and minus one), the depth blocking (k past kc), the row and
 * column blocking (past mc and nc; 20000 x 2 streams several tall A
 * blocks), tiny problems that skip packing, and problems large enough to
 * be split among threads. */
static const int64_t shapes[][3] = {
    {1, 1, 1},     {2, 3, 4},     {1, 1, 100},   {7, 1, 13},    {1, 9, 17},     {13, 17, 19},
    {3, 5, 64},    {4, 4, 512},   {7, 3, 5},     {8, 4, 9},     {9, 5, 31},     {15, 5, 8},
    {16, 6, 9},    {17, 7, 10},   {31, 11, 64},  {32, 12, 64},  {33, 13, 29},   {47, 23, 41},
    {64, 24, 30},  {65, 25, 300}, {37, 29, 1000}, {5, 6, 5000}, {600, 20, 40},  {3, 4100, 5},
    {8, 300, 500}, {300, 8, 500}, {1, 500, 300}, {500, 1, 300}, {100, 100, 200}, {8, 2000, 100},
    {2000, 8, 100}, {64, 512, 64}, {37, 1000, 61}, {300, 301, 33}, {20000, 2, 130},
};

static void check_all_shapes(uint64_t seed) {
    test_rng rng = test_rng_make(seed);
    static const float betas[] = {0.0f, 1.0f, -0.5f};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int64_t m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
        /* Both orientations of the common case (C row-major is computed
         * as C^T = B^T A^T), then random layouts and betas. */
        check_case(&rng, (gemm_case){m, n, k, ROW_MAJOR, ROW_MAJOR, ROW_MAJOR, 0.0f});
        check_case(&rng, (gemm_case){m, n, k, COL_MAJOR, COL_MAJOR, COL_MAJOR, 1.0f});
        for (int variant = 0; variant < 2; variant++) {
            gemm_case t = {m, n, k,
                           (layout)test_int(&rng, 0, LAYOUT_COUNT - 1),
                           (layout)test_int(&rng, 0, LAYOUT_COUNT - 1),
                           (layout)test_int(&rng, 0, BROADCAST - 1),
                           betas[test_int(&rng, 0, 2)]};
            check_case(&rng, t);
        }
    }
    for (int r = 0; r < 12; r++) {
        gemm_case t = {test_int(&rng, 1, 90), test_int(&rng, 1, 90), test_int(&rng, 1, 700),
                       (layout)test_int(&rng, 0, LAYOUT_COUNT - 1),
                       (layout)test_int(&rng, 0, LAYOUT_COUNT - 1),
                       (layout)test_int(&rng, 0, BROADCAST - 1), betas[test_int(&rng, 0, 2)]};
        check_case(&rng, t);
    }
}

static void check_isa(cpu_isa isa) {
    if (!cpu_isa_supported(isa)) {
        printf("     (this CPU lacks the instruction set; skipped)\n");
        return;
    }
    CHECK(gemm_isa_force(isa));
    for (int threads = 1; threads <= 3; threads++) {
        cpu_set_thread_count(threads);
        check_all_shapes(100 + (uint64_t)isa * 10 + (uint64_t)threads);
    }
    cpu_set_thread_count(0);
    gemm_isa_reset();
}

TEST(test_gemm_generic) { check_isa(CPU_ISA_GENERIC); }
TEST(test_gemm_avx2) { check_isa(CPU_ISA_AVX2); }
TEST(test_gemm_avx512) { check_isa(CPU_ISA_AVX512); }

TEST(test_gemm_k_zero_scales_c) {
    test_rng rng = test_rng_make(7);
    check_case(&rng, (gemm_case){5, 7, 0, ROW_MAJOR, ROW_MAJOR, STRIDED, 0.0f});
    check_case(&rng, (gemm_case){5, 7, 0, ROW_MAJOR, ROW_MAJOR, REVERSED, 2.0f});
    check_case(&rng, (gemm_case){64, 64, 0, COL_MAJOR, ROW_MAJOR, ROW_MAJOR, 1.0f});
}

TEST(test_gemm_empty_touches_nothing) {
    /* With m or n zero there is nothing to read or write: NULL is fine. */
    CHECK(cpu_sgemm(0, 5, 3, NULL, 3, 1, NULL, 5, 1, 0.0f, NULL, 5, 1) == NULL);
    CHECK(cpu_sgemm(4, 0, 3, NULL, 3, 1, NULL, 0, 1, 1.0f, NULL, 0, 1) == NULL);
}

TEST(test_gemm_nan_stays_in_its_row) {
    /* Padding in the packed slivers must not leak into real results. */
    int64_t m = 37, n = 29, k = 53;
    float *a = calloc((size_t)(m * k), sizeof(float)), *b = malloc((size_t)(k * n) * sizeof(float));
    float *c = malloc((size_t)(m * n) * sizeof(float));
    for (int64_t i = 0; i < k * n; i++) b[i] = 1.0f;
    a[0] = NAN;
    CHECK_OK(cpu_sgemm(m, n, k, a, k, 1, b, n, 1, 0.0f, c, n, 1));
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++)
            CHECK_MSG(isnan(c[i * n + j]) == (i == 0), "C[%lld,%lld] = %g", (long long)i,
                      (long long)j, (double)c[i * n + j]);
    free(a);
    free(b);
    free(c);
}

TEST(test_gemm_out_of_memory_leaks_nothing) {
    int64_t size = 300;
    float *x = calloc((size_t)(size * size), sizeof(float));
    float *y = calloc((size_t)(size * size), sizeof(float));
    uint64_t before = porta_memory_allocated();
    porta_set_memory_limit(before + 1024);
    CHECK_ERR(cpu_sgemm(size, size, size, x, size, 1, x, size, 1, 0.0f, y, size, 1),
              PORTA_ERR_OUT_OF_MEMORY, "GEMM");
    porta_set_memory_limit(0);
    CHECK(porta_memory_allocated() == before);
    free(x);
    free(y);
}

TEST(test_gemm_isa_from_environment) {
    setenv("PORTA_GEMM_ISA", "generic", 1);
    gemm_isa_reset();
    CHECK(strcmp(gemm_kernel_active()->name, "generic") == 0);
    /* A name the CPU cannot run (or no such name) falls back to the best. */
    setenv("PORTA_GEMM_ISA", "no-such-isa", 1);
    gemm_isa_reset();
    const char *best = cpu_isa_supported(CPU_ISA_AVX512) ? "avx512"
                       : cpu_isa_supported(CPU_ISA_AVX2) ? "avx2"
                                                           : "generic";
    CHECK(strcmp(gemm_kernel_active()->name, best) == 0);
    unsetenv("PORTA_GEMM_ISA");
    gemm_isa_reset();
    CHECK(strcmp(gemm_kernel_active()->name, best) == 0);
}

/* Callers that find the pool busy, and calls from inside pool tasks, run
 * with a team of one; results must not depend on it. */
typedef struct concurrent_call {
    uint64_t seed;
} concurrent_call;

static void *call_from_thread(void *arg) {
    concurrent_call *call = arg;
    test_rng rng = test_rng_make(call->seed);
    for (int r = 0; r < 3; r++)
        check_case(&rng, (gemm_case){150, 170, 190, ROW_MAJOR, COL_MAJOR, ROW_MAJOR, 0.5f});
    return NULL;
}

TEST(test_gemm_concurrent_callers) {
    pthread_t threads[3];
    concurrent_call calls[3] = {{1}, {2}, {3}};
    for (int t = 0; t < 3; t++) CHECK(pthread_create(&threads[t], NULL, call_from_thread, &calls[t]) == 0);
    for (int t = 0; t < 3; t++) pthread_join(threads[t], NULL);
}

static void call_from_task(void *ctx, int64_t begin, int64_t end, int thread) {
    for (int64_t i = begin; i < end; i++) {
        concurrent_call call = {10 + (uint64_t)i};
        call_from_thread(&call);
    }
}

TEST(test_gemm_inside_pool_task) { cpu_parallel_for(2, 1, call_from_task, NULL); }
