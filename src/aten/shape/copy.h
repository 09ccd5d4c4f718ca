/* The layouts PyTorch gives new tensors made like another one (clone,
 * _to_copy, empty_like, full_like, the *_scatter ops), shared by the files
 * that make them. */
#ifndef PORTA_ATEN_SHAPE_COPY_H
#define PORTA_ATEN_SHAPE_COPY_H

#include "aten/aten.h"

/* c10's is_non_overlapping_and_dense: the elements fill a block of memory
 * exactly, in some order of the dims. */
bool aten_is_dense(int rank, const int64_t *sizes, const int64_t *strides);

/* at::infer_dense_strides: dense strides that order the dims as `strides`
 * does (stride-0 dims keep their place), so a copy keeps the input's
 * permutation. */
void aten_infer_dense_strides(int rank, const int64_t *sizes, const int64_t *strides,
                              int64_t *out);

/* The strides of a new tensor like x in `format` (an 'm' argument; NONE is
 * preserve): contiguous, channels_last (NHWC, rank 4), channels_last_3d
 * (NDHWC, rank 5), or preserve (x's own strides when dense, else
 * aten_infer_dense_strides). `op` names the op in errors. */
porta_status *aten_like_strides(const char *op, const porta_tensor *x, const porta_value *format,
                                int64_t *strides);

/* A new tensor of `sizes` with `strides` (non-negative) on a buffer just
 * large enough; contents uninitialized. */
porta_status *aten_empty_strided(porta_device *device, porta_dtype dtype, int rank,
                                 const int64_t *sizes, const int64_t *strides, porta_tensor **out);

/* empty_like(x, dtype, device, memory_format): contents uninitialized. */
porta_status *aten_empty_like(const char *op, const porta_tensor *x, porta_dtype dtype,
                              porta_device *device, const porta_value *format, porta_tensor **out);

/* PyTorch's clone_preserve_strides, the start of every *_scatter op: a copy
 * of x's whole buffer viewed with x's sizes, strides and offset, so that
 * views of the result address what the same views of x address. An x
 * whose elements overlap (a stride-0 dim) is cloned densely instead. */
porta_status *aten_clone_preserve_strides(const porta_tensor *x, porta_tensor **out);

#endif
