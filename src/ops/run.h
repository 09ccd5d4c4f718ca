/* Eager execution of one primitive on tensors: the path every public op,
 * and every node of a running graph, takes to a device. */
#ifndef PORTA_OPS_RUN_H
#define PORTA_OPS_RUN_H

#include "ir/infer.h"

/* Runs `prim` on `inputs` (all on one device). `out` follows the public
 * convention: *out NULL -> a new tensor; otherwise the result is written into
 * *out (shape must match; dtype cast where porta_dtype_can_cast allows).
 * Movement prims produce views and ignore a non-NULL *out's storage rule:
 * they require *out == NULL. */
porta_status *ops_prim_run(const ir_prim *prim, const porta_tensor *const *inputs,
                             int input_count, porta_tensor **out);

/* Per-family runners, dispatched by ops_prim_run (ops/run.c). Each one:
 * infers the output meta (ir_infer), converts inputs to the dtypes the
 * backend contract in ir/prim.h names, broadcasts elementwise inputs,
 * allocates or adopts the output, and calls ops_device_execute. */
porta_status *ops_run_elementwise(const ir_prim *prim,
                                    const porta_tensor *const *inputs, int input_count,
                                    porta_tensor **out);
porta_status *ops_run_reduce(const ir_prim *prim, const porta_tensor *const *inputs,
                               int input_count, porta_tensor **out);
porta_status *ops_run_movement(const ir_prim *prim, const porta_tensor *const *inputs,
                                 int input_count, porta_tensor **out);
porta_status *ops_run_index(const ir_prim *prim, const porta_tensor *const *inputs,
                              int input_count, porta_tensor **out);
porta_status *ops_run_linalg(const ir_prim *prim, const porta_tensor *const *inputs,
                               int input_count, porta_tensor **out);
porta_status *ops_run_random(const ir_prim *prim, const porta_tensor *const *inputs,
                               int input_count, porta_tensor **out);
/* Softmax rows (ops/softmax.c): contiguous float32 inputs. */
porta_status *ops_run_softmax(const ir_prim *prim, const porta_tensor *const *inputs,
                              int input_count, porta_tensor **out);
/* A primitive of one input whose result inference describes (sort's
 * permutation, max pooling's window argmax). */
porta_status *ops_run_one_input(const ir_prim *prim, const porta_tensor *const *inputs,
                                int input_count, porta_tensor **out);

/* Shared building blocks for the runners. */
/* Checks that every input is non-NULL and on the same device; returns it. */
porta_status *ops_common_device(const char *op, const porta_tensor *const *inputs,
                                  int input_count, porta_device **out);
/* A new contiguous tensor for `meta` on `device`. */
porta_status *ops_alloc_meta(porta_device *device, const ir_meta *meta,
                               porta_tensor **out);
/* x converted to dtype (a new reference to x itself when it already has it). */
/* porta_copy when src and dst live on different devices (ops/transfer.c). */
porta_status *ops_copy_between_devices(const porta_tensor *src, porta_tensor *dst);

porta_status *ops_to_dtype(const porta_tensor *x, porta_dtype dtype, porta_tensor **out);
/* A stride-0 view of x broadcast to (rank, sizes). */
porta_status *ops_broadcast_to(const porta_tensor *x, int rank, const int64_t *sizes,
                                 porta_tensor **out);
/* The strides of that view (0 on added or repeated axes), for callers that
 * build it without a new tensor handle. */
porta_status *ops_broadcast_strides(const porta_tensor *x, int rank, const int64_t *sizes,
                                      int64_t *strides);
/* Prepares the destination for a result of `meta`: a new tensor when *out is
 * NULL (written to *dst, *needs_copy false), *out itself when its dtype and
 * shape match (*needs_copy false), or a temporary when only the dtype differs
 * (*needs_copy true: call ops_finish_out after computing into *dst). */
porta_status *ops_prepare_out(const char *op, porta_device *device, const ir_meta *meta,
                                porta_tensor **out, porta_tensor **dst, bool *needs_copy);
/* Completes ops_prepare_out: casts the temporary into *out and releases it,
 * or hands a new tensor to the caller. Releases dst on error. */
porta_status *ops_finish_out(porta_tensor *dst, bool needs_copy, porta_tensor **out);
/* Calls the device's execute for prim, after checking `supports`. */
porta_status *ops_device_execute(const ir_prim *prim, const porta_tensor *const *inputs,
                                   int input_count, porta_tensor *out);
/* The last steps of a runner whose operands are ready: ops_prepare_out
 * for `meta`, ops_device_execute into it, ops_finish_out. On error *out
 * is left as it was (a new tensor is released). */
porta_status *ops_execute_out(const ir_prim *prim, porta_device *device,
                                const ir_meta *meta, const porta_tensor *const *operands,
                                int operand_count, porta_tensor **out);

#endif
