/* The kernel library's launcher on OpenCL (clk_launcher,
 * backends/clc/clk_launch.h): kernels from the device's program cache,
 * arguments set on the kernel object and the launch queued under the
 * device's lock; kernel-IR kernels with float64 values refused where the
 * device has no float64. */
#include "backends/opencl/cl_runtime.h"
#include "ir/kernel_ir.h"
#include "core/status.h"

static porta_status *cl_launcher_kernel(porta_device *device, const char *source,
                                        const char *name, void **kernel) {
    cl_kernel built;
    PORTA_TRY(cl_kernel_get(device, source, name, &built));
    *kernel = built;
    return NULL;
}

/* Call with the device's lock held. */
static porta_status *launch_locked(cl_state *s, cl_kernel kernel, const clk_arg *args,
                                   int count, const size_t global[2], const size_t local[2]) {
    cl_args a = {s, kernel, 0, CL_SUCCESS};
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

static porta_status *cl_launcher_launch(porta_device *device, void *kernel, const clk_arg *args,
                                        int count, const size_t global[2],
                                        const size_t local[2]) {
    cl_state *s = cl_of(device);
    pthread_mutex_lock(&s->lock);
    porta_status *status = launch_locked(s, kernel, args, count, global, local);
    pthread_mutex_unlock(&s->lock);
    return status;
}

static size_t cl_launcher_max_group(porta_device *device) {
    return cl_of(device)->max_work_group;
}

static porta_status *cl_launcher_kir_check(porta_device *device, const kir_kernel *kernel) {
    for (int i = 0; i < kernel->value_count; i++)
        PORTA_TRY(cl_check_dtype(device, kernel->values[i].dtype));
    return NULL;
}

const clk_launcher cl_launcher = {
    .kernel_get = cl_launcher_kernel,
    .launch = cl_launcher_launch,
    .max_group = cl_launcher_max_group,
    .kir_check = cl_launcher_kir_check,
};
