/* What the linear upsampling ops share with bilinear upsampling
 * (nn/upsample.c): the interpolation matrix along one axis. */
#ifndef PORTA_ATEN_NN_UPSAMPLE_LINEAR_H
#define PORTA_ATEN_NN_UPSAMPLE_LINEAR_H

#include "aten/dispatch/scope.h"

/* The linear interpolation matrix [out, in] along one axis (two non-zero
 * weights a row), in `dtype`, with PyTorch's source positions: align_corners
 * maps the corner pixels onto each other, otherwise pixel centres are
 * scaled (by 1/scale when a scale is given) and clamped at 0. */
porta_tensor *bilinear_weights(aten_scope *s, porta_device *device, porta_dtype dtype, int64_t in,
                               int64_t out, bool align_corners, const porta_value *scale);

#endif
