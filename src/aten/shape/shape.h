/* Helpers shared by the shape family's files (src/aten/shape/). */
#ifndef PORTA_ATEN_SHAPE_SHAPE_H
#define PORTA_ATEN_SHAPE_SHAPE_H

#include "aten/aten.h"

/* PyTorch's maybe_wrap_dim: a negative dim counts from the end; a rank-0
 * tensor accepts dims of a rank-1 one. Out of range is an IndexError. */
porta_status *aten_wrap_dim(int64_t dim, int rank, int *out);

/* A view of x (same buffer) with the given layout, pushed as the result. */
porta_status *aten_push_view(const porta_tensor *x, int rank, const int64_t *sizes,
                             const int64_t *strides, int64_t offset, aten_results *results);

#endif
