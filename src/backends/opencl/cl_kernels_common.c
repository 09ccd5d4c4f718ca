/* Host-side helpers of the hand-written kernels, the same on every backend
 * that runs them: arguments, launches, small buffers, reads. */
#include "backends/opencl/cl_kernels_common.h"

#include <string.h>

#include "core/status.h"

const clk_backend *clk_backend_of(porta_device *device) {
    return strcmp(device->info.backend, "cuda") == 0 ? &clk_cuda_backend : &clk_opencl_backend;
}

void clk_each_program(clk_program_visit visit, void *ctx) {
    clk_conv_programs(visit, ctx);
    clk_index_programs(visit, ctx);
    clk_matmul_programs(visit, ctx);
    clk_pad_programs(visit, ctx);
    clk_random_programs(visit, ctx);
    clk_sort_programs(visit, ctx);
    clk_special_programs(visit, ctx);
}

void clk_push(clk_layout *layout, int64_t value) {
    if (layout->count < CLK_LAYOUT_MAX) layout->values[layout->count] = value;
    layout->count++; /* an overflow is reported by clk_layout_buffer */
}

void clk_push_dims(clk_layout *layout, int rank, const int64_t *sizes, const int64_t *strides) {
    for (int d = 0; d < rank; d++) {
        clk_push(layout, sizes[d]);
        clk_push(layout, strides[d]);
    }
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
    return clk_backend_of(args->device)
        ->launch(args->device, args->kernel, args->args, args->count, global, NULL);
}

porta_status *clk_launch_2d(clk_args *args, const size_t global[2], const size_t local[2]) {
    PORTA_TRY(check_args(args));
    if (!global[0] || !global[1]) return NULL;
    return clk_backend_of(args->device)
        ->launch(args->device, args->kernel, args->args, args->count, global, local);
}

porta_status *clk_buffer(porta_device *device, size_t bytes, const void *init, clk_mem *out) {
    *out = NULL;
    size_t size = bytes ? bytes : 1;
    void *handle;
    PORTA_TRY(device->ops->buffer_alloc(device, size, &handle));
    porta_status *status = init ? device->ops->buffer_write(device, handle, 0, init, bytes) : NULL;
    if (status) {
        device->ops->buffer_free(device, handle);
        return status;
    }
    *out = handle;
    return NULL;
}

porta_status *clk_layout_buffer(porta_device *device, const clk_layout *layout, clk_mem *out) {
    *out = NULL;
    if (layout->count > CLK_LAYOUT_MAX)
        return porta_error(PORTA_ERR_INTERNAL, "a kernel layout of %d values (at most %d)",
                           layout->count, CLK_LAYOUT_MAX);
    int64_t none = 0;
    const void *values = layout->count ? (const void *)layout->values : (const void *)&none;
    size_t bytes = (size_t)(layout->count ? layout->count : 1) * sizeof(int64_t);
    return clk_buffer(device, bytes, values, out);
}

void clk_release(porta_device *device, clk_mem buffer) {
    if (buffer) device->ops->buffer_free(device, buffer);
}

porta_status *clk_read(porta_device *device, clk_mem buffer, size_t offset, size_t bytes,
                       void *dst) {
    return device->ops->buffer_read(device, buffer, offset, dst, bytes);
}

porta_status *clk_check_dtype(porta_device *device, const char *op, porta_dtype dtype) {
    const clk_backend *backend = clk_backend_of(device);
    if (dtype == PORTA_F64 && !backend->has_fp64(device))
        return porta_error(PORTA_ERR_DTYPE, "%s: the device %s has no float64 support", op,
                           backend->device_name(device));
    return NULL;
}

const char *clk_dtype_suffix(porta_dtype dtype) {
    static const char *const names[PORTA_DTYPE_COUNT] = {
        [PORTA_BOOL] = "b8", [PORTA_U8] = "u8",     [PORTA_I8] = "i8",
        [PORTA_I16] = "i16", [PORTA_I32] = "i32",   [PORTA_I64] = "i64",
        [PORTA_F16] = "f16", [PORTA_BF16] = "bf16", [PORTA_F32] = "f32",
        [PORTA_F64] = "f64",
    };
    return (unsigned)dtype < PORTA_DTYPE_COUNT && names[dtype] ? names[dtype] : "unknown";
}
