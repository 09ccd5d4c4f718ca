/* Unary elementwise kernels: one inner loop per (op, dtype), stamped out from
 * scalar functions. float32, float16 and bfloat16 compute with float libm
 * functions and float64 with double ones, as PyTorch's CPU kernels do,
 * except for the ops vmath vectorizes (exp, log, tanh, sigmoid, erf...),
 * whose float loops hand whole runs of floats to it. */
#include "backends/cpu/kernels_elementwise.h"
#include "backends/cpu/special_math.h"
#include "backends/cpu/vmath.h"

/* ---- scalar functions ---- */

/* Special functions evaluate in double (special_math.h); float32 and the
 * halves round the result once. */
#define SPECIAL_FUNCTIONS(X)                                                         \
    X(erfinv, sp_erfinv) X(digamma, sp_digamma) X(i0, sp_i0) X(i0e, sp_i0e)           \
    X(i1, sp_i1) X(i1e, sp_i1e) X(erfcx, sp_erfcx) X(log_ndtr, sp_log_ndtr)           \
    X(ndtri, sp_ndtri) X(bessel_j0, sp_bessel_j0) X(bessel_j1, sp_bessel_j1)         \
    X(bessel_y0, sp_bessel_y0) X(bessel_y1, sp_bessel_y1)                            \
    X(modified_bessel_k0, sp_k0) X(modified_bessel_k1, sp_k1)                       \
    X(scaled_modified_bessel_k0, sp_k0e) X(scaled_modified_bessel_k1, sp_k1e)       \
    X(spherical_bessel_j0, sp_spherical_bessel_j0) X(airy_ai, sp_airy_ai)
#define SPECIAL_SCALAR(op, fn)                                            \
    static inline double op##_f64(double x) { return fn(x); }             \
    static inline float op##_f32(float x) { return (float)fn((double)x); }
SPECIAL_FUNCTIONS(SPECIAL_SCALAR)

/* lgammaf_r, as sp_lgamma uses lgamma_r: the sign goes to a local, not the
 * global signgam, which would race between pool threads. */
static float lgamma_f32(float x) {
    int sign;
    return lgammaf_r(x, &sign);
}
static double lgamma_f64(double x) { return sp_lgamma(x); }

/* Float functions for CT = float (libm suffix f) and CT = double (none). */
#define FLOAT_FUNCTIONS(sfx, T, F)                                                          \
    static inline T neg_##sfx(T x) { return -x; }                                           \
    static inline T abs_##sfx(T x) { return fabs##F(x); }                                   \
    /* NaN has no sign: 0, as torch.sign gives */                                           \
    static inline T sign_##sfx(T x) { return (T)((x > 0) - (x < 0)); }                      \
    static inline T exp2_##sfx(T x) { return exp2##F(x); }                                  \
    static inline T log2_##sfx(T x) { return log2##F(x); }                                  \
    static inline T sqrt_##sfx(T x) { return sqrt##F(x); }                                  \
    static inline T rsqrt_##sfx(T x) { return 1 / sqrt##F(x); }                             \
    static inline T reciprocal_##sfx(T x) { return 1 / x; }                                 \
    static inline T sin_##sfx(T x) { return sin##F(x); }                                    \
    static inline T cos_##sfx(T x) { return cos##F(x); }                                    \
    static inline T tan_##sfx(T x) { return tan##F(x); }                                    \
    static inline T asin_##sfx(T x) { return asin##F(x); }                                  \
    static inline T acos_##sfx(T x) { return acos##F(x); }                                  \
    static inline T atan_##sfx(T x) { return atan##F(x); }                                  \
    static inline T sinh_##sfx(T x) { return sinh##F(x); }                                  \
    static inline T cosh_##sfx(T x) { return cosh##F(x); }                                  \
    static inline T asinh_##sfx(T x) { return asinh##F(x); }                                \
    static inline T acosh_##sfx(T x) { return acosh##F(x); }                                \
    static inline T atanh_##sfx(T x) { return atanh##F(x); }                                \
    static inline T erfc_##sfx(T x) { return erfc##F(x); }                                  \
    static inline T floor_##sfx(T x) { return floor##F(x); }                                \
    static inline T ceil_##sfx(T x) { return ceil##F(x); }                                  \
    /* nearbyint rounds half to even in the default rounding mode */                        \
    static inline T round_##sfx(T x) { return nearbyint##F(x); }                            \
    static inline T trunc_##sfx(T x) { return trunc##F(x); }                                \
    static inline bool isnan_##sfx(T x) { return isnan(x); }                                \
    static inline bool isinf_##sfx(T x) { return isinf(x); }                                \
    static inline bool isfinite_##sfx(T x) { return isfinite(x); }                          \
    static inline bool logical_not_##sfx(T x) { return x == 0; }
FLOAT_FUNCTIONS(f32, float, f)
FLOAT_FUNCTIONS(f64, double, )
/* The ops whose float loops use vmath need only double versions. */
static inline double exp_f64(double x) { return exp(x); }
static inline double expm1_f64(double x) { return expm1(x); }
static inline double log_f64(double x) { return log(x); }
static inline double log1p_f64(double x) { return log1p(x); }
static inline double tanh_f64(double x) { return tanh(x); }
static inline double sigmoid_f64(double x) { return 1 / (1 + exp(-x)); }
static inline double erf_f64(double x) { return erf(x); }

/* Integer functions; W is an unsigned type at least as wide as T and int,
 * so negating the most negative value wraps as in PyTorch instead of being
 * undefined. */
#define INT_FUNCTIONS(sfx, T, W)                                                            \
    static inline T neg_##sfx(T x) { return (T)(0 - (W)x); }                                \
    static inline T identity_##sfx(T x) { return x; }                                       \
    static inline bool isnan_##sfx(T x) { return (void)x, false; }                          \
    static inline bool isinf_##sfx(T x) { return (void)x, false; }                          \
    static inline bool isfinite_##sfx(T x) { return (void)x, true; }                        \
    static inline bool logical_not_##sfx(T x) { return x == 0; }                            \
    static inline T bitwise_not_##sfx(T x) { return (T)~(W)x; }
#define SIGNED_FUNCTIONS(sfx, T, W)                                                         \
    INT_FUNCTIONS(sfx, T, W)                                                                \
    static inline T abs_##sfx(T x) { return (T)(x < 0 ? 0 - (W)x : (W)x); }                \
    static inline T sign_##sfx(T x) { return (T)((x > 0) - (x < 0)); }
INT_FUNCTIONS(u8, uint8_t, uint32_t)
SIGNED_FUNCTIONS(i8, int8_t, uint32_t)
SIGNED_FUNCTIONS(i16, int16_t, uint32_t)
SIGNED_FUNCTIONS(i32, int32_t, uint32_t)
SIGNED_FUNCTIONS(i64, int64_t, uint64_t)
static inline uint8_t abs_u8(uint8_t x) { return x; }
static inline uint8_t sign_u8(uint8_t x) { return x != 0; }

static inline bool identity_b8(bool x) { return x; }
static inline bool isnan_b8(bool x) { return (void)x, false; }
static inline bool isinf_b8(bool x) { return (void)x, false; }
static inline bool isfinite_b8(bool x) { return (void)x, true; }
static inline bool logical_not_b8(bool x) { return !x; }

/* ---- vmath loops: float32, float16 and bfloat16 through float arrays ---- */

/* Contiguous float32 goes to vmath whole; strided operands are gathered
 * into a stage, computed there and scattered back. */
static int vmath_f32_loop(vmath_fn fn, char *const *p, const int64_t *s, int64_t n) {
    if (s[0] == (int64_t)sizeof(float) && s[1] == (int64_t)sizeof(float)) {
        fn((const float *)(const void *)p[1], (float *)(void *)p[0], n);
        return 0;
    }
    float x[EW_STAGE];
    for (int64_t at = 0; at < n; at += EW_STAGE) {
        int64_t m = n - at < EW_STAGE ? n - at : EW_STAGE;
        for (int64_t i = 0; i < m; i++) x[i] = EW_AT(const float, p[1], at + i, s[1]);
        fn(x, x, m);
        for (int64_t i = 0; i < m; i++) EW_AT(float, p[0], at + i, s[0]) = x[i];
    }
    return 0;
}

/* float16/bfloat16 widen a stage to float, compute it and round it back. */
static int vmath_half_loop(vmath_fn fn, porta_dtype dtype, char *const *p, const int64_t *s,
                           int64_t n) {
    bool contiguous = s[0] == 2 && s[1] == 2, f16 = dtype == PORTA_F16;
    float x[EW_STAGE];
    for (int64_t at = 0; at < n; at += EW_STAGE) {
        int64_t m = n - at < EW_STAGE ? n - at : EW_STAGE;
        if (contiguous) {
            ew_widen_half(dtype, (const uint16_t *)(const void *)p[1] + at, x, m);
        } else {
            for (int64_t i = 0; i < m; i++) {
                uint16_t h = EW_AT(const uint16_t, p[1], at + i, s[1]);
                x[i] = f16 ? core_f16_to_f32(h) : core_bf16_to_f32(h);
            }
        }
        fn(x, x, m);
        if (contiguous) {
            ew_narrow_half(dtype, x, (uint16_t *)(void *)p[0] + at, m);
        } else {
            for (int64_t i = 0; i < m; i++)
                EW_AT(uint16_t, p[0], at + i, s[0]) =
                    f16 ? core_f32_to_f16(x[i]) : core_f32_to_bf16(x[i]);
        }
    }
    return 0;
}

#define VMATH_LOOPS(OP, op)                                                       \
    static int op##_f32_loop(char *const *p, const int64_t *s, int64_t n) {       \
        return vmath_f32_loop(vmath_f32()->op, p, s, n);                          \
    }                                                                             \
    static int op##_f16_loop(char *const *p, const int64_t *s, int64_t n) {       \
        return vmath_half_loop(vmath_f32()->op, PORTA_F16, p, s, n);              \
    }                                                                             \
    static int op##_bf16_loop(char *const *p, const int64_t *s, int64_t n) {      \
        return vmath_half_loop(vmath_f32()->op, PORTA_BF16, p, s, n);             \
    }                                                                             \
    EW_UNARY_LOOP(op##_f64_loop, double, EW_SAME, double, EW_SAME, op##_f64)

/* ---- loops ---- */

/* Ops by the dtypes they accept (op enum, function name). */
#define VMATH_UNARY_OPS(X)                                                            \
    X(EXP, exp) X(EXPM1, expm1) X(LOG, log) X(LOG1P, log1p) X(TANH, tanh)              \
    X(SIGMOID, sigmoid) X(ERF, erf)
#define FLOAT_ONLY_OPS(X)                                                              \
    X(EXP2, exp2) X(LOG2, log2) X(SQRT, sqrt) X(RSQRT, rsqrt) X(RECIPROCAL, reciprocal) \
    X(SIN, sin) X(COS, cos) X(TAN, tan) X(ASIN, asin) X(ACOS, acos) X(ATAN, atan)       \
    X(SINH, sinh) X(COSH, cosh) X(ASINH, asinh) X(ACOSH, acosh) X(ATANH, atanh)         \
    X(ERFC, erfc) X(ERFINV, erfinv) X(LGAMMA, lgamma) X(DIGAMMA, digamma) X(I0, i0)        \
    X(I0E, i0e) X(I1, i1) X(I1E, i1e) X(ERFCX, erfcx) X(LOG_NDTR, log_ndtr) X(NDTRI, ndtri) \
    X(BESSEL_J0, bessel_j0) X(BESSEL_J1, bessel_j1) X(BESSEL_Y0, bessel_y0)                 \
    X(BESSEL_Y1, bessel_y1) X(MODIFIED_BESSEL_K0, modified_bessel_k0)                       \
    X(MODIFIED_BESSEL_K1, modified_bessel_k1)                                               \
    X(SCALED_MODIFIED_BESSEL_K0, scaled_modified_bessel_k0)                                 \
    X(SCALED_MODIFIED_BESSEL_K1, scaled_modified_bessel_k1)                                 \
    X(SPHERICAL_BESSEL_J0, spherical_bessel_j0) X(AIRY_AI, airy_ai)
#define SIGNED_OPS(X) X(NEG, neg) X(ABS, abs)                    /* ints and floats */
#define ROUNDING_OPS(X) X(FLOOR, floor) X(CEIL, ceil) X(ROUND, round) X(TRUNC, trunc)
#define PREDICATE_OPS(X) /* any dtype -> bool */ \
    X(ISNAN, isnan) X(ISINF, isinf) X(ISFINITE, isfinite) X(LOGICAL_NOT, logical_not)

/* Loop makers, given (op enum suffix, op name, scalar function name) and a
 * dtype list entry: loop op_<dtype>_loop applies fn_<compute suffix>. */
#define SAME_TYPE_LOOP(OP, op, fn, sfx, E, ST, CT, LOAD, STORE, cs, form) \
    SAME_TYPE_##form(op##_##sfx##_loop, E, ST, LOAD, STORE, fn##_##cs)
#define SAME_TYPE_PLAIN(NAME, E, ST, LOAD, STORE, FN) EW_UNARY_LOOP(NAME, ST, LOAD, ST, STORE, FN)
#define SAME_TYPE_HALF(NAME, E, ST, LOAD, STORE, FN) EW_HALF_UNARY_LOOP(NAME, E, LOAD, STORE, FN)
#define PREDICATE_LOOP(OP, op, fn, sfx, E, ST, CT, LOAD, STORE, cs, form) \
    EW_UNARY_LOOP(op##_##sfx##_loop, ST, LOAD, uint8_t, EW_SAME, fn##_##cs)
#define ENTRY(OP, op, fn, sfx, E, ...) [PORTA_##OP][E] = op##_##sfx##_loop,

#define FLOAT_OP(X, OP, op) EW_FLOAT_DTYPES(X, OP, op, op)
#define NUMERIC_OP(X, OP, op) EW_NUMERIC_DTYPES(X, OP, op, op)
#define ROUNDING_OP(X, OP, op) EW_INT_DTYPES(X, OP, op, identity) EW_FLOAT_DTYPES(X, OP, op, op)

#define DEFINE_FLOAT_OP(OP, op) FLOAT_OP(SAME_TYPE_LOOP, OP, op)
#define DEFINE_SIGNED_OP(OP, op) NUMERIC_OP(SAME_TYPE_LOOP, OP, op)
#define DEFINE_ROUNDING_OP(OP, op) ROUNDING_OP(SAME_TYPE_LOOP, OP, op)
#define DEFINE_PREDICATE_OP(OP, op) EW_ALL_DTYPES(PREDICATE_LOOP, OP, op, op)
FLOAT_ONLY_OPS(DEFINE_FLOAT_OP)
VMATH_UNARY_OPS(VMATH_LOOPS)
SIGNED_OPS(DEFINE_SIGNED_OP)
ROUNDING_OPS(DEFINE_ROUNDING_OP)
PREDICATE_OPS(DEFINE_PREDICATE_OP)
/* sign also takes bool (identity); bitwise_not takes ints and bool (not). */
NUMERIC_OP(SAME_TYPE_LOOP, SIGN, sign)
EW_BOOL_DTYPE(SAME_TYPE_LOOP, SIGN, sign, identity)
EW_INT_DTYPES(SAME_TYPE_LOOP, BITWISE_NOT, bitwise_not, bitwise_not)
EW_BOOL_DTYPE(SAME_TYPE_LOOP, BITWISE_NOT, bitwise_not, logical_not)

#define FLOAT_ENTRIES(OP, op) FLOAT_OP(ENTRY, OP, op)
#define NUMERIC_ENTRIES(OP, op) NUMERIC_OP(ENTRY, OP, op)
#define ALL_ENTRIES(OP, op) EW_ALL_DTYPES(ENTRY, OP, op, op)
static const ew_loop_fn unary_loops[PORTA_UNARY_OP_COUNT][PORTA_DTYPE_COUNT] = {
    FLOAT_ONLY_OPS(FLOAT_ENTRIES)
    VMATH_UNARY_OPS(FLOAT_ENTRIES)
    SIGNED_OPS(NUMERIC_ENTRIES)
    ROUNDING_OPS(NUMERIC_ENTRIES)
    PREDICATE_OPS(ALL_ENTRIES)
    ALL_ENTRIES(SIGN, sign)
    EW_INT_DTYPES(ENTRY, BITWISE_NOT, bitwise_not, bitwise_not)
    EW_BOOL_DTYPE(ENTRY, BITWISE_NOT, bitwise_not, bitwise_not)
};

ew_loop_fn ew_unary_loop(porta_unary_op op, porta_dtype dtype) {
    if ((unsigned)op >= PORTA_UNARY_OP_COUNT || (unsigned)dtype >= PORTA_DTYPE_COUNT)
        return NULL;
    return unary_loops[op][dtype];
}

bool ew_unary_is_costly(porta_unary_op op) {
    switch (op) {
    case PORTA_NEG: case PORTA_ABS: case PORTA_SIGN: case PORTA_RECIPROCAL:
    case PORTA_FLOOR: case PORTA_CEIL: case PORTA_TRUNC: /* inlined by gcc */
    case PORTA_ISNAN: case PORTA_ISINF: case PORTA_ISFINITE:
    case PORTA_LOGICAL_NOT: case PORTA_BITWISE_NOT:
        return false;
    default:
        return true; /* libm calls, round's nearbyint included */
    }
}
