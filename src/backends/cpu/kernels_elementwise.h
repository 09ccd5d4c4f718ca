/* Shared by the elementwise CPU kernels: the N-d strided iterator that runs
 * 1-D inner loops over any layout, and the templates that stamp out those
 * inner loops per (op, dtype). */
#ifndef PORTA_CPU_KERNELS_ELEMENTWISE_H
#define PORTA_CPU_KERNELS_ELEMENTWISE_H

#include "backends/cpu/cpu_isa.h"
#include "core/dtype.h"
#include "ir/prim.h"
#include "runtime/tensor.h"

#define EW_MAX_OPERANDS 4 /* out and up to three inputs */

/* Elements per task below which a loop is not worth handing to the pool:
 * cheap ops move memory, costly ones (libm calls such as exp and pow)
 * compute. */
#define EW_GRAIN_CHEAP 32768
#define EW_GRAIN_COSTLY 4096

/* An inner loop over n elements: ptrs[0] is out, ptrs[1..] the inputs, each
 * advancing by its stride in bytes. Returns 0 or a mask of IR_FAULT_*
 * (ir/prim.h): only integer division and power raise them. */
typedef int (*ew_loop_fn)(char *const *ptrs, const int64_t *strides, int64_t n);

/* Operands laid over out's shape, strides in bytes (0 where broadcast). */
typedef struct ew_iter {
    int count;
    int rank;
    int64_t sizes[PORTA_MAX_RANK];
    char *data[EW_MAX_OPERANDS];
    int64_t strides[EW_MAX_OPERANDS][PORTA_MAX_RANK];
} ew_iter;

void ew_iter_init(ew_iter *it, porta_tensor *out);
/* `in` has out's shape, or broadcasts to it (lower rank, size-1 axes). */
void ew_iter_add_input(ew_iter *it, const porta_tensor *in);
/* One element read for every position (stride 0 everywhere). */
void ew_iter_add_scalar(ew_iter *it, const void *value);
/* Simplifies the layout and runs `loop` over every element, on the pool
 * once there are more than `grain` elements. Returns the faults raised. */
int ew_iter_run(ew_iter *it, ew_loop_fn loop, int64_t grain);

/* Inner loops by op and input dtype (NULL: the pair is not in the dtype
 * contract of ir/prim.h). */
ew_loop_fn ew_unary_loop(porta_unary_op op, porta_dtype dtype);
ew_loop_fn ew_binary_loop(porta_binary_op op, porta_dtype dtype);
/* The binary loops built for each instruction set (the *_avx2.c and
 * *_avx512.c builds of kernels_elementwise_binary_loops.h), and for tests the
 * override of the run-time choice among them: false when the CPU lacks
 * `isa`; reset goes back to the best the CPU has. */
extern const ew_loop_fn ew_binary_loops_baseline[PORTA_BINARY_OP_COUNT][PORTA_DTYPE_COUNT];
extern const ew_loop_fn ew_binary_loops_avx2[PORTA_BINARY_OP_COUNT][PORTA_DTYPE_COUNT];
extern const ew_loop_fn ew_binary_loops_avx512[PORTA_BINARY_OP_COUNT][PORTA_DTYPE_COUNT];
bool ew_binary_isa_force(cpu_isa isa);
void ew_binary_isa_reset(void);
ew_loop_fn ew_ternary_loop(porta_ternary_op op, porta_dtype dtype);
ew_loop_fn ew_cast_loop(porta_dtype from, porta_dtype to);
bool ew_unary_is_costly(porta_unary_op op);
bool ew_binary_is_costly(porta_binary_op op);

/* ---- loop templates ----
 * Each dtype is stored as ST and computed as CT: LOAD turns an ST into a CT,
 * STORE a CT back (float16/bfloat16 compute in float and round once).
 * Contiguous runs go through fixed blocks of EW_BLOCK elements marked ivdep,
 * which gcc vectorizes at -O2; ivdep (rather than restrict) keeps the exact
 * in-place case out[i] = f(out[i]) well defined. */
#define EW_BLOCK 32
#define EW_SAME(x) (x)
#define EW_LOAD_BOOL(x) ((x) != 0)
#define EW_AT(T, base, i, stride) (*(T *)(void *)((base) + (i) * (stride)))

/* Runs STMT for every i in [0, n), in blocks gcc can vectorize. */
#define EW_BLOCKED(n, i, STMT)                                              \
    for (int64_t ew_block_ = 0; ew_block_ < (n); ew_block_ += EW_BLOCK) {   \
        if (ew_block_ + EW_BLOCK <= (n)) {                                  \
            _Pragma("GCC ivdep") for (int64_t i = ew_block_;                \
                                      i < ew_block_ + EW_BLOCK; i++) STMT;  \
        } else {                                                            \
            for (int64_t i = ew_block_; i < (n); i++) STMT;                 \
        }                                                                   \
    }

/* out = STORE(FN(LOAD(x))); TI and TO are the input and output storage types. */
#define EW_UNARY_LOOP(NAME, TI, LOAD, TO, STORE, FN)                          \
    static int NAME(char *const *p, const int64_t *s, int64_t n) {            \
        if (s[0] == (int64_t)sizeof(TO) && s[1] == (int64_t)sizeof(TI)) {     \
            TO *o = (TO *)(void *)p[0];                                       \
            const TI *x = (const TI *)(const void *)p[1];                     \
            EW_BLOCKED(n, i, o[i] = (TO)STORE(FN(LOAD(x[i]))));               \
        } else {                                                              \
            for (int64_t i = 0; i < n; i++)                                   \
                EW_AT(TO, p[0], i, s[0]) =                                    \
                    (TO)STORE(FN(LOAD(EW_AT(const TI, p[1], i, s[1]))));      \
        }                                                                     \
        return 0;                                                             \
    }

/* out = STORE(FN(LOAD(a), LOAD(b), &fault)), with the contiguous and the
 * scalar-broadcast layouts (a + 1, 1 + a) specialised. */
#define EW_BINARY_LOOP(NAME, TI, CT, LOAD, TO, STORE, FN)                      \
    static int NAME(char *const *p, const int64_t *s, int64_t n) {             \
        int fault = 0;                                                         \
        const int64_t si = (int64_t)sizeof(TI);                                \
        if (s[0] != (int64_t)sizeof(TO) || (s[1] != si && s[1] != 0) ||        \
            (s[2] != si && s[2] != 0)) {                                       \
            for (int64_t i = 0; i < n; i++)                                    \
                EW_AT(TO, p[0], i, s[0]) =                                     \
                    (TO)STORE(FN(LOAD(EW_AT(const TI, p[1], i, s[1])),         \
                                 LOAD(EW_AT(const TI, p[2], i, s[2])), &fault)); \
            return fault;                                                      \
        }                                                                      \
        TO *o = (TO *)(void *)p[0];                                            \
        const TI *a = (const TI *)(const void *)p[1];                          \
        const TI *b = (const TI *)(const void *)p[2];                          \
        if (s[1] && s[2]) {                                                    \
            EW_BLOCKED(n, i, o[i] = (TO)STORE(FN(LOAD(a[i]), LOAD(b[i]), &fault))); \
        } else if (s[1]) {                                                     \
            const CT bv = LOAD(b[0]);                                          \
            EW_BLOCKED(n, i, o[i] = (TO)STORE(FN(LOAD(a[i]), bv, &fault)));    \
        } else if (s[2]) {                                                     \
            const CT av = LOAD(a[0]);                                          \
            EW_BLOCKED(n, i, o[i] = (TO)STORE(FN(av, LOAD(b[i]), &fault)));    \
        } else {                                                               \
            const TO v = (TO)STORE(FN(LOAD(a[0]), LOAD(b[0]), &fault));        \
            EW_BLOCKED(n, i, o[i] = v);                                        \
        }                                                                      \
        return fault;                                                          \
    }

/* Half-precision loops convert a stage at a time: operands widened into
 * float arrays (F16C where the CPU has it), computed in blocks gcc
 * vectorizes, narrowed back once. */
#define EW_STAGE 256
void ew_widen_half(porta_dtype dtype, const uint16_t *src, float *dst, int64_t n);
void ew_narrow_half(porta_dtype dtype, const float *src, uint16_t *dst, int64_t n);
void ew_widen_half_avx2(porta_dtype dtype, const uint16_t *src, float *dst, int64_t n);
void ew_narrow_half_avx2(porta_dtype dtype, const float *src, uint16_t *dst, int64_t n);
/* For tests: true forces the portable conversions, false restores the
 * CPU's best. */
void ew_half_force_portable(bool portable);

/* The staged form of EW_UNARY_LOOP for float16/bfloat16 (enum E) in and out. */
#define EW_HALF_UNARY_LOOP(NAME, E, LOAD, STORE, FN)                              \
    static int NAME(char *const *p, const int64_t *s, int64_t n) {                \
        if (s[0] != 2 || s[1] != 2) {                                             \
            for (int64_t i = 0; i < n; i++)                                       \
                EW_AT(uint16_t, p[0], i, s[0]) =                                  \
                    STORE(FN(LOAD(EW_AT(const uint16_t, p[1], i, s[1]))));        \
            return 0;                                                             \
        }                                                                         \
        float x[EW_STAGE];                                                        \
        for (int64_t at = 0; at < n; at += EW_STAGE) {                            \
            int64_t m = n - at < EW_STAGE ? n - at : EW_STAGE;                    \
            ew_widen_half(E, (const uint16_t *)(const void *)p[1] + at, x, m);    \
            EW_BLOCKED(m, i, x[i] = FN(x[i]));                                    \
            ew_narrow_half(E, x, (uint16_t *)(void *)p[0] + at, m);               \
        }                                                                         \
        return 0;                                                                 \
    }

/* The staged form of EW_BINARY_LOOP; a stride-0 operand is widened once. */
#define EW_HALF_BINARY_LOOP(NAME, E, LOAD, STORE, FN)                             \
    static int NAME(char *const *p, const int64_t *s, int64_t n) {                \
        int fault = 0;                                                            \
        if (s[0] != 2 || (s[1] != 2 && s[1] != 0) || (s[2] != 2 && s[2] != 0)) {  \
            for (int64_t i = 0; i < n; i++)                                       \
                EW_AT(uint16_t, p[0], i, s[0]) =                                  \
                    STORE(FN(LOAD(EW_AT(const uint16_t, p[1], i, s[1])),          \
                             LOAD(EW_AT(const uint16_t, p[2], i, s[2])), &fault)); \
            return fault;                                                         \
        }                                                                         \
        const uint16_t *a_in = (const uint16_t *)(const void *)p[1];              \
        const uint16_t *b_in = (const uint16_t *)(const void *)p[2];              \
        float a[EW_STAGE], b[EW_STAGE], r[EW_STAGE];                              \
        for (int i = 0; i < EW_STAGE && !s[1]; i++) a[i] = LOAD(a_in[0]);         \
        for (int i = 0; i < EW_STAGE && !s[2]; i++) b[i] = LOAD(b_in[0]);         \
        for (int64_t at = 0; at < n; at += EW_STAGE) {                            \
            int64_t m = n - at < EW_STAGE ? n - at : EW_STAGE;                    \
            if (s[1]) ew_widen_half(E, a_in + at, a, m);                          \
            if (s[2]) ew_widen_half(E, b_in + at, b, m);                          \
            EW_BLOCKED(m, i, r[i] = FN(a[i], b[i], &fault));                      \
            ew_narrow_half(E, r, (uint16_t *)(void *)p[0] + at, m);               \
        }                                                                         \
        return fault;                                                             \
    }

/* Dtype lists for stamping out loops: X(args..., suffix, enum, storage type,
 * compute type, load, store, suffix of the scalar functions to use, loop
 * form: PLAIN or HALF); float16 and bfloat16 use float's functions. */
#define EW_BOOL_DTYPE(X, ...) \
    X(__VA_ARGS__, b8, PORTA_BOOL, uint8_t, bool, EW_LOAD_BOOL, EW_SAME, b8, PLAIN)
#define EW_INT_DTYPES(X, ...)                                                        \
    X(__VA_ARGS__, u8, PORTA_U8, uint8_t, uint8_t, EW_SAME, EW_SAME, u8, PLAIN)      \
    X(__VA_ARGS__, i8, PORTA_I8, int8_t, int8_t, EW_SAME, EW_SAME, i8, PLAIN)        \
    X(__VA_ARGS__, i16, PORTA_I16, int16_t, int16_t, EW_SAME, EW_SAME, i16, PLAIN)   \
    X(__VA_ARGS__, i32, PORTA_I32, int32_t, int32_t, EW_SAME, EW_SAME, i32, PLAIN)   \
    X(__VA_ARGS__, i64, PORTA_I64, int64_t, int64_t, EW_SAME, EW_SAME, i64, PLAIN)
#define EW_FLOAT_DTYPES(X, ...)                                                            \
    X(__VA_ARGS__, f16, PORTA_F16, uint16_t, float, core_f16_to_f32, core_f32_to_f16, f32, \
      HALF)                                                                                \
    X(__VA_ARGS__, bf16, PORTA_BF16, uint16_t, float, core_bf16_to_f32, core_f32_to_bf16,  \
      f32, HALF)                                                                           \
    X(__VA_ARGS__, f32, PORTA_F32, float, float, EW_SAME, EW_SAME, f32, PLAIN)             \
    X(__VA_ARGS__, f64, PORTA_F64, double, double, EW_SAME, EW_SAME, f64, PLAIN)
#define EW_NUMERIC_DTYPES(X, ...) EW_INT_DTYPES(X, __VA_ARGS__) EW_FLOAT_DTYPES(X, __VA_ARGS__)
#define EW_ALL_DTYPES(X, ...) EW_BOOL_DTYPE(X, __VA_ARGS__) EW_NUMERIC_DTYPES(X, __VA_ARGS__)

#endif
