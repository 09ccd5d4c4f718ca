/* vmath for AVX-512: sixteen lanes. */
#include <immintrin.h>

#define VM_BYTES 64
#define VM_TABLE vmath_table_avx512
#define VM_FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define VM_FMA_D(a, b, c) _mm512_fmadd_pd(a, b, c)
#define VM_MIN(a, b) _mm512_min_ps(a, b)
#define VM_MAX(a, b) _mm512_max_ps(a, b)
/* a * 2^n for float n holding an integer, rounded once (denormals, inf) */
#define VM_SCALEF(a, n) _mm512_scalef_ps(a, n)
#include "backends/cpu/vmath_simd.h"
