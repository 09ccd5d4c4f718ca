/* Dtype conversion loops with PyTorch's semantics: float -> integer truncates
 * toward zero and wraps modulo 2^n through int64 (NaN -> 0, never C's
 * undefined out-of-range conversion), anything nonzero -> true, and float16
 * and bfloat16 round to nearest even. Same-dtype copies move bits. */
#include <string.h>

#include "backends/cpu/kernels_elementwise.h"

/* ---- same dtype: copies by element size (also fills, from a stride-0 input) ---- */

#define COPY_LOOP(NAME, T)                                                     \
    static int NAME(char *const *p, const int64_t *s, int64_t n) {             \
        const int64_t size = (int64_t)sizeof(T);                               \
        if (s[0] == size && s[1] == size) {                                    \
            memmove(p[0], p[1], (size_t)(n * size)); /* p[0] == p[1] in place */ \
        } else if (s[0] == size && s[1] == 0) {                                \
            T *o = (T *)(void *)p[0];                                          \
            const T v = *(const T *)(const void *)p[1];                        \
            EW_BLOCKED(n, i, o[i] = v);                                        \
        } else {                                                               \
            for (int64_t i = 0; i < n; i++)                                    \
                EW_AT(T, p[0], i, s[0]) = EW_AT(const T, p[1], i, s[1]);       \
        }                                                                      \
        return 0;                                                              \
    }
COPY_LOOP(copy_1, uint8_t)
COPY_LOOP(copy_2, uint16_t)
COPY_LOOP(copy_4, uint32_t)
COPY_LOOP(copy_8, uint64_t)

/* ---- conversions ----
 * A value is widened to int64 (bool and integers) or double (floats), then
 * narrowed to the target; every conversion of the pair lies in one of the
 * two steps. */
#define ST_b8 uint8_t
#define ST_u8 uint8_t
#define ST_i8 int8_t
#define ST_i16 int16_t
#define ST_i32 int32_t
#define ST_i64 int64_t
#define ST_f16 uint16_t
#define ST_bf16 uint16_t
#define ST_f32 float
#define ST_f64 double

#define WIDE_b8 int
#define WIDE_u8 int
#define WIDE_i8 int
#define WIDE_i16 int
#define WIDE_i32 int
#define WIDE_i64 int
#define WIDE_f16 float
#define WIDE_bf16 float
#define WIDE_f32 float
#define WIDE_f64 float

#define WIDEN_b8(x) ((int64_t)((x) != 0))
#define WIDEN_u8(x) ((int64_t)(x))
#define WIDEN_i8(x) ((int64_t)(x))
#define WIDEN_i16(x) ((int64_t)(x))
#define WIDEN_i32(x) ((int64_t)(x))
#define WIDEN_i64(x) ((int64_t)(x))
#define WIDEN_f16(x) ((double)core_f16_to_f32(x))
#define WIDEN_bf16(x) ((double)core_bf16_to_f32(x))
#define WIDEN_f32(x) ((double)(x))
#define WIDEN_f64(x) (x)

/* Integer targets keep the low bits of the int64 value. */
#define NARROW_INT(sfx, T)                                                                  \
    static inline T narrow_##sfx##_from_int(int64_t v) { return (T)v; }                     \
    static inline T narrow_##sfx##_from_float(double v) { return (T)core_double_to_i64(v); }
NARROW_INT(u8, uint8_t)
NARROW_INT(i8, int8_t)
NARROW_INT(i16, int16_t)
NARROW_INT(i32, int32_t)
NARROW_INT(i64, int64_t)
static inline uint8_t narrow_b8_from_int(int64_t v) { return v != 0; }
static inline uint8_t narrow_b8_from_float(double v) { return v != 0; } /* NaN -> true */
/* Half targets round through float, as PyTorch converts double -> half. */
static inline uint16_t narrow_f16_from_int(int64_t v) { return core_f32_to_f16((float)v); }
static inline uint16_t narrow_f16_from_float(double v) { return core_f32_to_f16((float)v); }
static inline uint16_t narrow_bf16_from_int(int64_t v) { return core_f32_to_bf16((float)v); }
static inline uint16_t narrow_bf16_from_float(double v) { return core_f32_to_bf16((float)v); }
static inline float narrow_f32_from_int(int64_t v) { return (float)v; }
static inline float narrow_f32_from_float(double v) { return (float)v; }
static inline double narrow_f64_from_int(int64_t v) { return (double)v; }
static inline double narrow_f64_from_float(double v) { return v; }

#define NARROW(to, wide) NARROW_(to, wide)
#define NARROW_(to, wide) narrow_##to##_from_##wide

/* Every ordered pair of distinct dtypes, but for the float <-> half pairs
 * below. */
#define CAST_PAIRS(X)                                                                         \
    X(b8, u8) X(b8, i8) X(b8, i16) X(b8, i32) X(b8, i64)                                      \
    X(b8, f16) X(b8, bf16) X(b8, f32) X(b8, f64)                                              \
    X(u8, b8) X(u8, i8) X(u8, i16) X(u8, i32) X(u8, i64)                                      \
    X(u8, f16) X(u8, bf16) X(u8, f32) X(u8, f64)                                              \
    X(i8, b8) X(i8, u8) X(i8, i16) X(i8, i32) X(i8, i64)                                      \
    X(i8, f16) X(i8, bf16) X(i8, f32) X(i8, f64)                                              \
    X(i16, b8) X(i16, u8) X(i16, i8) X(i16, i32) X(i16, i64)                                  \
    X(i16, f16) X(i16, bf16) X(i16, f32) X(i16, f64)                                          \
    X(i32, b8) X(i32, u8) X(i32, i8) X(i32, i16) X(i32, i64)                                  \
    X(i32, f16) X(i32, bf16) X(i32, f32) X(i32, f64)                                          \
    X(i64, b8) X(i64, u8) X(i64, i8) X(i64, i16) X(i64, i32)                                  \
    X(i64, f16) X(i64, bf16) X(i64, f32) X(i64, f64)                                          \
    X(f16, b8) X(f16, u8) X(f16, i8) X(f16, i16) X(f16, i32) X(f16, i64)                      \
    X(f16, bf16) X(f16, f64)                                                                  \
    X(bf16, b8) X(bf16, u8) X(bf16, i8) X(bf16, i16) X(bf16, i32) X(bf16, i64)                \
    X(bf16, f16) X(bf16, f64)                                                                 \
    X(f32, b8) X(f32, u8) X(f32, i8) X(f32, i16) X(f32, i32) X(f32, i64)                      \
    X(f32, f64)                                                                               \
    X(f64, b8) X(f64, u8) X(f64, i8) X(f64, i16) X(f64, i32) X(f64, i64)                      \
    X(f64, f16) X(f64, bf16) X(f64, f32)

#define CAST_LOOP(from, to)                                                                \
    EW_UNARY_LOOP(cast_##from##_##to, ST_##from, WIDEN_##from, ST_##to, NARROW(to, WIDE_##from), \
                  EW_SAME)
CAST_PAIRS(CAST_LOOP)

/* float <-> float16/bfloat16, the conversions mixed-precision code leans on:
 * contiguous runs go through the stage converters (F16C where present). */
#define HALF_CASTS(sfx, E, LOAD, STORE)                                                  \
    static int cast_##sfx##_f32(char *const *p, const int64_t *s, int64_t n) {           \
        if (s[0] == 4 && s[1] == 2) {                                                    \
            ew_widen_half(E, (const uint16_t *)(const void *)p[1], (float *)(void *)p[0], n); \
        } else {                                                                         \
            for (int64_t i = 0; i < n; i++)                                              \
                EW_AT(float, p[0], i, s[0]) = LOAD(EW_AT(const uint16_t, p[1], i, s[1])); \
        }                                                                                \
        return 0;                                                                        \
    }                                                                                    \
    static int cast_f32_##sfx(char *const *p, const int64_t *s, int64_t n) {             \
        if (s[0] == 2 && s[1] == 4) {                                                    \
            ew_narrow_half(E, (const float *)(const void *)p[1], (uint16_t *)(void *)p[0], n); \
        } else {                                                                         \
            for (int64_t i = 0; i < n; i++)                                              \
                EW_AT(uint16_t, p[0], i, s[0]) = STORE(EW_AT(const float, p[1], i, s[1])); \
        }                                                                                \
        return 0;                                                                        \
    }
HALF_CASTS(f16, PORTA_F16, core_f16_to_f32, core_f32_to_f16)
HALF_CASTS(bf16, PORTA_BF16, core_bf16_to_f32, core_f32_to_bf16)

#define E_b8 PORTA_BOOL
#define E_u8 PORTA_U8
#define E_i8 PORTA_I8
#define E_i16 PORTA_I16
#define E_i32 PORTA_I32
#define E_i64 PORTA_I64
#define E_f16 PORTA_F16
#define E_bf16 PORTA_BF16
#define E_f32 PORTA_F32
#define E_f64 PORTA_F64
#define CAST_ENTRY(from, to) [E_##from][E_##to] = cast_##from##_##to,
static const ew_loop_fn cast_loops[PORTA_DTYPE_COUNT][PORTA_DTYPE_COUNT] = {
    CAST_PAIRS(CAST_ENTRY)
    CAST_ENTRY(f16, f32) CAST_ENTRY(bf16, f32) CAST_ENTRY(f32, f16) CAST_ENTRY(f32, bf16)
};

ew_loop_fn ew_cast_loop(porta_dtype from, porta_dtype to) {
    if ((unsigned)from >= PORTA_DTYPE_COUNT || (unsigned)to >= PORTA_DTYPE_COUNT) return NULL;
    if (from != to) return cast_loops[from][to];
    switch (porta_dtype_size(from)) {
    case 1: return copy_1;
    case 2: return copy_2;
    case 4: return copy_4;
    default: return copy_8;
    }
}
