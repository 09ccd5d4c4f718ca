/* Placement: running a primitive on another device when its own cannot
 * (porta_place.h says which device and why). Eager execution
 * (ops/run.c) and the compiler's executor (compiler/execute.c) both come
 * here; the scheduler asks dev_runs so it never fuses such a
 * primitive into the device's kernels. */
#ifndef PORTA_DEVICES_PLACEMENT_H
#define PORTA_DEVICES_PLACEMENT_H

#include "runtime/device.h"

/* Whether `device` itself runs prim with these inputs (its supports()). */
bool dev_runs(porta_device *device, const ir_prim *prim,
                       const porta_tensor *const *inputs, int input_count);

/* The device that runs prim in place of `device`: the first visible
 * host-memory (CPU) device that supports prim, else the first other visible
 * device that does, in porta:N order, else the same among the devices
 * PORTA_VISIBLE_DEVICES hides (so PORTA_VISIBLE_DEVICES=pjrt still has the
 * host CPU for what a PJRT plugin cannot run); NULL when none does. */
porta_device *dev_placement_find(porta_device *device, const ir_prim *prim,
                                   const porta_tensor *const *inputs, int input_count);

/* The n-th device found but hidden by PORTA_VISIBLE_DEVICES, in probe
 * order (its info.index is -1), or NULL past the last (registry.c). */
porta_device *dev_hidden_device(int n);

/* Runs prim on the fallback device: each input's elements (the span of its
 * buffer its view covers, so broadcast and strided views stay as cheap as
 * they are) are copied there, prim runs, and the result is copied back into
 * `out`, whose layout is kept (an output with gaps between its elements has
 * them copied there first, so they come back unchanged). Buffers must have
 * memory. Copies use the backends' buffer reads and writes directly, never
 * a kernel of the device that could not run prim. PORTA_ERR_UNSUPPORTED,
 * naming the primitive and device, when no device runs it. */
porta_status *dev_placement_run(const ir_prim *prim, const porta_tensor *const *inputs,
                                  int input_count, porta_tensor *out);

#endif
