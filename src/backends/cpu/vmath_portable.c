/* vmath for baseline x86-64: four lanes (SSE2), no fused multiply-add. */
#define VM_BYTES 16
#define VM_TABLE vmath_table_generic
#define VM_FMA(a, b, c) ((a) * (b) + (c))
#define VM_FMA_D(a, b, c) ((a) * (b) + (c))
#define VM_MIN(a, b) vm_select((a) < (b), a, b)
#define VM_MAX(a, b) vm_select((a) > (b), a, b)
#include "backends/cpu/vmath_simd.h"
