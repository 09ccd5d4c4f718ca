/* The OpenCL C the kernel library's programs are written in, as the host
 * sees it: CLK_SOURCE turns C tokens into program text, so host macros
 * expand inside it (one host macro can stamp out a kernel per dtype);
 * kernel text therefore avoids the names of host macros (isnan, INFINITY,
 * NAN, bool, true, false, NULL). CLK_COMMON_SOURCE is the OpenCL C every
 * program of the library begins with (after the backend's prelude):
 * element loads and stores of every dtype through float, double or 64-bit
 * integers, and a strided offset walk. */
#ifndef PORTA_BACKENDS_CLC_CLK_SOURCE_H
#define PORTA_BACKENDS_CLC_CLK_SOURCE_H

#include "porta.h"

#define CLK_STRINGIZE(...) #__VA_ARGS__
/* OpenCL C text from tokens, after expanding the macros in them. */
#define CLK_SOURCE(...) CLK_STRINGIZE(__VA_ARGS__) "\n"

/* `head` then `tail` in one malloc'd text; NULL when either is NULL (a
 * prelude out of memory) or there is no memory. */
char *clk_join(const char *head, const char *tail);

/* The element type of a dtype in kernel names: "u8", "f32", ... */
const char *clk_dtype_suffix(porta_dtype dtype);

/* The OpenCL C shared by the kernels' programs. Loads widen each dtype to
 * its arithmetic type (float for float32 and the 16-bit floats, double for
 * float64, long for integers and bool); stores round once, to nearest
 * even, with the prelude's conversions (clk_prelude.c). */
#define CLK_COMMON_SOURCE                                                                    \
    CLK_SOURCE(                                                                              \
        inline float clk_ld_f16(__global const ushort *p, long i) { return kir_f16_to_f32(p[i]); } \
        inline float clk_ld_bf16(__global const ushort *p, long i) { return kir_bf16_to_f32(p[i]); } \
        inline float clk_ld_f32(__global const float *p, long i) { return p[i]; }            \
        inline double clk_ld_f64(__global const double *p, long i) { return p[i]; }          \
        inline long clk_ld_b8(__global const uchar *p, long i) { return p[i]; }              \
        inline long clk_ld_u8(__global const uchar *p, long i) { return p[i]; }              \
        inline long clk_ld_i8(__global const char *p, long i) { return p[i]; }               \
        inline long clk_ld_i16(__global const short *p, long i) { return p[i]; }             \
        inline long clk_ld_i32(__global const int *p, long i) { return p[i]; }               \
        inline long clk_ld_i64(__global const long *p, long i) { return p[i]; }              \
        inline void clk_st_f16(__global ushort *p, long i, float v) { p[i] = kir_f32_to_f16(v); } \
        inline void clk_st_bf16(__global ushort *p, long i, float v) { p[i] = kir_f32_to_bf16(v); } \
        inline void clk_st_f32(__global float *p, long i, float v) { p[i] = v; }             \
        inline void clk_st_f64(__global double *p, long i, double v) { p[i] = v; }           \
        inline void clk_st_b8(__global uchar *p, long i, long v) { p[i] = v != 0; }          \
        inline void clk_st_u8(__global uchar *p, long i, long v) { p[i] = (uchar)v; }        \
        inline void clk_st_i8(__global char *p, long i, long v) { p[i] = (char)v; }          \
        inline void clk_st_i16(__global short *p, long i, long v) { p[i] = (short)v; }       \
        inline void clk_st_i32(__global int *p, long i, long v) { p[i] = (int)v; }           \
        inline void clk_st_i64(__global long *p, long i, long v) { p[i] = v; }               \
        /* The element offset of row-major position i of `rank` dims whose   \
         * sizes and strides follow each other in `dims`. */                 \
        inline long clk_offset(long i, int rank, __global const long *dims) {                \
            long offset = 0;                                                                 \
            for (int d = rank - 1; d >= 0; d--) {                                            \
                long size = dims[2 * d];                                                     \
                offset += (i % size) * dims[2 * d + 1];                                      \
                i /= size;                                                                   \
            }                                                                                \
            return offset;                                                                   \
        })

/* The dtype of a kernel-name suffix, for tables indexed by dtype. */
#define CLK_DTYPE_b8 PORTA_BOOL
#define CLK_DTYPE_u8 PORTA_U8
#define CLK_DTYPE_i8 PORTA_I8
#define CLK_DTYPE_i16 PORTA_I16
#define CLK_DTYPE_i32 PORTA_I32
#define CLK_DTYPE_i64 PORTA_I64
#define CLK_DTYPE_f16 PORTA_F16
#define CLK_DTYPE_bf16 PORTA_BF16
#define CLK_DTYPE_f32 PORTA_F32
#define CLK_DTYPE_f64 PORTA_F64

/* Storage, arithmetic type and load/store suffix of each dtype, for
 * stamping kernels: X(suffix, storage, arithmetic). */
#define CLK_FOR_EACH_DTYPE(X)                                                                \
    X(b8, uchar, long) X(u8, uchar, long) X(i8, char, long) X(i16, short, long)              \
    X(i32, int, long) X(i64, long, long) X(f16, ushort, float) X(bf16, ushort, float)        \
    X(f32, float, float) X(f64, double, double)
#define CLK_FOR_EACH_FLOAT(X)                                                                \
    X(f16, ushort, float) X(bf16, ushort, float) X(f32, float, float) X(f64, double, double)
#define CLK_FOR_EACH_INTEGER(X)                                                              \
    X(u8, uchar, long) X(i8, char, long) X(i16, short, long) X(i32, int, long)               \
    X(i64, long, long)

#endif
