/* Shape and dtype inference for primitives: the one place that decides what
 * a primitive produces, used by the graph builder and by eager execution. */
#ifndef PORTA_IR_INFER_H
#define PORTA_IR_INFER_H

#include "ir/prim.h"

typedef struct ir_meta {
    porta_dtype dtype;
    int rank;
    int64_t sizes[PORTA_MAX_RANK];
} ir_meta;

/* Validates `prim` against its inputs and computes the output's meta.
 * Errors name the op and say what was expected and what was given. May
 * normalize fields of `prim` (negative axes, sorted axes, clamped slice
 * bounds), which is why it is not const: callers hash the prim afterwards. */
porta_status *ir_infer(ir_prim *prim, const ir_meta *inputs, int input_count,
                          ir_meta *out);

/* Per-family inference, dispatched by ir_infer (ir/infer.c). */
porta_status *ir_infer_elementwise(ir_prim *prim, const ir_meta *inputs,
                                      int input_count, ir_meta *out);
porta_status *ir_infer_reduce(ir_prim *prim, const ir_meta *inputs,
                                 int input_count, ir_meta *out);
porta_status *ir_infer_movement(ir_prim *prim, const ir_meta *inputs,
                                   int input_count, ir_meta *out);
porta_status *ir_infer_index(ir_prim *prim, const ir_meta *inputs,
                                int input_count, ir_meta *out);
porta_status *ir_infer_linalg(ir_prim *prim, const ir_meta *inputs,
                                 int input_count, ir_meta *out); /* matmul, conv */
porta_status *ir_infer_random(ir_prim *prim, const ir_meta *inputs,
                                 int input_count, ir_meta *out);
porta_status *ir_infer_sort(ir_prim *prim, const ir_meta *inputs, int input_count,
                               ir_meta *out);
porta_status *ir_infer_pool(ir_prim *prim, const ir_meta *inputs, int input_count,
                            ir_meta *out);
porta_status *ir_infer_softmax(ir_prim *prim, const ir_meta *inputs, int input_count,
                               ir_meta *out);
porta_status *ir_infer_factor(ir_prim *prim, const ir_meta *inputs, int input_count,
                              ir_meta *out);
porta_status *ir_infer_fft(ir_prim *prim, const ir_meta *inputs, int input_count, ir_meta *out);
/* The FFT primitive of porta_fft's parameters (the eager op's and the graph
 * builder's one spelling); inference checks what this does not. */
porta_status *ir_fft_prim(const porta_fft_params *params, ir_prim *prim);

/* Windows along one axis of `in` elements (PyTorch's pooling_output_shape):
 * windows of `kernel` taps `dilation` apart, `stride` apart, over the input
 * padded by `padding` on both sides; ceil_mode counts a last partial window
 * when it starts inside the input or its left padding. May be < 1. */
int64_t ir_pooled_size(int64_t in, int64_t kernel, int64_t padding, int64_t stride,
                       int64_t dilation, bool ceil_mode);

/* Broadcasts two shapes as NumPy/PyTorch do; error names the op. */
porta_status *ir_broadcast_shapes(const char *op, int rank_a, const int64_t *a,
                                     int rank_b, const int64_t *b, int *rank_out,
                                     int64_t *out);
void ir_meta_of(const porta_tensor *t, ir_meta *out);

#endif
