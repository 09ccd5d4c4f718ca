/* What torch.fft's compositions and derivative formulas need of complex
 * tensors beyond the transforms (registered for complex operands in
 * aten/complex/dispatch.c). */
#ifndef PORTA_ATEN_FFT_FFT_H
#define PORTA_ATEN_FFT_FFT_H

#include "aten/aten.h"

/* mul.Scalar and mul_.Scalar of a complex tensor by a real number: both
 * parts of each value scaled (irfft's and hfft's backward scale the
 * gradient's doubled frequencies). */
porta_status *aten_fft_complex_mul_scalar(const porta_value *args, aten_results *results);
porta_status *aten_fft_complex_mul_scalar_(const porta_value *args, aten_results *results);
/* constant_pad_nd of a complex tensor with 0 (torch.fft's n longer than the
 * input): the pairs padded along the same dims. */
porta_status *aten_fft_complex_constant_pad_nd(const porta_value *args, aten_results *results);

#endif
