/* The binary elementwise loops for AVX2 (CMake adds -mavx2 -mfma -mf16c to *_avx2.c). */
#define EW_BINARY_TABLE ew_binary_loops_avx2
#include "backends/cpu/kernels_elementwise_binary_loops.h"
