/* Copies, casts and fills where a complex tensor takes part, as real
 * copies on its (real, imag) pair view; and the check that keeps complex
 * tensors from every other primitive, whose kernels would read the pairs
 * as something else. */
#ifndef PORTA_OPS_COMPLEX_COPY_H
#define PORTA_OPS_COMPLEX_COPY_H

#include "ops/run.h"

/* porta_copy (same device) with src or dst complex: complex to complex
 * casts the components, real to complex sets the imaginary part to 0,
 * complex to real keeps the real part. */
porta_status *ops_complex_copy(const porta_tensor *src, porta_tensor *dst);
/* porta_fill of a complex dst: value + 0i. */
porta_status *ops_complex_fill(porta_tensor *dst, double value);
/* porta_cast with x or dtype complex (the out convention of porta_cast). */
porta_status *ops_complex_cast(const porta_tensor *x, porta_dtype dtype, porta_tensor **out);
/* PORTA_ERR_DTYPE naming op when an input or out (either may be NULL) is
 * complex. */
porta_status *ops_check_not_complex(const char *op, const porta_tensor *const *inputs,
                                    int input_count, const porta_tensor *out);

#endif
