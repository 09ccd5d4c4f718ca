/* The pieces complex ops are composed of: a complex tensor's real and
 * imaginary components as real views, and a complex tensor made from two
 * real ones. Steps of an aten_scope: NULL after a failure. */
#ifndef PORTA_ATEN_COMPLEX_PARTS_H
#define PORTA_ATEN_COMPLEX_PARTS_H

#include "aten/dispatch/scope.h"

/* Component `part` (0 real, 1 imaginary) of complex x: a view of the
 * component dtype with x's sizes. */
porta_tensor *cx_part(aten_scope *s, const porta_tensor *x, int part);
/* The shape a and b broadcast to, or PyTorch's error. */
porta_status *cx_broadcast_shape(const porta_tensor *a, const porta_tensor *b, int *rank,
                                 int64_t *sizes);
/* A new complex tensor of `dtype` whose components are re and im (real
 * tensors, broadcast together). */
porta_tensor *cx_combine(aten_scope *s, const porta_tensor *re, const porta_tensor *im,
                         porta_dtype dtype);
/* The complex dtype a call's operands promote to (a real result type is
 * made complex of its precision). */
porta_dtype cx_result_type(const porta_value *const *operands, int count);
/* (a + bi)/(c + di) as a complex tensor of `dtype`, from real components,
 * by Smith's scaling: no square of a component, so no overflow for large
 * magnitudes. */
porta_tensor *cx_divide(aten_scope *s, porta_tensor *a, porta_tensor *b, porta_tensor *c,
                        porta_tensor *d, porta_dtype dtype);

#endif
