/* The launch side of the kernel library: arguments collected on the host,
 * then handed to the backend's launcher in one call. */
#include "backends/clc/clk_launch.h"

#include <string.h>

#include "core/status.h"

porta_status *clk_begin(const clk_launcher *launcher, porta_device *device, const char *source,
                        const char *name, clk_args *args) {
    args->launcher = launcher;
    args->device = device;
    args->kernel = NULL;
    args->count = 0;
    return launcher->kernel_get(device, source, name, &args->kernel);
}

/* The next argument slot; past the last one, a count the launch reports. */
static clk_arg *next_arg(clk_args *args) {
    int index = args->count++;
    return index < CLK_MAX_ARGS ? &args->args[index] : NULL;
}

void clk_arg_value(clk_args *args, size_t size, const void *value) {
    clk_arg *arg = next_arg(args);
    if (!arg) return;
    arg->buffer = false;
    arg->handle = NULL;
    arg->size = size <= sizeof arg->value ? size : 0; /* 0: refused by the launch */
    if (arg->size) memcpy(arg->value, value, size);
}

void clk_arg_long(clk_args *args, int64_t value) { clk_arg_value(args, sizeof value, &value); }

void clk_arg_buffer(clk_args *args, clk_mem buffer) {
    clk_arg *arg = next_arg(args);
    if (!arg) return;
    arg->buffer = true;
    arg->handle = buffer;
    arg->size = 0;
}

void clk_arg_tensor(clk_args *args, const porta_tensor *tensor) {
    clk_arg_buffer(args, tensor->buffer->handle);
    clk_arg_long(args, tensor->offset);
}

static porta_status *check_args(const clk_args *args) {
    if (args->count > CLK_MAX_ARGS)
        return porta_error(PORTA_ERR_INTERNAL, "a kernel launch with %d arguments (at most %d)",
                           args->count, CLK_MAX_ARGS);
    for (int i = 0; i < args->count; i++)
        if (!args->args[i].buffer && !args->args[i].size)
            return porta_error(PORTA_ERR_INTERNAL,
                               "kernel argument %d: a value of more than 8 bytes", i);
    return NULL;
}

porta_status *clk_launch(clk_args *args, int64_t work) {
    PORTA_TRY(check_args(args));
    if (work <= 0) return NULL;
    size_t global[2] = {(size_t)work, 1};
    return args->launcher->launch(args->device, args->kernel, args->args, args->count, global,
                                  NULL);
}

porta_status *clk_launch_2d(clk_args *args, const size_t global[2], const size_t local[2]) {
    PORTA_TRY(check_args(args));
    if (!global[0] || !global[1]) return NULL;
    return args->launcher->launch(args->device, args->kernel, args->args, args->count, global,
                                  local);
}

porta_status *clk_check_dtype(porta_device *device, const char *op, porta_dtype dtype) {
    if (dtype == PORTA_F64 && !(device->info.capabilities & PORTA_CAP_F64))
        return porta_error(PORTA_ERR_DTYPE, "%s: the device %s has no float64 support", op,
                           device->info.name);
    return NULL;
}
