/* The text every CUDA program of the backend begins with. Kernels are
 * rendered once, as OpenCL C (codegen/codegen_cl.c), and the same source
 * compiles as CUDA C++: this dialect spells the OpenCL words those sources
 * use in CUDA (address spaces, work-item indices, vector-free bit casts,
 * OpenCL's integer and float names), then the kernel library's OpenCL
 * prelude (backends/clc/clk_prelude.c) follows unchanged — fixed-width
 * integers, libm names mapped onto overloads (CUDA's math has them too),
 * float16/bfloat16 conversions with the CPU's rounding, the C renderer's
 * helpers. NVRTC compiles with
 * -default-device, so the helpers' plain `static inline` functions are
 * device functions. */
#include <pthread.h>

#include "backends/clc/clk_prelude.h"
#include "backends/clc/clk_source.h"
#include "backends/cuda/cu_runtime.h"

static const char dialect[] =
    /* CUDA always has doubles: the OpenCL prelude keeps `double` */
    "#define cl_khr_fp64 1\n"
    "#define __kernel extern \"C\" __global__\n"
    "#define __global\n#define __private\n#define __constant\n"
    "#define __local __shared__\n"
    "typedef unsigned char uchar;\ntypedef unsigned short ushort;\n"
    "typedef unsigned int uint;\ntypedef unsigned long ulong;\n"
    /* halves are only ever storage (ushort bits) and decoded by vload_half */
    "typedef unsigned short half;\n"
    "#define LONG_MAX 9223372036854775807L\n#define LONG_MIN (-LONG_MAX - 1L)\n"
    "#define INT_MAX 2147483647\n#define INT_MIN (-INT_MAX - 1)\n"
    "#define INFINITY __int_as_float(0x7f800000)\n#define NAN __int_as_float(0x7fc00000)\n"
    "#define CLK_LOCAL_MEM_FENCE 1\n#define CLK_GLOBAL_MEM_FENCE 2\n"
    "#define barrier(flags) __syncthreads()\n"
    "static inline long get_local_id(int d) {\n"
    "    return d == 0 ? threadIdx.x : d == 1 ? threadIdx.y : threadIdx.z;\n}\n"
    "static inline long get_local_size(int d) {\n"
    "    return d == 0 ? blockDim.x : d == 1 ? blockDim.y : blockDim.z;\n}\n"
    "static inline long get_group_id(int d) {\n"
    "    return d == 0 ? blockIdx.x : d == 1 ? blockIdx.y : blockIdx.z;\n}\n"
    "static inline long get_num_groups(int d) {\n"
    "    return d == 0 ? gridDim.x : d == 1 ? gridDim.y : gridDim.z;\n}\n"
    "static inline long get_global_id(int d) {\n"
    "    return get_group_id(d) * get_local_size(d) + get_local_id(d);\n}\n"
    "static inline long get_global_size(int d) {\n"
    "    return get_num_groups(d) * get_local_size(d);\n}\n"
    "static inline uint as_uint(float f) { return __float_as_uint(f); }\n"
    "static inline float as_float(uint u) { return __uint_as_float(u); }\n"
    "static inline int as_int(float f) { return __float_as_int(f); }\n"
    "static inline ulong as_ulong(double d) { return (ulong)__double_as_longlong(d); }\n"
    "static inline double as_double(ulong u) { return __longlong_as_double((long long)u); }\n"
    "static inline uint mul_hi(uint a, uint b) { return __umulhi(a, b); }\n"
    "static inline ulong mul_hi(ulong a, ulong b) { return __umul64hi(a, b); }\n"
    "static inline int atomic_or(int *p, int v) { return atomicOr(p, v); }\n"
    "static inline uint atomic_or(uint *p, uint v) { return atomicOr(p, v); }\n"
    /* float16 bits -> float, exactly (subnormals are man * 2^-24) */
    "static inline float vload_half(size_t i, const half *p) {\n"
    "    uint h = p[i], sign = (h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;\n"
    "    if (e == 0x1fu) return as_float(sign | 0x7f800000u | (m << 13));\n"
    "    if (e == 0) { float v = (float)m * 0x1p-24f; return sign ? -v : v; }\n"
    "    return as_float(sign | ((e + 112u) << 23) | (m << 13));\n}\n"
    /* the OpenCL prelude spells copysignf as copysign, which CUDA overloads
     * for float and double alike: an integer zero needs its own */
    "static inline float copysign(int a, float b) { return copysignf((float)a, b); }\n"
    "static inline double copysign(int a, double b) { return copysign((double)a, b); }\n"
    /* OpenCL's lgamma_r: the sign of gamma(x) in *s */
    "static inline float lgamma_r(float x, int *s) {\n"
    "    *s = x > 0 || fmodf(ceilf(-x), 2.0f) == 0 ? 1 : -1;\n    return lgammaf(x);\n}\n"
    "static inline double lgamma_r(double x, int *s) {\n"
    "    *s = x > 0 || fmod(ceil(-x), 2.0) == 0 ? 1 : -1;\n    return lgamma(x);\n}\n";

static char *text;
static pthread_once_t text_once = PTHREAD_ONCE_INIT;

static void join(void) { text = clk_join(dialect, clk_prelude()); }

const char *cu_prelude(void) {
    pthread_once(&text_once, join);
    return text;
}
