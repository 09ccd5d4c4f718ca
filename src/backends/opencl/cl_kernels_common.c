/* Host-side helpers of the hand-written OpenCL kernels. */
#include "backends/opencl/cl_kernels_common.h"


#include "core/status.h"

/* From the OpenCL 1.2 specification (cl_api.h declares only what the
 * device file uses). */
#define CLK_MEM_READ_WRITE (1 << 0)
#define CLK_MEM_COPY_HOST_PTR (1 << 5)

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

porta_status *clk_buffer(porta_device *device, size_t bytes, const void *init, cl_mem *out) {
    cl_state *state = cl_of(device);
    cl_int error = CL_SUCCESS;
    cl_mem_flags flags = CLK_MEM_READ_WRITE | (init ? CLK_MEM_COPY_HOST_PTR : 0);
    *out = state->cl->clCreateBuffer(state->context, flags, bytes ? bytes : 1, (void *)init,
                                     &error);
    if (error != CL_SUCCESS || !*out) {
        *out = NULL;
        return cl_error(error, "clCreateBuffer");
    }
    return NULL;
}

porta_status *clk_layout_buffer(porta_device *device, const clk_layout *layout, cl_mem *out) {
    *out = NULL;
    if (layout->count > CLK_LAYOUT_MAX)
        return porta_error(PORTA_ERR_INTERNAL, "opencl: a kernel layout of %d values (at most %d)",
                           layout->count, CLK_LAYOUT_MAX);
    int64_t none = 0;
    const void *values = layout->count ? (const void *)layout->values : (const void *)&none;
    size_t bytes = (size_t)(layout->count ? layout->count : 1) * sizeof(int64_t);
    return clk_buffer(device, bytes, values, out);
}

void clk_release(porta_device *device, cl_mem buffer) {
    if (buffer) cl_of(device)->cl->clReleaseMemObject(buffer);
}

porta_status *clk_read(porta_device *device, cl_mem buffer, size_t offset, size_t bytes,
                       void *dst) {
    cl_state *state = cl_of(device);
    cl_int error = state->cl->clEnqueueReadBuffer(state->queue, buffer, CL_TRUE, offset, bytes,
                                                  dst, 0, NULL, NULL);
    return error == CL_SUCCESS ? NULL : cl_error(error, "clEnqueueReadBuffer");
}

porta_status *clk_check_dtype(porta_device *device, const char *op, porta_dtype dtype) {
    if (dtype == PORTA_F64 && !cl_of(device)->fp64)
        return porta_error(PORTA_ERR_DTYPE,
                           "%s: the OpenCL device %s has no float64 support (cl_khr_fp64)", op,
                           cl_of(device)->name);
    return NULL;
}

porta_status *clk_launch(cl_args *args, int64_t work) {
    if (args->error != CL_SUCCESS) return cl_error(args->error, "clSetKernelArg");
    if (work <= 0) return NULL;
    return cl_launch(args, work);
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
