/* vmath for AVX-512: sixteen lanes. */
#include <immintrin.h>

#define VM_BYTES 64
#define VM_TABLE vmath_table_avx512
#define VM_FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define VM_FMA_D(a, b, c) _mm512_fmadd_pd(a, b, c)
#include "backends/cpu/vmath_simd.h"
