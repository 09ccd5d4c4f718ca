/* The hand-written kernels' launch side on OpenCL (clk_backend,
 * cl_kernels_common.h): kernels from the device's program cache, arguments
 * set on the kernel object under the device's lock, queued launches. */
#include "backends/opencl/cl_kernels_common.h"
#include "backends/opencl/cl_runtime.h"
#include "core/status.h"

static void cl_hand_lock(porta_device *device) { pthread_mutex_lock(&cl_of(device)->lock); }

static void cl_hand_unlock(porta_device *device) { pthread_mutex_unlock(&cl_of(device)->lock); }

static porta_status *cl_hand_kernel(porta_device *device, const char *source, const char *name,
                                    void **kernel) {
    cl_kernel built;
    PORTA_TRY(cl_kernel_get(device, source, name, &built));
    *kernel = built;
    return NULL;
}

static porta_status *cl_hand_launch(porta_device *device, void *kernel, const clk_arg *args,
                                    int count, const size_t global[2], const size_t local[2]) {
    cl_args a = {cl_of(device), kernel, 0, CL_SUCCESS};
    for (int i = 0; i < count; i++) {
        if (args[i].buffer) {
            cl_mem mem = args[i].handle;
            cl_arg(&a, sizeof mem, &mem);
        } else {
            cl_arg(&a, args[i].size, args[i].value);
        }
    }
    if (a.error != CL_SUCCESS) return cl_error(a.error, "clSetKernelArg");
    return local ? cl_launch_2d(&a, global, local) : cl_launch(&a, (int64_t)global[0]);
}

static bool cl_hand_fp64(porta_device *device) {
    return device->info.capabilities & PORTA_CAP_F64;
}

static size_t cl_hand_max_group(porta_device *device) { return cl_of(device)->max_work_group; }

static const char *cl_hand_name(porta_device *device) { return cl_of(device)->name; }

const clk_backend clk_opencl_backend = {
    .lock = cl_hand_lock,
    .unlock = cl_hand_unlock,
    .kernel_get = cl_hand_kernel,
    .launch = cl_hand_launch,
    .has_fp64 = cl_hand_fp64,
    .max_group = cl_hand_max_group,
    .device_name = cl_hand_name,
};
