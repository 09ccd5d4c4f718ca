/* Helpers shared by the index aten ops (src/aten/index/): index checks and
 * wrapping with PyTorch's messages, nonzero, small tensors. */
#ifndef PORTA_ATEN_INDEX_COMMON_H
#define PORTA_ATEN_INDEX_COMMON_H

#include "aten/aten.h"
#include "aten/dispatch/scope.h"

/* The same message under another code: PyTorch raises RuntimeError for some
 * out-of-range indices (gather, scatter) and IndexError for others. Takes
 * the status; NULL stays NULL, other codes pass unchanged. */
porta_status *index_recode(porta_status *status, porta_code from, porta_code to);

/* A rank-0 tensor of `dtype` holding value, on device. */
porta_status *index_scalar(porta_device *device, porta_dtype dtype, double value,
                           porta_tensor **out);

/* An int64 copy of index with negative values wrapped (i + size), after
 * checking each lies in [-size, size): else IndexError "index 5 is out of
 * bounds for dimension <dim> with size 3", naming the first bad value in
 * row-major order. */
porta_status *index_wrap(const porta_tensor *index, int64_t size, int dim, porta_tensor **out);

/* torch.nonzero: [n, rank] int64 coordinates of x's non-zero elements in
 * row-major order. */
porta_status *index_nonzero(const porta_tensor *x, porta_tensor **out);

/* index (1-D, length n) laid along `axis` of a tensor shaped `sizes`
 * (sizes[axis] == n): a stride-0 view, the index a scatter along axis
 * takes to place whole slices. */
porta_status *index_along(const porta_tensor *index, int axis, int rank, const int64_t *sizes,
                          porta_tensor **out);

/* self and source shaped for a scatter of whole slices along dim (index_copy,
 * index_reduce): a 0-dim self is a one-element vector, and source has self's
 * sizes with `count` slices along dim. */
typedef struct {
    int rank;                              /* self's rank, 1 for a 0-dim self */
    int64_t size;                          /* self's size along dim */
    int64_t self_sizes[PORTA_MAX_RANK];
    int64_t source_sizes[PORTA_MAX_RANK];
} index_slices;

void index_slices_of(const porta_tensor *self, int dim, int64_t count, index_slices *out);

/* The smallest and largest value of a flat index, read to the host, for
 * the bounds checks whose messages name the first bad value's side. */
void index_bounds(aten_scope *s, const porta_tensor *flat, int64_t bounds[2]);

/* A contiguous copy of x. */
porta_status *index_clone(const porta_tensor *x, porta_tensor **out);

#endif
