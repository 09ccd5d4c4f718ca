/* The kernel library's primitives, run on whichever backend passes its
 * launcher (clk_launch.h): GEMM, convolution and its two gradients, the
 * factorisations (PRIM_FACTOR), Fourier transforms (PRIM_FFT), indexing, padding, max pooling, random
 * numbers, sort, and the elementwise ops and
 * reductions the kernel IR leaves out (integer division, remainder and power with their errors,
 * erfinv, argmax/argmin: "special"). Each has the contract of
 * rt_backend_ops.execute. */
#ifndef PORTA_BACKENDS_CLC_CLK_KERNELS_H
#define PORTA_BACKENDS_CLC_CLK_KERNELS_H

#include <stdbool.h>

#include "backends/clc/clk_buffers.h"
#include "backends/clc/clk_launch.h"
#include "ir/prim.h"

typedef porta_status *clk_exec(const clk_launcher *launcher, porta_device *device,
                               const ir_prim *prim, const porta_tensor *const *inputs,
                               int input_count, porta_tensor *out);
clk_exec clk_exec_matmul;
clk_exec clk_exec_conv;
clk_exec clk_exec_conv_weight_grad;
clk_exec clk_exec_conv_input_grad;
clk_exec clk_exec_factor;
clk_exec clk_exec_fft;
clk_exec clk_exec_index;
clk_exec clk_exec_pad;
clk_exec clk_exec_pool;
clk_exec clk_exec_random;
clk_exec clk_exec_sort;
clk_exec clk_exec_special;
/* A primitive of any kind the backends execute: elementwise ops, casts,
 * fills and reductions as one-op kernel-IR kernels (clk_kir.h) or, where
 * the kernel IR cannot express them, special; the other kinds by the
 * kernels above. */
clk_exec clk_execute;
/* Whether clk_execute has a kernel for the primitive's op: every one but
 * the special functions the OpenCL renderer has no OpenCL C for (Bessel
 * J0, J1, Y0, Y1: kir_cl_special_function), which the backends refuse so
 * that placement runs them on another device. */
bool clk_has_kernel(const ir_prim *prim);

/* The layout buffer of a batched matmul out = a @ b, read by the tiled
 * kernels here and CUDA's tensor-core kernel: m, n, k, the batch rank, the
 * number of row blocks, each operand's matrix strides, then per batch dim
 * its size and the operands' strides. */
porta_status *clk_matmul_layout(porta_device *device, const porta_tensor *a,
                                const porta_tensor *b, const porta_tensor *out, int64_t m_blocks,
                                clk_mem *buffer);

/* Every program of these kernels, for the tests that build them all
 * (tests/test_cuda_compile.c): visit(ctx, what, source, cuda), where
 * `cuda` says whether the program compiles as CUDA (all but sort's). Each
 * kernel file lists its own; clk_each_program visits them all. */
typedef void (*clk_program_visit)(void *ctx, const char *what, const char *source, bool cuda);
void clk_each_program(clk_program_visit visit, void *ctx);
void clk_conv_programs(clk_program_visit visit, void *ctx);
void clk_conv_weight_grad_programs(clk_program_visit visit, void *ctx);
void clk_conv_input_grad_programs(clk_program_visit visit, void *ctx);
void clk_factor_programs(clk_program_visit visit, void *ctx);
void clk_fft_programs(clk_program_visit visit, void *ctx);
void clk_index_programs(clk_program_visit visit, void *ctx);
void clk_matmul_programs(clk_program_visit visit, void *ctx);
void clk_pad_programs(clk_program_visit visit, void *ctx);
void clk_pool_programs(clk_program_visit visit, void *ctx);
void clk_random_programs(clk_program_visit visit, void *ctx);
void clk_sort_programs(clk_program_visit visit, void *ctx);
void clk_special_programs(clk_program_visit visit, void *ctx);

#endif
