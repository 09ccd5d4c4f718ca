/*
 * porta.h - the public C API of libporta.
 *
 * Conventions
 *  - Every fallible call returns `porta_status *`. NULL means success; any
 *    other value is an error the caller owns and releases with
 *    porta_status_free(). The message says what was expected and what was
 *    given ("shape [2,3] vs [4,3]").
 *  - Handles are opaque. A function that hands out a new handle through an
 *    `out` pointer transfers one reference to the caller; release it with the
 *    matching *_release(). Functions that take a handle never steal it.
 *  - On error, `out` parameters are left untouched and nothing leaks.
 *  - Op functions take `porta_tensor **out`: when *out is NULL a new tensor
 *    is allocated on the inputs' device and returned; when *out is a tensor
 *    the result is written into it (PyTorch's out= semantics: its shape must
 *    match, and the result is cast to its dtype when PyTorch allows it).
 *    So initialize every result variable to NULL before the first call:
 *    an uninitialized pointer would be taken as a tensor to write into.
 *  - `sizes` may be NULL when rank is 0.
 */
#ifndef PORTA_H
#define PORTA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define PORTA_API __declspec(dllexport)
#else
#define PORTA_API __attribute__((visibility("default")))
#endif

#if defined(__GNUC__)
#define PORTA_PRINTF(format_index, first_arg) \
    __attribute__((format(printf, format_index, first_arg)))
#else
#define PORTA_PRINTF(format_index, first_arg)
#endif

/* ------------------------------------------------------------------ */
/* Version                                                              */
/* ------------------------------------------------------------------ */

#define PORTA_VERSION_MAJOR 0
#define PORTA_VERSION_MINOR 1
#define PORTA_VERSION_PATCH 0
#define PORTA_VERSION_NUMBER \
    (PORTA_VERSION_MAJOR * 10000 + PORTA_VERSION_MINOR * 100 + PORTA_VERSION_PATCH)

/* Version of the library actually loaded (may differ from the header's). */
PORTA_API int porta_version(void);
PORTA_API const char *porta_version_string(void);

/* ------------------------------------------------------------------ */
/* Status                                                               */
/* ------------------------------------------------------------------ */

typedef enum porta_code {
    PORTA_OK = 0,
    PORTA_ERR_INVALID_ARGUMENT, /* a malformed argument (NULL, bad enum) */
    PORTA_ERR_SHAPE,            /* shapes do not match or broadcast */
    PORTA_ERR_DTYPE,            /* dtype not accepted by the op */
    PORTA_ERR_OUT_OF_RANGE,     /* axis, index or offset out of range */
    PORTA_ERR_OUT_OF_MEMORY,    /* allocation failed or over the limit */
    PORTA_ERR_UNSUPPORTED,      /* valid, but not implemented here */
    PORTA_ERR_UNAVAILABLE,      /* device or backend not present; not now (time limit) */
    PORTA_ERR_DEVICE,           /* tensors on different devices */
    PORTA_ERR_IO,               /* file or system error */
    PORTA_ERR_INTERNAL,         /* a bug in Porta */
    PORTA_ERR_DEVICE_LOST       /* the device has gone away: every later use fails too */
} porta_code;

typedef struct porta_status porta_status;

PORTA_API porta_code porta_status_code(const porta_status *status);
PORTA_API const char *porta_status_message(const porta_status *status);
PORTA_API void porta_status_free(porta_status *status);
PORTA_API const char *porta_code_name(porta_code code);

/* A new status with a printf-style message, so code built on libporta (the
 * porta command, bindings) reports errors as libporta does. Never returns
 * NULL: when memory for the message itself runs out, a static
 * out-of-memory status is used. */
PORTA_API porta_status *porta_error(porta_code code, const char *fmt, ...) PORTA_PRINTF(2, 3);
/* Prefixes an existing status's message with context ("in matmul: ...")
 * and returns the same status. */
PORTA_API porta_status *porta_error_context(porta_status *status, const char *fmt, ...)
    PORTA_PRINTF(2, 3);
/* Returns the status of `expr` from the calling function when it is an
 * error. */
#define PORTA_TRY(expr)                                   \
    do {                                                  \
        porta_status *porta_try_status_ = (expr);         \
        if (porta_try_status_) return porta_try_status_;  \
    } while (0)

/* ------------------------------------------------------------------ */
/* dtypes                                                               */
/* ------------------------------------------------------------------ */

typedef enum porta_dtype {
    PORTA_BOOL = 0,
    PORTA_U8,
    PORTA_I8,
    PORTA_I16,
    PORTA_I32,
    PORTA_I64,
    PORTA_F16,
    PORTA_BF16,
    PORTA_F32,
    PORTA_F64,
    /* Complex numbers: interleaved (real, imag) pairs of float32 / float64.
     * Listed last so the dtypes above keep their numbers. */
    PORTA_C64,
    PORTA_C128,
    PORTA_DTYPE_COUNT
} porta_dtype;

PORTA_API const char *porta_dtype_name(porta_dtype dtype); /* "float32" */
PORTA_API size_t porta_dtype_size(porta_dtype dtype);      /* bytes */
PORTA_API bool porta_dtype_is_float(porta_dtype dtype);
PORTA_API bool porta_dtype_is_complex(porta_dtype dtype);
/* A complex dtype's component dtype (complex64 -> float32); other dtypes map
 * to themselves. */
PORTA_API porta_dtype porta_dtype_real(porta_dtype dtype);
/* The complex dtype whose components have `dtype`'s precision, as PyTorch's
 * toComplexType (float64 -> complex128, every other dtype -> complex64). */
PORTA_API porta_dtype porta_dtype_complex(porta_dtype dtype);
PORTA_API bool porta_dtype_is_signed(porta_dtype dtype);
/* torch.promote_types(a, b). */
PORTA_API porta_dtype porta_dtype_promote(porta_dtype a, porta_dtype b);
/* torch.can_cast(from, to): false when the cast would lower the category
 * (complex -> float, float -> integer, integer -> bool). */
PORTA_API bool porta_dtype_can_cast(porta_dtype from, porta_dtype to);

/* torch.result_type over operands of three priorities: tensors with
 * dimensions, zero-dim tensors, and wrapped Python scalars. A lower priority
 * operand only raises the result's category (bool < integer < float <
 * complex), never its width within the category. */
typedef enum porta_operand_kind {
    PORTA_OPERAND_TENSOR = 0,
    PORTA_OPERAND_ZERO_DIM,
    PORTA_OPERAND_SCALAR
} porta_operand_kind;
typedef struct porta_operand_type {
    porta_dtype dtype;
    porta_operand_kind kind;
} porta_operand_type;
/* The default dtype a float scalar or integer scalar takes (float32, int64).*/
PORTA_API porta_dtype porta_result_type(const porta_operand_type *operands, int count);

/* ------------------------------------------------------------------ */
/* Library settings                                                     */
/* ------------------------------------------------------------------ */

/* Caps the bytes libporta may hold in device and host buffers (0: no cap).
 * Allocations over the cap fail with PORTA_ERR_OUT_OF_MEMORY; tests use it to
 * exercise every error path. Returns the previous cap. */
PORTA_API uint64_t porta_set_memory_limit(uint64_t bytes);
PORTA_API uint64_t porta_memory_allocated(void);     /* bytes held now */
PORTA_API uint64_t porta_memory_peak(void);          /* since start or reset */
PORTA_API void porta_memory_reset_peak(void);

/* Fault injection, for tests of error paths: makes chosen device
 * allocations, kernel builds, driver calls or file writes fail, e.g.
 * "alloc:3" (the 3rd allocation from now fails, once) or "driver:p0.01,
 * seed:7" (each driver call fails with probability 0.01). Kinds: alloc,
 * build, driver, write. NULL or "" injects nothing. Replaces the rules of
 * PORTA_FAULTS and any earlier call; a malformed spec is
 * PORTA_ERR_INVALID_ARGUMENT and changes nothing. See docs/faults.md. */
PORTA_API porta_status *porta_set_faults(const char *spec);

/* Threads used by the CPU backend (0: one per core, the default; the
 * PORTA_NUM_THREADS environment variable sets the initial value). At most 4
 * per online CPU (at least 64): more fails with PORTA_ERR_INVALID_ARGUMENT,
 * and a larger PORTA_NUM_THREADS is lowered to it with a warning. */
PORTA_API porta_status *porta_set_num_threads(int threads);
PORTA_API int porta_get_num_threads(void);

/* ------------------------------------------------------------------ */
/* Devices                                                              */
/* ------------------------------------------------------------------ */

typedef struct porta_device porta_device;

enum {
    PORTA_CAP_F64 = 1u << 0,
    PORTA_CAP_F16 = 1u << 1,
    PORTA_CAP_BF16 = 1u << 2,
    PORTA_CAP_HOST_MEMORY = 1u << 3, /* buffers are plain host pointers */
    PORTA_CAP_AVX2 = 1u << 4,
    PORTA_CAP_AVX512 = 1u << 5
};

typedef struct porta_device_info {
    int index;                /* porta:N */
    const char *backend;      /* "cpu", "opencl", ... */
    const char *name;         /* e.g. the processor's model name */
    uint64_t memory_bytes;    /* total memory the device can use */
    int compute_units;        /* threads (CPU) or compute units (GPU) */
    uint32_t capabilities;    /* PORTA_CAP_* bits */
} porta_device_info;

PORTA_API int porta_device_count(void);
/* Borrowed pointer, valid for the life of the process. */
PORTA_API porta_status *porta_device_get(int index, porta_device **out);
PORTA_API porta_status *porta_device_info_get(const porta_device *device,
                                              porta_device_info *info);
PORTA_API porta_status *porta_device_synchronize(porta_device *device);
/* Why a backend built into Porta has no devices here ("no OpenCL ICD loader
 * ..."), or NULL when it is available or not a backend's name. Backends:
 * "cpu", "opencl", "cuda", "pjrt" (for pjrt: the first PJRT plugin that
 * could not be used, "<plugin file>: <its error>"; other plugins may still
 * have given devices). */
PORTA_API const char *porta_backend_unavailable_reason(const char *backend);
/* The index-th of every reason the probes gave, in probe order (one per
 * unusable PJRT plugin): true and `backend`, `why` set while index is below
 * their count, false past it. */
PORTA_API bool porta_backend_unavailable_get(int index, const char **backend, const char **why);

/* ------------------------------------------------------------------ */
/* Buffers: reference-counted device memory                             */
/* ------------------------------------------------------------------ */

typedef struct porta_buffer porta_buffer;

PORTA_API porta_status *porta_buffer_alloc(porta_device *device, size_t bytes,
                                           porta_buffer **out);
PORTA_API void porta_buffer_retain(porta_buffer *buffer);
PORTA_API void porta_buffer_release(porta_buffer *buffer);
PORTA_API size_t porta_buffer_size(const porta_buffer *buffer);
PORTA_API porta_device *porta_buffer_device(const porta_buffer *buffer);
PORTA_API porta_status *porta_buffer_write(porta_buffer *buffer, size_t offset,
                                           const void *src, size_t bytes);
PORTA_API porta_status *porta_buffer_read(const porta_buffer *buffer, size_t offset,
                                          void *dst, size_t bytes);

/* ------------------------------------------------------------------ */
/* Tensors: strided views on buffers                                    */
/* ------------------------------------------------------------------ */

#define PORTA_MAX_RANK 16

typedef struct porta_tensor porta_tensor;

/* A new contiguous tensor; contents uninitialized. rank 0 is a scalar;
 * sizes may be 0. */
PORTA_API porta_status *porta_tensor_empty(porta_device *device, porta_dtype dtype,
                                           int rank, const int64_t *sizes,
                                           porta_tensor **out);
/* A view on `buffer` (retained). Strides and offset count elements and may be
 * negative or zero; every addressed element must lie inside the buffer. */
PORTA_API porta_status *porta_tensor_view(porta_buffer *buffer, porta_dtype dtype,
                                          int rank, const int64_t *sizes,
                                          const int64_t *strides, int64_t offset,
                                          porta_tensor **out);
/* A contiguous tensor holding a copy of host data laid out row-major. */
PORTA_API porta_status *porta_tensor_from_host(porta_device *device, porta_dtype dtype,
                                               int rank, const int64_t *sizes,
                                               const void *data, porta_tensor **out);
/* A new contiguous tensor with every element set to value (cast to dtype);
 * rank 0 makes a scalar, the usual second operand of an op. */
PORTA_API porta_status *porta_tensor_full(porta_device *device, porta_dtype dtype, int rank,
                                          const int64_t *sizes, double value,
                                          porta_tensor **out);
/* A new 1-D tensor start, start + step, ... below end (torch.arange). */
PORTA_API porta_status *porta_tensor_arange(porta_device *device, porta_dtype dtype,
                                            double start, double end, double step,
                                            porta_tensor **out);
/* Copies the tensor's elements to `dst` in row-major order (any strides). */
PORTA_API porta_status *porta_tensor_to_host(const porta_tensor *tensor, void *dst,
                                             size_t dst_bytes);

PORTA_API void porta_tensor_retain(porta_tensor *tensor);
PORTA_API void porta_tensor_release(porta_tensor *tensor);

PORTA_API porta_dtype porta_tensor_dtype(const porta_tensor *tensor);
PORTA_API int porta_tensor_rank(const porta_tensor *tensor);
PORTA_API const int64_t *porta_tensor_sizes(const porta_tensor *tensor);
PORTA_API const int64_t *porta_tensor_strides(const porta_tensor *tensor);
PORTA_API int64_t porta_tensor_offset(const porta_tensor *tensor);
PORTA_API int64_t porta_tensor_numel(const porta_tensor *tensor);
PORTA_API bool porta_tensor_is_contiguous(const porta_tensor *tensor);
PORTA_API porta_buffer *porta_tensor_buffer(const porta_tensor *tensor); /* borrowed */
PORTA_API porta_device *porta_tensor_device(const porta_tensor *tensor);
/* torch.view_as_real: a complex tensor's (real, imag) pairs as a view of
 * its component dtype with a trailing axis of 2 (stride 1; the other strides
 * and the offset doubled). */
PORTA_API porta_status *porta_view_as_real(const porta_tensor *tensor, porta_tensor **out);
/* torch.view_as_complex: the inverse, for a float32/float64 tensor whose
 * last axis has size 2 and stride 1, whose other strides and offset are
 * even. */
PORTA_API porta_status *porta_view_as_complex(const porta_tensor *tensor, porta_tensor **out);

/* ------------------------------------------------------------------ */
/* The compiler: fused execution of recorded primitives                 */
/* ------------------------------------------------------------------ */

/* While fusion is on, primitives are recorded instead of run (shapes and
 * dtypes are still checked when an op is issued, and results are allocated
 * then); the recorded trace is scheduled into fused kernels, compiled, and
 * run at the next sync point: a read or write of buffer contents by the
 * host, porta_flush, porta_device_synchronize, switching fusion off, or the
 * trace reaching its size limit. A trace of the same structure as an
 * earlier one reuses that one's schedule and kernels. Turning fusion off
 * flushes. Not for use from several threads at once with other work on the
 * same tensors. */
PORTA_API porta_status *porta_set_fusion(bool on);
PORTA_API bool porta_get_fusion(void);
/* Runs everything recorded so far. An error names the failing primitive
 * and the site it was issued from (porta_trace_set_site). */
PORTA_API porta_status *porta_flush(void);
/* A short description of the caller's current source location ("file:line"),
 * copied into the primitives this thread records next, for errors raised
 * at a later flush. NULL clears it. */
PORTA_API void porta_trace_set_site(const char *site);

typedef struct porta_compiler_stats {
    uint64_t flushes;            /* traces run */
    uint64_t graphs_compiled;    /* traces scheduled anew (schedule cache misses) */
    uint64_t graph_cache_hits;   /* traces that reused a schedule */
    uint64_t kernels_compiled;   /* kernels built by a compiler */
    uint64_t kernel_memory_hits; /* kernels found loaded in this process */
    uint64_t kernel_disk_hits;   /* kernels loaded from the disk cache */
    double compile_seconds;      /* building and loading kernels */
    uint64_t kernels_run;        /* fused kernels launched */
    uint64_t prims_fused;        /* primitives run inside fused kernels */
    uint64_t prims_alone;        /* primitives run by their own kernel */
    uint64_t last_trace_kernels; /* kernels (fused or not) the last trace ran */
} porta_compiler_stats;
PORTA_API void porta_compiler_stats_get(porta_compiler_stats *out);
PORTA_API void porta_compiler_stats_reset(void);
/* While explaining, each flushed trace appends its kernels (the primitives
 * each fused kernel computes, its domain, and with_source its generated
 * code) to a report; porta_explain_stop returns it (free with free()). */
PORTA_API void porta_explain_start(bool with_source);
PORTA_API char *porta_explain_stop(void);

/* ------------------------------------------------------------------ */
/* Profiler: a Chrome trace of what each device does                    */
/* ------------------------------------------------------------------ */

/* Between start and stop, libporta records kernels (eager primitives and
 * fused kernels), kernel builds, copies (between devices, and between the
 * host and a device) and syncs (flushes, synchronize), each on the track of
 * the device it ran on and the row of the thread that issued it.
 * porta_profiler_stop stops and writes them to `path` in the Chrome trace
 * event format (chrome://tracing, ui.perfetto.dev), as porta_file_write
 * writes a file (porta_io.h); path NULL discards them. While stopped, a recording site costs one atomic load. Starting a
 * running profiler or stopping a stopped one is PORTA_ERR_INVALID_ARGUMENT.
 * On OpenCL and CUDA devices a kernel's event spans its launch: the
 * device's time shows in the read or synchronize that waits for it. */
PORTA_API porta_status *porta_profiler_start(void);
PORTA_API porta_status *porta_profiler_stop(const char *path);
/* For layers above libporta (the Python package's ops that PyTorch's CPU
 * runs): a start time from the profiler's clock, 0 while it is stopped;
 * then the event from that start to now. category: "kernel", "compile",
 * "copy", "sync" or "fallback"; device_index -1 puts it on the host's
 * track. A begin of 0 records nothing. */
PORTA_API uint64_t porta_profiler_begin(void);
PORTA_API porta_status *porta_profiler_record(const char *category, int device_index,
                                              const char *name, uint64_t begin);

/* ------------------------------------------------------------------ */
/* Primitive ops, run eagerly on tensors                                */
/* ------------------------------------------------------------------ */

typedef enum porta_unary_op {
    PORTA_NEG = 0, PORTA_ABS, PORTA_SIGN, PORTA_EXP, PORTA_EXP2, PORTA_EXPM1,
    PORTA_LOG, PORTA_LOG2, PORTA_LOG1P, PORTA_SQRT, PORTA_RSQRT,
    PORTA_RECIPROCAL, PORTA_SIN, PORTA_COS, PORTA_TAN, PORTA_ASIN, PORTA_ACOS,
    PORTA_ATAN, PORTA_SINH, PORTA_COSH, PORTA_TANH, PORTA_ASINH, PORTA_ACOSH,
    PORTA_ATANH, PORTA_SIGMOID, PORTA_ERF, PORTA_ERFC, PORTA_ERFINV, PORTA_LGAMMA,
    PORTA_FLOOR, PORTA_CEIL, PORTA_ROUND, PORTA_TRUNC, PORTA_ISNAN, PORTA_ISINF,
    PORTA_ISFINITE, PORTA_LOGICAL_NOT, PORTA_BITWISE_NOT,
    /* special functions (torch.special's), float results like EXP..LGAMMA */
    PORTA_DIGAMMA, PORTA_I0, PORTA_I0E, PORTA_I1, PORTA_I1E, PORTA_ERFCX,
    PORTA_LOG_NDTR, PORTA_NDTRI, PORTA_BESSEL_J0, PORTA_BESSEL_J1, PORTA_BESSEL_Y0,
    PORTA_BESSEL_Y1, PORTA_MODIFIED_BESSEL_K0, PORTA_MODIFIED_BESSEL_K1,
    PORTA_SCALED_MODIFIED_BESSEL_K0, PORTA_SCALED_MODIFIED_BESSEL_K1,
    PORTA_SPHERICAL_BESSEL_J0, PORTA_AIRY_AI,
    PORTA_UNARY_OP_COUNT
} porta_unary_op;

typedef enum porta_binary_op {
    PORTA_ADD = 0, PORTA_SUB, PORTA_MUL,
    PORTA_DIV,          /* true division: integers promote to float32 */
    PORTA_FLOOR_DIVIDE, /* rounds toward -inf, like torch.floor_divide */
    PORTA_REMAINDER,    /* sign of the divisor, like torch.remainder */
    PORTA_FMOD,         /* sign of the dividend, like torch.fmod */
    PORTA_POW, PORTA_ATAN2,
    PORTA_MAXIMUM, PORTA_MINIMUM, /* NaN-propagating, like torch.maximum */
    PORTA_BITWISE_AND, PORTA_BITWISE_OR, PORTA_BITWISE_XOR,
    PORTA_SHIFT_LEFT, PORTA_SHIFT_RIGHT,
    PORTA_LOGICAL_AND, PORTA_LOGICAL_OR, PORTA_LOGICAL_XOR,
    PORTA_EQ, PORTA_NE, PORTA_LT, PORTA_LE, PORTA_GT, PORTA_GE, /* -> bool */
    /* special functions, float results like DIV: the regularized incomplete
     * gammas igamma(a, x) and igammac(a, x), Hurwitz zeta(s, q), and the
     * orthogonal polynomials p(x, n) of degree n (truncated to an integer) */
    PORTA_IGAMMA, PORTA_IGAMMAC, PORTA_ZETA,
    PORTA_CHEBYSHEV_T, PORTA_CHEBYSHEV_U, PORTA_CHEBYSHEV_V, PORTA_CHEBYSHEV_W,
    PORTA_SHIFTED_CHEBYSHEV_T, PORTA_SHIFTED_CHEBYSHEV_U, PORTA_SHIFTED_CHEBYSHEV_V,
    PORTA_SHIFTED_CHEBYSHEV_W, PORTA_HERMITE_H, PORTA_HERMITE_HE, PORTA_LAGUERRE_L,
    PORTA_LEGENDRE_P,
    PORTA_BINARY_OP_COUNT
} porta_binary_op;

typedef enum porta_ternary_op {
    PORTA_WHERE = 0, /* where(cond, a, b): cond is bool */
    PORTA_FMA,       /* a * b + c */
    PORTA_TERNARY_OP_COUNT
} porta_ternary_op;

typedef enum porta_reduce_op {
    PORTA_REDUCE_SUM = 0, PORTA_REDUCE_PROD, PORTA_REDUCE_MAX, PORTA_REDUCE_MIN,
    PORTA_REDUCE_ARGMAX, PORTA_REDUCE_ARGMIN, PORTA_REDUCE_ANY, PORTA_REDUCE_ALL,
    PORTA_REDUCE_OP_COUNT
} porta_reduce_op;

PORTA_API const char *porta_unary_op_name(porta_unary_op op);
PORTA_API const char *porta_binary_op_name(porta_binary_op op);
PORTA_API const char *porta_ternary_op_name(porta_ternary_op op);
PORTA_API const char *porta_reduce_op_name(porta_reduce_op op);

/* Elementwise, with broadcasting and type promotion as in PyTorch. */
PORTA_API porta_status *porta_unary(porta_unary_op op, const porta_tensor *x,
                                    porta_tensor **out);
PORTA_API porta_status *porta_binary(porta_binary_op op, const porta_tensor *a,
                                     const porta_tensor *b, porta_tensor **out);
PORTA_API porta_status *porta_ternary(porta_ternary_op op, const porta_tensor *a,
                                      const porta_tensor *b, const porta_tensor *c,
                                      porta_tensor **out);
PORTA_API porta_status *porta_cast(const porta_tensor *x, porta_dtype dtype,
                                   porta_tensor **out);
/* Copies src into dst (same shape after broadcasting src; casts dtype). src
 * and dst may live on different devices, of any backends. */
PORTA_API porta_status *porta_copy(const porta_tensor *src, porta_tensor *dst);
/* Sets every element of dst to value (cast to dst's dtype). */
PORTA_API porta_status *porta_fill(porta_tensor *dst, double value);

/* Reduces over `axes` (count 0: every axis). Negative axes count from the
 * end. ARGMAX/ARGMIN take at most one axis (none: the flattened index).
 * SUM/PROD of bool or integers give int64; ANY/ALL give bool;
 * ARGMAX/ARGMIN give int64. */
PORTA_API porta_status *porta_reduce(porta_reduce_op op, const porta_tensor *x,
                                     const int *axes, int axis_count, bool keepdim,
                                     porta_tensor **out);

/* Movement ops return views sharing x's buffer (no copy), except reshape of
 * a layout that cannot be viewed, which copies, and pad, which allocates. */
PORTA_API porta_status *porta_reshape(const porta_tensor *x, int rank,
                                      const int64_t *sizes, porta_tensor **out);
PORTA_API porta_status *porta_permute(const porta_tensor *x, const int *dims,
                                      porta_tensor **out);
PORTA_API porta_status *porta_expand(const porta_tensor *x, int rank,
                                     const int64_t *sizes, porta_tensor **out);
/* Per axis: start, stop (exclusive, clamped like Python) and step (non-zero;
 * negative steps walk backwards like Python's x[::-1]). */
PORTA_API porta_status *porta_slice(const porta_tensor *x, int axis, int64_t start,
                                    int64_t stop, int64_t step, porta_tensor **out);
PORTA_API porta_status *porta_flip(const porta_tensor *x, const int *axes,
                                   int axis_count, porta_tensor **out);
/* pads[2*i], pads[2*i+1]: elements before/after on axis i (may be negative to
 * crop). Constant padding with `value`. */
PORTA_API porta_status *porta_pad(const porta_tensor *x, const int64_t *pads,
                                  double value, porta_tensor **out);

/* out[i][j] = x[i][index[i][j]] along `axis` (torch.gather). */
PORTA_API porta_status *porta_gather(const porta_tensor *x, int axis,
                                     const porta_tensor *index, porta_tensor **out);
typedef enum porta_scatter_reduce {
    PORTA_SCATTER_NONE = 0, PORTA_SCATTER_ADD, PORTA_SCATTER_MUL,
    PORTA_SCATTER_AMAX, PORTA_SCATTER_AMIN
} porta_scatter_reduce;
/* A copy of x with src scattered into it along `axis` (torch.scatter /
 * scatter_reduce with include_self=True). */
PORTA_API porta_status *porta_scatter(const porta_tensor *x, int axis,
                                      const porta_tensor *index, const porta_tensor *src,
                                      porta_scatter_reduce reduce, porta_tensor **out);
/* torch.index_select: rows of x along axis picked by a 1-D integer index. */
PORTA_API porta_status *porta_index_select(const porta_tensor *x, int axis,
                                           const porta_tensor *index, porta_tensor **out);

typedef enum porta_sort_order {
    PORTA_SORT_ASCENDING = 0,
    PORTA_SORT_DESCENDING
} porta_sort_order;
/* torch.sort(x, axis, descending, stable=True): values (x's dtype) and
 * int64 indices along `axis`, ties in their original order, NaN above every
 * number (last ascending, first descending). Either of values and indices
 * may be NULL when that result is not wanted. A rank-0 x takes axis 0 or -1. */
PORTA_API porta_status *porta_sort(const porta_tensor *x, int axis, porta_sort_order order,
                                   porta_tensor **values, porta_tensor **indices);

/* The factorisations of porta_factor, each batched over the leading axes of
 * float32 or float64 matrices (accumulated in double). Results that LAPACK
 * returns as several arrays come packed in one tensor:
 *  CHOLESKY          a [..., n, n] symmetric (lower triangle read) ->
 *                    [..., n, n] lower L with a = L L^T. Where a is not
 *                    positive-definite, column j (the first that fails) and
 *                    every later one are zero, so L[j][j] is the first
 *                    diagonal element that is not > 0 (PyTorch's info j + 1).
 *  LU                a [..., m, n] -> [..., m + 1, n]: rows 0..m-1 hold L
 *                    (unit diagonal, below it) and U (on and above it) of
 *                    partial pivoting, row m the min(m, n) pivots as LAPACK's
 *                    1-based row numbers (getrf's ipiv), the rest zero.
 *  TRIANGULAR_SOLVE  a [..., n, n] triangular, b [..., n, k] -> x with
 *                    a x = b; flags PORTA_FACTOR_UPPER (else lower) and
 *                    PORTA_FACTOR_UNIT_DIAGONAL. Batch axes broadcast.
 *  QR                a [..., m, n] -> [..., m + 1, n]: geqrf's R (on and
 *                    above the diagonal) and Householder vectors (below it,
 *                    unit leading element implied), row m the min(m, n)
 *                    scalars tau, the rest zero.
 *  EIGH              a [..., n, n] symmetric (lower triangle read) ->
 *                    [..., n + 1, n]: row 0 the eigenvalues ascending, rows
 *                    1..n the orthonormal eigenvectors as columns.
 *  SVD               a [..., m, n] with m >= n -> [..., m + n + 1, n]: rows
 *                    0..m-1 the thin U (m x n), row m the singular values
 *                    descending, rows m+1..m+n V (n x n, not transposed).
 *  LDL               a [..., n, n] symmetric (lower triangle read) ->
 *                    [..., n + 1, n]: rows 0..n-1 LAPACK's sytrf (lower,
 *                    Bunch-Kaufman) L and D, zero above the diagonal, row n
 *                    its pivots (1-based; a 2x2 block's two negative).
 *  LDL_SOLVE         a [..., n + 1, n] (LDL's packed result), b [..., n, k]
 *                    -> x with A x = b (sytrs). Batch axes broadcast. */
typedef enum porta_factor_op {
    PORTA_FACTOR_CHOLESKY = 0,
    PORTA_FACTOR_LU,
    PORTA_FACTOR_TRIANGULAR_SOLVE,
    PORTA_FACTOR_QR,
    PORTA_FACTOR_EIGH,
    PORTA_FACTOR_SVD,
    PORTA_FACTOR_LDL,
    PORTA_FACTOR_LDL_SOLVE,
    PORTA_FACTOR_OP_COUNT
} porta_factor_op;
/* Flags of PORTA_FACTOR_TRIANGULAR_SOLVE (0 for the other factorisations). */
enum { PORTA_FACTOR_UPPER = 1, PORTA_FACTOR_UNIT_DIAGONAL = 2 };
PORTA_API const char *porta_factor_op_name(porta_factor_op op);
/* Runs one factorisation (see porta_factor_op); b is NULL except for
 * TRIANGULAR_SOLVE and LDL_SOLVE. */
PORTA_API porta_status *porta_factor(porta_factor_op op, int flags, const porta_tensor *a,
                                     const porta_tensor *b, porta_tensor **out);

/* The discrete Fourier transforms of porta_fft, over the axes `axes` of a
 * float32 or float64 x whose complex values are interleaved (real,
 * imaginary) pairs in a last axis of size 2 (the axes count the axes before
 * it); computed in x's precision, batched over the other axes:
 *  C2C  x [..., 2] -> [..., 2] of x's shape: forward (exponent -2 pi i jk/n)
 *       or, with `inverse`, backward (+2 pi i jk/n).
 *  R2C  real x [...] -> [..., 2], forward; onesided along the last of
 *       `axes`: its n values give n/2 + 1 (the axes count x's axes).
 *  C2R  x [..., 2] -> real [...], backward; the last of `axes` has
 *       `last_size` values in the result, read from the first
 *       last_size/2 + 1 of x's (Hermitian symmetry gives the rest; the
 *       imaginary parts of the zero and Nyquist frequencies are ignored).
 * `norm` scales the result by 1, 1/sqrt(N) or 1/N, N the product of the
 * transformed lengths (the real side's for R2C and C2R). */
typedef enum porta_fft_kind {
    PORTA_FFT_C2C = 0,
    PORTA_FFT_R2C,
    PORTA_FFT_C2R,
    PORTA_FFT_KIND_COUNT
} porta_fft_kind;
/* PyTorch's fft_norm_mode, in its order. */
typedef enum porta_fft_norm {
    PORTA_FFT_NORM_NONE = 0,
    PORTA_FFT_NORM_BY_ROOT_N,
    PORTA_FFT_NORM_BY_N,
    PORTA_FFT_NORM_COUNT
} porta_fft_norm;
typedef struct porta_fft_params {
    porta_fft_kind kind;
    bool inverse;      /* C2C only: the backward transform */
    porta_fft_norm norm;
    int axis_count;    /* 1 to PORTA_MAX_RANK - 1, each axis once, negative from the end */
    int axes[PORTA_MAX_RANK];
    int64_t last_size; /* C2R only: the result's length along the last of axes */
} porta_fft_params;
PORTA_API porta_status *porta_fft(const porta_tensor *x, const porta_fft_params *params,
                                  porta_tensor **out);
/* The row normalizations over the last axis that a backend may run in one
 * read of each row (porta_softmax). */
typedef enum porta_softmax_op {
    PORTA_SOFTMAX = 0,           /* a = x: exp(x - max) / sum(exp(x - max)) */
    PORTA_LOG_SOFTMAX,           /* a = x: (x - max) - log(sum(exp(x - max))) */
    PORTA_SOFTMAX_BACKWARD,      /* a = grad, b = softmax: b * (a - sum(a * b)) */
    PORTA_LOG_SOFTMAX_BACKWARD,  /* a = grad, b = log_softmax: a - exp(b) * sum(a) */
    PORTA_SOFTMAX_OP_COUNT
} porta_softmax_op;
/* Runs op over the last axis of contiguous float32 a (and b, a's shape, for
 * the gradients) into a new tensor, on a device whose backend has the
 * kernel (porta_softmax_runs); elsewhere the caller composes it from
 * reductions and elementwise ops. */
PORTA_API porta_status *porta_softmax(porta_softmax_op op, const porta_tensor *a,
                                      const porta_tensor *b, porta_tensor **out);
/* Whether porta_softmax runs op on a (and b) as given. */
PORTA_API bool porta_softmax_runs(porta_softmax_op op, const porta_tensor *a,
                                  const porta_tensor *b);

/* How a pooled size rounds: down (PyTorch's default) or up (ceil_mode). */
typedef enum porta_pool_rounding {
    PORTA_POOL_FLOOR = 0,
    PORTA_POOL_CEIL
} porta_pool_rounding;
/* Max pooling's indices (max_pool{1,2,3}d(..., return_indices=True)): for x
 * [N, C, in...] with 1 to 3 spatial axes, the int64 [N, C, out...] flat
 * index into in... of each window's maximum. kernel, stride, padding and
 * dilation hold one value per spatial axis; padding is at most half the
 * kernel and is never picked. As PyTorch's CPU kernel: the first maximum in
 * row-major window order wins, a NaN wins over any number (the last NaN).
 * Gathering x viewed as [N, C, prod(in)] at them gives the maxima. */
PORTA_API porta_status *porta_max_pool_indices(const porta_tensor *x, const int64_t *kernel,
                                               const int64_t *stride, const int64_t *padding,
                                               const int64_t *dilation,
                                               porta_pool_rounding rounding, porta_tensor **out);

/* C = op(A) @ op(B) over the last two axes, batch axes broadcast.
 * Transposed operands are simply transposed views (any strides). */
PORTA_API porta_status *porta_matmul(const porta_tensor *a, const porta_tensor *b,
                                     porta_tensor **out);

/* N-d convolution, N = rank(x) - 2; x [B, Cin, *spatial],
 * w [Cout, Cin/groups, *kernel], bias [Cout] or NULL. */
typedef struct porta_conv_params {
    int64_t stride[PORTA_MAX_RANK];
    int64_t padding[PORTA_MAX_RANK];
    int64_t dilation[PORTA_MAX_RANK];
    int64_t groups;
} porta_conv_params;
PORTA_API porta_status *porta_conv(const porta_tensor *x, const porta_tensor *w,
                                   const porta_tensor *bias,
                                   const porta_conv_params *params, porta_tensor **out);
/* The gradient of porta_conv(x, w, ...) with respect to w, given
 * grad_output [B, Cout, *out] (the gradient of its result): a tensor of w's
 * shape [Cout, Cin/groups, *kernel], `kernel` holding one size per spatial
 * axis. */
PORTA_API porta_status *porta_conv_weight_grad(const porta_tensor *x,
                                               const porta_tensor *grad_output,
                                               const porta_conv_params *params,
                                               const int64_t *kernel, porta_tensor **out);
/* The gradient of porta_conv(x, w, ...) with respect to x [B, Cin,
 * *input_sizes], given grad_output [B, Cout, *out]: `input_sizes` holds one
 * size per spatial axis (a strided convolution's output does not tell
 * them). */
PORTA_API porta_status *porta_conv_input_grad(const porta_tensor *grad_output,
                                              const porta_tensor *w,
                                              const porta_conv_params *params,
                                              const int64_t *input_sizes, porta_tensor **out);

/* Counter-based random numbers (Philox 4x32-10): element i of the result
 * depends only on (seed, offset + i), so every backend gives the same
 * numbers. Fills dst (float dtype) with U[low, high) or N(mean, std). */
PORTA_API porta_status *porta_random_uniform(porta_tensor *dst, uint64_t seed,
                                             uint64_t offset, double low, double high);
PORTA_API porta_status *porta_random_normal(porta_tensor *dst, uint64_t seed,
                                            uint64_t offset, double mean, double std);

/* Each device's default generator, as torch.cuda has one per GPU: a Philox
 * (seed, offset) pair from which the random aten ops draw, each moving the
 * offset past the numbers it used. A device starts at torch.cuda's default
 * seed, offset 0. manual_seed sets (seed, 0). */
PORTA_API porta_status *porta_manual_seed(int device, uint64_t seed);
PORTA_API porta_status *porta_generator_get_state(int device, uint64_t *seed,
                                                  uint64_t *offset);
PORTA_API porta_status *porta_generator_set_state(int device, uint64_t seed,
                                                  uint64_t offset);

/* ------------------------------------------------------------------ */
/* Graphs of primitives                                                 */
/* ------------------------------------------------------------------ */

/* A graph is built node by node; each builder call infers the node's shape
 * and dtype, rejects bad input with a status, and returns a node id.
 * Structurally equal nodes are merged (hash-consing), so building the same
 * expression twice yields the same id. */
typedef struct porta_graph porta_graph;
typedef int32_t porta_node;

PORTA_API porta_status *porta_graph_create(porta_graph **out);
PORTA_API void porta_graph_free(porta_graph *graph);
PORTA_API int porta_graph_node_count(const porta_graph *graph);

PORTA_API porta_status *porta_graph_input(porta_graph *graph, porta_dtype dtype, int rank,
                                          const int64_t *sizes, porta_node *out);
PORTA_API porta_status *porta_graph_constant(porta_graph *graph, porta_dtype dtype,
                                             double value, porta_node *out);
PORTA_API porta_status *porta_graph_unary(porta_graph *graph, porta_unary_op op,
                                          porta_node x, porta_node *out);
PORTA_API porta_status *porta_graph_binary(porta_graph *graph, porta_binary_op op,
                                           porta_node a, porta_node b, porta_node *out);
PORTA_API porta_status *porta_graph_ternary(porta_graph *graph, porta_ternary_op op,
                                            porta_node a, porta_node b, porta_node c,
                                            porta_node *out);
PORTA_API porta_status *porta_graph_cast(porta_graph *graph, porta_node x,
                                         porta_dtype dtype, porta_node *out);
PORTA_API porta_status *porta_graph_reduce(porta_graph *graph, porta_reduce_op op,
                                           porta_node x, const int *axes, int axis_count,
                                           bool keepdim, porta_node *out);
PORTA_API porta_status *porta_graph_reshape(porta_graph *graph, porta_node x, int rank,
                                            const int64_t *sizes, porta_node *out);
PORTA_API porta_status *porta_graph_permute(porta_graph *graph, porta_node x,
                                            const int *dims, porta_node *out);
PORTA_API porta_status *porta_graph_expand(porta_graph *graph, porta_node x, int rank,
                                           const int64_t *sizes, porta_node *out);
PORTA_API porta_status *porta_graph_slice(porta_graph *graph, porta_node x, int axis,
                                          int64_t start, int64_t stop, int64_t step,
                                          porta_node *out);
PORTA_API porta_status *porta_graph_flip(porta_graph *graph, porta_node x,
                                         const int *axes, int axis_count, porta_node *out);
PORTA_API porta_status *porta_graph_pad(porta_graph *graph, porta_node x,
                                        const int64_t *pads, double value, porta_node *out);
PORTA_API porta_status *porta_graph_gather(porta_graph *graph, porta_node x, int axis,
                                           porta_node index, porta_node *out);
PORTA_API porta_status *porta_graph_scatter(porta_graph *graph, porta_node x, int axis,
                                            porta_node index, porta_node src,
                                            porta_scatter_reduce reduce, porta_node *out);
PORTA_API porta_status *porta_graph_index_select(porta_graph *graph, porta_node x,
                                                 int axis, porta_node index,
                                                 porta_node *out);
/* The int64 indices that sort x along axis (porta_sort's indices); gather
 * x with them for the values. */
PORTA_API porta_status *porta_graph_sort(porta_graph *graph, porta_node x, int axis,
                                         porta_sort_order order, porta_node *out);
/* A factorisation node (porta_factor); b is -1 except for the solves. */
PORTA_API porta_status *porta_graph_factor(porta_graph *graph, porta_factor_op op, int flags,
                                           porta_node a, porta_node b, porta_node *out);
/* A Fourier transform node (porta_fft). */
PORTA_API porta_status *porta_graph_fft(porta_graph *graph, porta_node x,
                                        const porta_fft_params *params, porta_node *out);
PORTA_API porta_status *porta_graph_matmul(porta_graph *graph, porta_node a,
                                           porta_node b, porta_node *out);
PORTA_API porta_status *porta_graph_conv(porta_graph *graph, porta_node x, porta_node w,
                                         porta_node bias /* -1: none */,
                                         const porta_conv_params *params, porta_node *out);
PORTA_API porta_status *porta_graph_random(porta_graph *graph, porta_dtype dtype, int rank,
                                           const int64_t *sizes, bool normal,
                                           uint64_t seed, uint64_t offset, porta_node *out);

/* Shape and dtype a node was inferred to have. */
PORTA_API porta_status *porta_graph_node_type(const porta_graph *graph, porta_node node,
                                              porta_dtype *dtype, int *rank,
                                              int64_t *sizes /* PORTA_MAX_RANK */);
/* Marks a node as a graph output (in call order). */
PORTA_API porta_status *porta_graph_output(porta_graph *graph, porta_node node);
/* Checks every node: inputs defined before use, shapes and dtypes consistent
 * with the op, outputs present. Graphs built through the API always verify;
 * this guards graphs assembled or loaded by other means. */
PORTA_API porta_status *porta_graph_verify(const porta_graph *graph);
/* Runs the graph on `device` as fused kernels: its nodes are issued with
 * fusion on (porta_set_fusion) and flushed, so fusion is back as it was
 * when it returns. inputs: one tensor per porta_graph_input, in creation
 * order. outputs: one new tensor per porta_graph_output. */
PORTA_API porta_status *porta_graph_run(const porta_graph *graph, porta_device *device,
                                        porta_tensor *const *inputs, int input_count,
                                        porta_tensor **outputs, int output_count);

/* ------------------------------------------------------------------ */
/* PyTorch's Core ATen ops                                              */
/* ------------------------------------------------------------------ */

/* The aten layer implements PyTorch's aten ops (by overload name, such as
 * "add.Tensor") on porta tensors, with PyTorch's semantics: type promotion,
 * broadcasting, views and in-place writes. Arguments come in schema order,
 * every one present (defaults filled in by the caller). A number may stand
 * where the schema has a Tensor: it takes part in type promotion as a
 * Python scalar does. Device arguments are device indices (INT) or NONE. */
typedef enum porta_value_kind {
    PORTA_VALUE_NONE = 0,
    PORTA_VALUE_TENSOR,
    PORTA_VALUE_TENSORS,
    PORTA_VALUE_INT,
    PORTA_VALUE_FLOAT,
    PORTA_VALUE_BOOL,
    PORTA_VALUE_INTS,
    PORTA_VALUE_DTYPE,
    PORTA_VALUE_STRING,
    PORTA_VALUE_FLOATS
} porta_value_kind;

typedef struct porta_value {
    porta_value_kind kind;
    union {
        porta_tensor *tensor;
        struct {
            porta_tensor *const *items;
            int count;
        } tensors;
        int64_t i;
        double f;
        bool b;
        struct {
            const int64_t *items;
            int count;
        } ints;
        porta_dtype dtype;
        const char *string;
        struct {
            const double *items;
            int count;
        } floats;
    };
} porta_value;

/* A memory_format argument, as an INT value. */
typedef enum porta_memory_format {
    PORTA_MEMORY_CONTIGUOUS = 0,
    PORTA_MEMORY_PRESERVE,
    PORTA_MEMORY_CHANNELS_LAST,    /* rank 4: strides of an NHWC layout */
    PORTA_MEMORY_CHANNELS_LAST_3D  /* rank 5: NDHWC */
} porta_memory_format;

PORTA_API int porta_aten_op_count(void);
PORTA_API const char *porta_aten_op_name(int id);     /* "add.Tensor" */
PORTA_API int porta_aten_op_find(const char *name);   /* -1 when absent */
/* The kinds of the op's arguments, one letter each in schema order (the
 * letters are listed in src/aten/aten.h), so bindings can box them. */
PORTA_API const char *porta_aten_op_args(int id);
/* Whether op `id` computes on complex operands (complex tensors or a
 * complex dtype argument); porta_aten_call refuses such calls to the other
 * ops with PORTA_ERR_DTYPE "not implemented for complex64 on porta", so a
 * binding may send them elsewhere instead. */
PORTA_API bool porta_aten_op_takes_complex(int id);
/* Runs op `id`. On success *results is an array of *result_count values
 * (TENSOR results are new references; ops returning a list of tensors give
 * one TENSOR value each) to be freed with porta_aten_results_free. */
PORTA_API porta_status *porta_aten_call(int id, const porta_value *args, int arg_count,
                                        porta_value **results, int *result_count);
PORTA_API void porta_aten_results_free(porta_value *results, int count);
/* torch.get_default_dtype(): the dtype factories give when none is named
 * (float16, bfloat16, float32 or float64; others are ignored). float32 at
 * start; a binding calls this whenever PyTorch's default changes. */
PORTA_API void porta_aten_set_default_dtype(porta_dtype dtype);

#ifdef __cplusplus
}
#endif

#endif /* PORTA_H */
