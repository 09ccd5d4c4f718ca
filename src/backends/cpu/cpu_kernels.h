/* CPU kernels, one function per primitive family, called by the CPU
 * backend's execute (cpu_device.c) once the op layer has validated the call
 * (see the dtype contract in ir/prim.h). Each must handle any strides on
 * inputs and out (zero and negative included), every dtype the contract
 * admits, and zero-size tensors; they parallelize over the thread pool. */
#ifndef PORTA_CPU_KERNELS_H
#define PORTA_CPU_KERNELS_H

#include "ir/prim.h"
#include "runtime/tensor.h"

porta_status *cpu_exec_elementwise(const ir_prim *prim, const porta_tensor *const *inputs,
                                   int input_count, porta_tensor *out); /* UNARY..FILL */
porta_status *cpu_exec_reduce(const ir_prim *prim, const porta_tensor *const *inputs,
                              int input_count, porta_tensor *out);
porta_status *cpu_exec_pad(const ir_prim *prim, const porta_tensor *const *inputs,
                           int input_count, porta_tensor *out);
porta_status *cpu_exec_index(const ir_prim *prim, const porta_tensor *const *inputs,
                             int input_count, porta_tensor *out); /* GATHER, SCATTER, INDEX_SELECT */
porta_status *cpu_exec_matmul(const ir_prim *prim, const porta_tensor *const *inputs,
                              int input_count, porta_tensor *out);
porta_status *cpu_exec_conv(const ir_prim *prim, const porta_tensor *const *inputs,
                            int input_count, porta_tensor *out);
porta_status *cpu_exec_conv_weight_grad(const ir_prim *prim, const porta_tensor *const *inputs,
                                        int input_count, porta_tensor *out);
porta_status *cpu_exec_conv_input_grad(const ir_prim *prim, const porta_tensor *const *inputs,
                                       int input_count, porta_tensor *out);
porta_status *cpu_exec_random(const ir_prim *prim, const porta_tensor *const *inputs,
                              int input_count, porta_tensor *out);
porta_status *cpu_exec_sort(const ir_prim *prim, const porta_tensor *const *inputs,
                            int input_count, porta_tensor *out);
porta_status *cpu_exec_pool(const ir_prim *prim, const porta_tensor *const *inputs,
                            int input_count, porta_tensor *out);
porta_status *cpu_exec_softmax(const ir_prim *prim, const porta_tensor *const *inputs,
                               int input_count, porta_tensor *out);
porta_status *cpu_exec_factor(const ir_prim *prim, const porta_tensor *const *inputs,
                              int input_count, porta_tensor *out);
porta_status *cpu_exec_fft(const ir_prim *prim, const porta_tensor *const *inputs,
                           int input_count, porta_tensor *out);

#endif
