/* The binary interface between libporta and a compiled kernel: the run-time
 * arguments (kir_args) and the math functions a kernel calls back into
 * (kir_runtime). Each is written once, as a macro that both declares it
 * here and, stringified (KIR_ABI_SOURCE), opens every generated source, so
 * the two sides cannot drift apart. Only plain C types appear in them. */
#ifndef PORTA_IR_KERNEL_ABI_H
#define PORTA_IR_KERNEL_ABI_H

#include <stdint.h>

/* Buffers given at run time: on devices whose buffers are host memory,
 * data[i] is already offset to the view's element 0; on others data[i] is
 * the buffer's handle and offsets[i] the element the view starts at. Each
 * is walked with strides[i] (elements, one per domain dim).
 * Expanded where KIR_MAX_ACCESSES and PORTA_MAX_RANK are defined
 * (ir/kernel_ir.h). */
#define KIR_ARGS_DECL                                      \
    typedef struct kir_args {                              \
        int64_t sizes[PORTA_MAX_RANK];                     \
        void *data[KIR_MAX_ACCESSES];                      \
        int64_t offsets[KIR_MAX_ACCESSES];                 \
        int64_t strides[KIR_MAX_ACCESSES][PORTA_MAX_RANK]; \
        double params[KIR_MAX_PARAMS];                     \
    } kir_args;

/* The special functions' count in porta_unary_op (PORTA_DIGAMMA on) and
 * porta_binary_op (PORTA_IGAMMA on); cpu_kernel_run.c checks them. */
#define KIR_UNARY_SPECIALS 18
#define KIR_BINARY_SPECIALS 15

/* y[i] = f(x[i]) for i in [0, n), in place allowed: libporta's vectorized
 * float32 math (backends/cpu/vmath.h) and the float16/bfloat16 conversions
 * (round to nearest even), so fused kernels round exactly as eager ones.
 * round_* narrow and widen again: a value computed in float rounded once to
 * its dtype. The special functions in double (backends/cpu/special_math.h),
 * by op from the first special op, as the eager kernels evaluate them. */
#define KIR_RUNTIME_DECL                                                     \
    typedef void (*kir_array_fn)(const float *x, float *y, int64_t n);       \
    typedef struct kir_runtime {                                             \
        kir_array_fn exp, expm1, log, log1p, tanh, sigmoid, erf;             \
        void (*f16_to_f32)(const uint16_t *x, float *y, int64_t n);          \
        void (*bf16_to_f32)(const uint16_t *x, float *y, int64_t n);         \
        void (*f32_to_f16)(const float *x, uint16_t *y, int64_t n);          \
        void (*f32_to_bf16)(const float *x, uint16_t *y, int64_t n);         \
        void (*round_f16)(float *x, int64_t n);                              \
        void (*round_bf16)(float *x, int64_t n);                             \
        double (*unary_special[KIR_UNARY_SPECIALS])(double x);               \
        double (*binary_special[KIR_BINARY_SPECIALS])(double a, double b);   \
    } kir_runtime;

KIR_RUNTIME_DECL

#define KIR_ABI_STRING_(...) #__VA_ARGS__
#define KIR_ABI_STRING(...) KIR_ABI_STRING_(__VA_ARGS__)
/* The declarations as C text for a generated source (macros expanded, so
 * the sizes are the numbers this build uses). */
#define KIR_ABI_SOURCE \
    KIR_ABI_STRING(KIR_ARGS_DECL) "\n" KIR_ABI_STRING(KIR_RUNTIME_DECL) "\n"

#endif
