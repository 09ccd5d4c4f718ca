/* The CUDA backend's kernels compile: every kernel the OpenCL renderer
 * makes (each unary, binary and ternary op in every dtype it supports,
 * casts between all dtypes, every reduction, and fused kernels with
 * several passes, OUTER values, parameters and special constants) is
 * compiled by NVRTC behind the CUDA prelude for sm_90 and sm_80, as the
 * backend would on a GPU. This needs NVRTC only, not a GPU: without it the
 * test prints why and checks the backend reports the reason instead;
 * PORTA_REQUIRE_NVRTC makes a missing NVRTC a failure. */
#include <stdlib.h>
#include <string.h>

#include "backends/clc/clk_kernels.h"
#include "backends/cuda/cu_runtime.h"
#include "codegen/codegen_cl.h"
#include "core/status.h"
#include "test.h"

/* ---- building kernels ---- */

static int add_value(kir_kernel *k, kir_value v) {
    k->values[k->value_count] = v;
    return k->value_count++;
}

static int load(kir_kernel *k, porta_dtype dtype, kir_space space, kir_last_stride last) {
    int a = k->access_count++;
    k->accesses[a] = (kir_access){.dtype = dtype, .space = space, .last = last};
    return add_value(k, (kir_value){.kind = KIR_LOAD, .dtype = dtype, .space = space, .access = a});
}

static int value(kir_kernel *k, kir_value_kind kind, int op, porta_dtype dtype, kir_space space,
                 int a, int b, int c) {
    return add_value(k, (kir_value){.kind = kind, .op = op, .dtype = dtype, .space = space,
                                    .args = {a, b, c}});
}

/* Constants and parameters take the space of the value using them, as the
 * scheduler makes them (the renderer emits OUTER ones between passes). */
static int constant(kir_kernel *k, porta_dtype dtype, kir_space space, double c) {
    return add_value(k, (kir_value){.kind = KIR_CONST, .dtype = dtype, .space = space,
                                    .constant = c});
}

static int param(kir_kernel *k, porta_dtype dtype, kir_space space, int index) {
    return add_value(k, (kir_value){.kind = KIR_PARAM, .dtype = dtype, .space = space,
                                    .param = index});
}

static void store(kir_kernel *k, int v, kir_space space, kir_last_stride last) {
    int a = k->access_count++;
    k->accesses[a] = (kir_access){.dtype = k->values[v].dtype, .space = space, .last = last,
                                  .store = true, .value = v};
}

/* ---- the batch of sources ---- */

/* Rendered kernels, each renamed kir_k<N> so that many share one NVRTC
 * program (one compile per few hundred kernels keeps the test short). */
typedef struct batch {
    char **sources;
    char **names; /* what each kernel is, for failures */
    int count, cap;
    int refused; /* kernels the renderer declined (not supported) */
} batch;

static void batch_free(batch *b) {
    for (int i = 0; i < b->count; i++) {
        free(b->sources[i]);
        free(b->names[i]);
    }
    free(b->sources);
    free(b->names);
}

/* Renders k and adds it; a kernel the renderer does not support is
 * counted, not added. Returns whether it was added. */
static bool add_kernel(batch *b, const kir_kernel *k, const char *name) {
    char *source = NULL;
    porta_status *status = kir_render_cl(k, &source);
    if (status) {
        porta_code code = porta_status_code(status);
        porta_status_free(status);
        CHECK_MSG(code == PORTA_ERR_UNSUPPORTED || code == PORTA_ERR_INVALID_ARGUMENT,
                  "%s: rendering failed with code %d", name, (int)code);
        b->refused++;
        return false;
    }
    /* kernels with special functions begin with their definitions, which
     * join() writes once per program instead */
    const char *special = kir_cl_special_source();
    size_t skip = strncmp(source, special, strlen(special)) ? 0 : strlen(special);
    memmove(source, source + skip, strlen(source + skip) + 1);
    char *at = strstr(source, "kir_main(");
    CHECK_MSG(at != NULL, "%s: no kir_main in the source", name);
    if (!at) {
        free(source);
        return false;
    }
    char head[32];
    int head_len = snprintf(head, sizeof head, "kir_k%d(", b->count);
    size_t before = (size_t)(at - source), after = strlen(at + 9);
    char *renamed = malloc(before + (size_t)head_len + after + 1);
    if (b->count == b->cap) {
        b->cap = b->cap ? 2 * b->cap : 256;
        b->sources = realloc(b->sources, (size_t)b->cap * sizeof *b->sources);
        b->names = realloc(b->names, (size_t)b->cap * sizeof *b->names);
    }
    memcpy(renamed, source, before);
    memcpy(renamed + before, head, (size_t)head_len);
    memcpy(renamed + before + head_len, at + 9, after + 1);
    free(source);
    b->sources[b->count] = renamed;
    b->names[b->count++] = strdup(name);
    return true;
}

/* The kernels' sources after the special functions' definitions. */
static char *join(const batch *b, int first, int end) {
    const char *special = kir_cl_special_source();
    size_t total = strlen(special) + 1;
    for (int i = first; i < end; i++) total += strlen(b->sources[i]) + 1;
    char *text = malloc(total), *at = text;
    memcpy(at, special, strlen(special));
    at += strlen(special);
    for (int i = first; i < end; i++) {
        size_t n = strlen(b->sources[i]);
        memcpy(at, b->sources[i], n);
        at[n] = '\n';
        at += n + 1;
    }
    *at = '\0';
    return text;
}

/* Compiles kernels [first, end) as one program; on failure, compiles them
 * one by one to name the first kernel that fails, with NVRTC's log. */
static bool compile_range(const batch *b, int first, int end, int major, int minor) {
    char *text = join(b, first, end), *cubin = NULL;
    size_t size = 0;
    porta_status *status = cu_compile(text, major, minor, &cubin, &size);
    free(text);
    free(cubin);
    if (!status) {
        CHECK_MSG(size > 0, "sm_%d%d: an empty cubin", major, minor);
        return true;
    }
    if (end - first == 1) {
        test_fail(__FILE__, __LINE__, "sm_%d%d: %s does not compile: %s", major, minor,
                  b->names[first], porta_status_message(status));
        porta_status_free(status);
        return false;
    }
    porta_status_free(status);
    for (int i = first; i < end; i++)
        if (!compile_range(b, i, i + 1, major, minor)) return false;
    test_fail(__FILE__, __LINE__, "sm_%d%d: kernels %d..%d fail together but not alone",
              major, minor, first, end - 1);
    return false;
}

static void compile_all(const batch *b, const char *what) {
    static const int archs[][2] = {{9, 0}, {8, 0}};
    const int per_program = 400;
    for (size_t a = 0; a < sizeof archs / sizeof archs[0]; a++)
        for (int first = 0; first < b->count; first += per_program) {
            int end = first + per_program < b->count ? first + per_program : b->count;
            if (!compile_range(b, first, end, archs[a][0], archs[a][1])) return;
        }
    fprintf(stderr, "    %s: %d kernels compiled for sm_90 and sm_80 (%d not supported by "
                    "the renderer)\n",
            what, b->count, b->refused);
}

/* NVRTC, or NULL when this run cannot use it (printed, or a failure when
 * PORTA_REQUIRE_NVRTC is set). */
static bool nvrtc_present(const char *test) {
    const char *why = NULL;
    if (cu_nvrtc_load(&why)) return true;
    CHECK(why != NULL && strstr(why, "NVRTC") != NULL);
    if (getenv("PORTA_REQUIRE_NVRTC"))
        test_fail(__FILE__, __LINE__, "%s: PORTA_REQUIRE_NVRTC is set but %s", test, why);
    else
        fprintf(stderr, "%s: not compiled: %s\n", test, why);
    /* compiling says so too, as an error, not a crash */
    char *cubin = NULL;
    size_t size;
    CHECK_ERR(cu_compile("__kernel void f(void) {}", 9, 0, &cubin, &size),
              PORTA_ERR_UNSUPPORTED, "NVRTC");
    return false;
}

/* ---- the kernels ---- */

static const char *dtype_name(porta_dtype d) { return porta_dtype_name(d); }

/* out[i] = op(x[i]) (op(x, y), op(c, x, y)) for every op, input dtype and
 * result dtype (the input's or bool). */
TEST(cuda_compiles_every_elementwise_op) {
    if (!nvrtc_present("cuda_compiles_every_elementwise_op")) return;
    batch b = {0};
    kir_kernel *k = calloc(1, sizeof *k);
    char name[128];
    int unary = 0, binary = 0, ternary = 0;
    for (int d = 0; d < TEST_REAL_DTYPE_COUNT; d++)
        for (int result = 0; result < 2; result++) {
            porta_dtype out = result ? PORTA_BOOL : (porta_dtype)d;
            if (result && d == PORTA_BOOL) continue;
            for (int op = 0; op < PORTA_UNARY_OP_COUNT; op++) {
                memset(k, 0, sizeof *k);
                k->rank = k->outer_rank = 1;
                int x = load(k, d, KIR_FULL, KIR_LAST_UNIT);
                store(k, value(k, KIR_UNARY, op, out, KIR_FULL, x, 0, 0), KIR_FULL, KIR_LAST_UNIT);
                snprintf(name, sizeof name, "unary %s %s -> %s", porta_unary_op_name(op),
                         dtype_name(d), dtype_name(out));
                unary += add_kernel(&b, k, name);
            }
            for (int op = 0; op < PORTA_BINARY_OP_COUNT; op++) {
                memset(k, 0, sizeof *k);
                k->rank = k->outer_rank = 2;
                /* strided, broadcast and contiguous operands */
                int x = load(k, d, KIR_FULL, KIR_LAST_ANY);
                int y = load(k, d, KIR_FULL, KIR_LAST_ZERO);
                store(k, value(k, KIR_BINARY, op, out, KIR_FULL, x, y, 0), KIR_FULL,
                      KIR_LAST_UNIT);
                snprintf(name, sizeof name, "binary %s %s -> %s", porta_binary_op_name(op),
                         dtype_name(d), dtype_name(out));
                binary += add_kernel(&b, k, name);
            }
            if (result) continue;
            for (int op = 0; op < PORTA_TERNARY_OP_COUNT; op++) {
                memset(k, 0, sizeof *k);
                k->rank = k->outer_rank = 1;
                int c = load(k, op == PORTA_WHERE ? PORTA_BOOL : d, KIR_FULL, KIR_LAST_UNIT);
                int x = load(k, d, KIR_FULL, KIR_LAST_UNIT);
                int y = load(k, d, KIR_FULL, KIR_LAST_ANY);
                store(k, value(k, KIR_TERNARY, op, d, KIR_FULL, c, x, y), KIR_FULL,
                      KIR_LAST_UNIT);
                snprintf(name, sizeof name, "ternary %d %s", op, dtype_name(d));
                ternary += add_kernel(&b, k, name);
            }
        }
    free(k);
    fprintf(stderr, "    rendered: %d unary, %d binary, %d ternary\n", unary, binary, ternary);
    /* the renderer's own support, not a number fixed here: float32 add and
     * exp and where must be among them */
    CHECK(unary > PORTA_UNARY_OP_COUNT && binary > PORTA_BINARY_OP_COUNT && ternary > 0);
    compile_all(&b, "elementwise");
    batch_free(&b);
}

TEST(cuda_compiles_every_cast_and_reduction) {
    if (!nvrtc_present("cuda_compiles_every_cast_and_reduction")) return;
    batch b = {0};
    kir_kernel *k = calloc(1, sizeof *k);
    char name[128];
    int casts = 0, reductions = 0;
    for (int from = 0; from < TEST_REAL_DTYPE_COUNT; from++)
        for (int to = 0; to < TEST_REAL_DTYPE_COUNT; to++) {
            memset(k, 0, sizeof *k);
            k->rank = k->outer_rank = 1;
            int x = load(k, from, KIR_FULL, KIR_LAST_ANY);
            store(k, value(k, KIR_CAST, 0, to, KIR_FULL, x, 0, 0), KIR_FULL, KIR_LAST_UNIT);
            snprintf(name, sizeof name, "cast %s -> %s", dtype_name(from), dtype_name(to));
            casts += add_kernel(&b, k, name);
        }
    for (int d = 0; d < TEST_REAL_DTYPE_COUNT; d++)
        for (int op = 0; op < PORTA_REDUCE_OP_COUNT; op++) {
            bool to_bool = op == PORTA_REDUCE_ANY || op == PORTA_REDUCE_ALL;
            memset(k, 0, sizeof *k);
            k->rank = 2;
            k->outer_rank = 1;
            int x = load(k, d, KIR_FULL, KIR_LAST_UNIT);
            int r = value(k, KIR_REDUCE, op, to_bool ? PORTA_BOOL : (porta_dtype)d, KIR_OUTER, x,
                          0, 0);
            store(k, r, KIR_OUTER, KIR_LAST_ANY);
            snprintf(name, sizeof name, "reduce %d of %s", op, dtype_name(d));
            reductions += add_kernel(&b, k, name);
        }
    free(k);
    fprintf(stderr, "    rendered: %d casts, %d reductions\n", casts, reductions);
    CHECK(casts == TEST_REAL_DTYPE_COUNT * TEST_REAL_DTYPE_COUNT);
    CHECK(reductions > 0);
    compile_all(&b, "casts and reductions");
    batch_free(&b);
}

/* Softmax over rows in float16: three passes (max, sum of exp, stores). */
static void softmax(kir_kernel *k, porta_dtype d) {
    k->rank = 2;
    k->outer_rank = 1;
    int x = load(k, d, KIR_FULL, KIR_LAST_UNIT);
    int max = value(k, KIR_REDUCE, PORTA_REDUCE_MAX, d, KIR_OUTER, x, 0, 0);
    int shifted = value(k, KIR_BINARY, PORTA_SUB, d, KIR_FULL, x, max, 0);
    int e = value(k, KIR_UNARY, PORTA_EXP, d, KIR_FULL, shifted, 0, 0);
    int sum = value(k, KIR_REDUCE, PORTA_REDUCE_SUM, d, KIR_OUTER, e, 0, 0);
    store(k, value(k, KIR_BINARY, PORTA_DIV, d, KIR_FULL, e, sum, 0), KIR_FULL, KIR_LAST_UNIT);
}

/* Layer norm with an OUTER load (a per-row scale), a parameter (epsilon),
 * and both OUTER and FULL stores (the mean and the normalized rows). */
static void layer_norm(kir_kernel *k, porta_dtype d) {
    k->rank = 3;
    k->outer_rank = 1;
    int x = load(k, d, KIR_FULL, KIR_LAST_ANY);
    int scale = load(k, d, KIR_OUTER, KIR_LAST_ANY);
    int n = constant(k, d, KIR_OUTER, 64);
    int mean = value(k, KIR_BINARY, PORTA_DIV, d, KIR_OUTER,
                     value(k, KIR_REDUCE, PORTA_REDUCE_SUM, d, KIR_OUTER, x, 0, 0), n, 0);
    int centered = value(k, KIR_BINARY, PORTA_SUB, d, KIR_FULL, x, mean, 0);
    int square = value(k, KIR_BINARY, PORTA_MUL, d, KIR_FULL, centered, centered, 0);
    int var = value(k, KIR_BINARY, PORTA_DIV, d, KIR_OUTER,
                    value(k, KIR_REDUCE, PORTA_REDUCE_SUM, d, KIR_OUTER, square, 0, 0), n, 0);
    int eps = param(k, d, KIR_OUTER, 0);
    int inv = value(k, KIR_UNARY, PORTA_RSQRT, d, KIR_OUTER,
                    value(k, KIR_BINARY, PORTA_ADD, d, KIR_OUTER, var, eps, 0), 0, 0);
    int y = value(k, KIR_BINARY, PORTA_MUL, d, KIR_FULL, centered, inv, 0);
    store(k, value(k, KIR_BINARY, PORTA_MUL, d, KIR_FULL, y, scale, 0), KIR_FULL, KIR_LAST_UNIT);
    store(k, mean, KIR_OUTER, KIR_LAST_ANY);
}

/* An optimizer step in bfloat16 with float32 state: parameters (learning
 * rate, decay), casts both ways, special constants (NaN, inf, -0, the
 * most negative int64) and a bool mask through where. */
static void optimizer_step(kir_kernel *k) {
    k->rank = k->outer_rank = 1;
    int w = load(k, PORTA_BF16, KIR_FULL, KIR_LAST_UNIT);
    int g = load(k, PORTA_F32, KIR_FULL, KIR_LAST_UNIT);
    int step = load(k, PORTA_I64, KIR_FULL, KIR_LAST_ZERO);
    int lr = param(k, PORTA_F32, KIR_FULL, 0), decay = param(k, PORTA_F32, KIR_FULL, 1);
    int w32 = value(k, KIR_CAST, 0, PORTA_F32, KIR_FULL, w, 0, 0);
    int update = value(k, KIR_TERNARY, PORTA_FMA, PORTA_F32, KIR_FULL, w32, decay, g);
    int finite = value(k, KIR_UNARY, PORTA_ISFINITE, PORTA_BOOL, KIR_FULL, update, 0, 0);
    int nan = constant(k, PORTA_F32, KIR_FULL, NAN);
    int safe = value(k, KIR_TERNARY, PORTA_WHERE, PORTA_F32, KIR_FULL, finite, update, nan);
    int stepped = value(k, KIR_BINARY, PORTA_SUB, PORTA_F32, KIR_FULL, w32,
                        value(k, KIR_BINARY, PORTA_MUL, PORTA_F32, KIR_FULL, lr, safe, 0), 0);
    int clipped = value(k, KIR_BINARY, PORTA_MINIMUM, PORTA_F32, KIR_FULL, stepped,
                        constant(k, PORTA_F32, KIR_FULL, INFINITY), 0);
    int signed_zero = value(k, KIR_BINARY, PORTA_MAXIMUM, PORTA_F32, KIR_FULL, clipped,
                            constant(k, PORTA_F32, KIR_FULL, -0.0), 0);
    store(k, value(k, KIR_CAST, 0, PORTA_BF16, KIR_FULL, signed_zero, 0, 0), KIR_FULL,
          KIR_LAST_UNIT);
    int next = value(k, KIR_BINARY, PORTA_MAXIMUM, PORTA_I64, KIR_FULL, step,
                     constant(k, PORTA_I64, KIR_FULL, -9223372036854775808.0), 0);
    store(k, next, KIR_FULL, KIR_LAST_UNIT);
}

/* Integer sums and products of float16 casts, any/all of comparisons. */
static void mixed_reductions(kir_kernel *k) {
    k->rank = 2;
    k->outer_rank = 1;
    int x = load(k, PORTA_I8, KIR_FULL, KIR_LAST_ANY);
    int h = load(k, PORTA_F16, KIR_FULL, KIR_LAST_UNIT);
    int wide = value(k, KIR_CAST, 0, PORTA_I64, KIR_FULL, x, 0, 0);
    store(k, value(k, KIR_REDUCE, PORTA_REDUCE_SUM, PORTA_I64, KIR_OUTER, wide, 0, 0), KIR_OUTER,
          KIR_LAST_ANY);
    store(k, value(k, KIR_REDUCE, PORTA_REDUCE_PROD, PORTA_F16, KIR_OUTER, h, 0, 0), KIR_OUTER,
          KIR_LAST_ANY);
    int positive = value(k, KIR_BINARY, PORTA_GT, PORTA_BOOL, KIR_FULL, h,
                         constant(k, PORTA_F16, KIR_FULL, 0), 0);
    store(k, value(k, KIR_REDUCE, PORTA_REDUCE_ALL, PORTA_BOOL, KIR_OUTER, positive, 0, 0),
          KIR_OUTER, KIR_LAST_ANY);
    store(k, value(k, KIR_REDUCE, PORTA_REDUCE_ANY, PORTA_BOOL, KIR_OUTER, x, 0, 0), KIR_OUTER,
          KIR_LAST_ANY);
}

TEST(cuda_compiles_fused_kernels) {
    if (!nvrtc_present("cuda_compiles_fused_kernels")) return;
    batch b = {0};
    kir_kernel *k = calloc(1, sizeof *k);
    static const porta_dtype floats[] = {PORTA_F16, PORTA_BF16, PORTA_F32, PORTA_F64};
    char name[64];
    int added = 0;
    for (size_t i = 0; i < sizeof floats / sizeof floats[0]; i++) {
        memset(k, 0, sizeof *k);
        softmax(k, floats[i]);
        snprintf(name, sizeof name, "softmax %s", dtype_name(floats[i]));
        added += add_kernel(&b, k, name);
        memset(k, 0, sizeof *k);
        layer_norm(k, floats[i]);
        snprintf(name, sizeof name, "layer norm %s", dtype_name(floats[i]));
        added += add_kernel(&b, k, name);
    }
    memset(k, 0, sizeof *k);
    optimizer_step(k);
    added += add_kernel(&b, k, "optimizer step");
    memset(k, 0, sizeof *k);
    mixed_reductions(k);
    added += add_kernel(&b, k, "mixed reductions");
    free(k);
    /* every one of these is within the renderer's support */
    CHECK_MSG(added == 10 && b.refused == 0, "rendered %d of 10 fused kernels", added);
    compile_all(&b, "fused");
    batch_free(&b);
}

/* A source that is not valid fails with NVRTC's log in the error. */
TEST(cuda_compile_errors_carry_the_log) {
    if (!nvrtc_present("cuda_compile_errors_carry_the_log")) return;
    char *cubin = NULL;
    size_t size = 0;
    CHECK_ERR(cu_compile("__kernel void kir_main(long work) { undeclared_name = 1; }", 9, 0,
                         &cubin, &size),
              PORTA_ERR_DEVICE, "undeclared_name");
    CHECK(cubin == NULL);
}

/* ---- the hand-written kernels ---- */

typedef struct hand_count {
    int compiled, refused;
    int failures;
} hand_count;

/* Each program compiles for sm_90 and sm_80 as the CUDA device builds it
 * (cu_compile: the prelude, then the program); sort's is known not to,
 * and must keep failing until the CUDA device is told it can sort. */
static void compile_hand(void *ctx, const char *what, const char *source, bool cuda) {
    hand_count *count = ctx;
    static const int archs[][2] = {{9, 0}, {8, 0}};
    for (size_t a = 0; a < sizeof archs / sizeof archs[0]; a++) {
        char *cubin = NULL;
        size_t size = 0;
        porta_status *status = cu_compile(source, archs[a][0], archs[a][1], &cubin, &size);
        if (cuda) {
            CHECK_MSG(!status && cubin && size > 4 && !memcmp(cubin, "\177ELF", 4),
                      "the %s program for sm_%d%d: %s", what, archs[a][0], archs[a][1],
                      status ? porta_status_message(status) : "no cubin");
            count->failures += status != NULL;
        } else {
            CHECK_MSG(status != NULL,
                      "the %s program compiles as CUDA now: let the CUDA device run it "
                      "(cu_supports)", what);
        }
        if (!status && cuda && a == 0) count->compiled++;
        if (status && !cuda && a == 0) count->refused++;
        porta_status_free(status);
        free(cubin);
    }
}

TEST(cuda_compiles_every_hand_written_kernel) {
    if (!nvrtc_present("cuda_compiles_every_hand_written_kernel")) return;
    hand_count count = {0};
    clk_each_program(compile_hand, &count);
    /* conv and its two gradients, the factorisations, index moves, 10
     * scatters, 10 matmuls, pad, max pooling, random, the special
     * kernels' 3 and the FFT: 31; sort's does not compile */
    CHECK_MSG(count.failures == 0 && count.compiled == 31 && count.refused == 1,
              "hand-written programs: %d compiled, %d failed, %d refused; expected 31, 0, 1",
              count.compiled, count.failures, count.refused);
    fprintf(stderr, "    hand-written: %d programs compiled for sm_90 and sm_80 (%d known not "
                    "to: sort)\n",
            count.compiled, count.refused);
}
