/* The kernel IR: what one fused kernel computes, independent of sizes and
 * strides (those arrive at run time in kir_args), so one compiled kernel
 * serves every shape of the same structure.
 *
 * A kernel iterates over a domain of `rank` dims (after dims that every
 * access walks alike were merged). Without reductions every value is FULL:
 * one per domain element; the kernel runs over a flat range of elements.
 * With reductions, dims [0, outer_rank) are the outer dims and
 * [outer_rank, rank) the reduced ones: the kernel runs over a range of
 * outer indices ("rows"); for each row it makes one pass over the reduced
 * dims per reduction level (a reduction whose argument needs another
 * reduction's result is one level later), evaluates OUTER values (one per
 * row: reduction results and what is computed from them) between passes,
 * and writes FULL stores in the last pass. Softmax is then one kernel:
 * pass 1 max, pass 2 sum of exp(x - max), pass 3 the stores of
 * exp(x - max) / sum. FULL values needed in several passes are recomputed.
 *
 * Values are in SSA form, in topological order (arguments precede users).
 * Every value has a porta dtype; float16/bfloat16 values are computed in
 * float32 and rounded to their dtype once per value, as eager ops round
 * once per op. */
#ifndef PORTA_IR_KERNEL_IR_H
#define PORTA_IR_KERNEL_IR_H

#include <stdbool.h>
#include <stdint.h>

#include "ir/kernel_abi.h"
#include "porta.h"

#define KIR_MAX_VALUES 256
#define KIR_MAX_ACCESSES 32 /* loads + stores */
#define KIR_MAX_PARAMS 16

typedef enum kir_space {
    KIR_FULL = 0, /* one per element of the domain */
    KIR_OUTER     /* one per outer index (reduction kernels only) */
} kir_space;

typedef enum kir_value_kind {
    KIR_LOAD = 0, /* access = index into accesses (a load) */
    KIR_CONST,    /* constant, converted to dtype */
    KIR_UNARY,    /* op = porta_unary_op, args[0] */
    KIR_BINARY,   /* op = porta_binary_op, args[0..1] */
    KIR_TERNARY,  /* op = porta_ternary_op, args[0..2] */
    KIR_CAST,     /* args[0] converted to dtype, as the eager CAST kernel */
    KIR_REDUCE,   /* op = porta_reduce_op (SUM, PROD, MAX, MIN, ANY, ALL) of
                     FULL args[0] over the reduced dims; an OUTER value */
    KIR_PARAM     /* the scalar kir_args.params[param] converted to dtype: a
                     constant that changes from run to run (a learning rate,
                     a bias correction) without changing the kernel */
} kir_value_kind;

typedef struct kir_value {
    kir_value_kind kind;
    int op;
    porta_dtype dtype; /* of the result (the eager primitive's out dtype) */
    kir_space space;
    int args[3];
    int access;      /* KIR_LOAD */
    int param;       /* KIR_PARAM */
    double constant; /* KIR_CONST */
} kir_value;

/* Where a value lives in memory: a buffer given at run time in
 * kir_args.data[i] (already offset to the view's element 0), walked with
 * kir_args.strides[i] (elements, one per domain dim; OUTER accesses use
 * only the outer dims). `last` classifies the innermost dim's stride for
 * FULL accesses, so a contiguous or broadcast walk renders as such. */
typedef enum kir_last_stride {
    KIR_LAST_ANY = 0, /* a run-time stride */
    KIR_LAST_UNIT,    /* 1 */
    KIR_LAST_ZERO     /* 0: broadcast along the innermost dim */
} kir_last_stride;

typedef struct kir_access {
    porta_dtype dtype;
    kir_space space;
    kir_last_stride last;
    bool store;
    int value; /* stores: the value written */
} kir_access;

typedef struct kir_kernel {
    int rank;       /* 1..PORTA_MAX_RANK */
    int outer_rank; /* == rank when the kernel has no reduction */
    int value_count;
    kir_value values[KIR_MAX_VALUES];
    int access_count;
    kir_access accesses[KIR_MAX_ACCESSES];
} kir_kernel;

/* The run-time arguments of every kernel (the ABI between libporta and a
 * compiled kernel): sizes[PORTA_MAX_RANK], data[KIR_MAX_ACCESSES] and
 * strides[KIR_MAX_ACCESSES][PORTA_MAX_RANK], declared once in kernel_abi.h,
 * which also spells it for the generated source. */
KIR_ARGS_DECL

/* A stable 64-bit hash of everything in the kernel that the generated
 * source depends on (unused array slots excluded). */
uint64_t kir_hash(const kir_kernel *kernel);
/* Whether two kernels agree in everything kir_hash covers (a hash match is
 * confirmed with it before a compiled kernel is reused). */
bool kir_same_kernel(const kir_kernel *a, const kir_kernel *b);

#endif
