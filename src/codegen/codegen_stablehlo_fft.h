/* The Fourier transform primitive as stablehlo.fft (codegen_stablehlo_fft.c),
 * for shlo_render_prim. */
#ifndef PORTA_CODEGEN_CODEGEN_STABLEHLO_FFT_H
#define PORTA_CODEGEN_CODEGEN_STABLEHLO_FFT_H

#include "codegen/codegen_stablehlo.h"
#include "codegen/codegen_stablehlo_internal.h"

/* stablehlo.fft transforms at most this many trailing axes at once. */
#define SHLO_FFT_MAX_AXES 3

/* The statement computing the primitive's result (operand 0 loaded as x),
 * of out's sizes in its compute element. */
int shlo_fft(shlo_render *r, const shlo_prim *p, int x);

#endif
