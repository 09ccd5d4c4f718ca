/* The vmath functions on GCC vector types, compiled once per ISA by the file
 * that includes this: it defines VM_BYTES (the vector width), VM_TABLE (the
 * vmath_table to define), VM_FMA(a, b, c) and VM_FMA_D(a, b, c) (a * b + c
 * of float and double vectors, fused where the ISA has it), VM_MIN(a, b)
 * and VM_MAX(a, b) (a < b ? a : b and a > b ? a : b, b when either is NaN,
 * as x86's MINPS/MAXPS), and may define VM_SCALEF(a, n) (a * 2^n). The same source for every width keeps the ISAs' results alike
 * and lets the compiler pick the instructions.
 *
 * Every function takes the finite, normal range through one polynomial
 * path and patches NaN, infinities, zeros and the ends of the range with
 * selects, so no lane branches. Polynomials are Taylor series where the
 * reduced argument is small enough, and least-squares fits (weighted
 * towards the largest error, on Chebyshev nodes, against 40-digit
 * references) for erf. */
#include <stdint.h>
#include <string.h>

#include "backends/cpu/vmath.h"

#define VM_LANES (VM_BYTES / 4)

typedef float vf __attribute__((vector_size(VM_BYTES)));
typedef int32_t vi __attribute__((vector_size(VM_BYTES)));
typedef uint32_t vu __attribute__((vector_size(VM_BYTES)));

/* Lanes of a comparison are all ones or all zeros. */
static inline vf vm_select(vi mask, vf yes, vf no) {
    return (vf)(((vi)yes & mask) | ((vi)no & ~mask));
}
static inline vf vm_abs(vf x) { return (vf)((vu)x & 0x7fffffffu); }
/* |magnitude| with sign's sign bit. */
static inline vf vm_copysign(vf magnitude, vf sign) {
    return (vf)(((vu)magnitude & 0x7fffffffu) | ((vu)sign & 0x80000000u));
}
/* 2^n for integer n in [-126, 127], built from its exponent field. */
static inline vf vm_pow2i(vi n) { return (vf)(((vu)n + 127u) << 23); }
static inline vf vm_fma(vf a, vf b, vf c) { return VM_FMA(a, b, c); }
/* x clamped to [low, high]; NaN stays NaN (VM_MIN/VM_MAX pass their
 * second operand through). */
static inline vf vm_clamp(vf x, float low, float high) {
    return VM_MAX((vf){0} + low, VM_MIN((vf){0} + high, x));
}

/* ln 2 split so that n * LN2_HI is exact for |n| < 2^15: LN2_HI has 9
 * significant bits. */
#define LN2_HI 0.693359375f
#define LN2_LO -2.12194440e-4f
#define LOG2E 1.44269504088896341f
/* Adding then subtracting 1.5 * 2^23 rounds a float of magnitude below
 * 2^22 to the nearest integer, which the sum's low mantissa bits hold. */
#define ROUND_MAGIC 12582912.0f

/* x = n ln2 + r with n an integer and |r| <= ln2/2 (a little more where
 * x log2e rounds across a half), for |x| < 2^21. */
static inline vf vm_reduce_ln2(vf x, vi *n, vf *nf) {
    vf t = vm_fma(x, (vf){0} + LOG2E, (vf){0} + ROUND_MAGIC);
    *nf = t - ROUND_MAGIC;
    *n = (vi)((vu)t - (vu)((vf){0} + ROUND_MAGIC));
    vf r = vm_fma(*nf, (vf){0} - LN2_HI, x);
    return vm_fma(*nf, (vf){0} - LN2_LO, r);
}

/* (e^r - 1 - r) / r^2 for |r| <= 0.36, Taylor to r^6 / 8!: the first term
 * left out, r^7 / 9!, is below 2^-33 of the sum. */
static inline vf vm_expm1_tail(vf r) {
    vf p = vm_fma(r, (vf){0} + 2.48015873e-5f, (vf){0} + 1.98412698e-4f);
    p = vm_fma(p, r, (vf){0} + 1.38888889e-3f);
    p = vm_fma(p, r, (vf){0} + 8.33333333e-3f);
    p = vm_fma(p, r, (vf){0} + 4.16666667e-2f);
    p = vm_fma(p, r, (vf){0} + 1.66666667e-1f);
    return vm_fma(p, r, (vf){0} + 0.5f);
}

/* e^r - 1 for |r| <= 0.36, accurate to the last bits of the small result. */
static inline vf vm_expm1_small(vf r) { return vm_fma(r * r, vm_expm1_tail(r), r); }

/* e^x in float arithmetic, within 1 ULP: for the functions built on it. */
static inline vf vm_exp_float(vf x) {
    /* e^89 overflows and e^-104 rounds to 0; clamping keeps 2^n buildable
     * and leaves NaN (every comparison false) as it is. */
    vi n;
    vf nf, r = vm_reduce_ln2(vm_clamp(x, -104.0f, 89.0f), &n, &nf);
    vf p = vm_expm1_small(r) + 1.0f;
#ifdef VM_SCALEF
    (void)n;
    return VM_SCALEF(p, nf);
#else
    /* n is in [-150, 128]: two factors keep each 2^k normal, so the
     * product rounds once into the denormals or overflows to inf. */
    (void)nf;
    vi half = n >> 1;
    return p * vm_pow2i(half) * vm_pow2i(n - half);
#endif
}

/* e^x for the exp op itself, computed in double and rounded once, which
 * makes it correctly rounded but for inputs within 2^-40 of a halfway
 * case, the same float as libm's expf. Half a vector at a time. */
typedef float vh __attribute__((vector_size(VM_BYTES / 2)));
typedef double vd __attribute__((vector_size(VM_BYTES)));
typedef int64_t vl __attribute__((vector_size(VM_BYTES)));
#define D_ROUND_MAGIC 6755399441055744.0 /* 1.5 * 2^52 */

static inline vd vm_fma_d(vd a, vd b, vd c) { return VM_FMA_D(a, b, c); }

static inline vh vm_exp_rounded(vh xh) {
    vd x = __builtin_convertvector(xh, vd);
    vl clamp_high = x > 89.0, clamp_low = x < -104.0;
    x = (vd)(((vl)x & ~clamp_high) | ((vl)((vd){0} + 89.0) & clamp_high));
    x = (vd)(((vl)x & ~clamp_low) | ((vl)((vd){0} - 104.0) & clamp_low));
    vd t = vm_fma_d(x, (vd){0} + 1.4426950408889634, (vd){0} + D_ROUND_MAGIC);
    vd nd = t - D_ROUND_MAGIC;
    vl n = (vl)t - (vl)((vd){0} + D_ROUND_MAGIC);
    /* ln 2 = 0x1.62e42fee00000p-1 + 0x1.a39ef35793c76p-33, the first part
     * with 21 trailing zero bits so that n times it is exact. */
    vd r = vm_fma_d(nd, (vd){0} - 6.93147180369123816490e-01, x);
    r = vm_fma_d(nd, (vd){0} - 1.90821492927058770002e-10, r);
    /* Taylor to r^10 / 10!, |r| <= 0.35: the rest is below 2^-42. */
    static const double inverse_factorials[] = {1.0 / 3628800, 1.0 / 362880, 1.0 / 40320,
                                                1.0 / 5040,    1.0 / 720,    1.0 / 120,
                                                1.0 / 24,      1.0 / 6,      0.5,
                                                1.0,           1.0};
    vd p = (vd){0} + inverse_factorials[0];
    for (int k = 1; k < 11; k++) p = vm_fma_d(p, r, (vd){0} + inverse_factorials[k]);
    /* 2^n with n in [-150, 128] is a normal double; converting the
     * product to float rounds once, into the denormals or to inf. */
    vd scale = (vd)(((vl)n + 1023) << 52);
    return __builtin_convertvector(p * scale, vh);
}

static inline vf vm_expm1(vf x) {
    /* Below -30 the result is -1 to float precision; above 89 it is inf. */
    vi n;
    vf nf, r = vm_reduce_ln2(vm_clamp(x, -30.0f, 89.0f), &n, &nf);
    (void)nf;
    /* e^x - 1 = 2 (2^(n-1) expm1(r) + (2^(n-1) - 1/2)): 2^(n-1) stays
     * finite for n = 128, and the doubling is exact (or overflows). */
    vf scale = vm_pow2i(n - 1);
    vf large = 2.0f * vm_fma(scale, vm_expm1_small(r), scale - 0.5f);
    vf y = vm_select(vm_abs(x) < 0.34657359f, vm_expm1_small(x), large);
    return vm_select(x == 0.0f, x, y); /* keeps -0 */
}

/* log(1 + f) for f in [sqrt(1/2) - 1, sqrt(2) - 1] (a little beyond for
 * log1p's correction), with s = f / (2 + f): log(1 + f) = 2 atanh(s)
 * = f - f^2/2 + s (f^2/2 + R), R = 2 s^2 / 3 + 2 s^4 / 5 + ... Taylor
 * to s^10 (|s| <= 0.172: the next term is below 2^-36 of the sum). */
static inline vf vm_log1p_reduced(vf f) {
    vf s = f / (f + 2.0f), z = s * s;
    vf R = vm_fma(z, (vf){0} + 0.181818182f, (vf){0} + 0.222222222f);
    R = vm_fma(R, z, (vf){0} + 0.285714286f);
    R = vm_fma(R, z, (vf){0} + 0.4f);
    R = vm_fma(R, z, (vf){0} + 0.666666667f) * z;
    vf hfsq = 0.5f * f * f;
    return f - (hfsq - s * (hfsq + R));
}

/* Splits a positive normal x as 2^e m with m in [sqrt(1/2), sqrt(2)). */
#define SQRT_HALF_BITS 0x3f3504f3u
static inline vf vm_split(vf x, vi *e) {
    vu shifted = (vu)x - SQRT_HALF_BITS;
    *e = (vi)shifted >> 23;
    return (vf)((shifted & 0x7fffffu) + SQRT_HALF_BITS);
}

/* e ln2 + log1p(f), the ln2 product exact through its high part. */
static inline vf vm_log_join(vi e, vf f) {
    vf ef = __builtin_convertvector(e, vf);
    return vm_fma(ef, (vf){0} + LN2_HI, vm_fma(ef, (vf){0} + LN2_LO, vm_log1p_reduced(f)));
}

static inline vf vm_log(vf x) {
    /* Denormals are scaled into the normals first. */
    vi denormal = x < 1.17549435e-38f;
    vf xs = vm_select(denormal, x * 8388608.0f, x);
    vi e;
    vf m = vm_split(xs, &e);
    e -= denormal & 23;
    vf y = vm_log_join(e, m - 1.0f);
    y = vm_select(x == __builtin_inff(), x, y);
    y = vm_select(x == 0.0f, (vf){0} - __builtin_inff(), y);
    y = vm_select(x < 0.0f, (vf){0} + __builtin_nanf(""), y);
    return vm_select(x != x, x, y);
}

static inline vf vm_log1p(vf x) {
    /* log1p(x) = log(u) + log(1 + c/u) with u = 1 + x rounded and c = x -
     * (u - 1) the part rounding lost; for u = 2^e m that is e ln2 +
     * log1p(m - 1 + c 2^-e). Past 2^25, c is 0 and 2^-e unbuildable. */
    vf u = 1.0f + x;
    vi e;
    vf m = vm_split(u, &e);
    vi big = x > 33554432.0f;
    vf c = vm_select(big, (vf){0}, x - (u - 1.0f));
    vf f = vm_fma(c, vm_pow2i(-e & ~big), m - 1.0f);
    vf y = vm_log_join(e, f);
    y = vm_select(x == __builtin_inff(), x, y);
    y = vm_select(x == -1.0f, (vf){0} - __builtin_inff(), y);
    y = vm_select(x < -1.0f, (vf){0} + __builtin_nanf(""), y);
    y = vm_select(x == 0.0f, x, y); /* keeps -0 */
    return vm_select(x != x, x, y);
}

static inline vf vm_tanh(vf x) {
    /* tanh |x| = e / (e + 2) with e = expm1(2 |x|); from 10 on it rounds
     * to 1, and clamping there keeps e finite. */
    vf ax = VM_MIN((vf){0} + 10.0f, vm_abs(x));
    vf e = vm_expm1(ax + ax);
    return vm_copysign(e / (e + 2.0f), x);
}

static inline vf vm_sigmoid(vf x) {
    /* With e = exp(-|x|) <= 1: 1 / (1 + e) for x >= 0, e / (1 + e) below,
     * which reaches the denormals instead of flushing at exp's overflow. */
    vf e = vm_exp_float((vf){0} - vm_abs(x));
    vf r = 1.0f / (1.0f + e);
    return vm_select(x < 0.0f, e * r, r);
}

/* erf(x) / x as a polynomial in x^2 for |x| < 1. */
static inline vf vm_erf_small(vf x) {
    vf z = x * x;
    vf p = vm_fma(z, (vf){0} + 7.92125424e-5f, (vf){0} - 8.03100514e-4f);
    p = vm_fma(p, z, (vf){0} + 5.19076029e-3f);
    p = vm_fma(p, z, (vf){0} - 2.68551425e-2f);
    p = vm_fma(p, z, (vf){0} + 1.12836190e-1f);
    p = vm_fma(p, z, (vf){0} - 3.76126292e-1f);
    p = vm_fma(p, z, (vf){0} + 1.12837917f);
    return p * x;
}

/* erfc(a) e^(a^2) for a in [1, 3.92], a polynomial in a - 2.46. */
static inline vf vm_erfc_scaled(vf a) {
    vf t = a - 2.46f;
    vf p = vm_fma(t, (vf){0} + 1.66938657e-6f, (vf){0} - 6.92051001e-6f);
    p = vm_fma(p, t, (vf){0} + 1.68235684e-5f);
    p = vm_fma(p, t, (vf){0} - 5.91752601e-5f);
    p = vm_fma(p, t, (vf){0} + 2.28483415e-4f);
    p = vm_fma(p, t, (vf){0} - 7.91033749e-4f);
    p = vm_fma(p, t, (vf){0} + 2.61920863e-3f);
    p = vm_fma(p, t, (vf){0} - 8.40651893e-3f);
    p = vm_fma(p, t, (vf){0} + 2.59222112e-2f);
    p = vm_fma(p, t, (vf){0} - 7.63816196e-2f);
    return vm_fma(p, t, (vf){0} + 2.13820685e-1f);
}

static inline vf vm_erf(vf x) {
    /* From 3.92 on erf rounds to 1; clamping keeps the tail in its fit. */
    vf ax = vm_abs(x);
    vf a = vm_clamp(ax, 1.0f, 3.92f);
    vf tail = vm_copysign(1.0f - vm_exp_float((vf){0} - a * a) * vm_erfc_scaled(a), x);
    return vm_select(ax < 1.0f, vm_erf_small(x), vm_select(x != x, x, tail));
}

/* Whole vectors straight from the arrays, the last partial one through a
 * padded buffer. */
#define VM_ARRAY(op)                                                          \
    static void op##_array(const float *x, float *y, int64_t n) {            \
        int64_t i = 0;                                                       \
        vf v;                                                                \
        for (; i + VM_LANES <= n; i += VM_LANES) {                           \
            memcpy(&v, x + i, sizeof v);                                     \
            v = vm_##op(v);                                                  \
            memcpy(y + i, &v, sizeof v);                                     \
        }                                                                    \
        if (i < n) {                                                         \
            float pad[VM_LANES] = {0};                                       \
            memcpy(pad, x + i, (size_t)(n - i) * sizeof *x);                 \
            memcpy(&v, pad, sizeof v);                                       \
            v = vm_##op(v);                                                  \
            memcpy(y + i, &v, (size_t)(n - i) * sizeof *y);                  \
        }                                                                    \
    }
VM_ARRAY(expm1) VM_ARRAY(log) VM_ARRAY(log1p) VM_ARRAY(tanh) VM_ARRAY(sigmoid) VM_ARRAY(erf)

/* exp goes half a vector at a time through double. */
static void exp_array(const float *x, float *y, int64_t n) {
    int64_t i = 0, step = VM_LANES / 2;
    vh v;
    for (; i + step <= n; i += step) {
        memcpy(&v, x + i, sizeof v);
        v = vm_exp_rounded(v);
        memcpy(y + i, &v, sizeof v);
    }
    if (i < n) {
        float pad[VM_LANES / 2] = {0};
        memcpy(pad, x + i, (size_t)(n - i) * sizeof *x);
        memcpy(&v, pad, sizeof v);
        v = vm_exp_rounded(v);
        memcpy(y + i, &v, (size_t)(n - i) * sizeof *y);
    }
}

const vmath_table VM_TABLE = {
#define VM_ENTRY(op) .op = op##_array,
    VMATH_OPS(VM_ENTRY)
#undef VM_ENTRY
};
