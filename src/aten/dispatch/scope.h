/* The aten layer's one way to compose primitives in an op: each step
 * returns a tensor the scope holds (released at the end), or NULL after the
 * first failure, whose status the scope keeps. Later steps given NULL do
 * nothing, so a composition reads as straight-line math with one error
 * check at the end. */
#ifndef PORTA_ATEN_DISPATCH_SCOPE_H
#define PORTA_ATEN_DISPATCH_SCOPE_H

#include "aten/aten.h"

#define ATEN_SCOPE_CAP 128

typedef struct aten_scope {
    porta_status *status; /* the first failure, or NULL */
    porta_tensor *held[ATEN_SCOPE_CAP];
    int count;
    /* where scope_number and scope_operand make numbers: the operands'
     * device (scope_begin_on), NULL for compositions that make none */
    porta_device *device;
} aten_scope;

/* Starts an empty scope. Only the fields read before they are written are
 * set: zeroing all of held[] (1 KiB) would cost more than a small op. */
static inline void scope_begin(aten_scope *s) {
    s->status = NULL;
    s->count = 0;
    s->device = NULL;
}
/* Starts a scope whose numbers are made on `device`. */
static inline void scope_begin_on(aten_scope *s, porta_device *device) {
    scope_begin(s);
    s->device = device;
}

/* Takes the outcome of one primitive call: holds `t` on success, records
 * the status on failure. Returns t or NULL. */
porta_tensor *scope_hold(aten_scope *s, porta_status *status, porta_tensor *t);
/* Records a failure (if none yet) and returns NULL. */
porta_tensor *scope_fail(aten_scope *s, porta_status *status);
/* Releases every held tensor; returns the first failure, if any. */
porta_status *scope_end(aten_scope *s);
/* Pushes t (a new reference) onto results; does nothing after a failure. */
void scope_push(aten_scope *s, aten_results *results, porta_tensor *t);
/* Pushes a None result (an output the caller's mask did not ask for). */
void scope_push_none(aten_scope *s, aten_results *results);
/* Writes result into target (an in-place variant's self) and pushes a new
 * reference to target; does nothing after a failure. */
void scope_push_into(aten_scope *s, aten_results *results, const porta_tensor *result,
                     porta_tensor *target);
/* The value of a rank-0 tensor as an int64 read to the host (0 after a
 * failure), for sizes and bounds that decide the rest of a composition. */
int64_t scope_read_int(aten_scope *s, const porta_tensor *x);

porta_tensor *scope_unary(aten_scope *s, porta_unary_op op, const porta_tensor *x);
porta_tensor *scope_binary(aten_scope *s, porta_binary_op op, const porta_tensor *a,
                           const porta_tensor *b);
porta_tensor *scope_ternary(aten_scope *s, porta_ternary_op op, const porta_tensor *a,
                            const porta_tensor *b, const porta_tensor *c);
/* Written straight into `into` when it is not NULL (the primitives' out=
 * rules), else a new tensor like the other steps. */
porta_tensor *scope_binary_into(aten_scope *s, porta_binary_op op, const porta_tensor *a,
                                const porta_tensor *b, porta_tensor *into);
porta_tensor *scope_ternary_into(aten_scope *s, porta_ternary_op op, const porta_tensor *a,
                                 const porta_tensor *b, const porta_tensor *c, porta_tensor *into);
porta_tensor *scope_where(aten_scope *s, const porta_tensor *cond, const porta_tensor *a,
                          const porta_tensor *b);
/* op(x, value) and op(value, x) with value a rank-0 tensor of x's dtype
 * on x's device; where(cond, value, x) likewise. */
porta_tensor *scope_binary_number(aten_scope *s, porta_binary_op op, const porta_tensor *x,
                                  double value);
porta_tensor *scope_number_binary(aten_scope *s, porta_binary_op op, double value,
                                  const porta_tensor *x);
porta_tensor *scope_where_number(aten_scope *s, const porta_tensor *cond, double value,
                                 const porta_tensor *x);
/* A rank-0 tensor of `dtype` on the scope's device. */
porta_tensor *scope_number(aten_scope *s, porta_dtype dtype, double value);
/* An argument (tensor or number) as a tensor of `dtype`, numbers made on
 * the scope's device, for formulas that compute in one dtype. */
porta_tensor *scope_operand(aten_scope *s, const porta_value *v, porta_dtype dtype);
porta_tensor *scope_cast(aten_scope *s, const porta_tensor *x, porta_dtype dtype);
/* x in `dtype`: x itself when it already has it (no copy), else a cast.
 * Unlike scope_cast the step may return an input, so a formula's result
 * handed to ew_finish must not come from it unchanged. */
porta_tensor *scope_as_dtype(aten_scope *s, const porta_tensor *x, porta_dtype dtype);
porta_tensor *scope_full(aten_scope *s, porta_device *device, porta_dtype dtype, int rank,
                         const int64_t *sizes, double value);
porta_tensor *scope_reduce(aten_scope *s, porta_reduce_op op, const porta_tensor *x,
                           const int *axes,
                           int axis_count, bool keepdim);
/* Mean over axes (keepdim): sum / count. */
porta_tensor *scope_mean(aten_scope *s, const porta_tensor *x, const int *axes, int axis_count);
porta_tensor *scope_reshape(aten_scope *s, const porta_tensor *x, int rank, const int64_t *sizes);
porta_tensor *scope_permute(aten_scope *s, const porta_tensor *x, const int *dims);
porta_tensor *scope_expand(aten_scope *s, const porta_tensor *x, int rank, const int64_t *sizes);
porta_tensor *scope_slice(aten_scope *s, const porta_tensor *x, int axis, int64_t start,
                          int64_t stop,
                          int64_t step);
porta_tensor *scope_flip(aten_scope *s, const porta_tensor *x, const int *axes, int axis_count);
porta_tensor *scope_pad(aten_scope *s, const porta_tensor *x, const int64_t *pads, double value);
porta_tensor *scope_matmul(aten_scope *s, const porta_tensor *a, const porta_tensor *b);
porta_tensor *scope_conv(aten_scope *s, const porta_tensor *x, const porta_tensor *w,
                         const porta_tensor *bias, const porta_conv_params *params);
porta_tensor *scope_conv_weight_grad(aten_scope *s, const porta_tensor *x, const porta_tensor *gy,
                                     const porta_conv_params *params, const int64_t *kernel);
porta_tensor *scope_conv_input_grad(aten_scope *s, const porta_tensor *gy, const porta_tensor *w,
                                    const porta_conv_params *params, const int64_t *input_sizes);
porta_tensor *scope_gather(aten_scope *s, const porta_tensor *x, int axis,
                           const porta_tensor *index);
porta_tensor *scope_max_pool_indices(aten_scope *s, const porta_tensor *x, const int64_t *kernel,
                                     const int64_t *stride, const int64_t *padding,
                                     const int64_t *dilation, porta_pool_rounding rounding);
porta_tensor *scope_index_select(aten_scope *s, const porta_tensor *x, int axis,
                                 const porta_tensor *index);
porta_tensor *scope_scatter(aten_scope *s, const porta_tensor *x, int axis,
                            const porta_tensor *index,
                            const porta_tensor *src, porta_scatter_reduce reduce);
/* A view of x's buffer with another layout (offset relative to x's). */
porta_tensor *scope_restride(aten_scope *s, const porta_tensor *x, int rank, const int64_t *sizes,
                             const int64_t *strides);
/* int64 0, 1, ..., n - 1. */
porta_tensor *scope_arange(aten_scope *s, porta_device *device, int64_t n);
/* A float64 tensor holding host values, row-major. */
porta_tensor *scope_from_host(aten_scope *s, porta_device *device, int rank, const int64_t *sizes,
                              const double *values);
/* A contiguous copy. */
porta_tensor *scope_contiguous(aten_scope *s, const porta_tensor *x);
/* Writes src into dst (broadcast, cast). */
void scope_copy(aten_scope *s, const porta_tensor *src, porta_tensor *dst);
/* A composition of one result, built in `s` from an op's arguments. */
typedef porta_tensor *(*aten_composition)(aten_scope *s, const porta_value *args);
/* The kernel body of such an op: runs `of` in a new scope and pushes its
 * result, or with `into` (an in-place variant's self) writes it there and
 * pushes `into`. */
porta_status *scope_run(aten_composition of, const porta_value *args, porta_tensor *into,
                        aten_results *results);
/* The first result of the registered op `name` run on args (aten_call_op:
 * the composition reuses that op's checks and lowering). */
porta_tensor *scope_call(aten_scope *s, const char *name, const porta_value *args,
                         int arg_count);


#endif
