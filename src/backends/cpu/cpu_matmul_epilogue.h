/* The CPU device's run_matmul_epilogue (runtime/device.h): a float32
 * matmul whose product goes through a compiled elementwise kernel block by
 * block, while each block is still in cache. */
#ifndef PORTA_CPU_MATMUL_EPILOGUE_H
#define PORTA_CPU_MATMUL_EPILOGUE_H

#include "ir/kernel_ir.h"
#include "ir/prim.h"
#include "runtime/tensor.h"

/* out [M, N] = a [M, K] @ b [K, N], as cpu_exec_matmul computes it, with
 * `program` (a cpu_program with a tile entry) run over each finished block
 * of out's [M, N] domain with `args`. PORTA_ERR_UNSUPPORTED, before
 * anything is computed, for what it does not fuse (batched, not float32,
 * no tile entry): the caller then runs the two unfused. */
porta_status *cpu_run_matmul_epilogue(porta_device *device, const ir_prim *prim,
                                      const porta_tensor *const *inputs, int input_count,
                                      porta_tensor *out, void *program, const kir_args *args);

#endif
