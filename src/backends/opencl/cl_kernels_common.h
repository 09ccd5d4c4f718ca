/* What the hand-written kernels (cl_kernels_*.c) share: the launch side,
 * the same for the OpenCL and CUDA backends; host-side helpers for dtype
 * checks, small device buffers (layouts, error flags, scratch) and blocking
 * reads; and the OpenCL C every one of their programs begins with (after
 * the backend's prelude): element loads and stores of every dtype through
 * float, double or 64-bit integers, and a strided offset walk.
 *
 * The kernels' OpenCL C is written as C tokens and turned into text by
 * CLK_SOURCE, so host macros expand inside it: kernel text avoids the
 * names of host macros (isnan, INFINITY, NAN, bool, true, false, NULL). */
#ifndef PORTA_BACKENDS_OPENCL_CL_KERNELS_COMMON_H
#define PORTA_BACKENDS_OPENCL_CL_KERNELS_COMMON_H

#include <stdbool.h>
#include <stdint.h>

#include "runtime/tensor.h"
#include "ir/prim.h"
#include "runtime/device.h"

#define CLK_STRINGIZE(...) #__VA_ARGS__
/* OpenCL C text from tokens, after expanding the macros in them (so one
 * host macro can stamp out a kernel per dtype). */
#define CLK_SOURCE(...) CLK_STRINGIZE(__VA_ARGS__) "\n"

/* Values (sizes, strides, parameters) a kernel reads from a small buffer
 * rather than from arguments, whose total size devices limit. */
#define CLK_LAYOUT_MAX 1024
typedef struct clk_layout {
    int64_t values[CLK_LAYOUT_MAX];
    int count;
} clk_layout;

/* Appends one value (the layout's capacity suits every kernel here: a few
 * tensors of at most PORTA_MAX_RANK dims). */
void clk_push(clk_layout *layout, int64_t value);
/* Appends (sizes[d], strides[d]) for each of `rank` dims, as clk_offset
 * reads them. */
void clk_push_dims(clk_layout *layout, int rank, const int64_t *sizes, const int64_t *strides);

/* ---- the launch side: one for every backend that runs these kernels ----
 *
 * The kernels are OpenCL C; the CUDA backend compiles the same text behind
 * its prelude (cu_prelude.c). Each kernel's host code describes a launch
 * once, through what follows: the program source and entry, the arguments
 * in order (device buffers, tensors as buffer plus element offset, values),
 * and the work sizes. A backend supplies a clk_backend that gets kernels
 * from its program cache and launches them (OpenCL: cl_kernels_launch.c;
 * CUDA: backends/cuda/cu_hand.c). Buffers go through the device's own
 * porta_backend_ops, so they are counted against the memory limit. */

/* A device buffer: the backend's handle, as in porta_buffer.handle. */
typedef void *clk_mem;

typedef struct clk_arg {
    bool buffer; /* a device buffer (handle), else `size` bytes of value */
    size_t size;
    clk_mem handle;
    unsigned char value[8];
} clk_arg;

typedef struct clk_backend {
    /* Held around getting a kernel and launching it (OpenCL's kernel
     * objects keep their arguments, so two threads must not interleave). */
    void (*lock)(porta_device *device);
    void (*unlock)(porta_device *device);
    /* Entry `name` of `source` (the backend's prelude first), from the
     * device's program cache; valid for the process. */
    porta_status *(*kernel_get)(porta_device *device, const char *source, const char *name,
                                void **kernel);
    /* Runs the kernel. local NULL: over global[0] items in one dimension,
     * in groups of the backend's choosing (kernels check their index
     * against a count); else over global[0] x global[1] items in groups of
     * local[0] x local[1] (global a multiple of local). */
    porta_status *(*launch)(porta_device *device, void *kernel, const clk_arg *args, int count,
                            const size_t global[2], const size_t local[2]);
    bool (*has_fp64)(porta_device *device);
    size_t (*max_group)(porta_device *device); /* work items per group, at most */
    const char *(*device_name)(porta_device *device);
} clk_backend;

extern const clk_backend clk_opencl_backend; /* cl_kernels_launch.c */
extern const clk_backend clk_cuda_backend;   /* backends/cuda/cu_hand.c */
/* The backend of a device that runs these kernels (OpenCL or CUDA). */
const clk_backend *clk_backend_of(porta_device *device);

/* One launch's arguments, in the kernel's order. */
#define CLK_MAX_ARGS 16
typedef struct clk_args {
    porta_device *device;
    void *kernel;
    int count; /* past CLK_MAX_ARGS: reported by the launch */
    clk_arg args[CLK_MAX_ARGS];
} clk_args;

static inline clk_args clk_args_begin(porta_device *device, void *kernel) {
    clk_args args;
    args.device = device;
    args.kernel = kernel;
    args.count = 0;
    return args;
}
/* A value of `size` bytes (at most 8: long, int, ulong, float, double). */
void clk_arg_value(clk_args *args, size_t size, const void *value);
void clk_arg_long(clk_args *args, int64_t value);
void clk_arg_buffer(clk_args *args, clk_mem buffer);
/* A tensor's buffer, then its element offset (long). */
void clk_arg_tensor(clk_args *args, const porta_tensor *tensor);
/* Over `work` items in one dimension (nothing for none). */
porta_status *clk_launch(clk_args *args, int64_t work);
/* Over global[0] x global[1] items in groups of local[0] x local[1]. */
porta_status *clk_launch_2d(clk_args *args, const size_t global[2], const size_t local[2]);

/* A device buffer of `bytes` (at least 1), filled from `init` when given. */
porta_status *clk_buffer(porta_device *device, size_t bytes, const void *init, clk_mem *out);
/* A buffer holding the layout's values. */
porta_status *clk_layout_buffer(porta_device *device, const clk_layout *layout, clk_mem *out);
/* The layout buffer of a batched matmul out = a @ b, read by the tiled
 * kernels here and CUDA's tensor-core kernel: m, n, k, the batch rank, the
 * number of row blocks, each operand's matrix strides, then per batch dim
 * its size and the operands' strides. */
porta_status *clk_matmul_layout(porta_device *device, const porta_tensor *a,
                               const porta_tensor *b, const porta_tensor *out, int64_t m_blocks,
                               clk_mem *buffer);
/* Releases a buffer made by clk_buffer (NULL: nothing), once kernels
 * already launched on it have run. */
void clk_release(porta_device *device, clk_mem buffer);
/* Reads bytes [offset, offset + bytes) of a buffer once the kernels before
 * it have run. */
porta_status *clk_read(porta_device *device, clk_mem buffer, size_t offset, size_t bytes,
                       void *dst);

/* float64 needs a device with fp64; otherwise a PORTA_ERR_DTYPE naming the
 * device and the op. */
porta_status *clk_check_dtype(porta_device *device, const char *op, porta_dtype dtype);

/* The primitives these kernels run, on either backend (same contract as
 * porta_backend_ops.execute). Special: elementwise ops and reductions the
 * kernel IR leaves out (integer division, remainder and power with their
 * errors, erfinv, argmax/argmin). */
porta_status *cl_exec_matmul(porta_device *device, const porta_prim *prim,
                             const porta_tensor *const *inputs, int input_count,
                             porta_tensor *out);
porta_status *cl_exec_conv(porta_device *device, const porta_prim *prim,
                           const porta_tensor *const *inputs, int input_count, porta_tensor *out);
porta_status *cl_exec_index(porta_device *device, const porta_prim *prim,
                            const porta_tensor *const *inputs, int input_count, porta_tensor *out);
porta_status *cl_exec_pad(porta_device *device, const porta_prim *prim,
                          const porta_tensor *const *inputs, int input_count, porta_tensor *out);
porta_status *cl_exec_random(porta_device *device, const porta_prim *prim,
                             const porta_tensor *const *inputs, int input_count,
                             porta_tensor *out);
porta_status *cl_exec_sort(porta_device *device, const porta_prim *prim,
                           const porta_tensor *const *inputs, int input_count, porta_tensor *out);
porta_status *cl_exec_special(porta_device *device, const porta_prim *prim,
                              const porta_tensor *const *inputs, int input_count,
                              porta_tensor *out);

/* Every program of these kernels, for the tests that build them all
 * (tests/test_cuda_compile.c): visit(ctx, what, source, cuda), where
 * `cuda` says whether the program compiles as CUDA (all but sort's). Each
 * kernel file lists its own; clk_each_program visits them all. */
typedef void (*clk_program_visit)(void *ctx, const char *what, const char *source, bool cuda);
void clk_each_program(clk_program_visit visit, void *ctx);
void clk_conv_programs(clk_program_visit visit, void *ctx);
void clk_index_programs(clk_program_visit visit, void *ctx);
void clk_matmul_programs(clk_program_visit visit, void *ctx);
void clk_pad_programs(clk_program_visit visit, void *ctx);
void clk_random_programs(clk_program_visit visit, void *ctx);
void clk_sort_programs(clk_program_visit visit, void *ctx);
void clk_special_programs(clk_program_visit visit, void *ctx);

/* The element type of a dtype in kernel names: "u8", "f32", ... */
const char *clk_dtype_suffix(porta_dtype dtype);

/* The OpenCL C shared by the kernels' programs. Loads widen each dtype to
 * its arithmetic type (float for float32 and the 16-bit floats, double for
 * float64, long for integers and bool); stores round once, to nearest
 * even, with the prelude's conversions (cl_prelude.c). */
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
