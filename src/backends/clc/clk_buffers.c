/* Layouts, small device buffers and reads of the kernel library, through
 * the device's own buffer operations. */
#include "backends/clc/clk_buffers.h"

#include "core/status.h"

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
