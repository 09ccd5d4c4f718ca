/* What torch.fft's compositions need of complex tensors beyond the
 * transforms and the complex arithmetic (registered for complex operands
 * in aten/complex/dispatch.c). */
#ifndef PORTA_ATEN_FFT_FFT_H
#define PORTA_ATEN_FFT_FFT_H

#include "aten/aten.h"

/* constant_pad_nd of a complex tensor with 0 (torch.fft's n longer than the
 * input): the pairs padded along the same dims. */
porta_status *aten_fft_complex_constant_pad_nd(const porta_value *args, aten_results *results);

#endif
