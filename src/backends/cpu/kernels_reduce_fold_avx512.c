/* The reduction loops for AVX-512 (CMake adds F, BW, VL and DQ to *_avx512.c). */
#define REDUCE_FOLD_TABLE cpu_reduce_kernels_avx512
#include "backends/cpu/kernels_reduce_fold.h"
