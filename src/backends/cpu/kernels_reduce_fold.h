/* The typed inner loops of the CPU reductions, one per (op, dtype), as a
 * template: each kernels_reduce_fold*.c file defines REDUCE_FOLD_TABLE (and
 * may define RUN_LANE_BYTES) and includes this once, so the same loops are
 * compiled for each instruction set that kernels_reduce_select.c picks from.
 *
 * Float sums are exact enough at any length: lanes of float (or the element
 * type) fold short blocks, and the blocks' results meet in a double, so the
 * error grows with the block length, not with n. */
#ifndef REDUCE_FOLD_TABLE
#error "define REDUCE_FOLD_TABLE before including kernels_reduce_fold.h"
#endif

#include <math.h>
#include <stddef.h>
#include <string.h>

#include "backends/cpu/kernels_reduce.h"
#include "core/dtype.h"

/* Independent accumulators per contiguous run: enough to fill the vector
 * units and hide the add latency. The best byte count was measured per
 * instruction set (with GCC 12); between 8 and 64 lanes vectorize well. */
#ifndef RUN_LANE_BYTES
#define RUN_LANE_BYTES 128
#endif
#define RUN_LANES_OF(A)                                                                   \
    (RUN_LANE_BYTES / sizeof(A) < 8    ? 8                                                \
     : RUN_LANE_BYTES / sizeof(A) > 64 ? 64                                               \
                                       : RUN_LANE_BYTES / sizeof(A))
/* Outputs folded side by side per inner loop of the row orders: a constant
 * trip count is what lets the compiler vectorize them. */
#define ROW_LANES 16
/* Elements a run's lanes fold before handing their result to the total: at
 * most 64 per lane keeps a float sum's rounding error near 64 ulp at worst. */
#define RUN_BLOCK 1024
/* Rows folded into a tile's per-column accumulators before the same hand-off. */
#define ROW_BLOCK 64
/* lcm(w, ROW_LANES) for w < ROW_LANES is at most this. */
#define NARROW_LANES_MAX (ROW_LANES * (ROW_LANES - 1))

/* ---- element loads: the value an element contributes ---- */

/* core_f16_to_f32 with selects instead of branches, so that loops over
 * float16 data vectorize: rebias the exponent, then patch in the results
 * for the two special exponents. Subnormals come out of a float subtraction:
 * 2^-14 * (1 + m/1024) - 2^-14 = m * 2^-24. */
static inline float f16_to_f32_selects(uint16_t h) {
    uint32_t shifted = (uint32_t)(h & 0x7fff) << 13;
    uint32_t exponent = h & 0x7c00u;
    uint32_t normal = shifted + (112u << 23);
    uint32_t inf_or_nan = normal + (112u << 23);
    uint32_t subnormal = core_f32_bits(core_f32_from_bits(shifted + (113u << 23)) - 0x1p-14f);
    /* Masks rather than ?: keep the loop free of branches. */
    uint32_t special = 0u - (uint32_t)(exponent == 0x7c00u), tiny = 0u - (uint32_t)(exponent == 0);
    uint32_t bits = (inf_or_nan & special) | (subnormal & tiny) | (normal & ~(special | tiny));
    return core_f32_from_bits(bits | (uint32_t)(h & 0x8000) << 16);
}

#define LOAD_SAME(v) (v)
#define LOAD_F16(v) f16_to_f32_selects(v)
#define LOAD_BF16(v) core_bf16_to_f32(v)
#define LOAD_U64(v) ((uint64_t)(v))
#define NONZERO(v) ((uint8_t)((v) != 0))
#define NONZERO_HALF(v) ((uint8_t)(((v)&0x7fff) != 0)) /* -0.0 is zero too */

/* ---- combining: STEP folds into a lane, FLUSH folds a lane into a total ---- */
#define STEP_ADD(a, v) ((a) += (v))
#define STEP_MUL(a, v) ((a) *= (v))
#define STEP_MAX(a, v) ((a) = (v) > (a) ? (v) : (a))
#define STEP_MIN(a, v) ((a) = (v) < (a) ? (v) : (a))
/* A NaN wins and then stays: once a holds NaN no comparison replaces it.
 * Written as two selects in a function, which gcc turns into a max (or min)
 * instruction, keeping a when either is NaN, and a masked move for a NaN v
 * that is off the dependency chain through a; one conditional expression
 * instead becomes a chain of compares through a, several times slower. */
#define DEFINE_NAN_EXTREMES(T)                                                            \
    static inline T max_nan_##T(T a, T v) {                                               \
        T larger = a < v ? v : a;                                                         \
        return v != v ? v : larger;                                                       \
    }                                                                                     \
    static inline T min_nan_##T(T a, T v) {                                               \
        T smaller = v < a ? v : a;                                                        \
        return v != v ? v : smaller;                                                      \
    }
DEFINE_NAN_EXTREMES(float)
DEFINE_NAN_EXTREMES(double)
#define STEP_MAX_NAN(a, v) \
    ((a) = _Generic((a), float: max_nan_float, double: max_nan_double)((a), (v)))
#define STEP_MIN_NAN(a, v) \
    ((a) = _Generic((a), float: min_nan_float, double: min_nan_double)((a), (v)))
#define STEP_OR(a, v) ((a) |= (v))
#define STEP_AND(a, v) ((a) &= (v))

#define FLUSH_ADD_F(t, a) ((t)->f += (double)(a))
#define FLUSH_ADD_U(t, a) ((t)->u += (a))
#define FLUSH_MUL_F(t, a) ((t)->f *= (double)(a))
#define FLUSH_MUL_U(t, a) ((t)->u *= (a))
#define FLUSH_MAX_F(t, a) STEP_MAX_NAN((t)->f, (double)(a))
#define FLUSH_MIN_F(t, a) STEP_MIN_NAN((t)->f, (double)(a))
#define FLUSH_MAX_I(t, a) STEP_MAX((t)->i, (int64_t)(a))
#define FLUSH_MIN_I(t, a) STEP_MIN((t)->i, (int64_t)(a))
#define FLUSH_OR(t, a) ((t)->u |= (a))
#define FLUSH_AND(t, a) ((t)->u &= (a))

/* One level of folding a run's lanes in halves, lanes[l] op= lanes[l + H].
 * H is a constant at each level so the compiler vectorizes the level (a
 * loop over a variable half stays scalar, and with NaN-aware max that costs
 * more than the run itself). RUN_LANES is a power of two. */
#define LANE_TREE(STEP, H)                                                                \
    if (RUN_LANES > (H))                                                                  \
        for (int l = 0; l < (H); l++) STEP(lanes[l], lanes[l + (H)]);

/* The fold of one (op, dtype): T the element type, A the lane type. Three
 * loop orders, chosen by the tile's strides (see kernels_reduce.h). Inner
 * loops run a constant number of times so the compiler vectorizes them. */
#define DEFINE_FOLD(NAME, T, A, LOAD, IDENT, STEP, FLUSH)                                 \
    /* Outputs side by side (ks == 1): fold whole rows of them at a time, as              \
     * long contiguous sweeps are what keeps the hardware prefetcher going. */            \
    static void NAME##_rows(const T *restrict x, int64_t w, int64_t n, int64_t rs,        \
                            reduce_total *restrict totals, A *restrict acc) {             \
        for (int64_t i0 = 0; i0 < n; i0 += ROW_BLOCK) {                                   \
            int64_t end = n - i0 < ROW_BLOCK ? n : i0 + ROW_BLOCK;                        \
            for (int64_t j = 0; j < w; j++) acc[j] = IDENT;                               \
            for (int64_t i = i0; i < end; i++) {                                          \
                const T *row = x + i * rs;                                                \
                int64_t j = 0;                                                            \
                for (; j + ROW_LANES <= w; j += ROW_LANES)                                \
                    for (int l = 0; l < ROW_LANES; l++) {                                 \
                        A v_ = LOAD(row[j + l]);                                          \
                        STEP(acc[j + l], v_);                                             \
                    }                                                                     \
                for (; j < w; j++) {                                                      \
                    A v_ = LOAD(row[j]);                                                  \
                    STEP(acc[j], v_);                                                     \
                }                                                                         \
            }                                                                             \
            for (int64_t j = 0; j < w; j++) FLUSH(&totals[j], acc[j]);                    \
        }                                                                                 \
    }                                                                                     \
    /* Fewer outputs than lanes with rows packed back to back (ks == 1,                   \
     * rs == w): one contiguous stream, in lcm(w, ROW_LANES) lanes so that                \
     * lane l always meets output l % w. */                                               \
    static void NAME##_narrow(const T *x, int64_t w, int64_t n, reduce_total *totals) {   \
        int64_t period = w;                                                               \
        while (period % ROW_LANES) period += w;                                           \
        int64_t count = n * w, block = period * ROW_BLOCK;                                \
        A acc[NARROW_LANES_MAX];                                                          \
        for (int64_t i0 = 0; i0 < count; i0 += block) {                                   \
            int64_t m = count - i0 < block ? count - i0 : block;                          \
            const T *chunk = x + i0;                                                      \
            for (int64_t l = 0; l < period; l++) acc[l] = IDENT;                          \
            int64_t i = 0;                                                                \
            for (; i + period <= m; i += period)                                          \
                for (int64_t l = 0; l < period; l += ROW_LANES)                           \
                    for (int k = 0; k < ROW_LANES; k++) {                                 \
                        A v_ = LOAD(chunk[i + l + k]);                                    \
                        STEP(acc[l + k], v_);                                             \
                    }                                                                     \
            for (; i < m; i++) {                                                          \
                A v_ = LOAD(chunk[i]);                                                    \
                STEP(acc[i % period], v_);                                                \
            }                                                                             \
            for (int64_t l = 0; l < period; l++) FLUSH(&totals[l % w], acc[l]);           \
        }                                                                                 \
    }                                                                                     \
    /* Otherwise: one run per output, contiguous (rs == 1) or strided. */                 \
    static void NAME##_runs(const T *x, int64_t w, int64_t ks, int64_t n, int64_t rs,     \
                            reduce_total *totals) {                                       \
        enum { RUN_LANES = RUN_LANES_OF(A) };                                             \
        _Static_assert((RUN_LANES & (RUN_LANES - 1)) == 0 && RUN_LANES <= 64,             \
                       "LANE_TREE halves a power of two up to 64");                       \
        for (int64_t j = 0; j < w; j++) {                                                 \
            const T *run = x + j * ks;                                                    \
            if (n < RUN_LANES) { /* too short for lanes to pay off */                     \
                A a = IDENT;                                                              \
                for (int64_t i = 0; i < n; i++) {                                         \
                    A v_ = LOAD(run[i * rs]);                                             \
                    STEP(a, v_);                                                          \
                }                                                                         \
                FLUSH(&totals[j], a);                                                     \
                continue;                                                                 \
            }                                                                             \
            for (int64_t i0 = 0; i0 < n; i0 += RUN_BLOCK) {                               \
                int64_t m = n - i0 < RUN_BLOCK ? n - i0 : RUN_BLOCK;                      \
                const T *block = run + i0 * rs;                                           \
                A lanes[RUN_LANES];                                                       \
                for (int l = 0; l < RUN_LANES; l++) lanes[l] = IDENT;                     \
                int64_t i = 0;                                                            \
                if (rs == 1) {                                                            \
                    for (; i + RUN_LANES <= m; i += RUN_LANES)                            \
                        for (int l = 0; l < RUN_LANES; l++) {                             \
                            A v_ = LOAD(block[i + l]);                                    \
                            STEP(lanes[l], v_);                                           \
                        }                                                                 \
                } else {                                                                  \
                    for (; i + RUN_LANES <= m; i += RUN_LANES)                            \
                        for (int l = 0; l < RUN_LANES; l++) {                             \
                            A v_ = LOAD(block[(i + l) * rs]);                             \
                            STEP(lanes[l], v_);                                           \
                        }                                                                 \
                }                                                                         \
                for (; i < m; i++) {                                                      \
                    A v_ = LOAD(block[i * rs]);                                           \
                    STEP(lanes[0], v_);                                                   \
                }                                                                         \
                LANE_TREE(STEP, 32) LANE_TREE(STEP, 16) LANE_TREE(STEP, 8)                \
                LANE_TREE(STEP, 4) LANE_TREE(STEP, 2) LANE_TREE(STEP, 1)                  \
                FLUSH(&totals[j], lanes[0]);                                              \
            }                                                                             \
        }                                                                                 \
    }                                                                                     \
    static void NAME(const char *xp, int64_t w, int64_t ks, int64_t n, int64_t rs,        \
                     reduce_total *totals, void *lanes) {                                 \
        const T *x = (const T *)xp;                                                       \
        if (ks != 1 || rs == 1)                                                           \
            NAME##_runs(x, w, ks, n, rs, totals);                                         \
        else if (rs == w && w < ROW_LANES)                                                \
            NAME##_narrow(x, w, n, totals);                                               \
        else                                                                              \
            NAME##_rows(x, w, n, rs, totals, (A *)lanes);                                 \
    }

#define MATCH_FLOAT(v, t) ((v) == (t) || ((t) != (t) && (v) != (v)))
#define MATCH_INT(v, t) ((v) == (t))

/* The search of the arg ops: V the type values compare in, FIELD the
 * reduce_total member holding the target. */
#define DEFINE_FIND(NAME, T, V, LOAD, FIELD, MATCH)                                       \
    static int64_t NAME(const char *xp, int64_t w, int64_t ks, int64_t n, int64_t rs,     \
                        const reduce_total *targets, int64_t *idx, int64_t base) {        \
        const T *x = (const T *)xp;                                                       \
        int64_t missing = 0;                                                              \
        for (int64_t j = 0; j < w; j++) missing += idx[j] < 0;                            \
        if (ks == 1 && rs != 1) { /* scan rows, so memory is read in order */             \
            for (int64_t i = 0; i < n && missing > 0; i++) {                              \
                const T *row = x + i * rs;                                                \
                for (int64_t j = 0; j < w; j++) {                                         \
                    V v_ = LOAD(row[j]), t_ = targets[j].FIELD;                           \
                    if (idx[j] < 0 && MATCH(v_, t_)) {                                    \
                        idx[j] = base + i;                                                \
                        missing--;                                                        \
                    }                                                                     \
                }                                                                         \
            }                                                                             \
            return missing;                                                               \
        }                                                                                 \
        for (int64_t j = 0; j < w; j++) {                                                 \
            if (idx[j] >= 0) continue;                                                    \
            const T *run = x + j * ks;                                                    \
            V t_ = targets[j].FIELD;                                                      \
            for (int64_t i = 0; i < n; i++) {                                             \
                V v_ = LOAD(run[i * rs]);                                                 \
                if (MATCH(v_, t_)) {                                                      \
                    idx[j] = base + i;                                                    \
                    missing--;                                                            \
                    break;                                                                \
                }                                                                         \
            }                                                                             \
        }                                                                                 \
        return missing;                                                                   \
    }

#define DEFINE_STORE(NAME, T, EXPR)                                                       \
    static void NAME(const reduce_total *totals, int64_t w, char *out, int64_t stride) {  \
        T *dst = (T *)out;                                                                \
        for (int64_t j = 0; j < w; j++) {                                                 \
            reduce_total total = totals[j];                                               \
            dst[j * stride] = (EXPR);                                                     \
        }                                                                                 \
    }

/* ---- per dtype ---- */

/* Sums and products: floats (half types computed in float) and int64. */
#define DEFINE_ARITHMETIC(SUFFIX, T, A, LOAD, FLUSH_ADD, FLUSH_MUL)                       \
    DEFINE_FOLD(sum_##SUFFIX, T, A, LOAD, (A)0, STEP_ADD, FLUSH_ADD)                      \
    DEFINE_FOLD(prod_##SUFFIX, T, A, LOAD, (A)1, STEP_MUL, FLUSH_MUL)
DEFINE_ARITHMETIC(f16, uint16_t, float, LOAD_F16, FLUSH_ADD_F, FLUSH_MUL_F)
DEFINE_ARITHMETIC(bf16, uint16_t, float, LOAD_BF16, FLUSH_ADD_F, FLUSH_MUL_F)
DEFINE_ARITHMETIC(f32, float, float, LOAD_SAME, FLUSH_ADD_F, FLUSH_MUL_F)
DEFINE_ARITHMETIC(f64, double, double, LOAD_SAME, FLUSH_ADD_F, FLUSH_MUL_F)
DEFINE_ARITHMETIC(i64, int64_t, uint64_t, LOAD_U64, FLUSH_ADD_U, FLUSH_MUL_U)

/* Max, min, any, all and the arg searches, for every dtype. */
#define DEFINE_ORDER_FLOAT(SUFFIX, T, A, LOAD, NZ)                                        \
    DEFINE_FOLD(max_##SUFFIX, T, A, LOAD, -INFINITY, STEP_MAX_NAN, FLUSH_MAX_F)           \
    DEFINE_FOLD(min_##SUFFIX, T, A, LOAD, INFINITY, STEP_MIN_NAN, FLUSH_MIN_F)            \
    DEFINE_FOLD(any_##SUFFIX, T, uint8_t, NZ, 0, STEP_OR, FLUSH_OR)                       \
    DEFINE_FOLD(all_##SUFFIX, T, uint8_t, NZ, 1, STEP_AND, FLUSH_AND)                     \
    DEFINE_FIND(find_##SUFFIX, T, double, LOAD, f, MATCH_FLOAT)
#define DEFINE_ORDER_INT(SUFFIX, T, LOWEST, HIGHEST)                                      \
    DEFINE_FOLD(max_##SUFFIX, T, T, LOAD_SAME, LOWEST, STEP_MAX, FLUSH_MAX_I)             \
    DEFINE_FOLD(min_##SUFFIX, T, T, LOAD_SAME, HIGHEST, STEP_MIN, FLUSH_MIN_I)            \
    DEFINE_FOLD(any_##SUFFIX, T, uint8_t, NONZERO, 0, STEP_OR, FLUSH_OR)                  \
    DEFINE_FOLD(all_##SUFFIX, T, uint8_t, NONZERO, 1, STEP_AND, FLUSH_AND)                \
    DEFINE_FIND(find_##SUFFIX, T, int64_t, LOAD_SAME, i, MATCH_INT)                       \
    DEFINE_STORE(store_##SUFFIX, T, (T)total.i)
DEFINE_ORDER_INT(bool, uint8_t, 0, 1)
DEFINE_ORDER_INT(u8, uint8_t, 0, UINT8_MAX)
DEFINE_ORDER_INT(i8, int8_t, INT8_MIN, INT8_MAX)
DEFINE_ORDER_INT(i16, int16_t, INT16_MIN, INT16_MAX)
DEFINE_ORDER_INT(i32, int32_t, INT32_MIN, INT32_MAX)
DEFINE_ORDER_INT(i64, int64_t, INT64_MIN, INT64_MAX)
DEFINE_ORDER_FLOAT(f16, uint16_t, float, LOAD_F16, NONZERO_HALF)
DEFINE_ORDER_FLOAT(bf16, uint16_t, float, LOAD_BF16, NONZERO_HALF)
DEFINE_ORDER_FLOAT(f32, float, float, LOAD_SAME, NONZERO)
DEFINE_ORDER_FLOAT(f64, double, double, LOAD_SAME, NONZERO)

DEFINE_STORE(store_f16, uint16_t, core_f32_to_f16((float)total.f))
DEFINE_STORE(store_bf16, uint16_t, core_f32_to_bf16((float)total.f))
DEFINE_STORE(store_f32, float, (float)total.f)
DEFINE_STORE(store_f64, double, total.f)
DEFINE_STORE(store_wrapped_i64, int64_t, (int64_t)total.u) /* sums and products */
DEFINE_STORE(store_flag, uint8_t, (uint8_t)(total.u != 0))

/* ---- merging partial results, per op and total member ---- */
#define DEFINE_MERGE(NAME, FLUSH, FIELD)                                                  \
    static void NAME(reduce_total *into, reduce_total from) { FLUSH(into, from.FIELD); }
DEFINE_MERGE(merge_add_f, FLUSH_ADD_F, f)
DEFINE_MERGE(merge_add_u, FLUSH_ADD_U, u)
DEFINE_MERGE(merge_mul_f, FLUSH_MUL_F, f)
DEFINE_MERGE(merge_mul_u, FLUSH_MUL_U, u)
DEFINE_MERGE(merge_max_f, FLUSH_MAX_F, f)
DEFINE_MERGE(merge_min_f, FLUSH_MIN_F, f)
DEFINE_MERGE(merge_max_i, FLUSH_MAX_I, i)
DEFINE_MERGE(merge_min_i, FLUSH_MIN_I, i)
DEFINE_MERGE(merge_or, FLUSH_OR, u)
DEFINE_MERGE(merge_and, FLUSH_AND, u)

/* ---- the table ---- */
#define SUM_F(S) {{.f = 0.0}, sum_##S, merge_add_f, store_##S, NULL}
#define PROD_F(S) {{.f = 1.0}, prod_##S, merge_mul_f, store_##S, NULL}
#define MAX_F(S) {{.f = -INFINITY}, max_##S, merge_max_f, store_##S, NULL}
#define MIN_F(S) {{.f = INFINITY}, min_##S, merge_min_f, store_##S, NULL}
#define ARGMAX_F(S) {{.f = -INFINITY}, max_##S, merge_max_f, NULL, find_##S}
#define ARGMIN_F(S) {{.f = INFINITY}, min_##S, merge_min_f, NULL, find_##S}
#define MAX_I(S) {{.i = INT64_MIN}, max_##S, merge_max_i, store_##S, NULL}
#define MIN_I(S) {{.i = INT64_MAX}, min_##S, merge_min_i, store_##S, NULL}
#define ARGMAX_I(S) {{.i = INT64_MIN}, max_##S, merge_max_i, NULL, find_##S}
#define ARGMIN_I(S) {{.i = INT64_MAX}, min_##S, merge_min_i, NULL, find_##S}
#define ANY(S) {{.u = 0}, any_##S, merge_or, store_flag, NULL}
#define ALL(S) {{.u = 1}, all_##S, merge_and, store_flag, NULL}

#define FLOAT_COLUMN(OP)                                                                  \
    [PORTA_F16] = OP(f16), [PORTA_BF16] = OP(bf16), [PORTA_F32] = OP(f32),                \
    [PORTA_F64] = OP(f64)
#define INT_COLUMN(OP)                                                                    \
    [PORTA_U8] = OP(u8), [PORTA_I8] = OP(i8), [PORTA_I16] = OP(i16),                      \
    [PORTA_I32] = OP(i32), [PORTA_I64] = OP(i64)

const reduce_kernel REDUCE_FOLD_TABLE[PORTA_REDUCE_OP_COUNT][PORTA_DTYPE_COUNT] = {
    [PORTA_REDUCE_SUM] = {FLOAT_COLUMN(SUM_F),
                          [PORTA_I64] = {{.u = 0}, sum_i64, merge_add_u, store_wrapped_i64,
                                         NULL}},
    [PORTA_REDUCE_PROD] = {FLOAT_COLUMN(PROD_F),
                           [PORTA_I64] = {{.u = 1}, prod_i64, merge_mul_u, store_wrapped_i64,
                                          NULL}},
    [PORTA_REDUCE_MAX] = {FLOAT_COLUMN(MAX_F), INT_COLUMN(MAX_I), [PORTA_BOOL] = MAX_I(bool)},
    [PORTA_REDUCE_MIN] = {FLOAT_COLUMN(MIN_F), INT_COLUMN(MIN_I), [PORTA_BOOL] = MIN_I(bool)},
    /* The op layer refuses bool arg ops as PyTorch does; the kernel has no
     * reason to. */
    [PORTA_REDUCE_ARGMAX] = {FLOAT_COLUMN(ARGMAX_F), INT_COLUMN(ARGMAX_I),
                             [PORTA_BOOL] = ARGMAX_I(bool)},
    [PORTA_REDUCE_ARGMIN] = {FLOAT_COLUMN(ARGMIN_F), INT_COLUMN(ARGMIN_I),
                             [PORTA_BOOL] = ARGMIN_I(bool)},
    [PORTA_REDUCE_ANY] = {FLOAT_COLUMN(ANY), INT_COLUMN(ANY), [PORTA_BOOL] = ANY(bool)},
    [PORTA_REDUCE_ALL] = {FLOAT_COLUMN(ALL), INT_COLUMN(ALL), [PORTA_BOOL] = ALL(bool)},
};
