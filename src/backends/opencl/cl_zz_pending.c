/* Placeholders for the hand-written OpenCL kernels while they are being
 * written: weak, so each real cl_exec_* replaces its placeholder at link
 * time. This file goes once all of them exist. */
#include "backends/opencl/cl_runtime.h"
#include "core/status.h"
#define PENDING(name)                                                                          \
    __attribute__((weak)) porta_status *name(porta_device *device, const porta_prim *prim,     \
                                             const porta_tensor *const *inputs, int input_count, \
                                             porta_tensor *out) {                              \
        return porta_error(PORTA_ERR_UNSUPPORTED, "OpenCL: %s is not written yet", #name);    \
    }
PENDING(cl_exec_matmul)
PENDING(cl_exec_conv)
PENDING(cl_exec_index)
PENDING(cl_exec_pad)
PENDING(cl_exec_random)
PENDING(cl_exec_sort)
PENDING(cl_exec_special)
