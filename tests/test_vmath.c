/* vmath's float32 functions against double-precision libm, for every ISA the
 * CPU has: the largest error in ULP of the correctly rounded result is
 * printed and bounded, and NaN, infinities, signed zeros, denormals and the
 * ends of each range must come out as libm's. */
#include <float.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/vmath.h"
#include "test.h"

typedef struct vmath_case {
    const char *name;
    size_t offset; /* of the function in vmath_table */
    double (*reference)(double);
    double max_ulp;
} vmath_case;

static double sigmoid_ref(double x) { return 1.0 / (1.0 + exp(-x)); }

#define CASE(op, ref, ulp) {#op, offsetof(vmath_table, op), ref, ulp}
static const vmath_case cases[] = {
    CASE(exp, exp, 1),       CASE(expm1, expm1, 2), CASE(log, log, 2),
    CASE(log1p, log1p, 2),   CASE(tanh, tanh, 3),   CASE(sigmoid, sigmoid_ref, 3),
    CASE(erf, erf, 3),
};

static vmath_fn function_of(const vmath_table *table, const vmath_case *c) {
    vmath_fn fn;
    memcpy(&fn, (const char *)table + c->offset, sizeof fn);
    return fn;
}

/* The error of y in units of the last place of the float nearest to ref
 * (denormal ULPs below FLT_MIN); infinite when y is a non-number where ref
 * is one, or the other way, or has the wrong zero sign. */
static double ulp_error(float y, double ref) {
    if (isnan(ref)) return isnan(y) ? 0 : INFINITY;
    if (isnan(y)) return INFINITY;
    float rounded = (float)ref;
    if (isinf(rounded) || isinf(y)) return rounded == y ? 0 : INFINITY;
    if (rounded == 0 && y == 0) return signbit(rounded) == signbit(y) ? 0 : INFINITY;
    int exponent;
    frexp(fabs(ref) > FLT_MIN ? ref : FLT_MIN, &exponent);
    return fabs((double)y - ref) / ldexp(1.0, exponent - 24);
}

static float from_bits(uint32_t bits) {
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

enum { SAMPLES = 1 << 20 };

/* Inputs: an even sweep of every bit pattern (all magnitudes, both signs),
 * dense uniform samples where the functions bend, and edge values. */
static int64_t make_inputs(float *x) {
    int64_t n = 0;
    for (uint64_t bits = 0; bits < (1ull << 32); bits += 4099) x[n++] = from_bits((uint32_t)bits);
    test_rng rng = test_rng_make(7);
    for (int i = 0; i < SAMPLES / 2; i++) x[n++] = (float)test_uniform(&rng, -20, 20);
    for (int i = 0; i < SAMPLES / 4; i++) x[n++] = (float)test_uniform(&rng, -1, 1);
    static const float edges[] = {
        0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, FLT_MIN, -FLT_MIN, FLT_TRUE_MIN,
        -FLT_TRUE_MIN, FLT_MAX, -FLT_MAX, 1.0f, -1.0f, 0.5f, -0.5f, 88.72283f, 88.72284f,
        89.0f, -87.33654f, -103.2789f, -103.9721f, -104.0f, -150.0f, 0.34657359f, -0.34657359f,
        -1.0f + 5.96e-8f, 3.92f, 3.9f, 9.0f, 10.0f, 1e-30f, -1e-30f, 33554432.0f, 1e30f,
        -17.33f, -30.0f, 1e-4f, -1e-4f, 0.9999999f, 1.0000001f, 2.0f, 1e-38f, 0.70710677f,
        1.4142135f};
    for (size_t i = 0; i < sizeof edges / sizeof *edges; i++) x[n++] = edges[i];
    return n;
}

static void check_table(const vmath_table *table, const char *isa) {
    int64_t capacity = (1ll << 32) / 4099 + SAMPLES + 64;
    float *x = malloc((size_t)capacity * sizeof *x), *y = malloc((size_t)capacity * sizeof *y);
    CHECK(x && y);
    if (!x || !y) {
        free(x);
        free(y);
        return;
    }
    int64_t n = make_inputs(x);
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        function_of(table, &cases[c])(x, y, n);
        double worst = 0;
        float worst_x = 0, worst_y = 0;
        for (int64_t i = 0; i < n; i++) {
            double err = ulp_error(y[i], cases[c].reference(x[i]));
            if (err > worst || isnan(err)) {
                worst = err;
                worst_x = x[i];
                worst_y = y[i];
            }
        }
        printf("     %s %-8s max %.2f ULP (at %a)\n", isa, cases[c].name, worst, worst_x);
        CHECK_MSG(worst <= cases[c].max_ulp, "%s %s: %.2f ULP at %a (%a, expected %a)", isa,
                  cases[c].name, worst, worst_x, worst_y, cases[c].reference(worst_x));
    }
    /* In place and every short length, the tail's padding included. */
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        vmath_fn fn = function_of(table, &cases[c]);
        for (int64_t len = 0; len <= 40; len++) {
            float in[41], out[41];
            for (int64_t i = 0; i < len; i++) in[i] = out[i] = (float)(0.37 * (double)i - 5.0);
            fn(in, in, len);
            for (int64_t i = 0; i < len; i++) {
                double err = ulp_error(in[i], cases[c].reference(out[i]));
                CHECK_MSG(err <= cases[c].max_ulp, "%s %s in place, n %lld: %.2f ULP", isa,
                          cases[c].name, (long long)len, err);
            }
        }
    }
    free(x);
    free(y);
}

static void check_isa(cpu_isa isa) {
    if (!cpu_isa_supported(isa)) {
        printf("     (this CPU lacks the instruction set; skipped)\n");
        return;
    }
    CHECK(vmath_isa_force(isa));
    check_table(vmath_f32(), cpu_isa_name(isa));
    vmath_isa_reset();
}

TEST(test_vmath_generic) { check_isa(CPU_ISA_GENERIC); }
TEST(test_vmath_avx2) { check_isa(CPU_ISA_AVX2); }
TEST(test_vmath_avx512) { check_isa(CPU_ISA_AVX512); }
