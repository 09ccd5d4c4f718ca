/* cpu_sgemm_with_epilogue: the epilogue sees every element of C exactly
 * once, only after its value is final, in blocks inside C; checked with a
 * callback that compares each block with a double-precision product and
 * then applies y = relu(c) + bias[column] in place, as a fused kernel
 * would. Shapes cover the unpacked path (small and k == 0), the packed
 * path with several depth steps, column panels and row blocks, tile edges,
 * transposed and strided C, and one and two threads. Then the CPU
 * device's run_matmul_epilogue with a hand-written tile entry in place of
 * a compiled kernel, against eager matmul. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/cpu_jit.h"
#include "backends/cpu/gemm/gemm.h"
#include "backends/cpu/gemm/gemm_kernel.h"
#include "backends/cpu/threadpool.h"
#include "runtime/tensor.h"
#include "ir/prim.h"
#include "runtime/device.h"
#include "test.h"

typedef enum layout { ROW_MAJOR, COL_MAJOR, STRIDED, LAYOUT_COUNT } layout;

static const char *const layout_names[LAYOUT_COUNT] = {"row-major", "col-major", "strided"};

typedef struct matrix {
    int64_t rows, cols, rs, cs;
    float *data; /* element (0, 0); strides are positive here */
} matrix;

static matrix make_matrix(test_rng *rng, int64_t rows, int64_t cols, layout kind, bool nan_fill) {
    matrix x = {rows, cols, 0, 0, NULL};
    switch (kind) {
    case ROW_MAJOR: x.rs = cols + 1; x.cs = 1; break;
    case COL_MAJOR: x.rs = 1; x.cs = rows + 2; break;
    case STRIDED: x.rs = 2; x.cs = 2 * rows + 1; break;
    case LAYOUT_COUNT: break;
    }
    int64_t length = 1 + (rows > 0 ? (rows - 1) * x.rs : 0) + (cols > 0 ? (cols - 1) * x.cs : 0);
    x.data = malloc((size_t)length * sizeof(float));
    for (int64_t i = 0; i < length; i++)
        x.data[i] = nan_fill ? NAN : (float)test_uniform(rng, -1.0, 1.0);
    return x;
}

static float *at(const matrix *x, int64_t i, int64_t j) { return x->data + i * x->rs + j * x->cs; }

/* What the callback knows: C, the reference product, and what it saw. */
typedef struct probe {
    matrix c;
    const double *want, *tolerance; /* m x n, row-major */
    const float *bias;              /* n */
    _Atomic int *visits;            /* m x n */
    _Atomic int bad_blocks, not_final, calls;
} probe;

static void relu_bias(void *ctx, int64_t row0, int64_t rows, int64_t col0, int64_t cols) {
    probe *p = ctx;
    atomic_fetch_add(&p->calls, 1);
    if (rows <= 0 || cols <= 0 || row0 < 0 || col0 < 0 || row0 + rows > p->c.rows ||
        col0 + cols > p->c.cols) {
        atomic_fetch_add(&p->bad_blocks, 1);
        return;
    }
    for (int64_t i = row0; i < row0 + rows; i++)
        for (int64_t j = col0; j < col0 + cols; j++) {
            int64_t e = i * p->c.cols + j;
            atomic_fetch_add(&p->visits[e], 1);
            float *c = at(&p->c, i, j);
            if (!(fabs((double)*c - p->want[e]) <= p->tolerance[e]))
                atomic_fetch_add(&p->not_final, 1);
            *c = (*c > 0.0f ? *c : 0.0f) + p->bias[j];
        }
}

typedef struct epilogue_case {
    int64_t m, n, k;
    layout a, b, c;
    float beta;
} epilogue_case;

static void check_case(test_rng *rng, epilogue_case t, const char *where) {
    matrix a = make_matrix(rng, t.m, t.k, t.a, false);
    matrix b = make_matrix(rng, t.k, t.n, t.b, false);
    /* beta == 0 must ignore C, NaN included. */
    matrix c = make_matrix(rng, t.m, t.n, t.c, t.beta == 0.0f);
    size_t count = (size_t)(t.m * t.n);
    double *want = malloc((count ? count : 1) * sizeof(double));
    double *tolerance = malloc((count ? count : 1) * sizeof(double));
    float *bias = malloc((size_t)(t.n ? t.n : 1) * sizeof(float));
    _Atomic int *visits = malloc((count ? count : 1) * sizeof(_Atomic int));
    for (int64_t j = 0; j < t.n; j++) bias[j] = (float)test_uniform(rng, -0.5, 0.5);
    for (int64_t i = 0; i < t.m; i++)
        for (int64_t j = 0; j < t.n; j++) {
            double sum = 0.0, magnitude = 0.0;
            for (int64_t q = 0; q < t.k; q++) {
                double term = (double)*at(&a, i, q) * (double)*at(&b, q, j);
                sum += term;
                magnitude += fabs(term);
            }
            if (t.beta != 0.0f) {
                double old = (double)t.beta * (double)*at(&c, i, j);
                sum += old;
                magnitude += fabs(old);
            }
            want[i * t.n + j] = sum;
            tolerance[i * t.n + j] = 1e-6 * sqrt((double)t.k + 1.0) * magnitude + 1e-30;
            atomic_init(&visits[i * t.n + j], 0);
        }
    probe p = {.c = c, .want = want, .tolerance = tolerance, .bias = bias, .visits = visits};
    atomic_init(&p.bad_blocks, 0);
    atomic_init(&p.not_final, 0);
    atomic_init(&p.calls, 0);
    cpu_gemm_epilogue epilogue = {relu_bias, &p};

    porta_status *status = cpu_sgemm_with_epilogue(t.m, t.n, t.k, a.data, a.rs, a.cs, b.data, b.rs,
                                                   b.cs, t.beta, c.data, c.rs, c.cs, &epilogue);
    CHECK_MSG(status == NULL, "%s: %s", where, porta_status_message(status));
    porta_status_free(status);

    char name[160];
    snprintf(name, sizeof name, "%s %lldx%lldx%lld A %s B %s C %s beta %g", where,
             (long long)t.m, (long long)t.n, (long long)t.k, layout_names[t.a],
             layout_names[t.b], layout_names[t.c], (double)t.beta);
    CHECK_MSG(atomic_load(&p.bad_blocks) == 0, "%s: %d blocks outside C or empty", name,
              atomic_load(&p.bad_blocks));
    CHECK_MSG(atomic_load(&p.not_final) == 0, "%s: %d elements seen before they were final",
              name, atomic_load(&p.not_final));
    CHECK_MSG(count > 0 || atomic_load(&p.calls) == 0, "%s: epilogue called on an empty C", name);
    int failures = 0;
    for (int64_t i = 0; i < t.m; i++)
        for (int64_t j = 0; j < t.n; j++) {
            int64_t e = i * t.n + j;
            int seen = atomic_load(&visits[e]);
            double expect = (want[e] > 0.0 ? want[e] : 0.0) + (double)bias[j];
            double got = (double)*at(&c, i, j);
            if (seen != 1 && failures++ < 3)
                test_fail(__FILE__, __LINE__, "%s: C[%lld,%lld] visited %d times", name,
                          (long long)i, (long long)j, seen);
            if (!(fabs(got - expect) <= tolerance[e] + 1e-7) && failures++ < 3)
                test_fail(__FILE__, __LINE__, "%s: y[%lld,%lld] = %.9g, want %.9g", name,
                          (long long)i, (long long)j, got, expect);
        }
    free(visits);
    free(bias);
    free(tolerance);
    free(want);
    free(a.data);
    free(b.data);
    free(c.data);
}

/* Unpacked (up to 1024 multiply-adds, and k == 0 of any size), packed with
 * several depth steps (k past kc), several column panels (n or m past nc),
 * streaming row blocks (20000 x 2), vectors, and tile edges. */
static const int64_t shapes[][3] = {
    {1, 1, 1},      {2, 3, 4},     {16, 16, 4},   {7, 1, 13},    {1, 9, 17},   {5, 7, 0},
    {300, 200, 0},  {13, 17, 19},  {33, 13, 29},  {65, 25, 300}, {37, 29, 1000}, {5, 6, 5000},
    {100, 100, 200}, {300, 301, 33}, {37, 1000, 61}, {600, 20, 40}, {8, 300, 500},
    {300, 8, 500},  {1, 500, 300}, {500, 1, 300}, {3, 4100, 5},  {20000, 2, 130},
};

static void check_shapes(uint64_t seed, const char *where) {
    test_rng rng = test_rng_make(seed);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int64_t m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
        check_case(&rng, (epilogue_case){m, n, k, ROW_MAJOR, ROW_MAJOR, ROW_MAJOR, 0.0f}, where);
        check_case(&rng, (epilogue_case){m, n, k, COL_MAJOR, COL_MAJOR, COL_MAJOR, 1.0f}, where);
        epilogue_case t = {m, n, k, (layout)test_int(&rng, 0, LAYOUT_COUNT - 1),
                           (layout)test_int(&rng, 0, LAYOUT_COUNT - 1),
                           (layout)test_int(&rng, 0, LAYOUT_COUNT - 1),
                           test_int(&rng, 0, 1) ? -0.5f : 0.0f};
        check_case(&rng, t, where);
    }
}

static void check_isa(cpu_isa isa, const char *name) {
    if (!cpu_isa_supported(isa)) {
        printf("     (this CPU lacks the instruction set; skipped)\n");
        return;
    }
    CHECK(gemm_isa_force(isa));
    for (int threads = 1; threads <= 2; threads++) {
        char where[64];
        snprintf(where, sizeof where, "%s, %d thread%s", name, threads, threads > 1 ? "s" : "");
        cpu_set_thread_count(threads);
        check_shapes(500 + (uint64_t)isa * 10 + (uint64_t)threads, where);
    }
    cpu_set_thread_count(0);
    gemm_isa_reset();
}

TEST(test_gemm_epilogue_generic) { check_isa(CPU_ISA_GENERIC, "generic"); }
TEST(test_gemm_epilogue_avx2) { check_isa(CPU_ISA_AVX2, "avx2"); }
TEST(test_gemm_epilogue_avx512) { check_isa(CPU_ISA_AVX512, "avx512"); }

static void never_called(void *ctx, int64_t row0, int64_t rows, int64_t col0, int64_t cols) {
    *(int *)ctx += 1;
}

TEST(test_gemm_epilogue_empty_c_calls_nothing) {
    int calls = 0;
    cpu_gemm_epilogue epilogue = {never_called, &calls};
    CHECK(cpu_sgemm_with_epilogue(0, 5, 3, NULL, 3, 1, NULL, 5, 1, 0.0f, NULL, 5, 1, &epilogue) ==
          NULL);
    CHECK(cpu_sgemm_with_epilogue(4, 0, 3, NULL, 3, 1, NULL, 0, 1, 0.0f, NULL, 0, 1, &epilogue) ==
          NULL);
    CHECK(calls == 0);
}

TEST(test_gemm_epilogue_null_is_plain_sgemm) {
    test_rng rng = test_rng_make(3);
    int64_t m = 70, n = 50, k = 90;
    matrix a = make_matrix(&rng, m, k, ROW_MAJOR, false);
    matrix b = make_matrix(&rng, k, n, ROW_MAJOR, false);
    matrix c1 = make_matrix(&rng, m, n, ROW_MAJOR, true);
    matrix c2 = make_matrix(&rng, m, n, ROW_MAJOR, true);
    CHECK_OK(cpu_sgemm(m, n, k, a.data, a.rs, a.cs, b.data, b.rs, b.cs, 0.0f, c1.data, c1.rs,
                       c1.cs));
    CHECK_OK(cpu_sgemm_with_epilogue(m, n, k, a.data, a.rs, a.cs, b.data, b.rs, b.cs, 0.0f,
                                     c2.data, c2.rs, c2.cs, NULL));
    for (int64_t i = 0; i < m; i++)
        CHECK(memcmp(at(&c1, i, 0), at(&c2, i, 0), (size_t)n * sizeof(float)) == 0);
    free(a.data);
    free(b.data);
    free(c1.data);
    free(c2.data);
}

/* ---- the CPU device's run_matmul_epilogue, with a hand-written tile ---- */

/* A stand-in for a compiled kernel: access 0 is out (loaded and stored),
 * access 1 a bias broadcast over rows; y = relu(out) + bias. */
static void relu_bias_tile(const kir_args *args, const kir_runtime *rt, int64_t row0,
                           int64_t rows, int64_t col0, int64_t cols) {
    float *out = args->data[0];
    const float *bias = args->data[1];
    for (int64_t i = row0; i < row0 + rows; i++)
        for (int64_t j = col0; j < col0 + cols; j++) {
            float *y = out + i * args->strides[0][0] + j * args->strides[0][1];
            *y = (*y > 0.0f ? *y : 0.0f) + bias[i * args->strides[1][0] + j * args->strides[1][1]];
        }
}

/* out = relu(a @ b) + bias through run_matmul_epilogue, against eager
 * matmul then the same arithmetic; `transpose_a` makes a a column-major view. */
static void check_fused(int64_t m, int64_t n, int64_t k, bool transpose_a, int threads) {
    test_rng rng = test_rng_make((uint64_t)(m * 131 + n * 7 + k));
    cpu_set_thread_count(threads);
    int64_t a_sizes[2] = {transpose_a ? k : m, transpose_a ? m : k}, b_sizes[2] = {k, n};
    int64_t out_sizes[2] = {m, n};
    porta_tensor *a_storage = test_random_tensor(&rng, PORTA_F32, 2, a_sizes, -1.0, 1.0);
    porta_tensor *b = test_random_tensor(&rng, PORTA_F32, 2, b_sizes, -1.0, 1.0);
    porta_tensor *bias = test_random_tensor(&rng, PORTA_F32, 1, &n, -0.5, 0.5);
    porta_tensor *out = test_empty(PORTA_F32, 2, out_sizes);
    porta_tensor *a = a_storage;
    int64_t view_sizes[2] = {m, k}, view_strides[2] = {1, m}; /* a^T's storage, read as a */
    if (transpose_a) a = test_view_on(a_storage, 2, view_sizes, view_strides, 0);
    porta_tensor *want = NULL;
    if (a && b && bias && out) {
        CHECK_OK(porta_matmul(a, b, &want));
        ir_prim prim = {.kind = PRIM_MATMUL};
        cpu_program program = {.tile = relu_bias_tile};
        kir_args args = {.sizes = {m, n}};
        args.data[0] = core_tensor_data(out);
        args.strides[0][0] = out->strides[0];
        args.strides[0][1] = out->strides[1];
        args.data[1] = core_tensor_data(bias);
        args.strides[1][0] = 0;
        args.strides[1][1] = bias->strides[0];
        const porta_tensor *inputs[2] = {a, b};
        porta_device *cpu = test_cpu();
        CHECK(cpu->ops->run_matmul_epilogue != NULL);
        if (cpu->ops->run_matmul_epilogue)
            CHECK_OK(cpu->ops->run_matmul_epilogue(cpu, &prim, inputs, 2, out, &program, &args));
        const float *got = (const float *)core_tensor_data(out);
        const float *plain = (const float *)core_tensor_data(want);
        const float *bv = (const float *)core_tensor_data(bias);
        int failures = 0;
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                float p = plain[i * n + j];
                float expect = (p > 0.0f ? p : 0.0f) + bv[j];
                if (got[i * n + j] != expect && failures++ < 3)
                    test_fail(__FILE__, __LINE__, "%lldx%lldx%lld: y[%lld,%lld] = %.9g, want %.9g",
                              (long long)m, (long long)n, (long long)k, (long long)i,
                              (long long)j, (double)got[i * n + j], (double)expect);
            }
    }
    porta_tensor_release(want);
    if (a != a_storage) porta_tensor_release(a);
    porta_tensor_release(a_storage);
    porta_tensor_release(b);
    porta_tensor_release(bias);
    porta_tensor_release(out);
    cpu_set_thread_count(0);
}

TEST(test_cpu_matmul_epilogue_matches_unfused) {
    static const int64_t cases[][3] = {{1, 1, 1},   {5, 7, 3},     {7, 5, 0},
                                       {100, 60, 300}, {257, 130, 70}, {3, 1000, 40}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (int threads = 1; threads <= 2; threads++)
            check_fused(cases[c][0], cases[c][1], cases[c][2], c % 2 == 1, threads);
}

/* What it does not fuse it refuses before computing anything, so the
 * caller can run the pair unfused. */
TEST(test_cpu_matmul_epilogue_refuses_what_it_cannot_fuse) {
    test_rng rng = test_rng_make(11);
    porta_device *cpu = test_cpu();
    CHECK(cpu->ops->run_matmul_epilogue != NULL);
    if (!cpu->ops->run_matmul_epilogue) return;
    ir_prim prim = {.kind = PRIM_MATMUL};
    cpu_program with_tile = {.tile = relu_bias_tile}, without_tile = {0};
    kir_args args = {0};
    int64_t batched_a[3] = {2, 3, 4}, batched_b[3] = {2, 4, 5}, batched_out[3] = {2, 3, 5};
    int64_t a_sizes[2] = {3, 4}, b_sizes[2] = {4, 5}, out_sizes[2] = {3, 5};
    porta_tensor *a3 = test_random_tensor(&rng, PORTA_F32, 3, batched_a, -1.0, 1.0);
    porta_tensor *b3 = test_random_tensor(&rng, PORTA_F32, 3, batched_b, -1.0, 1.0);
    porta_tensor *out3 = test_random_tensor(&rng, PORTA_F32, 3, batched_out, -1.0, 1.0);
    porta_tensor *a64 = test_random_tensor(&rng, PORTA_F64, 2, a_sizes, -1.0, 1.0);
    porta_tensor *b64 = test_random_tensor(&rng, PORTA_F64, 2, b_sizes, -1.0, 1.0);
    porta_tensor *out64 = test_random_tensor(&rng, PORTA_F64, 2, out_sizes, -1.0, 1.0);
    porta_tensor *a = test_random_tensor(&rng, PORTA_F32, 2, a_sizes, -1.0, 1.0);
    porta_tensor *b = test_random_tensor(&rng, PORTA_F32, 2, b_sizes, -1.0, 1.0);
    porta_tensor *out = test_random_tensor(&rng, PORTA_F32, 2, out_sizes, -1.0, 1.0);
    if (a3 && b3 && out3 && a64 && b64 && out64 && a && b && out) {
        float before = *(const float *)core_tensor_data(out);
        const porta_tensor *batched[2] = {a3, b3}, *doubles[2] = {a64, b64}, *floats[2] = {a, b};
        CHECK_ERR(cpu->ops->run_matmul_epilogue(cpu, &prim, batched, 2, out3, &with_tile, &args),
                  PORTA_ERR_UNSUPPORTED, "rank 3");
        CHECK_ERR(cpu->ops->run_matmul_epilogue(cpu, &prim, doubles, 2, out64, &with_tile, &args),
                  PORTA_ERR_UNSUPPORTED, "float64");
        CHECK_ERR(cpu->ops->run_matmul_epilogue(cpu, &prim, floats, 2, out, &without_tile, &args),
                  PORTA_ERR_UNSUPPORTED, "tile");
        CHECK(*(const float *)core_tensor_data(out) == before);
    }
    porta_tensor *all[] = {a3, b3, out3, a64, b64, out64, a, b, out};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) porta_tensor_release(all[i]);
}
