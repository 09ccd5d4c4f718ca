/* Kernel-IR kernels on the backends of the kernel library: rendered once
 * as OpenCL C (codegen/codegen_cl.h), their program got through the
 * backend's launcher, and found again by their structure (kir_built)
 * without rendering them again. The backends run them with their own
 * argument passing (rt_backend_ops.run_kernel). */
#ifndef PORTA_BACKENDS_CLC_CLK_KIR_H
#define PORTA_BACKENDS_CLC_CLK_KIR_H

#include <stdbool.h>

#include "backends/clc/clk_launch.h"
#include "codegen/kir_built.h"
#include "ir/prim.h"

/* The built kernel of `kernel` on `device`: found again (a memory hit,
 * counted when count_hit: the compiler's lookups, not eager ops), else
 * checked by the launcher, rendered and built. */
porta_status *clk_kir_prepare(const clk_launcher *launcher, porta_device *device,
                              const kir_kernel *kernel, bool count_hit, kir_built **out);

/* An elementwise op, cast, fill or reduction as a one-op kernel, run with
 * the device's run_kernel; *done false when the kernel IR cannot express
 * it (nothing is run then). */
porta_status *clk_kir_single(const clk_launcher *launcher, porta_device *device,
                             const ir_prim *prim, const porta_tensor *const *inputs,
                             int input_count, porta_tensor *out, bool *done);

#endif
