/* The C renderer and the CPU JIT: kernels built by hand against the eager
 * primitives on the same inputs (elementwise chains with broadcast and
 * strided operands, reductions with prologues and epilogues, softmax,
 * float16, every supported op on NaN/inf/-0), the tile entry, the disk
 * cache (hits, corrupt, truncated, bit-flipped and FIFO entries rebuilt),
 * a missing compiler, and kir_check
 * on malformed kernels. Each test uses a fresh cache directory. */
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/cpu/cpu_jit.h"
#include "codegen/codegen_c.h"
#include "runtime/kernel_cache.h"
#include "runtime/tensor.h"
#include "test.h"

/* ---- a fresh disk cache per test ---- */

static const char *cache_root;

static void cache_begin(void) {
    cache_root = test_cache_begin();
    cpu_jit_forget_loaded();
}

static void cache_end(void) {
    cpu_jit_forget_loaded();
    test_cache_end();
}

/* ---- building kernels ---- */

static kir_kernel *kernel_new(int rank, int outer_rank) {
    kir_kernel *k = calloc(1, sizeof *k);
    k->rank = rank;
    k->outer_rank = outer_rank;
    return k;
}

static int add_value(kir_kernel *k, kir_value v) {
    k->values[k->value_count] = v;
    return k->value_count++;
}

static int load(kir_kernel *k, porta_dtype dtype, kir_space space, kir_last_stride last) {
    int a = k->access_count++;
    k->accesses[a] = (kir_access){.dtype = dtype, .space = space, .last = last};
    return add_value(k, (kir_value){.kind = KIR_LOAD, .dtype = dtype, .space = space, .access = a});
}

static int constant(kir_kernel *k, porta_dtype dtype, double c) {
    return add_value(k, (kir_value){.kind = KIR_CONST, .dtype = dtype, .constant = c});
}

/* OUTER when every non-constant argument is OUTER. */
static kir_space space_of(const kir_kernel *k, int n, const int *args) {
    bool outer = false;
    for (int i = 0; i < n; i++) {
        const kir_value *v = &k->values[args[i]];
        if (v->kind == KIR_CONST || v->kind == KIR_PARAM) continue;
        if (v->space == KIR_FULL) return KIR_FULL;
        outer = true;
    }
    return outer ? KIR_OUTER : KIR_FULL;
}

static int op(kir_kernel *k, kir_value_kind kind, int code, porta_dtype dtype, int a, int b,
              int c) {
    int args[3] = {a, b, c}, n = kind == KIR_TERNARY ? 3 : kind == KIR_BINARY ? 2 : 1;
    kir_value v = {.kind = kind, .op = code, .dtype = dtype, .args = {a, b, c}};
    v.space = kind == KIR_REDUCE ? KIR_OUTER : space_of(k, n, args);
    return add_value(k, v);
}
#define UNARY(k, o, d, a) op(k, KIR_UNARY, o, d, a, 0, 0)
#define BINARY(k, o, d, a, b) op(k, KIR_BINARY, o, d, a, b, 0)
#define REDUCE(k, o, d, a) op(k, KIR_REDUCE, o, d, a, 0, 0)

static int store(kir_kernel *k, int value, kir_space space, kir_last_stride last) {
    int a = k->access_count++;
    k->accesses[a] = (kir_access){.dtype = k->values[value].dtype, .space = space, .last = last,
                                  .store = true, .value = value};
    return a;
}

/* Access `a` walks tensor t, whose leading dims line up with the domain's. */
static void bind(kir_args *args, int a, const porta_tensor *t) {
    args->data[a] = core_tensor_data(t);
    for (int d = 0; d < porta_tensor_rank(t); d++) args->strides[a][d] = porta_tensor_strides(t)[d];
}

static const cpu_program *build(const kir_kernel *k) {
    const cpu_program *p = NULL;
    porta_status *s = cpu_jit_program(k, &p);
    if (s) {
        test_fail(__FILE__, __LINE__, "cpu_jit_program: %s", porta_status_message(s));
        porta_status_free(s);
        return NULL;
    }
    return p;
}

static void run(const cpu_program *p, const kir_args *args, int64_t work) {
    porta_status *s = cpu_run_kernel(test_cpu(), (void *)p, args, work);
    if (s) {
        test_fail(__FILE__, __LINE__, "cpu_run_kernel: %s", porta_status_message(s));
        porta_status_free(s);
    }
}

/* Bit-exact in value: NaN matches NaN, zeros match in sign. */
static bool same_values(const char *what, const porta_tensor *got, const porta_tensor *want) {
    double *g = test_to_doubles(got), *w = test_to_doubles(want);
    int64_t n = porta_tensor_numel(want), bad = 0;
    for (int64_t i = 0; i < n; i++) {
        bool ok = (isnan(g[i]) && isnan(w[i])) ||
                  (g[i] == w[i] && signbit(g[i]) == signbit(w[i]));
        if (!ok && bad++ < 3)
            test_fail(__FILE__, __LINE__, "%s: element %lld is %.9g, expected %.9g", what,
                      (long long)i, g[i], w[i]);
    }
    free(g);
    free(w);
    return bad == 0;
}

static bool close_values(const char *what, const porta_tensor *got, const porta_tensor *want,
                         double rtol, double atol) {
    double *g = test_to_doubles(got), *w = test_to_doubles(want);
    bool ok = test_close(what, g, w, porta_tensor_numel(want), rtol, atol);
    free(g);
    free(w);
    return ok;
}

static porta_tensor *scalar(porta_dtype dtype, double v) {
    porta_tensor *t = NULL;
    porta_status *s = porta_tensor_full(test_cpu(), dtype, 0, NULL, v, &t);
    if (s) porta_status_free(s);
    return t;
}

/* Releases up to 16 tensors (NULLs skipped). */
static void release_all(porta_tensor **ts, int n) {
    for (int i = 0; i < n; i++)
        if (ts[i]) porta_tensor_release(ts[i]);
}

/* ---- elementwise ---- */

TEST(codegen_elementwise_chain_with_broadcast_and_strides) {
    cache_begin();
    test_rng rng = test_rng_make(11);
    int64_t dom[2] = {37, 300}, row[1] = {300}, col[2] = {37, 1}, tr[2] = {300, 37};
    porta_tensor *t[16] = {0};
    t[0] = test_random_tensor(&rng, PORTA_F32, 2, dom, -3, 3);  /* x */
    t[1] = test_random_tensor(&rng, PORTA_F32, 1, row, -3, 3);  /* y, broadcast over rows */
    t[2] = test_random_tensor(&rng, PORTA_F32, 2, col, -3, 3);  /* z, broadcast along rows */
    t[3] = test_random_tensor(&rng, PORTA_F32, 2, tr, -3, 3);   /* w, read transposed */
    t[4] = test_empty(PORTA_F32, 2, dom);
    t[5] = test_empty(PORTA_F64, 2, tr);
    int perm[2] = {1, 0};
    porta_tensor *yb = NULL, *zb = NULL, *wt = NULL, *o2t = NULL;
    CHECK_OK(porta_expand(t[1], 2, dom, &yb));
    CHECK_OK(porta_expand(t[2], 2, dom, &zb));
    CHECK_OK(porta_permute(t[3], perm, &wt));
    CHECK_OK(porta_permute(t[5], perm, &o2t));
    t[6] = yb, t[7] = zb, t[8] = wt, t[9] = o2t;

    kir_kernel *k = kernel_new(2, 2);
    int x = load(k, PORTA_F32, KIR_FULL, KIR_LAST_UNIT);
    int y = load(k, PORTA_F32, KIR_FULL, KIR_LAST_UNIT);
    int z = load(k, PORTA_F32, KIR_FULL, KIR_LAST_ZERO);
    int w = load(k, PORTA_F32, KIR_FULL, KIR_LAST_ANY);
    int v6 = BINARY(k, PORTA_SUB, PORTA_F32,
                    BINARY(k, PORTA_ADD, PORTA_F32, BINARY(k, PORTA_MUL, PORTA_F32, x, y), z), w);
    int v9 = BINARY(k, PORTA_MAXIMUM, PORTA_F32, UNARY(k, PORTA_SIGMOID, PORTA_F32, v6),
                    constant(k, PORTA_F32, 0.3));
    store(k, v9, KIR_FULL, KIR_LAST_UNIT);
    store(k, op(k, KIR_CAST, 0, PORTA_F64, v6, 0, 0), KIR_FULL, KIR_LAST_ANY);
    const cpu_program *p = build(k);
    if (p) {
        kir_args args = {.sizes = {37, 300}};
        bind(&args, 0, t[0]), bind(&args, 1, yb), bind(&args, 2, zb), bind(&args, 3, wt);
        bind(&args, 4, t[4]), bind(&args, 5, o2t);
        run(p, &args, 37 * 300);
        CHECK(p->tile != NULL);

        porta_tensor *e[6] = {0}, *c03 = scalar(PORTA_F32, 0.3);
        CHECK_OK(porta_binary(PORTA_MUL, t[0], t[1], &e[0]));
        CHECK_OK(porta_binary(PORTA_ADD, e[0], t[2], &e[1]));
        CHECK_OK(porta_binary(PORTA_SUB, e[1], wt, &e[2]));
        CHECK_OK(porta_unary(PORTA_SIGMOID, e[2], &e[3]));
        CHECK_OK(porta_binary(PORTA_MAXIMUM, e[3], c03, &e[4]));
        CHECK_OK(porta_cast(e[2], PORTA_F64, &e[5]));
        same_values("maximum(sigmoid(x * y + z - w), 0.3)", t[4], e[4]);
        same_values("cast to float64, stored transposed", o2t, e[5]);
        release_all(e, 6);
        porta_tensor_release(c03);
    }
    free(k);
    release_all(t, 10);
    cache_end();
}

/* The tile entry writes exactly its block. */
TEST(codegen_tile_entry_writes_its_block) {
    cache_begin();
    int64_t dom[2] = {20, 50};
    porta_tensor *x = NULL, *out = NULL;
    CHECK_OK(porta_tensor_arange(test_cpu(), PORTA_F32, 0, 1000, 1, &x));
    CHECK_OK(porta_tensor_full(test_cpu(), PORTA_F32, 2, dom, -1, &out));
    kir_kernel *k = kernel_new(2, 2);
    int v = BINARY(k, PORTA_MUL, PORTA_F32, load(k, PORTA_F32, KIR_FULL, KIR_LAST_UNIT),
                   constant(k, PORTA_F32, 2));
    store(k, v, KIR_FULL, KIR_LAST_UNIT);
    const cpu_program *p = build(k);
    if (p && p->tile) {
        kir_args args = {.sizes = {20, 50}};
        args.data[0] = core_tensor_data(x), args.strides[0][0] = 50, args.strides[0][1] = 1;
        bind(&args, 1, out);
        p->tile(&args, cpu_kir_runtime(), 3, 4, 7, 30);
        double *o = test_to_doubles(out);
        int bad = 0;
        for (int i = 0; i < 20; i++)
            for (int j = 0; j < 50; j++) {
                bool inside = i >= 3 && i < 7 && j >= 7 && j < 37;
                bad += o[i * 50 + j] != (inside ? 2.0 * (i * 50 + j) : -1.0);
            }
        CHECK_MSG(bad == 0, "%d elements wrong after the tile call", bad);
        free(o);
    } else {
        CHECK(p && p->tile);
    }
    free(k);
    porta_tensor_release(x);
    porta_tensor_release(out);
    cache_end();
}

/* A chain long enough for the smallest block (over 128 array values), with
 * its row sums. */
TEST(codegen_long_chain_uses_small_blocks) {
    cache_begin();
    test_rng rng = test_rng_make(19);
    int64_t dom[2] = {5, 301}, rows[1] = {5};
    porta_tensor *x = test_random_tensor(&rng, PORTA_F32, 2, dom, -1, 1);
    porta_tensor *out = test_empty(PORTA_F32, 2, dom), *sums = test_empty(PORTA_F32, 1, rows);
    kir_kernel *k = kernel_new(2, 1);
    int v = load(k, PORTA_F32, KIR_FULL, KIR_LAST_UNIT);
    int scale = constant(k, PORTA_F32, 0.999), shift = constant(k, PORTA_F32, 0.01);
    for (int i = 0; i < 70; i++) {
        v = BINARY(k, PORTA_MUL, PORTA_F32, v, scale);
        v = BINARY(k, PORTA_ADD, PORTA_F32, v, shift);
    }
    store(k, v, KIR_FULL, KIR_LAST_UNIT);
    store(k, REDUCE(k, PORTA_REDUCE_SUM, PORTA_F32, v), KIR_OUTER, KIR_LAST_ANY);
    char *source = NULL;
    CHECK_OK(kir_render_c(k, &source));
    CHECK(source && strstr(source, "#define KIR_B 16"));
    free(source);
    const cpu_program *p = build(k);
    if (p) {
        kir_args args = {.sizes = {5, 301}};
        bind(&args, 0, x), bind(&args, 1, out), bind(&args, 2, sums);
        run(p, &args, 5);
        porta_tensor *cur = NULL, *sc = scalar(PORTA_F32, 0.999), *sh = scalar(PORTA_F32, 0.01);
        porta_tensor_retain(x);
        cur = x;
        for (int i = 0; i < 70; i++) {
            porta_tensor *a = NULL, *b = NULL;
            CHECK_OK(porta_binary(PORTA_MUL, cur, sc, &a));
            CHECK_OK(porta_binary(PORTA_ADD, a, sh, &b));
            porta_tensor_release(a);
            porta_tensor_release(cur);
            cur = b;
        }
        porta_tensor *want_sum = NULL;
        int axis = 1;
        CHECK_OK(porta_reduce(PORTA_REDUCE_SUM, cur, &axis, 1, false, &want_sum));
        same_values("70 x (x * 0.999 + 0.01)", out, cur);
        close_values("its row sums", sums, want_sum, 1e-5, 1e-5);
        porta_tensor_release(cur), porta_tensor_release(want_sum);
        porta_tensor_release(sc), porta_tensor_release(sh);
    }
    free(k);
    porta_tensor_release(x), porta_tensor_release(out), porta_tensor_release(sums);
    cache_end();
}

/* ---- reductions ---- */

/* (a * b + 1).relu() stored, and its row sums times 2: a prologue, a FULL
 * store in the reduction's pass and an OUTER epilogue. */
TEST(codegen_reduction_with_prologue_and_epilogue) {
    cache_begin();
    test_rng rng = test_rng_make(12);
    int64_t dom[2] = {64, 1000}, rows[1] = {64};
    porta_tensor *t[8] = {0};
    t[0] = test_random_tensor(&rng, PORTA_F32, 2, dom, -2, 2);
    t[1] = test_random_tensor(&rng, PORTA_F32, 2, dom, -2, 2);
    t[2] = test_empty(PORTA_F32, 2, dom);
    t[3] = test_empty(PORTA_F32, 1, rows);
    kir_kernel *k = kernel_new(2, 1);
    int a = load(k, PORTA_F32, KIR_FULL, KIR_LAST_UNIT), b = load(k, PORTA_F32, KIR_FULL, KIR_LAST_UNIT);
    int relu = BINARY(k, PORTA_MAXIMUM, PORTA_F32,
                      BINARY(k, PORTA_ADD, PORTA_F32, BINARY(k, PORTA_MUL, PORTA_F32, a, b),
                             constant(k, PORTA_F32, 1)),
                      constant(k, PORTA_F32, 0));
    store(k, relu, KIR_FULL, KIR_LAST_UNIT);
    int sum = REDUCE(k, PORTA_REDUCE_SUM, PORTA_F32, relu);
    store(k, BINARY(k, PORTA_MUL, PORTA_F32, sum, constant(k, PORTA_F32, 2)), KIR_OUTER,
          KIR_LAST_ANY);
    /* dead values (nothing stores them) are not computed */
    int dead = REDUCE(k, PORTA_REDUCE_MAX, PORTA_F32, UNARY(k, PORTA_EXP, PORTA_F32, a));
    BINARY(k, PORTA_MUL, PORTA_F32, dead, b);
    char *source = NULL;
    CHECK_OK(kir_render_c(k, &source));
    CHECK(source && !strstr(source, "rt->exp") && !strstr(source, "kir_fold_max_float(l"));
    free(source);
    const cpu_program *p = build(k);
    if (p) {
        CHECK(p->tile == NULL);
        kir_args args = {.sizes = {64, 1000}};
        bind(&args, 0, t[0]), bind(&args, 1, t[1]), bind(&args, 2, t[2]), bind(&args, 3, t[3]);
        run(p, &args, 64);
        porta_tensor *e[5] = {0}, *one = scalar(PORTA_F32, 1), *zero = scalar(PORTA_F32, 0);
        porta_tensor *two = scalar(PORTA_F32, 2);
        int axis = 1;
        CHECK_OK(porta_binary(PORTA_MUL, t[0], t[1], &e[0]));
        CHECK_OK(porta_binary(PORTA_ADD, e[0], one, &e[1]));
        CHECK_OK(porta_binary(PORTA_MAXIMUM, e[1], zero, &e[2]));
        CHECK_OK(porta_reduce(PORTA_REDUCE_SUM, e[2], &axis, 1, false, &e[3]));
        CHECK_OK(porta_binary(PORTA_MUL, e[3], two, &e[4]));
        same_values("relu(a * b + 1)", t[2], e[2]);
        close_values("relu(a * b + 1).sum(1) * 2", t[3], e[4], 1e-5, 1e-5);
        release_all(e, 5);
        porta_tensor_release(one), porta_tensor_release(zero), porta_tensor_release(two);
    }
    free(k);
    release_all(t, 8);
    cache_end();
}

/* Three passes: the row max, the sum of exp(x - max), the stores; a row
 * holding NaN comes out NaN, as eagerly. Short rows keep exp(x - max) from
 * the second pass for the third; long ones (past the row cache) recompute
 * it. In place (the store over the load) too. */
static void check_softmax(int64_t rows, int64_t cols, bool in_place) {
    test_rng rng = test_rng_make(13);
    int64_t dom[2] = {rows, cols};
    porta_tensor *x = test_random_tensor(&rng, PORTA_F32, 2, dom, -20, 20);
    porta_tensor *out = test_empty(PORTA_F32, 2, dom);
    if (x) ((float *)(void *)core_tensor_data(x))[1 * cols + 17] = NAN;
    kir_kernel *k = kernel_new(2, 1);
    int v = load(k, PORTA_F32, KIR_FULL, KIR_LAST_UNIT);
    int max = REDUCE(k, PORTA_REDUCE_MAX, PORTA_F32, v);
    int diff = BINARY(k, PORTA_SUB, PORTA_F32, v, max);
    int e = UNARY(k, PORTA_EXP, PORTA_F32, diff);
    int sum = REDUCE(k, PORTA_REDUCE_SUM, PORTA_F32, e);
    store(k, BINARY(k, PORTA_DIV, PORTA_F32, e, sum), KIR_FULL, KIR_LAST_UNIT);
    const cpu_program *p = build(k);
    if (p && x && out) {
        kir_args args = {.sizes = {rows, cols}};
        porta_tensor *copy = NULL;
        CHECK_OK(porta_cast(x, PORTA_F32, &copy)); /* the input, kept for the reference */
        bind(&args, 0, x), bind(&args, 1, in_place ? x : out);
        run(p, &args, rows);
        if (in_place) {
            CHECK_OK(porta_copy(x, out));
            CHECK_OK(porta_copy(copy, x));
        }
        porta_tensor_release(copy);
        porta_tensor *r[5] = {0};
        int axis = 1;
        CHECK_OK(porta_reduce(PORTA_REDUCE_MAX, x, &axis, 1, true, &r[0]));
        CHECK_OK(porta_binary(PORTA_SUB, x, r[0], &r[1]));
        CHECK_OK(porta_unary(PORTA_EXP, r[1], &r[2]));
        CHECK_OK(porta_reduce(PORTA_REDUCE_SUM, r[2], &axis, 1, true, &r[3]));
        CHECK_OK(porta_binary(PORTA_DIV, r[2], r[3], &r[4]));
        close_values("softmax", out, r[4], 2e-6, 0);
        double *g = test_to_doubles(out);
        CHECK(g && isnan(g[1 * cols]) && !isnan(g[0]));
        free(g);
        release_all(r, 5);
    }
    free(k);
    porta_tensor_release(x);
    porta_tensor_release(out);
}

TEST(codegen_softmax_three_passes) {
    cache_begin();
    for (int in_place = 0; in_place < 2; in_place++) {
        check_softmax(50, 333, in_place);
        check_softmax(3, 20000, in_place);
    }
    cache_end();
}

/* Layer norm without affine: the mean, then the variance of x - mean (kept
 * for the store pass), then (x - mean) * rsqrt(var / n + eps); and
 * exp(mean) per row, a vector-math call on a scalar. */
TEST(codegen_layer_norm_passes_and_scalar_math) {
    cache_begin();
    test_rng rng = test_rng_make(18);
    int64_t dom[2] = {40, 77}, rows[1] = {40};
    porta_tensor *t[4] = {0};
    t[0] = test_random_tensor(&rng, PORTA_F32, 2, dom, -3, 3);
    t[1] = test_empty(PORTA_F32, 2, dom);
    t[2] = test_empty(PORTA_F32, 1, rows);
    kir_kernel *k = kernel_new(2, 1);
    int x = load(k, PORTA_F32, KIR_FULL, KIR_LAST_UNIT);
    int n = constant(k, PORTA_F32, 77);
    int mean = BINARY(k, PORTA_DIV, PORTA_F32, REDUCE(k, PORTA_REDUCE_SUM, PORTA_F32, x), n);
    int d = BINARY(k, PORTA_SUB, PORTA_F32, x, mean);
    int sq = BINARY(k, PORTA_MUL, PORTA_F32, d, d);
    int var = BINARY(k, PORTA_DIV, PORTA_F32, REDUCE(k, PORTA_REDUCE_SUM, PORTA_F32, sq), n);
    int eps = constant(k, PORTA_F32, 1e-5);
    int rstd = UNARY(k, PORTA_RSQRT, PORTA_F32, BINARY(k, PORTA_ADD, PORTA_F32, var, eps));
    store(k, BINARY(k, PORTA_MUL, PORTA_F32, d, rstd), KIR_FULL, KIR_LAST_UNIT);
    store(k, UNARY(k, PORTA_EXP, PORTA_F32, mean), KIR_OUTER, KIR_LAST_ANY);
    const cpu_program *p = build(k);
    if (p) {
        kir_args args = {.sizes = {40, 77}};
        bind(&args, 0, t[0]), bind(&args, 1, t[1]), bind(&args, 2, t[2]);
        run(p, &args, 40);
        porta_tensor *e[10] = {0}, *cn = scalar(PORTA_F32, 77), *ce = scalar(PORTA_F32, 1e-5);
        int axis = 1;
        CHECK_OK(porta_reduce(PORTA_REDUCE_SUM, t[0], &axis, 1, true, &e[0]));
        CHECK_OK(porta_binary(PORTA_DIV, e[0], cn, &e[1]));
        CHECK_OK(porta_binary(PORTA_SUB, t[0], e[1], &e[2]));
        CHECK_OK(porta_binary(PORTA_MUL, e[2], e[2], &e[3]));
        CHECK_OK(porta_reduce(PORTA_REDUCE_SUM, e[3], &axis, 1, true, &e[4]));
        CHECK_OK(porta_binary(PORTA_DIV, e[4], cn, &e[5]));
        CHECK_OK(porta_binary(PORTA_ADD, e[5], ce, &e[6]));
        CHECK_OK(porta_unary(PORTA_RSQRT, e[6], &e[7]));
        CHECK_OK(porta_binary(PORTA_MUL, e[2], e[7], &e[8]));
        CHECK_OK(porta_unary(PORTA_EXP, e[1], &e[9]));
        close_values("layer norm", t[1], e[8], 1e-5, 1e-5);
        close_values("exp(mean)", t[2], e[9], 1e-5, 0);
        release_all(e, 10);
        porta_tensor_release(cn), porta_tensor_release(ce);
    }
    free(k);
    release_all(t, 4);
    cache_end();
}

/* Reducing the leading axis (the domain puts it last, walked with a stride),
 * integers widened to int64 for the sum, max, any and all. */
TEST(codegen_reductions_of_integers_over_a_strided_axis) {
    cache_begin();
    test_rng rng = test_rng_make(14);
    int64_t shape[2] = {300, 40}, cols[1] = {40};
    porta_tensor *t[8] = {0};
    t[0] = test_random_tensor(&rng, PORTA_I32, 2, shape, -10, 10);
    t[1] = test_empty(PORTA_I64, 1, cols);
    t[2] = test_empty(PORTA_I32, 1, cols);
    t[3] = test_empty(PORTA_BOOL, 1, cols);
    t[4] = test_empty(PORTA_BOOL, 1, cols);
    kir_kernel *k = kernel_new(2, 1);
    int v = load(k, PORTA_I32, KIR_FULL, KIR_LAST_ANY);
    int wide = op(k, KIR_CAST, 0, PORTA_I64, v, 0, 0);
    store(k, REDUCE(k, PORTA_REDUCE_SUM, PORTA_I64, wide), KIR_OUTER, KIR_LAST_ANY);
    store(k, REDUCE(k, PORTA_REDUCE_MAX, PORTA_I32, v), KIR_OUTER, KIR_LAST_ANY);
    store(k, REDUCE(k, PORTA_REDUCE_ANY, PORTA_BOOL, v), KIR_OUTER, KIR_LAST_ANY);
    store(k, REDUCE(k, PORTA_REDUCE_ALL, PORTA_BOOL, v), KIR_OUTER, KIR_LAST_ANY);
    const cpu_program *p = build(k);
    if (p) {
        kir_args args = {.sizes = {40, 300}};
        args.data[0] = core_tensor_data(t[0]), args.strides[0][0] = 1, args.strides[0][1] = 40;
        for (int i = 1; i <= 4; i++) bind(&args, i, t[i]);
        run(p, &args, 40);
        porta_reduce_op ops[4] = {PORTA_REDUCE_SUM, PORTA_REDUCE_MAX, PORTA_REDUCE_ANY,
                                  PORTA_REDUCE_ALL};
        int axis = 0;
        for (int i = 0; i < 4; i++) {
            porta_tensor *want = NULL;
            CHECK_OK(porta_reduce(ops[i], t[0], &axis, 1, false, &want));
            same_values(porta_reduce_op_name(ops[i]), t[1 + i], want);
            porta_tensor_release(want);
        }
    }
    free(k);
    release_all(t, 8);
    cache_end();
}

/* Two reduced dims; max/min propagate NaN; prod and sum; a full reduction
 * (outer rank 0) into a scalar. */
TEST(codegen_reductions_of_floats_over_two_dims_and_everything) {
    cache_begin();
    test_rng rng = test_rng_make(15);
    int64_t shape[3] = {6, 7, 45}, rows[1] = {6};
    porta_tensor *t[8] = {0};
    t[0] = test_random_tensor(&rng, PORTA_F32, 3, shape, 0.9, 1.1);
    for (int i = 1; i <= 4; i++) t[i] = test_empty(PORTA_F32, 1, rows);
    t[5] = test_empty(PORTA_F64, 0, NULL);
    if (t[0]) ((float *)(void *)core_tensor_data(t[0]))[2 * 315 + 100] = NAN;
    kir_kernel *k = kernel_new(3, 1);
    int v = load(k, PORTA_F32, KIR_FULL, KIR_LAST_UNIT);
    porta_reduce_op ops[4] = {PORTA_REDUCE_SUM, PORTA_REDUCE_PROD, PORTA_REDUCE_MAX,
                              PORTA_REDUCE_MIN};
    for (int i = 0; i < 4; i++) store(k, REDUCE(k, ops[i], PORTA_F32, v), KIR_OUTER, KIR_LAST_ANY);
    const cpu_program *p = build(k);
    kir_kernel *full = kernel_new(1, 0);
    int x = load(full, PORTA_F64, KIR_FULL, KIR_LAST_UNIT);
    store(full, REDUCE(full, PORTA_REDUCE_SUM, PORTA_F64, op(full, KIR_CAST, 0, PORTA_F64, x, 0, 0)),
          KIR_OUTER, KIR_LAST_ANY);
    full->accesses[0].dtype = full->values[0].dtype = PORTA_F32;
    const cpu_program *pf = build(full);
    if (p && pf) {
        kir_args args = {.sizes = {6, 7, 45}};
        bind(&args, 0, t[0]);
        for (int i = 1; i <= 4; i++) bind(&args, i, t[i]);
        run(p, &args, 6);
        kir_args fargs = {.sizes = {6 * 7 * 45}};
        fargs.data[0] = core_tensor_data(t[0]), fargs.strides[0][0] = 1;
        fargs.data[1] = core_tensor_data(t[5]);
        run(pf, &fargs, 1);
        int axes[2] = {1, 2};
        for (int i = 0; i < 4; i++) {
            porta_tensor *want = NULL;
            CHECK_OK(porta_reduce(ops[i], t[0], axes, 2, false, &want));
            close_values(porta_reduce_op_name(ops[i]), t[1 + i], want, 1e-5, 0);
            porta_tensor_release(want);
        }
        porta_tensor *wide = NULL, *want = NULL;
        CHECK_OK(porta_cast(t[0], PORTA_F64, &wide));
        CHECK_OK(porta_reduce(PORTA_REDUCE_SUM, wide, NULL, 0, false, &want));
        close_values("full sum", t[5], want, 1e-12, 0);
        porta_tensor_release(wide), porta_tensor_release(want);
    }
    free(k), free(full);
    release_all(t, 8);
    cache_end();
}

/* float16 and bfloat16 values round once per value, as eager ops do per op. */
TEST(codegen_half_values_round_once_per_value) {
    cache_begin();
    test_rng rng = test_rng_make(16);
    porta_dtype dtypes[2] = {PORTA_F16, PORTA_BF16};
    for (int di = 0; di < 2; di++) {
        porta_dtype d = dtypes[di];
        int64_t dom[2] = {8, 500}, rows[1] = {8};
        porta_tensor *t[6] = {0};
        t[0] = test_random_tensor(&rng, d, 2, dom, -2, 2);
        t[1] = test_random_tensor(&rng, d, 2, dom, -2, 2);
        t[2] = test_empty(d, 2, dom);
        t[3] = test_empty(d, 1, rows);
        kir_kernel *k = kernel_new(2, 1);
        int x = load(k, d, KIR_FULL, KIR_LAST_UNIT), y = load(k, d, KIR_FULL, KIR_LAST_UNIT);
        int v = UNARY(k, PORTA_EXP, d,
                      BINARY(k, PORTA_ADD, d, BINARY(k, PORTA_MUL, d, x, y), constant(k, d, 0.1)));
        store(k, v, KIR_FULL, KIR_LAST_UNIT);
        store(k, REDUCE(k, PORTA_REDUCE_SUM, d, v), KIR_OUTER, KIR_LAST_ANY);
        const cpu_program *p = build(k);
        if (p) {
            kir_args args = {.sizes = {8, 500}};
            for (int i = 0; i < 4; i++) bind(&args, i, t[i]);
            run(p, &args, 8);
            porta_tensor *e[4] = {0}, *c = scalar(d, 0.1);
            int axis = 1;
            CHECK_OK(porta_binary(PORTA_MUL, t[0], t[1], &e[0]));
            CHECK_OK(porta_binary(PORTA_ADD, e[0], c, &e[1]));
            CHECK_OK(porta_unary(PORTA_EXP, e[1], &e[2]));
            CHECK_OK(porta_reduce(PORTA_REDUCE_SUM, e[2], &axis, 1, false, &e[3]));
            same_values(d == PORTA_F16 ? "float16 exp(x * y + 0.1)" : "bfloat16 exp(x * y + 0.1)",
                        t[2], e[2]);
            close_values("half sum", t[3], e[3], d == PORTA_F16 ? 2e-3 : 1e-2, 0);
            release_all(e, 4);
            porta_tensor_release(c);
        }
        free(k);
        release_all(t, 6);
    }
    cache_end();
}

/* ---- every op on special values ---- */

static const double float_specials[] = {
    NAN, INFINITY, -INFINITY, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.5, -2.5, 3.0, -7.25, 0.75,
    1e-3, -1e-3, 1e30, -1e30, 1e-40, 88.5, -88.5, 0.9999, 12.0, -3.5};
static const double int_specials[] = {0, 1, -1, 2, -2, 3, 7, -7, 8, 31, 32, 63, 64, 100, -100,
                                      127, -128, 255, 1000, -1000, 65537, -65537, 5, -3};
#define SPECIAL_VALUES 24
#define SPECIALS (SPECIAL_VALUES * SPECIAL_VALUES)

/* A 1-D tensor of the specials (converted to dtype as eager casts do):
 * operand 0 and 1 together hold every pair of them, operand 2 a mix. */
static porta_tensor *specials(porta_dtype dtype, int operand) {
    bool fl = dtype == PORTA_F16 || dtype == PORTA_BF16 || dtype == PORTA_F32 || dtype == PORTA_F64;
    static double v[SPECIALS];
    for (int i = 0; i < SPECIALS; i++) {
        int pick = operand == 0   ? i / SPECIAL_VALUES
                   : operand == 1 ? i % SPECIAL_VALUES
                                  : (i * 5 + 3) % SPECIAL_VALUES;
        v[i] = (fl ? float_specials : int_specials)[pick];
    }
    int64_t n = SPECIALS;
    porta_tensor *wide = NULL, *t = NULL;
    porta_status *s = porta_tensor_from_host(test_cpu(), PORTA_F64, 1, &n, v, &wide);
    if (!s) s = porta_cast(wide, dtype, &t);
    if (s) porta_status_free(s);
    if (wide) porta_tensor_release(wide);
    return t;
}

typedef porta_status *(*eager_fn)(int op, porta_tensor *const *in, porta_tensor **out);
static porta_status *eager_unary(int o, porta_tensor *const *in, porta_tensor **out) {
    return porta_unary((porta_unary_op)o, in[0], out);
}
static porta_status *eager_binary(int o, porta_tensor *const *in, porta_tensor **out) {
    return porta_binary((porta_binary_op)o, in[0], in[1], out);
}
static porta_status *eager_ternary(int o, porta_tensor *const *in, porta_tensor **out) {
    return porta_ternary((porta_ternary_op)o, in[0], in[1], in[2], out);
}
static porta_status *eager_cast(int to, porta_tensor *const *in, porta_tensor **out) {
    return porta_cast(in[0], (porta_dtype)to, out);
}

/* One kernel per batch of at most 24 ops: loads of `inputs`, every op the
 * renderer supports for them, each stored; compared with the eager op. */
static void check_ops(kir_value_kind kind, int op_count, porta_dtype *in_dtypes, int arity,
                      porta_dtype (*result)(int op, porta_dtype in), eager_fn eager,
                      const char *family) {
    porta_tensor *in[3] = {0};
    for (int a = 0; a < arity; a++) in[a] = specials(in_dtypes[a], a);
    int ops[64], count = 0;
    for (int o = 0; o < op_count; o++) {
        kir_value probe = {.kind = kind, .op = o, .dtype = result(o, in_dtypes[arity - 1])};
        if (kir_c_supports(&probe, in_dtypes[0])) ops[count++] = o;
    }
    for (int first = 0; first < count; first += 24) {
        int n = count - first < 24 ? count - first : 24;
        kir_kernel *k = kernel_new(1, 1);
        int args[3];
        for (int a = 0; a < arity; a++) args[a] = load(k, in_dtypes[a], KIR_FULL, KIR_LAST_UNIT);
        porta_tensor *outs[24] = {0};
        for (int i = 0; i < n; i++) {
            int o = ops[first + i];
            porta_dtype rd = result(o, in_dtypes[arity - 1]);
            kir_value v = {.kind = kind, .op = kind == KIR_CAST ? 0 : o, .dtype = rd,
                           .args = {args[0], args[1], args[2]}};
            int64_t n1 = SPECIALS;
            outs[i] = test_empty(rd, 1, &n1);
            store(k, add_value(k, v), KIR_FULL, KIR_LAST_UNIT);
        }
        const cpu_program *p = build(k);
        if (p) {
            kir_args ka = {.sizes = {SPECIALS}};
            for (int a = 0; a < arity; a++) bind(&ka, a, in[a]);
            for (int i = 0; i < n; i++) bind(&ka, arity + i, outs[i]);
            run(p, &ka, SPECIALS);
            for (int i = 0; i < n; i++) {
                porta_tensor *want = NULL;
                porta_status *s = eager(ops[first + i], in, &want);
                char what[96];
                snprintf(what, sizeof what, "%s %d on dtype %d", family, ops[first + i],
                         (int)in_dtypes[arity - 1]);
                if (s) {
                    test_fail(__FILE__, __LINE__, "%s: eager failed: %s", what,
                              porta_status_message(s));
                    porta_status_free(s);
                    continue;
                }
                same_values(what, outs[i], want);
                porta_tensor_release(want);
            }
        }
        release_all(outs, n);
        free(k);
    }
    release_all(in, arity);
}

static bool is_predicate(int o) {
    return o == PORTA_ISNAN || o == PORTA_ISINF || o == PORTA_ISFINITE || o == PORTA_LOGICAL_NOT;
}
static porta_dtype unary_result(int o, porta_dtype in) { return is_predicate(o) ? PORTA_BOOL : in; }
static porta_dtype binary_result(int o, porta_dtype in) {
    /* logical ops and comparisons; the special functions after them keep
     * the float dtype */
    return o >= PORTA_LOGICAL_AND && o <= PORTA_GE ? PORTA_BOOL : in;
}
static porta_dtype same_result(int o, porta_dtype in) { return in; }
static porta_dtype cast_result(int o, porta_dtype in) { return (porta_dtype)o; }

TEST(codegen_unary_ops_match_eager_on_special_values) {
    cache_begin();
    porta_dtype dtypes[] = {PORTA_F32, PORTA_F64, PORTA_F16, PORTA_I32, PORTA_U8, PORTA_BOOL};
    for (int i = 0; i < 6; i++)
        check_ops(KIR_UNARY, PORTA_UNARY_OP_COUNT, &dtypes[i], 1, unary_result, eager_unary, "unary");
    cache_end();
}

TEST(codegen_binary_ops_match_eager_on_special_values) {
    cache_begin();
    porta_dtype dtypes[] = {PORTA_F32, PORTA_F64, PORTA_BF16, PORTA_I64, PORTA_I8, PORTA_U8,
                            PORTA_BOOL};
    for (int i = 0; i < 7; i++) {
        porta_dtype pair[2] = {dtypes[i], dtypes[i]};
        check_ops(KIR_BINARY, PORTA_BINARY_OP_COUNT, pair, 2, binary_result, eager_binary, "binary");
    }
    cache_end();
}

TEST(codegen_casts_and_ternary_ops_match_eager) {
    cache_begin();
    for (int d = 0; d < TEST_REAL_DTYPE_COUNT; d++) {
        porta_dtype from = (porta_dtype)d;
        check_ops(KIR_CAST, TEST_REAL_DTYPE_COUNT, &from, 1, cast_result, eager_cast, "cast to");
    }
    porta_dtype where_f[3] = {PORTA_BOOL, PORTA_F32, PORTA_F32};
    porta_dtype where_i[3] = {PORTA_BOOL, PORTA_I16, PORTA_I16};
    porta_dtype fma_f[3] = {PORTA_F64, PORTA_F64, PORTA_F64};
    porta_dtype fma_h[3] = {PORTA_F16, PORTA_F16, PORTA_F16};
    porta_dtype fma_i[3] = {PORTA_I32, PORTA_I32, PORTA_I32};
    porta_dtype *sets[5] = {where_f, where_i, fma_f, fma_h, fma_i};
    for (int i = 0; i < 5; i++)
        check_ops(KIR_TERNARY, i < 2 ? 1 : PORTA_TERNARY_OP_COUNT, sets[i], 3, same_result,
                  eager_ternary, "ternary");
    cache_end();
}

/* ---- caches ---- */

/* x * c + 1 over 100 float32 elements, checked. */
/* Values: 0 load, 1 constant c, 2 mul, 3 constant 1, 4 add; accesses: 0
 * the load, 1 the store. */
static kir_kernel *scale_kernel(double c) {
    kir_kernel *k = kernel_new(1, 1);
    int x = load(k, PORTA_F32, KIR_FULL, KIR_LAST_UNIT);
    int scale = constant(k, PORTA_F32, c);
    int product = BINARY(k, PORTA_MUL, PORTA_F32, x, scale);
    int one = constant(k, PORTA_F32, 1);
    store(k, BINARY(k, PORTA_ADD, PORTA_F32, product, one), KIR_FULL, KIR_LAST_UNIT);
    return k;
}

static void check_scale(const cpu_program *p, double c) {
    if (!p) return;
    float x[100], y[100];
    for (int i = 0; i < 100; i++) x[i] = (float)i, y[i] = -1;
    kir_args args = {.sizes = {100}};
    args.data[0] = x, args.data[1] = y, args.strides[0][0] = args.strides[1][0] = 1;
    run(p, &args, 100);
    int bad = 0;
    for (int i = 0; i < 100; i++) bad += y[i] != (float)i * (float)c + 1.0f;
    CHECK_MSG(bad == 0, "%d elements wrong", bad);
}

/* The one compiled object in the cache directory (path without ".so"). */
static bool cached_object(char *path, size_t cap, const char *skip) {
    char dir[512];
    snprintf(dir, sizeof dir, "%s/kernels", cache_root);
    DIR *d = opendir(dir);
    if (!d) return false;
    bool found = false;
    struct dirent *e;
    while ((e = readdir(d)) && !found) {
        size_t len = strlen(e->d_name);
        if (len < 4 || strcmp(e->d_name + len - 3, ".so") != 0) continue;
        snprintf(path, cap, "%s/%.*s", dir, (int)(len - 3), e->d_name);
        found = !skip || strcmp(path, skip) != 0;
    }
    closedir(d);
    return found;
}

/* A new, empty cache directory in place of the current one, holding only
 * kernels/<name>.so with `data`: the process has never loaded that path
 * (dlopen would hand back an image it already holds under the same name,
 * whatever the file holds now), as a fresh process would find it. */
static void plant_in_fresh_cache(const char *name, const void *data, size_t len) {
    cache_end();
    cache_begin();
    char path[700];
    snprintf(path, sizeof path, "%s/kernels", cache_root);
    CHECK(mkdir(path, 0755) == 0);
    snprintf(path, sizeof path, "%s/kernels/%s.so", cache_root, name);
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f) return;
    CHECK(fwrite(data, 1, len, f) == len);
    fclose(f);
}

static char *read_whole(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    char *bytes = malloc(1 << 22);
    *len = f && bytes ? fread(bytes, 1, 1 << 22, f) : 0;
    if (f) fclose(f);
    return bytes;
}

TEST(codegen_jit_memory_and_disk_caches) {
    cache_begin();
    porta_compiler_stats s0, s1;
    kir_kernel *k = scale_kernel(3), *other = scale_kernel(5);
    porta_compiler_stats_get(&s0);
    check_scale(build(k), 3);
    check_scale(build(k), 3);
    porta_compiler_stats_get(&s1);
    CHECK(s1.kernels_compiled == s0.kernels_compiled + 1);
    CHECK(s1.kernel_memory_hits == s0.kernel_memory_hits + 1);

    char path[600], other_path[600], file[620];
    CHECK(cached_object(path, sizeof path, NULL));
    snprintf(file, sizeof file, "%s.c", path);
    CHECK_MSG(access(file, R_OK) == 0, "the source is kept beside the object");
    char name[600];
    snprintf(name, sizeof name, "%s", strrchr(path, '/') ? strrchr(path, '/') + 1 : path);

    /* a fresh process's view: the disk cache */
    cpu_jit_forget_loaded();
    check_scale(build(k), 3);
    porta_compiler_stats_get(&s0);
    CHECK(s0.kernel_disk_hits == s1.kernel_disk_hits + 1);
    CHECK(s0.kernels_compiled == s1.kernels_compiled);

    /* an entry holding another kernel is rebuilt */
    check_scale(build(other), 5);
    CHECK(cached_object(other_path, sizeof other_path, path));
    snprintf(file, sizeof file, "%s.so", other_path);
    size_t len = 0;
    char *bytes = read_whole(file, &len);
    CHECK(len > 0);
    plant_in_fresh_cache(name, bytes, len);
    free(bytes);
    porta_compiler_stats_get(&s0);
    check_scale(build(k), 3);
    porta_compiler_stats_get(&s1);
    CHECK(s1.kernels_compiled == s0.kernels_compiled + 1);
    CHECK(s1.kernel_disk_hits == s0.kernel_disk_hits);

    /* a corrupt (here: truncated to text) entry is rebuilt */
    plant_in_fresh_cache(name, "not an object", 13);
    check_scale(build(k), 3);
    porta_compiler_stats_get(&s0);
    CHECK(s0.kernels_compiled == s1.kernels_compiled + 1);
    CHECK(s0.kernel_disk_hits == s1.kernel_disk_hits);
    free(k), free(other);
    cache_end();
}

/* A FIFO where the kernel's object should be, in a fresh cache. */
static void plant_fifo_in_fresh_cache(const char *name) {
    cache_end();
    cache_begin();
    char path[700];
    snprintf(path, sizeof path, "%s/kernels", cache_root);
    CHECK(mkdir(path, 0755) == 0);
    snprintf(path, sizeof path, "%s/kernels/%s.so", cache_root, name);
    CHECK(mkfifo(path, 0644) == 0);
}

/* A damaged entry is caught before dlopen (which faults on a truncated or
 * overwritten object, and blocks opening a FIFO), removed and rebuilt:
 * the kernel compiles again, runs right, and the cache then holds a sound
 * regular file. */
TEST(codegen_jit_damaged_disk_entries_are_rebuilt) {
    cache_begin();
    kir_kernel *k = scale_kernel(11);
    check_scale(build(k), 11);
    char base[600], object[620];
    CHECK(cached_object(base, sizeof base, NULL));
    snprintf(object, sizeof object, "%s.so", base);
    size_t len = 0;
    unsigned char *good = (unsigned char *)read_whole(object, &len);
    CHECK(len > 4096);
    const char *slash = strrchr(base, '/');
    char name[600];
    snprintf(name, sizeof name, "%s", slash ? slash + 1 : base);

    for (int damage = 0; damage < 4 && len > 4096; damage++) {
        unsigned char *bytes = malloc(len);
        memcpy(bytes, good, len);
        const char *what = damage == 0   ? "truncated to half"
                           : damage == 1 ? "40 bytes flipped mid-file"
                           : damage == 2 ? "40 bytes flipped in its last page"
                                         : "a FIFO";
        if (damage == 0) plant_in_fresh_cache(name, bytes, len / 2);
        for (size_t i = 0; damage == 1 && i < 40; i++) bytes[len / 2 + i] ^= 0x5a;
        for (size_t i = 0; damage == 2 && i < 40; i++) bytes[len - 200 + i] ^= 0x5a;
        if (damage == 1 || damage == 2) plant_in_fresh_cache(name, bytes, len);
        if (damage == 3) plant_fifo_in_fresh_cache(name);
        free(bytes);
        porta_compiler_stats before, after;
        porta_compiler_stats_get(&before);
        check_scale(build(k), 11);
        porta_compiler_stats_get(&after);
        CHECK_MSG(after.kernels_compiled == before.kernels_compiled + 1, "%s: not rebuilt", what);
        CHECK_MSG(after.kernel_disk_hits == before.kernel_disk_hits, "%s: loaded", what);
        char path[700];
        snprintf(path, sizeof path, "%s/kernels/%s.so", cache_root, name);
        struct stat st;
        CHECK_MSG(lstat(path, &st) == 0 && S_ISREG(st.st_mode), "%s: not replaced", what);
        CHECK_MSG(rt_kernel_cache_check(path, NULL, NULL), "%s: replaced by a damaged entry", what);
    }
    free(good);
    free(k);
    cache_end();
}

/* No compiler: unavailable (the scheduler runs the ops eagerly); a failing
 * one: unsupported, with its output. */
TEST(codegen_jit_without_a_compiler_is_unavailable) {
    cache_begin();
    const char *old = getenv("CC");
    char saved[256] = "";
    if (old) snprintf(saved, sizeof saved, "%s", old);
    setenv("CC", "/nonexistent/cc", 1);
    kir_kernel *k = scale_kernel(7);
    const cpu_program *p = NULL;
    CHECK_ERR(cpu_jit_program(k, &p), PORTA_ERR_UNAVAILABLE, "/nonexistent/cc");
    CHECK(p == NULL);
    /* a compiler that runs but fails: its output in the error */
    setenv("CC", "cc -include /nonexistent/header.h", 1);
    CHECK_ERR(cpu_jit_program(k, &p), PORTA_ERR_UNSUPPORTED, "header.h");
    CHECK(p == NULL);
    if (old)
        setenv("CC", saved, 1);
    else
        unsetenv("CC");
    check_scale(build(k), 7); /* a working compiler again */
    free(k);
    cache_end();
}

/* A cache directory that cannot be made: kernels compile into a private
 * directory instead (here under TMPDIR = the test's directory). */
TEST(codegen_jit_without_a_usable_cache_directory) {
    cache_begin();
    const char *old_tmp = getenv("TMPDIR");
    char saved[256] = "";
    if (old_tmp) snprintf(saved, sizeof saved, "%s", old_tmp);
    char blocker[300];
    snprintf(blocker, sizeof blocker, "%s/file", cache_root);
    FILE *f = fopen(blocker, "w");
    if (f) fclose(f);
    setenv("PORTA_CACHE_DIR", blocker, 1); /* a file where a directory should be */
    setenv("TMPDIR", cache_root, 1);
    kir_kernel *k = scale_kernel(9);
    check_scale(build(k), 9);
    if (old_tmp)
        setenv("TMPDIR", saved, 1);
    else
        unsetenv("TMPDIR");
    free(k);
    cache_end();
}

/* ---- validation and hashing ---- */

TEST(codegen_check_rejects_malformed_kernels) {
    kir_kernel *good = scale_kernel(2), *k = calloc(1, sizeof *k);
    CHECK_OK(kir_check(good));
    char *source = NULL;
#define BROKEN(change, code, needle)                                   \
    do {                                                               \
        *k = *good;                                                    \
        change;                                                        \
        CHECK_ERR(kir_check(k), code, needle);                         \
        CHECK_ERR(kir_render_c(k, &source), code, needle);             \
        CHECK(source == NULL);                                         \
    } while (0)
    BROKEN(k->rank = 0, PORTA_ERR_INVALID_ARGUMENT, "rank 0");
    BROKEN(k->rank = PORTA_MAX_RANK + 1, PORTA_ERR_INVALID_ARGUMENT, "rank");
    BROKEN(k->outer_rank = 2, PORTA_ERR_INVALID_ARGUMENT, "outer_rank");
    BROKEN(k->outer_rank = 0, PORTA_ERR_INVALID_ARGUMENT, "reductions");
    BROKEN(k->values[2].args[0] = 2, PORTA_ERR_INVALID_ARGUMENT, "defined before");
    BROKEN(k->values[2].args[1] = 7, PORTA_ERR_INVALID_ARGUMENT, "defined before");
    BROKEN(k->values[2].args[1] = -1, PORTA_ERR_INVALID_ARGUMENT, "defined before");
    BROKEN(k->values[2].space = KIR_OUTER, PORTA_ERR_INVALID_ARGUMENT, "OUTER");
    BROKEN(k->values[0].dtype = PORTA_F64, PORTA_ERR_INVALID_ARGUMENT, "access 0");
    BROKEN(k->values[0].access = 1, PORTA_ERR_INVALID_ARGUMENT, "store access");
    BROKEN(k->values[0].access = 9, PORTA_ERR_INVALID_ARGUMENT, "access 9");
    BROKEN(k->values[1].dtype = PORTA_I32, PORTA_ERR_INVALID_ARGUMENT, "contract");
    BROKEN(k->values[3].kind = (kir_value_kind)42, PORTA_ERR_INVALID_ARGUMENT, "kind");
    BROKEN(k->values[3].dtype = (porta_dtype)77, PORTA_ERR_INVALID_ARGUMENT, "dtype");
    BROKEN(k->accesses[1].value = 99, PORTA_ERR_INVALID_ARGUMENT, "stores value 99");
    BROKEN(k->accesses[1].dtype = PORTA_F16, PORTA_ERR_INVALID_ARGUMENT, "dtype");
    BROKEN(k->accesses[1].last = KIR_LAST_ZERO, PORTA_ERR_INVALID_ARGUMENT, "zero");
    BROKEN(k->accesses[1].store = false, PORTA_ERR_INVALID_ARGUMENT, "stores nothing");
    BROKEN(k->value_count = 0, PORTA_ERR_INVALID_ARGUMENT, "value_count");
    BROKEN(k->access_count = KIR_MAX_ACCESSES + 1, PORTA_ERR_INVALID_ARGUMENT, "access_count");
    BROKEN((k->values[4].kind = KIR_UNARY, k->values[4].op = PORTA_ERFINV),
           PORTA_ERR_UNSUPPORTED, "not supported");
    BROKEN((k->values[4].kind = KIR_BINARY, k->values[4].op = PORTA_FLOOR_DIVIDE,
            k->values[4].dtype = k->values[3].dtype = k->values[0].dtype =
                k->accesses[0].dtype = k->accesses[1].dtype = PORTA_I32,
            k->values[1].dtype = PORTA_I32),
           PORTA_ERR_UNSUPPORTED, "not supported");
    /* reductions: of an OUTER value, or not OUTER themselves */
    kir_kernel *r = kernel_new(2, 1);
    int v = load(r, PORTA_F32, KIR_FULL, KIR_LAST_UNIT);
    int sum = REDUCE(r, PORTA_REDUCE_SUM, PORTA_F32, v);
    store(r, REDUCE(r, PORTA_REDUCE_SUM, PORTA_F32, sum), KIR_OUTER, KIR_LAST_ANY);
    CHECK_ERR(kir_check(r), PORTA_ERR_INVALID_ARGUMENT, "not FULL");
    r->values[2].args[0] = v;
    CHECK_OK(kir_check(r));
    r->values[2].space = KIR_FULL;
    CHECK_ERR(kir_check(r), PORTA_ERR_INVALID_ARGUMENT, "must be OUTER");
    r->values[2].space = KIR_OUTER;
    r->accesses[1].space = KIR_FULL; /* a FULL store of an OUTER value is a broadcast: fine */
    CHECK_OK(kir_check(r));
    r->values[2].op = PORTA_REDUCE_ARGMAX;
    CHECK_ERR(kir_check(r), PORTA_ERR_UNSUPPORTED, "not supported");
    CHECK_ERR(kir_check(NULL), PORTA_ERR_INVALID_ARGUMENT, "NULL");
#undef BROKEN
    free(r), free(good), free(k);
}

TEST(codegen_hash_covers_the_source_and_skips_unused_slots) {
    kir_kernel *a = scale_kernel(2), *b = scale_kernel(2), *c = scale_kernel(2.5);
    CHECK(kir_hash(a) == kir_hash(b));
    b->values[0].args[2] = 12345;   /* loads have no arguments */
    b->values[1].access = 3;        /* constants have no access */
    b->accesses[0].value = 9;       /* loads store no value */
    b->values[b->value_count].op = 77; /* past the last value */
    CHECK(kir_hash(a) == kir_hash(b));
    CHECK(kir_hash(a) != kir_hash(c));
    b->accesses[0].last = KIR_LAST_ANY;
    CHECK(kir_hash(a) != kir_hash(b));
    char *sa = NULL, *sb = NULL;
    CHECK_OK(kir_render_c(a, &sa));
    CHECK_OK(kir_render_c(a, &sb));
    CHECK(sa && sb && strcmp(sa, sb) == 0 && strstr(sa, "kir_main") && !strstr(sa, "kir_row"));
    CHECK(sa && strstr(sa, "kir_tile") == NULL); /* rank 1: no tile entry */
    free(sa), free(sb);
    free(a), free(b), free(c);
}

/* Parameters (run-time scalars converted as an eager fill converts them),
 * stored broadcast into FULL outputs, and OUTER loads feeding a reduction's
 * epilogue: sum(x, 1) + float(b) * p. */
TEST(codegen_params_and_outer_loads) {
    cache_begin();
    test_rng rng = test_rng_make(17);
    int64_t dom[2] = {9, 70}, rows[1] = {9};
    porta_tensor *t[8] = {0};
    t[0] = test_random_tensor(&rng, PORTA_F32, 2, dom, -1, 1);
    t[1] = test_random_tensor(&rng, PORTA_F16, 1, rows, -1, 1);
    t[2] = test_empty(PORTA_F32, 1, rows);
    t[3] = test_empty(PORTA_F16, 2, dom);
    t[4] = test_empty(PORTA_I32, 2, dom);
    t[5] = test_empty(PORTA_BOOL, 2, dom);
    kir_kernel *k = kernel_new(2, 1);
    int x = load(k, PORTA_F32, KIR_FULL, KIR_LAST_UNIT);
    int b = load(k, PORTA_F16, KIR_OUTER, KIR_LAST_ANY);
    int p = add_value(k, (kir_value){.kind = KIR_PARAM, .dtype = PORTA_F32, .param = 2});
    int sum = REDUCE(k, PORTA_REDUCE_SUM, PORTA_F32, x);
    int scaled = BINARY(k, PORTA_MUL, PORTA_F32, op(k, KIR_CAST, 0, PORTA_F32, b, 0, 0), p);
    store(k, BINARY(k, PORTA_ADD, PORTA_F32, sum, scaled), KIR_OUTER, KIR_LAST_ANY);
    int ph = add_value(k, (kir_value){.kind = KIR_PARAM, .dtype = PORTA_F16, .param = 0});
    int pi = add_value(k, (kir_value){.kind = KIR_PARAM, .dtype = PORTA_I32, .param = 1});
    int pb = add_value(k, (kir_value){.kind = KIR_PARAM, .dtype = PORTA_BOOL, .param = 5});
    store(k, ph, KIR_FULL, KIR_LAST_UNIT);
    store(k, pi, KIR_FULL, KIR_LAST_ANY);
    store(k, pb, KIR_FULL, KIR_LAST_UNIT);
    CHECK_OK(kir_check(k));
    for (int round = 0; round < 2; round++) {
        const cpu_program *prog = build(k);
        if (!prog) break;
        double pv = round ? -0.75 : 3.1;
        kir_args args = {.sizes = {9, 70}, .params = {0.1 + round, -2.7 * (round + 1), pv, 0, 0,
                                                       round ? 0.0 : NAN}};
        for (int i = 0; i < 6; i++) bind(&args, i, t[i]);
        run(prog, &args, 9);
        porta_tensor *e[4] = {0}, *ps = scalar(PORTA_F32, pv);
        int axis = 1;
        CHECK_OK(porta_reduce(PORTA_REDUCE_SUM, t[0], &axis, 1, false, &e[0]));
        CHECK_OK(porta_cast(t[1], PORTA_F32, &e[1]));
        CHECK_OK(porta_binary(PORTA_MUL, e[1], ps, &e[2]));
        CHECK_OK(porta_binary(PORTA_ADD, e[0], e[2], &e[3]));
        close_values("sum(x, 1) + b * p", t[2], e[3], 1e-6, 1e-6);
        porta_dtype fills[3] = {PORTA_F16, PORTA_I32, PORTA_BOOL};
        double values[3] = {args.params[0], args.params[1], args.params[5]};
        for (int i = 0; i < 3; i++) {
            porta_tensor *want = NULL;
            CHECK_OK(porta_tensor_full(test_cpu(), fills[i], 2, dom, values[i], &want));
            same_values("a parameter stored", t[3 + i], want);
            porta_tensor_release(want);
        }
        release_all(e, 4);
        porta_tensor_release(ps);
    }
    free(k);
    release_all(t, 8);
    cache_end();
}

/* ---- block shapes: full blocks, narrow pieces, ragged tails ---- */

/* maximum(x + b, p) with the eager NaN and signed-zero rules, in float. */
static float bias_relu(float x, float b, float p) {
    float s = x + b;
    return isnan(s) ? s : isnan(p) ? p : s < p ? p : s;
}

/* A GEMM epilogue's shape: tiles of every width from 1 to past two blocks
 * (narrow strips, 16-wide pieces, full blocks and tails), one to five rows,
 * covering the domain exactly once; special values in x. */
TEST(codegen_tiles_of_ragged_shapes_cover_the_domain) {
    cache_begin();
    test_rng rng = test_rng_make(23);
    enum { R = 13, C = 300 };
    int64_t dom[2] = {R, C}, row[1] = {C};
    porta_tensor *x = test_random_tensor(&rng, PORTA_F32, 2, dom, -2, 2);
    porta_tensor *b = test_random_tensor(&rng, PORTA_F32, 1, row, -1, 1);
    porta_tensor *out = test_empty(PORTA_F32, 2, dom);
    float *xs = (float *)core_tensor_data(x);
    const float specials[] = {NAN, INFINITY, -INFINITY, -0.0f, 0.0f};
    for (int i = 0; i < R * C; i += 7) xs[i] = specials[(i / 7) % 5];
    kir_kernel *k = kernel_new(2, 2);
    int xv = load(k, PORTA_F32, KIR_FULL, KIR_LAST_UNIT);
    int bv = load(k, PORTA_F32, KIR_FULL, KIR_LAST_UNIT);
    int pv = add_value(k, (kir_value){.kind = KIR_PARAM, .dtype = PORTA_F32, .param = 0});
    store(k, BINARY(k, PORTA_MAXIMUM, PORTA_F32, BINARY(k, PORTA_ADD, PORTA_F32, xv, bv), pv),
          KIR_FULL, KIR_LAST_UNIT);
    const cpu_program *p = build(k);
    CHECK(p && p->tile);
    for (int round = 0; p && p->tile && round < 2; round++) {
        float param = round ? -0.0f : 0.0f;
        kir_args args = {.sizes = {R, C}, .params = {param}};
        bind(&args, 0, x);
        args.data[1] = core_tensor_data(b), args.strides[1][0] = 0, args.strides[1][1] = 1;
        bind(&args, 2, out);
        float *o = (float *)core_tensor_data(out);
        for (int i = 0; i < R * C; i++) o[i] = 12345;
        /* columns in widths 1, 2, ..., rows in heights 1..5 */
        for (int64_t col = 0, width = 1; col < C; col += width, width++) {
            if (width > C - col) width = C - col;
            for (int64_t r0 = 0, h = 1; r0 < R; r0 += h, h = h % 5 + 1) {
                if (h > R - r0) h = R - r0;
                p->tile(&args, cpu_kir_runtime(), r0, h, col, width);
            }
        }
        const float *bs = (const float *)core_tensor_data(b);
        int bad = 0;
        for (int i = 0; i < R; i++)
            for (int j = 0; j < C; j++) {
                float want = bias_relu(xs[i * C + j], bs[j], param), got = o[i * C + j];
                bool ok = (isnan(want) && isnan(got)) ||
                          (want == got && signbit(want) == signbit(got));
                if (!ok && bad++ < 3)
                    test_fail(__FILE__, __LINE__, "element [%d, %d] is %.9g, expected %.9g", i,
                              j, got, want);
            }
    }
    free(k);
    porta_tensor_release(x);
    porta_tensor_release(b);
    porta_tensor_release(out);
    cache_end();
}

/* kir_main over ranges that start and end mid-row, take whole rows at once
 * and cross the boundaries of dim rank - 2, with an input read permuted. */
TEST(codegen_main_ranges_of_whole_and_partial_rows) {
    cache_begin();
    test_rng rng = test_rng_make(29);
    enum { A = 3, B = 5, C = 37 };
    int64_t dom[3] = {A, B, C}, perm_sizes[3] = {A, C, B};
    porta_tensor *x = test_random_tensor(&rng, PORTA_F32, 3, dom, -2, 2);
    porta_tensor *yt = test_random_tensor(&rng, PORTA_F32, 3, perm_sizes, -2, 2);
    porta_tensor *out = test_empty(PORTA_F32, 3, dom), *y = NULL;
    int perm[3] = {0, 2, 1};
    CHECK_OK(porta_permute(yt, perm, &y)); /* [A, B, C] read with a last stride of B */
    kir_kernel *k = kernel_new(3, 3);
    int xv = load(k, PORTA_F32, KIR_FULL, KIR_LAST_UNIT);
    int yv = load(k, PORTA_F32, KIR_FULL, KIR_LAST_ANY);
    store(k, BINARY(k, PORTA_SUB, PORTA_F32, BINARY(k, PORTA_MUL, PORTA_F32, xv, yv), xv),
          KIR_FULL, KIR_LAST_UNIT);
    const cpu_program *p = build(k);
    if (p) {
        kir_args args = {.sizes = {A, B, C}};
        bind(&args, 0, x), bind(&args, 1, y), bind(&args, 2, out);
        const int64_t cuts[] = {0, 1, 37, 40, 74, 111, 185, 186, 300, 371, 555};
        for (size_t i = 0; i + 1 < sizeof cuts / sizeof *cuts; i++)
            p->main(&args, cpu_kir_runtime(), cuts[i], cuts[i + 1]);
        porta_tensor *e[2] = {0};
        CHECK_OK(porta_binary(PORTA_MUL, x, y, &e[0]));
        CHECK_OK(porta_binary(PORTA_SUB, e[0], x, &e[1]));
        same_values("x * y - x over pieces of the range", out, e[1]);
        release_all(e, 2);
    }
    free(k);
    porta_tensor *all[] = {x, yt, out, y};
    release_all(all, 4);
    cache_end();
}

/* Rows of 1 to 40 elements (less than the lanes, a tail, whole pieces):
 * sum, max and min per row, and x - max stored in a second pass; NaN in
 * some rows. Max, min and x - max are exact; the sum is checked against a
 * double sum. */
TEST(codegen_short_rows_of_every_length) {
    cache_begin();
    test_rng rng = test_rng_make(31);
    enum { R = 6 };
    kir_kernel *k = kernel_new(2, 1);
    int xv = load(k, PORTA_F32, KIR_FULL, KIR_LAST_UNIT);
    int sum = REDUCE(k, PORTA_REDUCE_SUM, PORTA_F32, xv);
    int max = REDUCE(k, PORTA_REDUCE_MAX, PORTA_F32, xv);
    int min = REDUCE(k, PORTA_REDUCE_MIN, PORTA_F32, xv);
    store(k, sum, KIR_OUTER, KIR_LAST_ANY);
    store(k, max, KIR_OUTER, KIR_LAST_ANY);
    store(k, min, KIR_OUTER, KIR_LAST_ANY);
    store(k, BINARY(k, PORTA_SUB, PORTA_F32, xv, max), KIR_FULL, KIR_LAST_UNIT);
    const cpu_program *p = build(k);
    for (int64_t n = 1; p && n <= 40; n++) {
        int64_t dom[2] = {R, n}, rows[1] = {R};
        porta_tensor *t[5] = {test_random_tensor(&rng, PORTA_F32, 2, dom, -3, 3),
                              test_empty(PORTA_F32, 1, rows), test_empty(PORTA_F32, 1, rows),
                              test_empty(PORTA_F32, 1, rows), test_empty(PORTA_F32, 2, dom)};
        float *xs = (float *)core_tensor_data(t[0]);
        xs[(R - 1) * n + n / 2] = NAN; /* the last row holds a NaN */
        kir_args args = {.sizes = {R, n}};
        for (int i = 0; i < 5; i++) bind(&args, i, t[i]);
        run(p, &args, R);
        const float *s = (const float *)core_tensor_data(t[1]);
        const float *mx = (const float *)core_tensor_data(t[2]);
        const float *mn = (const float *)core_tensor_data(t[3]);
        const float *d = (const float *)core_tensor_data(t[4]);
        int bad = 0;
        for (int r = 0; r < R; r++) {
            double want_sum = 0;
            float want_max = -INFINITY, want_min = INFINITY;
            bool nan = false;
            for (int64_t j = 0; j < n; j++) {
                float v = xs[r * n + j];
                want_sum += v;
                nan |= isnan(v);
                want_max = v > want_max ? v : want_max;
                want_min = v < want_min ? v : want_min;
            }
            if (nan) want_max = want_min = NAN;
            bool ok = nan ? isnan(s[r]) && isnan(mx[r]) && isnan(mn[r])
                          : fabs(s[r] - want_sum) <= 1e-5 * (1 + fabs(want_sum)) &&
                                mx[r] == want_max && mn[r] == want_min;
            for (int64_t j = 0; j < n; j++) {
                float want = xs[r * n + j] - want_max, got = d[r * n + j];
                ok &= (isnan(want) && isnan(got)) || want == got;
            }
            if (!ok && bad++ < 3)
                test_fail(__FILE__, __LINE__,
                          "rows of %lld: row %d sum %.9g max %.9g min %.9g, expected %.9g %.9g "
                          "%.9g (or x - max wrong)",
                          (long long)n, r, s[r], mx[r], mn[r], want_sum, want_max, want_min);
        }
        release_all(t, 5);
    }
    free(k);
    cache_end();
}

/* kir_main steps the outer index row by row (a carry into earlier dims
 * instead of divisions): pieces of the row range over two outer dims, the
 * input read permuted, against the eager reductions. */
TEST(codegen_reduction_rows_walked_over_two_outer_dims) {
    cache_begin();
    test_rng rng = test_rng_make(37);
    enum { A = 4, B = 5, C = 9 };
    int64_t stored[3] = {B, A, C}, outer[2] = {A, B};
    porta_tensor *xs = test_random_tensor(&rng, PORTA_I32, 3, stored, -50, 50), *x = NULL;
    int perm[3] = {1, 0, 2};
    CHECK_OK(porta_permute(xs, perm, &x)); /* [A, B, C], dims 0 and 1 swapped in memory */
    porta_tensor *sums = test_empty(PORTA_I32, 2, outer), *maxs = test_empty(PORTA_I32, 2, outer);
    kir_kernel *k = kernel_new(3, 2);
    int xv = load(k, PORTA_I32, KIR_FULL, KIR_LAST_UNIT);
    store(k, REDUCE(k, PORTA_REDUCE_SUM, PORTA_I32, xv), KIR_OUTER, KIR_LAST_ANY);
    store(k, REDUCE(k, PORTA_REDUCE_MAX, PORTA_I32, xv), KIR_OUTER, KIR_LAST_ANY);
    const cpu_program *p = build(k);
    if (p) {
        kir_args args = {.sizes = {A, B, C}};
        bind(&args, 0, x), bind(&args, 1, sums), bind(&args, 2, maxs);
        const int64_t cuts[] = {0, 1, 3, 5, 6, 11, 19, 20};
        for (size_t i = 0; i + 1 < sizeof cuts / sizeof *cuts; i++)
            p->main(&args, cpu_kir_runtime(), cuts[i], cuts[i + 1]);
        porta_tensor *want_sum = NULL, *want_max = NULL;
        int axis = 2;
        CHECK_OK(porta_reduce(PORTA_REDUCE_SUM, x, &axis, 1, false, &want_sum));
        CHECK_OK(porta_reduce(PORTA_REDUCE_MAX, x, &axis, 1, false, &want_max));
        same_values("row sums over pieces of the range", sums, want_sum);
        same_values("row maxima over pieces of the range", maxs, want_max);
        porta_tensor_release(want_sum);
        porta_tensor_release(want_max);
    }
    free(k);
    porta_tensor *all[] = {xs, x, sums, maxs};
    release_all(all, 4);
    cache_end();
}
