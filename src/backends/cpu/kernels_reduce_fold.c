/* The reduction loops for baseline x86-64 (SSE2). */
#define REDUCE_FOLD_TABLE cpu_reduce_kernels_baseline
#include "backends/cpu/kernels_reduce_fold.h"
