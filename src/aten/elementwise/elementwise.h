/* Shared by the elementwise aten files (elementwise/): formulas composed in
 * an aten_scope (begun on the operands' device), the targets of in-place and
 * out= variants, and PyTorch's type promotion of their operands. */
#ifndef PORTA_ATEN_ELEMENTWISE_ELEMENTWISE_H
#define PORTA_ATEN_ELEMENTWISE_ELEMENTWISE_H

#include "aten/aten.h"
#include "aten/dispatch/scope.h"

/* Ends the scope: pushes `result` as a new tensor, or with `into` writes it
 * into that tensor (in-place and out= variants: same shape, a dtype the
 * result can be cast to; nothing to do when result is `into`), then releases
 * every held tensor. */
porta_status *ew_finish(aten_scope *s, const porta_tensor *result, porta_tensor *into,
                        aten_results *results);

/* The tensor an in-place (`inplace`) or out= (`out`) variant writes into:
 * args[0] for in-place, the last argument for out=, else NULL. */
typedef enum ew_variant { EW_NEW = 0, EW_INPLACE, EW_OUT } ew_variant;
porta_tensor *ew_target(const porta_value *args, int arg_count, ew_variant variant);
/* An out= tensor as the target of an elementwise result: `out` when it has
 * the broadcast shape of operands[0..count), else NULL, so the op makes a
 * new result and the binding resizes `out` to it, as PyTorch resizes outs
 * (in-place targets never resize: they keep ew_target's EW_INPLACE). */
porta_tensor *ew_out_target(const porta_value *operands, int count, porta_tensor *out);
/* `into` when a formula's last step can write straight into it: it has the
 * result's dtype and the broadcast shape of operands[0..count); else NULL,
 * and the result is made apart, then checked and written by ew_finish. An
 * `into` that partially overlaps an operand is safe: the primitives compute
 * through a temporary then (the same position of each element is not). */
porta_tensor *ew_direct_target(porta_tensor *into, porta_dtype dtype, const porta_value *operands,
                               int count);

/* hypot(x, y) of two float tensors, without overflow or underflow of the
 * squares (also |z| of a complex z from its parts). */
porta_tensor *ew_hypot(aten_scope *s, const porta_tensor *x, const porta_tensor *y);

/* An error for an op that refuses a dtype ("silu: expected a float tensor,
 * got int64"), as PyTorch's "not implemented for 'Long'". */
porta_status *ew_refuse_dtype(const char *op, const char *expected, porta_dtype given);


/* op(a, b) of two arguments (tensors or numbers) in PyTorch's result type;
 * `into` (or NULL) receives the result (in-place and out= variants). */
porta_status *ew_promoted_binary(porta_binary_op op, const porta_value *a, const porta_value *b,
                                 porta_tensor *into, aten_results *results);
/* The same, given the result type (ew_result_type) the caller computed. */
porta_status *ew_promoted_binary_as(porta_binary_op op, const porta_value *a,
                                    const porta_value *b, porta_dtype dtype, porta_tensor *into,
                                    aten_results *results);
/* PyTorch's result type of the arguments (c may be NULL) and the device
 * they are on. */
porta_dtype ew_result_type(const porta_value *a, const porta_value *b, const porta_value *c);
porta_device *ew_device(const porta_value *a, const porta_value *b, const porta_value *c);

/* The function and out= kernels of a binary op whose arguments are
 * (self, other[, out]), and the in-place kernel where PyTorch has one. */
#define BINARY_KERNELS(name, run, OP)                                         \
    static porta_status *op_##name(const porta_value *args, aten_results *r) { \
        return run(OP, &args[0], &args[1], NULL, r);                          \
    }                                                                         \
    static porta_status *op_##name##_out(const porta_value *args, aten_results *r) { \
        return run(OP, &args[0], &args[1], ew_out_target(args, 2, args[2].tensor), r); \
    }
#define INPLACE_KERNEL(name, run, OP)                                                \
    static porta_status *op_##name##_inplace(const porta_value *args, aten_results *r) { \
        return run(OP, &args[0], &args[1], args[0].tensor, r);                       \
    }

/* A kernel whose result `formula` builds in scope `s` from `args`, going
 * where `variant` says (a new tensor, self, or the last argument): `target`,
 * which the formula may read to write its last step there directly. */
#define COMPOSED_KERNEL(kernel, formula, variant, arg_count)                      \
    static porta_status *kernel(const porta_value *args, aten_results *r) {       \
        aten_scope s;                                                             \
        scope_begin_on(&s, ew_device(&args[0], &args[0], NULL));                  \
        porta_tensor *target = ew_target(args, arg_count, variant);               \
        porta_tensor *result = formula;                                           \
        return ew_finish(&s, result, target, r);                                  \
    }

#endif
