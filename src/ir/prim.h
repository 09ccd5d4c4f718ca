/* The primitive op descriptor: one struct describes every primitive, whether
 * it is run eagerly, stored as a graph node or handed to a backend. It holds
 * no pointers, so it can be hashed and compared bytewise (zero it first). */
#ifndef PORTA_IR_PRIM_H
#define PORTA_IR_PRIM_H

#include "porta.h"

typedef enum ir_prim_kind {
    PRIM_INPUT = 0,   /* graph input */
    PRIM_CONSTANT,    /* scalar constant: value, dtype; broadcast by consumers */
    /* compute: executed by backends */
    PRIM_UNARY,       /* op = porta_unary_op */
    PRIM_BINARY,      /* op = porta_binary_op */
    PRIM_TERNARY,     /* op = porta_ternary_op */
    PRIM_CAST,        /* copy with dtype conversion (also plain strided copy) */
    PRIM_FILL,        /* value */
    PRIM_REDUCE,      /* op = porta_reduce_op, axes, keepdim */
    PRIM_PAD,         /* pads, value */
    PRIM_GATHER,      /* axis */
    PRIM_SCATTER,     /* axis, op = porta_scatter_reduce */
    PRIM_INDEX_SELECT,/* axis */
    PRIM_MATMUL,
    PRIM_CONV,        /* conv */
    PRIM_RANDOM,      /* normal, seed, offset, value (low/mean), value2 (high/std) */
    PRIM_SORT,        /* axis, op = porta_sort_order: the stable sorting permutation */
    PRIM_CONV_WEIGHT_GRAD, /* conv; rank, sizes: the kernel's spatial sizes */
    PRIM_CONV_INPUT_GRAD,  /* conv; rank, sizes: the input's spatial sizes */
    /* max pooling's window argmax: rank = spatial dims, sizes = kernel,
     * conv.stride/padding/dilation, op = porta_pool_rounding */
    PRIM_POOL_MAX,
    /* op = porta_factor_op, axis = its flags (PORTA_FACTOR_UPPER, ...) */
    PRIM_FACTOR,
    /* op = porta_fft_kind, axes (in the given order), axis = porta_fft_norm,
     * value = the exponent's sign (-1 forward, +1 backward), stop = C2R's
     * length along the last axis */
    PRIM_FFT,
    /* op = porta_softmax_op, over the last axis of contiguous float32 rows */
    PRIM_SOFTMAX,
    /* movement: views, resolved on tensor metadata, never executed */
    PRIM_RESHAPE,     /* rank, sizes */
    PRIM_PERMUTE,     /* dims[rank] in axes */
    PRIM_EXPAND,      /* rank, sizes */
    PRIM_SLICE,       /* axis, start, stop, step */
    PRIM_FLIP,        /* axes */
    PRIM_KIND_COUNT
} ir_prim_kind;

typedef struct ir_prim {
    ir_prim_kind kind;
    int op;
    porta_dtype dtype; /* PRIM_INPUT / CONSTANT / CAST / RANDOM: the dtype */
    int axis;
    int axes[PORTA_MAX_RANK];
    int axis_count;
    bool keepdim;
    bool normal;
    int rank;
    int64_t sizes[PORTA_MAX_RANK];
    int64_t start, stop, step;
    int64_t pads[2 * PORTA_MAX_RANK];
    double value, value2;
    uint64_t seed, offset;
    porta_conv_params conv;
} ir_prim;

/*
 * Dtype contract of `execute` per primitive (the op layer inserts casts):
 *  UNARY    x and out share a dtype, except ISNAN/ISINF/ISFINITE/LOGICAL_NOT:
 *           x any dtype, out bool. Float-only ops (EXP, SIN, ...) get floats.
 *  BINARY   a and b share a dtype; out has it too, except comparisons and
 *           LOGICAL_*, whose out is bool.
 *  TERNARY  WHERE: a = cond (bool), b, c and out share a dtype.
 *           FMA: all share a dtype.
 *  CAST     x any dtype, out any dtype, x broadcast to out's shape.
 *  FILL     no inputs; out any dtype.
 *  REDUCE   SUM/PROD/MAX/MIN: x and out share a dtype (SUM/PROD of integers
 *           arrive as int64). ARGMAX/ARGMIN: out int64. ANY/ALL: x any, out
 *           bool. Axes are normalized, sorted and unique; out has keepdim's
 *           shape as given by prim->keepdim.
 *  PAD      x and out share a dtype.
 *  GATHER / INDEX_SELECT   index int64; x and out share a dtype.
 *  SCATTER  inputs x, index (int64), src; x, src and out share a dtype.
 *  MATMUL   a, b, out share a dtype; a [..., M, K], b [..., K, N] already
 *           broadcast to out's batch shape; out [..., M, N].
 *  CONV     x, w, (bias) and out share a dtype.
 *  CONV_WEIGHT_GRAD   x [N, Cin, *in], gy [N, Cout, *O] (the gradient of
 *           conv(x, ·)'s output) and out [Cout, Cin/groups, *kernel], the
 *           gradient of the weight, share a float dtype.
 *  CONV_INPUT_GRAD    gy [N, Cout, *O], w [Cout, Cin/groups, *kernel] and
 *           out [N, Cin, *in], the gradient of conv(·, w)'s input, share a
 *           float dtype.
 *  RANDOM   no inputs; out float.
 *  SORT     x any dtype; out int64 of x's shape: along `axis`, the indices
 *           that order x stably (ties keep their order; NaN sorts above
 *           every number, -0.0 equals 0.0).
 *  POOL_MAX x [N, C, in...] any dtype but bool; out int64 [N, C, out...]:
 *           each window's flat index into in... of its maximum, PyTorch's
 *           CPU loop: positions in row-major window order, padding skipped
 *           (never a candidate), a later value replaces the best so far when
 *           greater or NaN, the first position inside the input to start.
 *  FACTOR   a (and b for TRIANGULAR_SOLVE) float32 or float64, one dtype,
 *           any strides; out contiguous of that dtype, packed as
 *           porta_factor_op describes (porta.h).
 *  FFT      x float32 or float64, any strides; out contiguous of x's dtype,
 *           complex values as (real, imaginary) pairs in a last axis of 2
 *           (C2C's x and out, R2C's out, C2R's x), as porta_fft_kind says.
 */

/* Input counts per kind (-1: variable, CONV has 2 or 3). */
int ir_prim_input_count(const ir_prim *prim);
const char *ir_prim_kind_name(ir_prim_kind kind);
/* A readable name such as "binary.add" or "reduce.sum". */
const char *ir_prim_name(const ir_prim *prim);

/* Faults an integer BINARY kernel reports as a bit mask (the values are
 * part of the kernels' source on every backend), and the error PyTorch
 * raises for them: NULL when `faults` is 0. One place, so every backend
 * words them alike. */
enum { IR_FAULT_DIV_ZERO = 1, IR_FAULT_NEGATIVE_POWER = 2 };
porta_status *ir_integer_fault_error(const char *op_name, int faults);

#endif
