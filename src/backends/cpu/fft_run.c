/* The transforms of fft_plan.h in float32 and in float64: one template
 * (fft_run_template.h), instantiated once per precision so each computes in
 * its own, as PyTorch's CPU FFT does. */
#include <string.h>

#include "backends/cpu/fft_plan.h"

#define REAL float
#define FN(name) name##_f32
#include "backends/cpu/fft_run_template.h"
#undef REAL
#undef FN

#define REAL double
#define FN(name) name##_f64
#include "backends/cpu/fft_run_template.h"
#undef REAL
#undef FN
