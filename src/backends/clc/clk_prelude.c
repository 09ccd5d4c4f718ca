/* The OpenCL C every program begins with, on both backends (CUDA puts its
 * dialect in front, cu_prelude.c). It lets the C renderer's op spellings
 * (codegen_c_ops.c) and its helpers compile as OpenCL C: fixed-width
 * integer names, libm's float names mapped onto OpenCL's overloads, and
 * float16/bfloat16 conversions with the CPU's rounding (round to nearest
 * even; the bit manipulation of core/dtype.h), decoded and encoded bit by
 * bit, which needs no cl_khr_fp16 (nor CUDA's half headers): halves are
 * stored as ushort and computed in float, as on the CPU. Without
 * cl_khr_fp64, `double` is float; the OpenCL backend refuses float64
 * tensors on such devices before any kernel runs. */
#include "backends/clc/clk_prelude.h"

#include <pthread.h>

#include "backends/clc/clk_source.h"
#include "codegen/codegen_c_internal.h"

#define CLK_PRELUDE_HEAD                                                                  \
    "#pragma OPENCL FP_CONTRACT OFF\n" /* a * b + c rounds twice, as on the CPU */          \
    "#ifdef cl_khr_fp64\n#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n#else\n"         \
    "#define double float\n#endif\n"                                                     \
    "typedef uchar uint8_t;\ntypedef char int8_t;\ntypedef short int16_t;\n"             \
    "typedef int int32_t;\ntypedef long int64_t;\ntypedef ushort uint16_t;\n"            \
    "typedef uint uint32_t;\ntypedef ulong uint64_t;\n"                                  \
    "#define INT64_MIN LONG_MIN\n#define INT64_MAX LONG_MAX\n"                           \
    "#define INT32_MIN INT_MIN\n#define INT32_MAX INT_MAX\n"                             \
    "#define fabsf fabs\n#define sqrtf sqrt\n#define exp2f exp2\n#define log2f log2\n"  \
    "#define sinf sin\n#define cosf cos\n#define tanf tan\n#define asinf asin\n"          \
    "#define acosf acos\n#define atanf atan\n#define sinhf sinh\n#define coshf cosh\n"   \
    "#define asinhf asinh\n#define acoshf acosh\n#define atanhf atanh\n"                 \
    "#define erfcf erfc\n#define floorf floor\n#define ceilf ceil\n#define truncf trunc\n" \
    "#define fmodf fmod\n#define powf pow\n#define atan2f atan2\n"                       \
    "#define copysignf copysign\n#define nearbyintf rint\n#define nearbyint rint\n"      \
    "#define lgammaf_r lgamma_r\n"

#define CLK_PRELUDE_HALF                                                                   \
    "static inline float kir_f16_to_f32(ushort h) {\n"                                    \
    "    uint sign = (uint)(h & 0x8000) << 16, e = (h >> 10) & 0x1f, mant = h & 0x3ff;\n"  \
    "    if (e == 0x1f) return as_float(sign | 0x7f800000u | (mant << 13));\n"            \
    "    if (e == 0) return as_float(sign | as_uint((float)mant * 5.9604644775390625e-8f));\n" \
    "    return as_float(sign | ((e + 112) << 23) | (mant << 13));\n}\n"                  \
    "static inline ushort kir_f32_to_f16(float f) {\n"                                    \
    "    uint bits = as_uint(f), abs = bits & 0x7fffffffu;\n"                             \
    "    ushort sign = (ushort)((bits >> 16) & 0x8000);\n"                                \
    "    if (abs >= 0x7f800000u) return sign | 0x7c00 | (abs > 0x7f800000u ? 0x200 : 0);\n" \
    "    if (abs >= 0x477ff000u) return sign | 0x7c00;\n"                                 \
    "    if (abs < 0x38800000u) return sign | (ushort)(as_uint(as_float(abs) + 0.5f) - 0x3f000000u);\n" \
    "    abs += 0xc8000fffu + ((abs >> 13) & 1);\n"                                       \
    "    return sign | (ushort)(abs >> 13);\n}\n"                                         \
    "static inline float kir_bf16_to_f32(ushort b) { return as_float((uint)b << 16); }\n" \
    "static inline ushort kir_f32_to_bf16(float f) {\n"                                   \
    "    uint bits = as_uint(f);\n"                                                       \
    "    if ((bits & 0x7fffffffu) > 0x7f800000u) return (ushort)((bits >> 16) | 0x40);\n" \
    "    return (ushort)((bits + 0x7fffu + ((bits >> 16) & 1)) >> 16);\n}\n"              \
    "static inline float kir_round_f16(float f) { return kir_f16_to_f32(kir_f32_to_f16(f)); }\n" \
    "static inline float kir_round_bf16(float f) { return kir_bf16_to_f32(kir_f32_to_bf16(f)); }\n"

/* The CPU's vector-math ops as scalar OpenCL calls. */
#define CLK_PRELUDE_MATH                                                                   \
    "#define kir_exp exp\n#define kir_expm1 expm1\n#define kir_log log\n"                \
    "#define kir_log1p log1p\n#define kir_tanh tanh\n#define kir_erf erf\n"              \
    "static inline float kir_sigmoid(float x) { return 1 / (1 + exp(-x)); }\n"

static const char head[] = CLK_PRELUDE_HEAD CLK_PRELUDE_HALF CLK_PRELUDE_MATH;
static char *text;
static pthread_once_t text_once = PTHREAD_ONCE_INIT;

/* The head, then the C renderer's helpers (a run-time array, so joined
 * once here rather than by the preprocessor). */
static void join(void) { text = clk_join(head, kir_c_helpers); }

const char *clk_prelude(void) {
    pthread_once(&text_once, join);
    return text;
}
