/* A scope for composing many primitives in one aten op (nn ops use it
 * directly, the elementwise formulas through ew_scope): each step returns a
 * tensor the scope holds (released at the end), or NULL after the first
 * failure, whose status the scope keeps. Later steps given NULL do nothing,
 * so a composition reads as straight-line math with one error check at the
 * end. */
#ifndef PORTA_ATEN_NN_SCOPE_H
#define PORTA_ATEN_NN_SCOPE_H

#include "aten/aten.h"

#define NN_SCOPE_CAP 128

typedef struct nn_scope {
    porta_status *status; /* the first failure, or NULL */
    porta_tensor *held[NN_SCOPE_CAP];
    int count;
} nn_scope;

/* Starts an empty scope. Only the fields read before they are written are
 * set: zeroing all of held[] (1 KiB) would cost more than a small op. */
static inline void nn_begin(nn_scope *s) {
    s->status = NULL;
    s->count = 0;
}

/* Takes the outcome of one primitive call: holds `t` on success, records
 * the status on failure. Returns t or NULL. */
porta_tensor *nn_hold(nn_scope *s, porta_status *status, porta_tensor *t);
/* Records a failure (if none yet) and returns NULL. */
porta_tensor *nn_fail(nn_scope *s, porta_status *status);
/* Releases every held tensor; returns the first failure, if any. */
porta_status *nn_end(nn_scope *s);
/* Pushes t (a new reference) onto results; does nothing after a failure. */
void nn_push(nn_scope *s, aten_results *results, porta_tensor *t);
/* Pushes a None result (an output the caller's mask did not ask for). */
void nn_push_none(nn_scope *s, aten_results *results);

porta_tensor *nn_unary(nn_scope *s, porta_unary_op op, const porta_tensor *x);
porta_tensor *nn_binary(nn_scope *s, porta_binary_op op, const porta_tensor *a,
                        const porta_tensor *b);
porta_tensor *nn_ternary(nn_scope *s, porta_ternary_op op, const porta_tensor *a,
                         const porta_tensor *b, const porta_tensor *c);
/* op(x, value) with value a rank-0 tensor of x's dtype. */
porta_tensor *nn_binary_num(nn_scope *s, porta_binary_op op, const porta_tensor *x, double value);
porta_tensor *nn_cast(nn_scope *s, const porta_tensor *x, porta_dtype dtype);
porta_tensor *nn_full(nn_scope *s, porta_device *device, porta_dtype dtype, int rank,
                      const int64_t *sizes, double value);
porta_tensor *nn_reduce(nn_scope *s, porta_reduce_op op, const porta_tensor *x, const int *axes,
                        int axis_count, bool keepdim);
/* Mean over axes (keepdim): sum / count. */
porta_tensor *nn_mean(nn_scope *s, const porta_tensor *x, const int *axes, int axis_count);
porta_tensor *nn_reshape(nn_scope *s, const porta_tensor *x, int rank, const int64_t *sizes);
porta_tensor *nn_permute(nn_scope *s, const porta_tensor *x, const int *dims);
porta_tensor *nn_expand(nn_scope *s, const porta_tensor *x, int rank, const int64_t *sizes);
porta_tensor *nn_slice(nn_scope *s, const porta_tensor *x, int axis, int64_t start, int64_t stop,
                       int64_t step);
porta_tensor *nn_flip(nn_scope *s, const porta_tensor *x, const int *axes, int axis_count);
porta_tensor *nn_pad(nn_scope *s, const porta_tensor *x, const int64_t *pads, double value);
porta_tensor *nn_matmul(nn_scope *s, const porta_tensor *a, const porta_tensor *b);
porta_tensor *nn_conv(nn_scope *s, const porta_tensor *x, const porta_tensor *w,
                      const porta_tensor *bias, const porta_conv_params *params);
porta_tensor *nn_gather(nn_scope *s, const porta_tensor *x, int axis, const porta_tensor *index);
porta_tensor *nn_index_select(nn_scope *s, const porta_tensor *x, int axis,
                              const porta_tensor *index);
porta_tensor *nn_scatter(nn_scope *s, const porta_tensor *x, int axis, const porta_tensor *index,
                         const porta_tensor *src, porta_scatter_reduce reduce);
/* A view of x's buffer with another layout (offset relative to x's). */
porta_tensor *nn_restride(nn_scope *s, const porta_tensor *x, int rank, const int64_t *sizes,
                          const int64_t *strides);
/* int64 0, 1, ..., n - 1. */
porta_tensor *nn_arange(nn_scope *s, porta_device *device, int64_t n);
/* A float64 tensor holding host values, row-major. */
porta_tensor *nn_from_host(nn_scope *s, porta_device *device, int rank, const int64_t *sizes,
                           const double *values);
/* A contiguous copy. */
porta_tensor *nn_contiguous(nn_scope *s, const porta_tensor *x);
/* Writes src into dst (broadcast, cast). */
void nn_copy(nn_scope *s, const porta_tensor *src, porta_tensor *dst);

/* The dtype the op computes in: float32 for float16/bfloat16 (PyTorch's
 * "opmath" accumulation), the dtype itself otherwise. */
porta_dtype nn_compute_dtype(porta_dtype dtype);

#endif
