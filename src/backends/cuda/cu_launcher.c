/* The kernel library (backends/clc: GEMM, convolution, indexing, padding,
 * random numbers, integer division and power, erfinv, argmax/argmin) on
 * CUDA: its OpenCL C compiles as CUDA behind the prelude (cu_prelude.c),
 * and this is its launcher (clk_launcher): functions from the device's
 * module cache, arguments as cuLaunchKernel's parameter array (a buffer is
 * its device address; they live in the launch's own arrays, so nothing
 * needs a lock), 1-D launches in blocks of up to 256 threads, 2-D launches
 * in the kernel's own work-group shape. Launches go to the device's stream
 * in order. */
#include "backends/cuda/cu_runtime.h"
#include "core/status.h"

static porta_status *current(cu_state *s) {
    CUresult r = s->cu->cuCtxSetCurrent(s->context);
    return r ? cu_error(s, r, "cuCtxSetCurrent") : NULL;
}

static porta_status *cu_launcher_kernel(porta_device *device, const char *source,
                                        const char *name, void **kernel) {
    CUfunction function;
    PORTA_TRY(cu_function_get(device, source, name, &function));
    *kernel = function;
    return NULL;
}

static porta_status *cu_launcher_launch(porta_device *device, void *kernel,
                                        const clk_arg *args, int count, const size_t global[2],
                                        const size_t local[2]) {
    cu_state *s = cu_of(device);
    if (count > CLK_MAX_ARGS)
        return porta_error(PORTA_ERR_INTERNAL, "CUDA: %d kernel arguments (at most %d)", count,
                           CLK_MAX_ARGS);
    CUdeviceptr addresses[CLK_MAX_ARGS];
    void *params[CLK_MAX_ARGS];
    for (int i = 0; i < count; i++) {
        if (args[i].buffer) {
            addresses[i] = ((const cu_buffer *)args[i].handle)->pointer;
            params[i] = &addresses[i];
        } else {
            params[i] = (void *)args[i].value;
        }
    }
    PORTA_TRY(current(s));
    if (!local) return cu_launch(s, kernel, params, (int64_t)global[0]);
    size_t blocks_x = global[0] / local[0], blocks_y = global[1] / local[1];
    if (local[0] * local[1] > (size_t)s->max_threads || blocks_x > 0x7fffffff ||
        blocks_y > 0xffff)
        return porta_error(PORTA_ERR_UNSUPPORTED,
                           "CUDA: a launch of %zu x %zu blocks of %zu x %zu threads does not fit "
                           "%s (at most %d threads per block, 65535 blocks in y)",
                           blocks_x, blocks_y, local[0], local[1], s->name, s->max_threads);
    CUresult r = s->cu->cuLaunchKernel(kernel, (unsigned)blocks_x, (unsigned)blocks_y, 1,
                                       (unsigned)local[0], (unsigned)local[1], 1, 0, s->stream,
                                       params, NULL);
    return r ? cu_error(s, r, "cuLaunchKernel") : NULL;
}

static size_t cu_launcher_max_group(porta_device *device) {
    return (size_t)cu_of(device)->max_threads;
}

const clk_launcher cu_launcher = {
    .kernel_get = cu_launcher_kernel,
    .launch = cu_launcher_launch,
    .max_group = cu_launcher_max_group,
};
