/* Vectorized float32 math over arrays: exp, expm1, log, log1p, tanh, sigmoid
 * and erf, within a few ULP of the correctly rounded result over the whole
 * range, with libm's results for NaN, infinities, signed zeros and
 * denormals. One implementation (vmath_simd.h) is compiled for AVX-512,
 * AVX2 and the x86-64 baseline; the best the CPU runs is chosen once. */
#ifndef PORTA_CPU_VMATH_H
#define PORTA_CPU_VMATH_H

#include <stdint.h>

#include "backends/cpu/cpu_isa.h"

/* y[i] = f(x[i]) for i in [0, n); y may be x (in place), not a partial
 * overlap. */
typedef void (*vmath_fn)(const float *x, float *y, int64_t n);

#define VMATH_OPS(X) X(exp) X(expm1) X(log) X(log1p) X(tanh) X(sigmoid) X(erf)

typedef struct vmath_table {
#define VMATH_FIELD(op) vmath_fn op;
    VMATH_OPS(VMATH_FIELD)
#undef VMATH_FIELD
} vmath_table;

extern const vmath_table vmath_table_generic, vmath_table_avx2, vmath_table_avx512;

/* The table for the chosen ISA (PORTA_VMATH_ISA may lower it). */
const vmath_table *vmath_f32(void);
/* For tests and benchmarks: false (and no change) when the CPU lacks it. */
bool vmath_isa_force(cpu_isa isa);
void vmath_isa_reset(void);

#endif
