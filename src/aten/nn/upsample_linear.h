/* What the upsampling ops (nn/upsample.c, upsample_linear.c,
 * upsample_exact_cubic_aa.c) share: the linear interpolation matrix along
 * one axis, the input checks, index_select's gradient and PyTorch's
 * rounding of index arithmetic. */
#ifndef PORTA_ATEN_NN_UPSAMPLE_LINEAR_H
#define PORTA_ATEN_NN_UPSAMPLE_LINEAR_H

#include "aten/dispatch/scope.h"

/* The linear interpolation matrix [out, in] along one axis (two non-zero
 * weights a row), in `dtype`, with PyTorch's source positions: align_corners
 * maps the corner pixels onto each other, otherwise pixel centres are
 * scaled (by 1/scale when a scale is given) and clamped at 0. */
porta_tensor *bilinear_weights(aten_scope *s, porta_device *device, porta_dtype dtype, int64_t in,
                               int64_t out, bool align_corners, const porta_value *scale);

/* x rounded to float32 when PyTorch's kernel computes in float32 (its
 * index arithmetic is done in the op's math type): short, as the weight
 * formulas nest it deeply. */
static inline double in_math(double x, bool single) {
    return single ? (double)(float)x : x;
}

/* The input rank an op takes (batch, channels, then `axes` spatial axes),
 * with float_only a float dtype, and output and input sizes above 0. */
porta_status *upsample_check_input(const char *op, const porta_tensor *x, int axes,
                                   const porta_value *output_size, const int64_t *in_sizes,
                                   bool float_only);

/* The gradient of index_select(grad's input, axis, index) into `size`
 * there: grad scatter-added along axis into zeros. */
porta_tensor *upsample_select_back(aten_scope *s, const porta_tensor *grad, int axis,
                                   const porta_tensor *index, int64_t size);

#endif
