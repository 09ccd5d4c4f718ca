/* The binary elementwise loops for AVX-512 (CMake adds F, BW, VL and DQ to *_avx512.c). */
#define EW_BINARY_TABLE ew_binary_loops_avx512
#include "backends/cpu/kernels_elementwise_binary_loops.h"
