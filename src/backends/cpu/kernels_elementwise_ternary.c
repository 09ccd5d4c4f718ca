/* Ternary elementwise kernels: where(cond, a, b) moves elements by size, and
 * fma(a, b, c) = a * b + c computes in each dtype's compute type (integers
 * wrap; float16 and bfloat16 go through float and round once). */
#include "backends/cpu/kernels_elementwise.h"

/* o = cond ? x : y as a bit mask over both values, both always loaded: a
 * branch on a random condition mispredicts half the time (20x slower on 4M
 * elements), and a select with conditional loads does not vectorize. T is an
 * unsigned type of the element's size. */
#define WHERE_SELECT(T, c, x, y) \
    ((T)(((T)0 - (T)((c) != 0)) & (x)) | (T)(((T)((c) != 0) - (T)1) & (y)))

/* Contiguous out and condition, with a and b each contiguous or a single
 * broadcast value (where(mask, x, 0.0)); anything else goes element by
 * element. */
#define WHERE_LOOP(NAME, T)                                                        \
    static int NAME(char *const *p, const int64_t *s, int64_t n) {                 \
        const int64_t size = (int64_t)sizeof(T);                                   \
        if (s[0] == size && s[1] == 1 && (s[2] == size || s[2] == 0) &&            \
            (s[3] == size || s[3] == 0)) {                                         \
            T *o = (T *)(void *)p[0];                                              \
            const uint8_t *cond = (const uint8_t *)p[1];                           \
            const T *a = (const T *)(const void *)p[2], *b = (const T *)(const void *)p[3]; \
            const T a0 = a[0], b0 = b[0];                                          \
            if (s[2] && s[3]) {                                                    \
                EW_BLOCKED(n, i, o[i] = WHERE_SELECT(T, cond[i], a[i], b[i]));     \
            } else if (s[2]) {                                                     \
                EW_BLOCKED(n, i, o[i] = WHERE_SELECT(T, cond[i], a[i], b0));       \
            } else if (s[3]) {                                                     \
                EW_BLOCKED(n, i, o[i] = WHERE_SELECT(T, cond[i], a0, b[i]));       \
            } else {                                                               \
                EW_BLOCKED(n, i, o[i] = WHERE_SELECT(T, cond[i], a0, b0));         \
            }                                                                      \
        } else {                                                                   \
            for (int64_t i = 0; i < n; i++)                                        \
                EW_AT(T, p[0], i, s[0]) = EW_AT(const uint8_t, p[1], i, s[1])      \
                                              ? EW_AT(const T, p[2], i, s[2])      \
                                              : EW_AT(const T, p[3], i, s[3]);     \
        }                                                                          \
        return 0;                                                                  \
    }
WHERE_LOOP(where_1, uint8_t)
WHERE_LOOP(where_2, uint16_t)
WHERE_LOOP(where_4, uint32_t)
WHERE_LOOP(where_8, uint64_t)

static inline float fma_f32(float a, float b, float c) { return a * b + c; }
static inline double fma_f64(double a, double b, double c) { return a * b + c; }
/* W: unsigned and at least int's width, so products wrap instead of overflowing. */
#define INT_FMA(sfx, T, W) \
    static inline T fma_##sfx(T a, T b, T c) { return (T)((W)a * (W)b + (W)c); }
INT_FMA(u8, uint8_t, uint32_t)
INT_FMA(i8, int8_t, uint32_t)
INT_FMA(i16, int16_t, uint32_t)
INT_FMA(i32, int32_t, uint32_t)
INT_FMA(i64, int64_t, uint64_t)

#define FMA_LOOP(ignored, sfx, E, ST, CT, LOAD, STORE, fn, form)                       \
    static int fma_##sfx##_loop(char *const *p, const int64_t *s, int64_t n) {     \
        const int64_t size = (int64_t)sizeof(ST);                                  \
        if (s[0] == size && s[1] == size && s[2] == size && s[3] == size) {        \
            ST *o = (ST *)(void *)p[0];                                            \
            const ST *a = (const ST *)(const void *)p[1];                          \
            const ST *b = (const ST *)(const void *)p[2];                          \
            const ST *c = (const ST *)(const void *)p[3];                          \
            EW_BLOCKED(n, i, o[i] = (ST)STORE(fma_##fn(LOAD(a[i]), LOAD(b[i]), LOAD(c[i])))); \
        } else {                                                                   \
            for (int64_t i = 0; i < n; i++)                                        \
                EW_AT(ST, p[0], i, s[0]) = (ST)STORE(fma_##fn(                     \
                    LOAD(EW_AT(const ST, p[1], i, s[1])),                          \
                    LOAD(EW_AT(const ST, p[2], i, s[2])),                          \
                    LOAD(EW_AT(const ST, p[3], i, s[3]))));                        \
        }                                                                          \
        return 0;                                                                  \
    }
EW_NUMERIC_DTYPES(FMA_LOOP, -)

#define FMA_ENTRY(ignored, sfx, E, ...) [E] = fma_##sfx##_loop,
static const ew_loop_fn fma_loops[PORTA_DTYPE_COUNT] = {EW_NUMERIC_DTYPES(FMA_ENTRY, -)};

ew_loop_fn ew_ternary_loop(porta_ternary_op op, porta_dtype dtype) {
    if ((unsigned)dtype >= PORTA_DTYPE_COUNT) return NULL;
    switch (op) {
    case PORTA_WHERE:
        switch (porta_dtype_size(dtype)) {
        case 1: return where_1;
        case 2: return where_2;
        case 4: return where_4;
        default: return where_8;
        }
    case PORTA_FMA: return fma_loops[dtype];
    default: return NULL;
    }
}
