/* Kernel IR -> OpenCL C, for the OpenCL backend (and any device compiled
 * from OpenCL C). The source defines `__kernel void kir_main(...)`; its
 * arguments are listed in codegen_cl.c. It expects the backend's prelude
 * before it (backends/clc/clk_prelude.c): fixed-width integer names, the
 * libm names the C renderer's op spellings use, float16/bfloat16
 * conversions (kir_f16_to_f32, kir_f32_to_bf16, kir_round_f16, ...) and
 * scalar kir_exp, kir_log, kir_sigmoid, ... for the ops the CPU runs as
 * vector-math calls. */
#ifndef PORTA_CODEGEN_CODEGEN_CL_H
#define PORTA_CODEGEN_CODEGEN_CL_H

#include <stdbool.h>

#include "ir/kernel_ir.h"

/* The OpenCL C source of `kernel` (checked first with kir_check, which
 * also rejects ops kir_c_supports does not spell) in *source, malloc'd. */
porta_status *kir_render_cl(const kir_kernel *kernel, char **source);

/* The OpenCL C function computing special function `op` (a porta_unary_op
 * when `unary`, else a porta_binary_op) in double, NULL where it has none
 * (the op then runs on another device). */
const char *kir_cl_special_function(bool unary, int op);

/* The OpenCL C defining every kir_cl_special_function, which the renderer
 * puts before kernels that call them (codegen_cl_special.c). */
const char *kir_cl_special_source(void);

#endif
