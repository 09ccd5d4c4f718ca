/* Shape and dtype inference for primitives: the one place that decides what
 * a primitive produces, used by the graph builder and by eager execution. */
#ifndef PORTA_IR_INFER_H
#define PORTA_IR_INFER_H

#include "ir/prim.h"

typedef struct porta_meta {
    porta_dtype dtype;
    int rank;
    int64_t sizes[PORTA_MAX_RANK];
} porta_meta;

/* Validates `prim` against its inputs and computes the output's meta.
 * Errors name the op and say what was expected and what was given. May
 * normalize fields of `prim` (negative axes, sorted axes, clamped slice
 * bounds), which is why it is not const: callers hash the prim afterwards. */
porta_status *porta_infer(porta_prim *prim, const porta_meta *inputs, int input_count,
                          porta_meta *out);

/* Per-family inference, dispatched by porta_infer (ir/infer.c). */
porta_status *porta_infer_elementwise(porta_prim *prim, const porta_meta *inputs,
                                      int input_count, porta_meta *out);
porta_status *porta_infer_reduce(porta_prim *prim, const porta_meta *inputs,
                                 int input_count, porta_meta *out);
porta_status *porta_infer_movement(porta_prim *prim, const porta_meta *inputs,
                                   int input_count, porta_meta *out);
porta_status *porta_infer_index(porta_prim *prim, const porta_meta *inputs,
                                int input_count, porta_meta *out);
porta_status *porta_infer_linalg(porta_prim *prim, const porta_meta *inputs,
                                 int input_count, porta_meta *out); /* matmul, conv */
porta_status *porta_infer_random(porta_prim *prim, const porta_meta *inputs,
                                 int input_count, porta_meta *out);
porta_status *porta_infer_sort(porta_prim *prim, const porta_meta *inputs, int input_count,
                               porta_meta *out);

/* Broadcasts two shapes as NumPy/PyTorch do; error names the op. */
porta_status *porta_broadcast_shapes(const char *op, int rank_a, const int64_t *a,
                                     int rank_b, const int64_t *b, int *rank_out,
                                     int64_t *out);
void porta_meta_of(const porta_tensor *t, porta_meta *out);

#endif
