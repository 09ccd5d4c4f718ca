/* Memory formats of the nn ops' results: PyTorch's CPU kernels give
 * channels_last (NHWC) or channels_last_3d (NDHWC) results for operands laid
 * out so, and code that checks is_contiguous(memory_format=...) relies on
 * it. */
#ifndef PORTA_ATEN_NN_MEMORY_FORMAT_H
#define PORTA_ATEN_NN_MEMORY_FORMAT_H

#include "aten/aten.h"

/* Tensor.suggest_memory_format(): channels_last when a rank-4 tensor's
 * strides order its dims as NHWC, channels_last_3d likewise for rank 5,
 * contiguous otherwise (ambiguous size-1 layouts included, as in c10). */
porta_memory_format aten_suggest_memory_format(const porta_tensor *t);

/* suggest_memory_format for the ops whose CPU kernels know channels_last
 * but not channels_last_3d (avg_pool3d and adaptive_avg_pool3d give
 * contiguous results). */
porta_memory_format aten_suggest_2d_memory_format(const porta_tensor *t);

/* The format of a convolution's results: channels-last when the input or
 * the weight suggests it, as PyTorch's mkldnn and slow 2-d kernels give;
 * for 3-d only where PyTorch's CPU picks mkldnn (float32 and not a small
 * single image), its slow 3-d kernels giving contiguous results. */
porta_memory_format aten_conv_memory_format(const porta_tensor *input, const porta_tensor *weight,
                                            int64_t groups);

/* Strides of `sizes` in `format` (contiguous or one of the channels-last
 * formats of the matching rank). */
void aten_format_strides(porta_memory_format format, int rank, const int64_t *sizes,
                         int64_t *strides);

/* Lays the tensor results from index `first` on of rank 4 (channels_last)
 * or 5 (channels_last_3d) out in `format`: those already laid out so stay,
 * the others are replaced by a copy. A contiguous format changes nothing.
 * Passes `status` (the op's own outcome) through. */
porta_status *aten_results_in_format(porta_status *status, aten_results *results, int first,
                                     porta_memory_format format);

#endif
