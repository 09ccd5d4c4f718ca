/* Facts about the elementwise primitives that inference, the eager runner and
 * backends must agree on. */
#ifndef PORTA_IR_INFER_ELEMENTWISE_H
#define PORTA_IR_INFER_ELEMENTWISE_H

#include "ir/infer.h"

/* Ops whose result is bool whatever their inputs' dtype. */
bool ir_unary_gives_bool(porta_unary_op op);
bool ir_binary_gives_bool(porta_binary_op op);

/* The dtype input `index` must have when the primitive executes (the
 * contract in ir/prim.h), given the inputs and the inferred `out`. */
porta_dtype ir_elementwise_input_dtype(const ir_prim *prim, const ir_meta *inputs,
                                          int index, const ir_meta *out);

#endif
