/* vmath for AVX2 with FMA: eight lanes. */
#include <immintrin.h>

#define VM_BYTES 32
#define VM_TABLE vmath_table_avx2
#define VM_FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define VM_FMA_D(a, b, c) _mm256_fmadd_pd(a, b, c)
#define VM_MIN(a, b) _mm256_min_ps(a, b)
#define VM_MAX(a, b) _mm256_max_ps(a, b)
#include "backends/cpu/vmath_simd.h"
