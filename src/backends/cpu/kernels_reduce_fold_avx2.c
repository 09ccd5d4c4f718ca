/* The reduction loops for AVX2 (CMake adds -mavx2 -mfma -mf16c to *_avx2.c). */
#define REDUCE_FOLD_TABLE cpu_reduce_kernels_avx2
#define RUN_LANE_BYTES 64 /* measured: more lanes vectorize worse here */
#include "backends/cpu/kernels_reduce_fold.h"
