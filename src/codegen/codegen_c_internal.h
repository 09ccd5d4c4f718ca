/* Shared by the C renderer's files: the C spelling of each dtype and op,
 * appended to a core_text (core/text.h). */
#ifndef PORTA_CODEGEN_CODEGEN_C_INTERNAL_H
#define PORTA_CODEGEN_CODEGEN_C_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "codegen/codegen_c.h"
#include "core/text.h"

/* C type an element is stored as, and the type values compute in
 * (float16/bfloat16 compute in float; bool is 0/1 in uint8_t). */
const char *kir_c_storage_type(porta_dtype dtype);
const char *kir_c_compute_type(porta_dtype dtype);

/* vmath's function for this value ("exp", ...) when it runs as an array
 * call through the runtime; NULL otherwise. */
const char *kir_c_array_function(const kir_value *value);
/* Whether the value's spelling calls the runtime's special functions
 * (rt->unary_special, rt->binary_special): host code only; the OpenCL/CUDA
 * renderer spells these functions itself (codegen_cl_special.c). */
bool kir_c_calls_runtime(const kir_value *value);

/* Appends the C expression of `value` applied to the operand expressions
 * x[0..2] (arg_dtype: the dtype of args[0], args[1] for a WHERE), before
 * any float16/bfloat16 rounding. Returns false, appending nothing useful,
 * when the op or dtype is not supported. Loads, reductions and
 * array-function values are spelled elsewhere. */
bool kir_c_expression(core_text *text, const kir_value *value, porta_dtype arg_dtype,
                      const char *const x[3]);

/* The constant of a KIR_CONST value as a C literal of its compute type,
 * converted as an eager fill converts it. */
void kir_c_constant(core_text *text, const kir_value *value);

/* A KIR_PARAM value: args->params[param] converted to its compute type as
 * an eager fill converts (float16/bfloat16 are rounded after). */
void kir_c_param(core_text *text, const kir_value *value);

/* The helpers the expressions call (kir_max_f, kir_floor_divide_f, ...). */
extern const char kir_c_helpers[];

#endif
