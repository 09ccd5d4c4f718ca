/* Shared by the elementwise aten files (elementwise*.c): a scope that runs a
 * formula of primitives, holding every intermediate tensor and the first
 * error, so a formula reads like the math it computes. */
#ifndef PORTA_ATEN_ELEMENTWISE_H
#define PORTA_ATEN_ELEMENTWISE_H

#include "aten/aten.h"
#include "aten/dispatch/scope.h"

/* The nn ops' composition scope holds the intermediates and the first
 * error; formulas add the device their numbers are made on. */
typedef struct ew_scope {
    nn_scope held;
    porta_device *device;
} ew_scope;

/* Starts a formula whose numbers are made on `device` (cheaper than a
 * zero-initialized ew_scope, see nn_begin). */
static inline void ew_begin(ew_scope *s, porta_device *device) {
    nn_begin(&s->held);
    s->device = device;
}

/* Every step returns a tensor the scope owns, or NULL once an error is set
 * (inputs may then be NULL too). Numbers become rank-0 tensors of the dtype
 * of the tensor they meet. */
porta_tensor *ew_unary(ew_scope *s, porta_unary_op op, const porta_tensor *x);
porta_tensor *ew_binary(ew_scope *s, porta_binary_op op, const porta_tensor *a,
                        const porta_tensor *b);
/* Written straight into `into` when it is not NULL (the primitives' out=
 * rules), else a new tensor like the other steps. */
porta_tensor *ew_binary_into(ew_scope *s, porta_binary_op op, const porta_tensor *a,
                             const porta_tensor *b, porta_tensor *into);
porta_tensor *ew_ternary_into(ew_scope *s, porta_ternary_op op, const porta_tensor *a,
                              const porta_tensor *b, const porta_tensor *c, porta_tensor *into);
porta_tensor *ew_binary_number(ew_scope *s, porta_binary_op op, const porta_tensor *a, double b);
porta_tensor *ew_number_binary(ew_scope *s, porta_binary_op op, double a, const porta_tensor *b);
porta_tensor *ew_where(ew_scope *s, const porta_tensor *cond, const porta_tensor *a,
                       const porta_tensor *b);
porta_tensor *ew_where_number(ew_scope *s, const porta_tensor *cond, double a,
                              const porta_tensor *b);
porta_tensor *ew_cast(ew_scope *s, const porta_tensor *x, porta_dtype dtype);
porta_tensor *ew_number(ew_scope *s, porta_dtype dtype, double value);
/* An argument (tensor or number) as a tensor of `dtype`, for formulas that
 * compute in one dtype. */
porta_tensor *ew_operand(ew_scope *s, const porta_value *v, porta_dtype dtype);
/* Records an error (if none yet) and returns NULL. */
porta_tensor *ew_fail(ew_scope *s, porta_status *status);

/* Ends the scope: pushes `result` as a new tensor, or with `into` writes it
 * into that tensor (in-place and out= variants: same shape, a dtype the
 * result can be cast to; nothing to do when result is `into`), then releases
 * every held tensor. */
porta_status *ew_finish(ew_scope *s, const porta_tensor *result, porta_tensor *into,
                        aten_results *results);

/* The dtype PyTorch computes a formula in: float16 and bfloat16 in float32
 * (rounded once at the end), others in themselves. */
porta_dtype ew_compute_dtype(porta_dtype dtype);

/* The tensor an in-place (`inplace`) or out= (`out`) variant writes into:
 * args[0] for in-place, the last argument for out=, else NULL. */
typedef enum ew_variant { EW_NEW = 0, EW_INPLACE, EW_OUT } ew_variant;
porta_tensor *ew_target(const porta_value *args, int arg_count, ew_variant variant);
/* An out= tensor as the target of an elementwise result: `out` when it has
 * the broadcast shape of operands[0..count), else NULL, so the op makes a
 * new result and the binding resizes `out` to it, as PyTorch resizes outs
 * (in-place targets never resize: they keep ew_target's EW_INPLACE). */
porta_tensor *ew_out_target(const porta_value *operands, int count, porta_tensor *out);

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
 * where `variant` says (a new tensor, self, or the last argument). */
#define COMPOSED_KERNEL(kernel, formula, variant, arg_count)                      \
    static porta_status *kernel(const porta_value *args, aten_results *r) {       \
        ew_scope s;                                                               \
        ew_begin(&s, ew_device(&args[0], &args[0], NULL));                        \
        porta_tensor *result = formula;                                           \
        return ew_finish(&s, result, ew_target(args, arg_count, variant), r);     \
    }

#endif
