/* Shared by the StableHLO renderer's files: the emitter of SSA statements
 * in MLIR's generic op form (codegen_stablehlo_emit.c) and the spelling of
 * each op (codegen_stablehlo_ops.c). Every statement defines %N, N from 1
 * up; an id of 0 means "none". */
#ifndef PORTA_CODEGEN_CODEGEN_STABLEHLO_INTERNAL_H
#define PORTA_CODEGEN_CODEGEN_STABLEHLO_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "codegen/codegen_stablehlo.h"
#include "core/text.h"

/* A tensor type as text: tensor<4x5xf32>. */
typedef struct shlo_type {
    char s[160];
} shlo_type;

typedef struct shlo_emit {
    core_text *t;
    int next; /* the next statement's id */
} shlo_emit;

/* tensor<dims elt>; dims is "" (a scalar) or "4x5x" (each size and an x). */
shlo_type shlo_tensor(const char *dims, const char *elt);
/* "4x5x" from sizes[0..rank). */
void shlo_dims(char *out, size_t cap, const int64_t *sizes, int rank);
/* `name = array<i64: v0, v1, ...>` from values[0..n); the length written. */
int shlo_attr_i64s(char *out, size_t cap, const char *name, const int64_t *values, int n);

/* %N = "op"(args...) attrs : (types...) -> out. attrs may be "" or
 * " {...}"; types[i] is args[i]'s type. */
int shlo_op(shlo_emit *e, const char *op, int n, const int *args, const shlo_type *types,
            const char *attrs, shlo_type out);
/* Ops whose operands share one type. */
int shlo_op1(shlo_emit *e, const char *op, int a, shlo_type in, shlo_type out);
int shlo_op2(shlo_emit *e, const char *op, int a, int b, shlo_type in, shlo_type out);
/* A splat constant of type `type`; literal as MLIR spells the element
 * (42, true, 0x7FC00000). */
int shlo_constant(shlo_emit *e, shlo_type type, const char *literal);
/* compare(a, b, direction) of operands of type `in` -> i1 of `dims`. */
int shlo_compare(shlo_emit *e, const char *direction, int a, int b, shlo_type in,
                 const char *dims);
int shlo_select(shlo_emit *e, int pred, int a, int b, const char *dims, shlo_type type);

/* Element types: what a dtype computes in (bool i1, halves f32) and is
 * stored as. */
const char *shlo_compute_elt(porta_dtype dtype);
const char *shlo_storage_elt(porta_dtype dtype);
/* A constant of dtype's compute element with value v, converted as an
 * eager fill converts (halves rounded to their dtype). */
void shlo_literal(char *out, size_t cap, porta_dtype dtype, double v);
/* The all-zero literal of a compute element. */
const char *shlo_zero(porta_dtype dtype);

/* The statement computing `value` over `dims` from operands x[] (already
 * over dims, in their values' compute elements): ops, casts (not loads,
 * constants, parameters, reductions), before float16/bfloat16 rounding.
 * 0 when the op is not spelled (e NULL-text: a support test). */
int shlo_value_op(shlo_emit *e, const kir_value *value, porta_dtype arg_dtype,
                  const char *dims, const int x[3]);
/* Converts x (of float64, over dims) to `dtype` as kir_c_param does. */
int shlo_from_double(shlo_emit *e, int x, porta_dtype dtype, const char *dims);

/* A module around whole primitives (codegen_stablehlo_prim.c): begin over
 * a layout whose accesses are the operands (their strides and buffers; the
 * domain unused), load and store operands as tensors of the given sizes,
 * end to wrap the statements into @main (frees r and body). */
typedef struct render shlo_render;
shlo_render *shlo_render_begin(const shlo_layout *layout, core_text *body);
shlo_emit *shlo_render_emitter(shlo_render *r);
int shlo_render_load(shlo_render *r, int a, porta_dtype dtype, const int64_t *sizes, int rank);
void shlo_render_store(shlo_render *r, int a, porta_dtype dtype, int value, const int64_t *sizes,
                       int rank);
porta_status *shlo_render_end(shlo_render *r, core_text *body, char **text, bool *takes_scalars);

#endif
