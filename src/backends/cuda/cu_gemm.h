/* The tensor-core GEMM of the CUDA device (cu_gemm.c): float16 and
 * bfloat16 matmuls on compute capability 8.0 and later. */
#ifndef PORTA_BACKENDS_CUDA_CU_GEMM_H
#define PORTA_BACKENDS_CUDA_CU_GEMM_H

#include <stdbool.h>

#include "runtime/tensor.h"
#include "porta.h"
#include "runtime/device.h"

/* Whether a matmul of these tensors runs on tensor cores on a device of
 * compute capability `major`.x: both inputs and the output float16, or all
 * bfloat16, and major >= 8 (mma.sync m16n8k16 needs sm_80). */
bool cu_gemm_applies(int major, const porta_tensor *const *inputs, int input_count,
                     const porta_tensor *out);

/* out = inputs[0] @ inputs[1] on tensor cores (cu_gemm_applies true), on
 * the device's stream: blocks of 128 threads, one per 64 x 64 output
 * block of each batch (grid: column blocks x batches * row blocks). */
porta_status *cu_gemm_run(porta_device *device, const porta_tensor *const *inputs,
                          porta_tensor *out);

/* The kernels' CUDA C (entries gemm_tc_f16 and gemm_tc_bf16), without the
 * prelude that cu_compile puts first; for the tests. */
const char *cu_gemm_source(void);

#endif
