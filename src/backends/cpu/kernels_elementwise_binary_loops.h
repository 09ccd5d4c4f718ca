/* The binary elementwise loops as a template: one inner loop per (op,
 * dtype), stamped out from scalar functions with PyTorch's CPU semantics.
 * kernels_elementwise_binary*.c each define EW_BINARY_TABLE and include this
 * once, so the same loops are compiled for each instruction set (the
 * contiguous blocks then move 16, 32 or 64 bytes an instruction, which pays
 * where the data sits in cache: an in-place scale of 16 MB). Every scalar
 * function takes a fault mask so integer division by zero and negative
 * integer powers can be reported instead of trapping. */
#ifndef EW_BINARY_TABLE
#error "define EW_BINARY_TABLE before including kernels_elementwise_binary_loops.h"
#endif

#include <math.h>

#include "backends/cpu/kernels_elementwise.h"
#include "backends/cpu/special_math.h"

/* Logical ops and comparisons, for every T: results are bool. */
#define COMPARISONS(sfx, T)                                                                 \
    static inline bool logical_and_##sfx(T a, T b, int *f) { return (void)f, a && b; }      \
    static inline bool logical_or_##sfx(T a, T b, int *f) { return (void)f, a || b; }       \
    static inline bool logical_xor_##sfx(T a, T b, int *f) { return (void)f, !a != !b; }    \
    static inline bool eq_##sfx(T a, T b, int *f) { return (void)f, a == b; }               \
    static inline bool ne_##sfx(T a, T b, int *f) { return (void)f, a != b; }               \
    static inline bool lt_##sfx(T a, T b, int *f) { return (void)f, a < b; }                \
    static inline bool le_##sfx(T a, T b, int *f) { return (void)f, a <= b; }               \
    static inline bool gt_##sfx(T a, T b, int *f) { return (void)f, a > b; }                \
    static inline bool ge_##sfx(T a, T b, int *f) { return (void)f, a >= b; }

/* ---- floats: T = float (libm suffix f) or double (none) ---- */

#define FLOAT_FUNCTIONS(sfx, T, F)                                                   \
    static inline T add_##sfx(T a, T b, int *fault) { return (void)fault, a + b; }    \
    static inline T sub_##sfx(T a, T b, int *fault) { return (void)fault, a - b; }    \
    static inline T mul_##sfx(T a, T b, int *fault) { return (void)fault, a * b; }    \
    static inline T div_##sfx(T a, T b, int *fault) { return (void)fault, a / b; }    \
    /* Python's float floor division: exact where a / b would round up into */       \
    /* the next integer, signed zeros kept, IEEE results for b == 0. */              \
    static inline T floor_divide_##sfx(T a, T b, int *fault) {                       \
        (void)fault;                                                                 \
        if (b == 0) return a / b;                                                    \
        T mod = fmod##F(a, b), div = (a - mod) / b;                                  \
        if (mod != 0 && (b < 0) != (mod < 0)) div -= 1;                              \
        if (div == 0) return copysign##F(0, a / b);                                  \
        T floored = floor##F(div);                                                   \
        return div - floored > (T)0.5 ? floored + 1 : floored;                       \
    }                                                                                \
    static inline T remainder_##sfx(T a, T b, int *fault) {                          \
        (void)fault;                                                                 \
        T mod = fmod##F(a, b);                                                       \
        return mod != 0 && (b < 0) != (mod < 0) ? mod + b : mod;                     \
    }                                                                                \
    static inline T fmod_##sfx(T a, T b, int *fault) { return (void)fault, fmod##F(a, b); } \
    static inline T pow_##sfx(T a, T b, int *fault) { return (void)fault, pow##F(a, b); }   \
    static inline T atan2_##sfx(T a, T b, int *fault) { return (void)fault, atan2##F(a, b); } \
    static inline T maximum_##sfx(T a, T b, int *fault) {                            \
        (void)fault;                                                                 \
        return a != a ? a : b != b ? b : a < b ? b : a;                              \
    }                                                                                \
    static inline T minimum_##sfx(T a, T b, int *fault) {                            \
        (void)fault;                                                                 \
        return a != a ? a : b != b ? b : b < a ? b : a;                              \
    }                                                                                \
    COMPARISONS(sfx, T)
FLOAT_FUNCTIONS(f32, float, f)
FLOAT_FUNCTIONS(f64, double, )

/* Special functions evaluate in double (special_math.h); float32 and the
 * halves round the result once. */
#define SPECIAL_BINARY_FUNCTIONS(X)                                                          \
    X(igamma, sp_igamma) X(igammac, sp_igammac) X(zeta, sp_zeta)                            \
    X(chebyshev_t, sp_chebyshev_t) X(chebyshev_u, sp_chebyshev_u)                           \
    X(chebyshev_v, sp_chebyshev_v) X(chebyshev_w, sp_chebyshev_w)                           \
    X(shifted_chebyshev_t, sp_shifted_chebyshev_t) X(shifted_chebyshev_u, sp_shifted_chebyshev_u) \
    X(shifted_chebyshev_v, sp_shifted_chebyshev_v) X(shifted_chebyshev_w, sp_shifted_chebyshev_w) \
    X(hermite_h, sp_hermite_h) X(hermite_he, sp_hermite_he) X(laguerre_l, sp_laguerre_l)    \
    X(legendre_p, sp_legendre_p)
#define SPECIAL_BINARY_SCALAR(op, fn)                                                        \
    static inline double op##_f64(double a, double b, int *fault) { return (void)fault, fn(a, b); } \
    static inline float op##_f32(float a, float b, int *fault) {                             \
        return (void)fault, (float)fn((double)a, (double)b);                                 \
    }
SPECIAL_BINARY_FUNCTIONS(SPECIAL_BINARY_SCALAR)

/* ---- integers ----
 * W is an unsigned type at least as wide as T (and as int): sums, products
 * and powers wrap modulo 2^bits as in PyTorch instead of overflowing. */
#define INT_FUNCTIONS(sfx, T, W, BITS, SIGNED)                                       \
    /* x == -1 with T signed: a / x and a % x would overflow for T's minimum */      \
    static inline bool minus_one_##sfx(T x) { return negative_##sfx(x) && x == (T)-1; } \
    static inline T add_##sfx(T a, T b, int *fault) { return (void)fault, (T)((W)a + (W)b); } \
    static inline T sub_##sfx(T a, T b, int *fault) { return (void)fault, (T)((W)a - (W)b); } \
    static inline T mul_##sfx(T a, T b, int *fault) { return (void)fault, (T)((W)a * (W)b); } \
    static inline T floor_divide_##sfx(T a, T b, int *fault) {                       \
        if (b == 0) return *fault |= IR_FAULT_DIV_ZERO, 0;                           \
        if (minus_one_##sfx(b)) return (T)(0 - (W)a);                                \
        T quot = (T)(a / b), rem = (T)(a % b);                                       \
        return rem != 0 && negative_##sfx(rem) != negative_##sfx(b) ? (T)(quot - 1) : quot; \
    }                                                                                \
    static inline T remainder_##sfx(T a, T b, int *fault) {                          \
        if (b == 0) return *fault |= IR_FAULT_DIV_ZERO, 0;                           \
        if (minus_one_##sfx(b)) return 0;                                            \
        T rem = (T)(a % b);                                                          \
        return rem != 0 && negative_##sfx(rem) != negative_##sfx(b) ? (T)(rem + b) : rem; \
    }                                                                                \
    static inline T fmod_##sfx(T a, T b, int *fault) {                               \
        if (b == 0) return *fault |= IR_FAULT_DIV_ZERO, 0;                           \
        return minus_one_##sfx(b) ? 0 : (T)(a % b);                                  \
    }                                                                                \
    static inline T pow_##sfx(T a, T b, int *fault) {                                \
        if (negative_##sfx(b)) return *fault |= IR_FAULT_NEGATIVE_POWER, 0;          \
        W result = 1, base = (W)a;                                                   \
        for (W e = (W)b; e; e >>= 1) {                                               \
            if (e & 1) result *= base;                                               \
            base *= base;                                                            \
        }                                                                            \
        return (T)result;                                                            \
    }                                                                                \
    static inline T maximum_##sfx(T a, T b, int *fault) { return (void)fault, a < b ? b : a; } \
    static inline T minimum_##sfx(T a, T b, int *fault) { return (void)fault, b < a ? b : a; } \
    static inline T bitwise_and_##sfx(T a, T b, int *fault) { return (void)fault, (T)(a & b); } \
    static inline T bitwise_or_##sfx(T a, T b, int *fault) { return (void)fault, (T)(a | b); }  \
    static inline T bitwise_xor_##sfx(T a, T b, int *fault) { return (void)fault, (T)(a ^ b); } \
    /* Shifts past the width give 0 (left) or the sign fill (right), as in torch. */ \
    static inline T shift_left_##sfx(T a, T b, int *fault) {                         \
        (void)fault;                                                                 \
        return negative_##sfx(b) || b >= BITS ? 0 : (T)((W)a << b);                  \
    }                                                                                \
    static inline T shift_right_##sfx(T a, T b, int *fault) {                        \
        (void)fault;                                                                 \
        const int widest = BITS - SIGNED;                                            \
        return (T)(a >> (negative_##sfx(b) || b >= widest ? widest : (int)b));       \
    }                                                                                \
    COMPARISONS(sfx, T)

/* Whether x < 0, written per type since "x < 0" on uint8_t draws a warning. */
static inline bool negative_u8(uint8_t x) { return (void)x, false; }
static inline bool negative_i8(int8_t x) { return x < 0; }
static inline bool negative_i16(int16_t x) { return x < 0; }
static inline bool negative_i32(int32_t x) { return x < 0; }
static inline bool negative_i64(int64_t x) { return x < 0; }
INT_FUNCTIONS(u8, uint8_t, uint32_t, 8, 0)
INT_FUNCTIONS(i8, int8_t, uint32_t, 8, 1)
INT_FUNCTIONS(i16, int16_t, uint32_t, 16, 1)
INT_FUNCTIONS(i32, int32_t, uint32_t, 32, 1)
INT_FUNCTIONS(i64, int64_t, uint64_t, 64, 1)

/* ---- bool: sums and maxima are "or", products and minima "and" ---- */
static inline bool add_b8(bool a, bool b, int *fault) { return (void)fault, a | b; }
static inline bool mul_b8(bool a, bool b, int *fault) { return (void)fault, a & b; }
static inline bool maximum_b8(bool a, bool b, int *fault) { return (void)fault, a | b; }
static inline bool minimum_b8(bool a, bool b, int *fault) { return (void)fault, a & b; }
static inline bool bitwise_and_b8(bool a, bool b, int *fault) { return (void)fault, a & b; }
static inline bool bitwise_or_b8(bool a, bool b, int *fault) { return (void)fault, a | b; }
static inline bool bitwise_xor_b8(bool a, bool b, int *fault) { return (void)fault, a ^ b; }
COMPARISONS(b8, bool)

/* ---- loops ---- */

/* Ops by the dtypes they accept. */
#define ANY_DTYPE_OPS(X) X(ADD, add) X(MUL, mul) X(MAXIMUM, maximum) X(MINIMUM, minimum)
#define NUMERIC_OPS(X) \
    X(SUB, sub) X(FLOOR_DIVIDE, floor_divide) X(REMAINDER, remainder) X(FMOD, fmod) X(POW, pow)
#define FLOAT_OPS(X)                                                                    \
    X(DIV, div) X(ATAN2, atan2) X(IGAMMA, igamma) X(IGAMMAC, igammac) X(ZETA, zeta)      \
    X(CHEBYSHEV_T, chebyshev_t) X(CHEBYSHEV_U, chebyshev_u) X(CHEBYSHEV_V, chebyshev_v)  \
    X(CHEBYSHEV_W, chebyshev_w) X(SHIFTED_CHEBYSHEV_T, shifted_chebyshev_t)              \
    X(SHIFTED_CHEBYSHEV_U, shifted_chebyshev_u) X(SHIFTED_CHEBYSHEV_V, shifted_chebyshev_v) \
    X(SHIFTED_CHEBYSHEV_W, shifted_chebyshev_w) X(HERMITE_H, hermite_h)                  \
    X(HERMITE_HE, hermite_he) X(LAGUERRE_L, laguerre_l) X(LEGENDRE_P, legendre_p)
#define BITWISE_OPS(X) \
    X(BITWISE_AND, bitwise_and) X(BITWISE_OR, bitwise_or) X(BITWISE_XOR, bitwise_xor)
#define SHIFT_OPS(X) X(SHIFT_LEFT, shift_left) X(SHIFT_RIGHT, shift_right)
#define BOOL_RESULT_OPS(X)                                                              \
    X(LOGICAL_AND, logical_and) X(LOGICAL_OR, logical_or) X(LOGICAL_XOR, logical_xor)   \
    X(EQ, eq) X(NE, ne) X(LT, lt) X(LE, le) X(GT, gt) X(GE, ge)

#define SAME_TYPE_LOOP(OP, op, sfx, E, ST, CT, LOAD, STORE, cs, form) \
    SAME_TYPE_##form(op##_##sfx##_loop, E, ST, CT, LOAD, STORE, op##_##cs)
#define SAME_TYPE_PLAIN(NAME, E, ST, CT, LOAD, STORE, FN) \
    EW_BINARY_LOOP(NAME, ST, CT, LOAD, ST, STORE, FN)
#define SAME_TYPE_HALF(NAME, E, ST, CT, LOAD, STORE, FN) \
    EW_HALF_BINARY_LOOP(NAME, E, LOAD, STORE, FN)
#define BOOL_RESULT_LOOP(OP, op, sfx, E, ST, CT, LOAD, STORE, cs, form) \
    EW_BINARY_LOOP(op##_##sfx##_loop, ST, CT, LOAD, uint8_t, EW_SAME, op##_##cs)
#define ENTRY(OP, op, sfx, E, ...) [PORTA_##OP][E] = op##_##sfx##_loop,

/* For each op list, the dtype lists it covers; X makes loops or entries. */
#define ANY_DTYPE_OP(X, OP, op) EW_ALL_DTYPES(X, OP, op)
#define NUMERIC_OP(X, OP, op) EW_NUMERIC_DTYPES(X, OP, op)
#define FLOAT_OP(X, OP, op) EW_FLOAT_DTYPES(X, OP, op)
#define BITWISE_OP(X, OP, op) EW_BOOL_DTYPE(X, OP, op) EW_INT_DTYPES(X, OP, op)
#define SHIFT_OP(X, OP, op) EW_INT_DTYPES(X, OP, op)

#define LOOPS_ANY(OP, op) ANY_DTYPE_OP(SAME_TYPE_LOOP, OP, op)
#define LOOPS_NUMERIC(OP, op) NUMERIC_OP(SAME_TYPE_LOOP, OP, op)
#define LOOPS_FLOAT(OP, op) FLOAT_OP(SAME_TYPE_LOOP, OP, op)
#define LOOPS_BITWISE(OP, op) BITWISE_OP(SAME_TYPE_LOOP, OP, op)
#define LOOPS_SHIFT(OP, op) SHIFT_OP(SAME_TYPE_LOOP, OP, op)
#define LOOPS_BOOL_RESULT(OP, op) ANY_DTYPE_OP(BOOL_RESULT_LOOP, OP, op)
ANY_DTYPE_OPS(LOOPS_ANY)
NUMERIC_OPS(LOOPS_NUMERIC)
FLOAT_OPS(LOOPS_FLOAT)
BITWISE_OPS(LOOPS_BITWISE)
SHIFT_OPS(LOOPS_SHIFT)
BOOL_RESULT_OPS(LOOPS_BOOL_RESULT)

#define ENTRIES_ANY(OP, op) ANY_DTYPE_OP(ENTRY, OP, op)
#define ENTRIES_NUMERIC(OP, op) NUMERIC_OP(ENTRY, OP, op)
#define ENTRIES_FLOAT(OP, op) FLOAT_OP(ENTRY, OP, op)
#define ENTRIES_BITWISE(OP, op) BITWISE_OP(ENTRY, OP, op)
#define ENTRIES_SHIFT(OP, op) SHIFT_OP(ENTRY, OP, op)
const ew_loop_fn EW_BINARY_TABLE[PORTA_BINARY_OP_COUNT][PORTA_DTYPE_COUNT] = {
    ANY_DTYPE_OPS(ENTRIES_ANY)
    NUMERIC_OPS(ENTRIES_NUMERIC)
    FLOAT_OPS(ENTRIES_FLOAT)
    BITWISE_OPS(ENTRIES_BITWISE)
    SHIFT_OPS(ENTRIES_SHIFT)
    BOOL_RESULT_OPS(ENTRIES_ANY)
};
