/* The convolution primitives' statement (codegen_stablehlo_conv.c), for
 * shlo_render_prim: operands already loaded in their compute element. */
#ifndef PORTA_CODEGEN_CODEGEN_STABLEHLO_CONV_H
#define PORTA_CODEGEN_CODEGEN_STABLEHLO_CONV_H

#include "codegen/codegen_stablehlo_internal.h"
#include "ir/prim.h"

typedef struct shlo_conv_operands {
    const ir_prim *prim; /* CONV, CONV_INPUT_GRAD or CONV_WEIGHT_GRAD */
    int x[2];            /* the two tensor operands' statements (ir/prim.h order) */
    int rank[2];
    const int64_t *sizes[2];
    const int64_t *out_sizes; /* of rank rank[0] */
    const char *elt;          /* the compute element */
} shlo_conv_operands;

/* The statement computing the primitive's result (without CONV's bias). */
int shlo_conv(shlo_emit *e, const shlo_conv_operands *operands);

#endif
