/* Primitives on a PJRT device: none yet. supports() refuses every one, so
 * placement (devices/placement.h) runs each on another device, copying
 * through the buffers' reads and writes. */
#include "backends/pjrt/pjrt_runtime.h"

bool pjrt_supports(porta_device *device, const ir_prim *prim, const porta_tensor *const *inputs,
                   int input_count) {
    return false;
}

porta_status *pjrt_execute(porta_device *device, const ir_prim *prim,
                           const porta_tensor *const *inputs, int input_count,
                           porta_tensor *out) {
    return porta_error(PORTA_ERR_UNSUPPORTED,
                       "PJRT: no primitive runs on %s yet; expected placement to run it on "
                       "another device",
                       device->info.name);
}

void pjrt_add_compiler_entries(rt_backend_ops *ops) {}
