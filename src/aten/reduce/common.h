/* What the reduction, normalization and linear-algebra ops share: the dims
 * an aten op reduces over, dtype casts, and arithmetic with a constant. */
#ifndef PORTA_ATEN_REDUCE_COMMON_H
#define PORTA_ATEN_REDUCE_COMMON_H

#include "aten/aten.h"

/* The axes one reduction covers, normalized and checked as PyTorch does. */
typedef struct reduce_dims {
    int axes[PORTA_MAX_RANK]; /* sorted */
    int count;                /* 0: no axis (a rank-0 input, or an empty dims list) */
    int64_t numel;            /* elements folded into each result */
} reduce_dims;

/* The dims named by `dim` (an int, a list of ints, or NONE: every axis).
 * An empty list means every axis when `empty_is_all`, else none. Errors:
 * out of range (IndexError), a dim listed twice. */
porta_status *reduce_dims_of(const char *op, const porta_tensor *x, const porta_value *dim,
                             bool empty_is_all, reduce_dims *out);
/* PyTorch's IndexError for max/min-like reductions over an empty axis. */
porta_status *reduce_dims_need_elements(const char *op, const porta_tensor *x,
                                        const reduce_dims *dims);
/* porta_reduce over the dims. Callers handle an empty dims list on a
 * tensor with axes themselves: porta_reduce reads it as every axis. */
porta_status *reduce_over(porta_reduce_op op, const porta_tensor *x, const reduce_dims *dims,
                          bool keepdim, porta_tensor **out);

/* PyTorch's name of a dtype in messages ("Long", "Float"). */
const char *aten_dtype_label(porta_dtype dtype);
/* A new reference to x in `dtype` (x itself when it already is). */
porta_status *aten_cast(const porta_tensor *x, porta_dtype dtype, porta_tensor **out);
/* op(x, value) with the constant in x's dtype; `out` as in porta_binary. */
porta_status *aten_binary_constant(porta_binary_op op, const porta_tensor *x, double value,
                                   porta_tensor **out);


#endif
