/* The host side of the kernel library's small device buffers: layouts
 * (sizes, strides and parameters a kernel reads from a buffer rather than
 * from arguments, whose total size devices limit), error flags, scratch,
 * and blocking reads. Buffers go through the device's own
 * rt_backend_ops, so they are counted against the memory limit, on
 * whichever backend runs the kernels. */
#ifndef PORTA_BACKENDS_CLC_CLK_BUFFERS_H
#define PORTA_BACKENDS_CLC_CLK_BUFFERS_H

#include <stddef.h>
#include <stdint.h>

#include "porta.h"
#include "runtime/device.h"

/* A device buffer: the backend's handle, as in porta_buffer.handle. */
typedef void *clk_mem;

#define CLK_LAYOUT_MAX 1024
typedef struct clk_layout {
    int64_t values[CLK_LAYOUT_MAX];
    int count;
} clk_layout;

/* Appends one value (the layout's capacity suits every kernel here: a few
 * tensors of at most PORTA_MAX_RANK dims). */
void clk_push(clk_layout *layout, int64_t value);
/* Appends (sizes[d], strides[d]) for each of `rank` dims, as clk_offset
 * reads them. */
void clk_push_dims(clk_layout *layout, int rank, const int64_t *sizes, const int64_t *strides);

/* A device buffer of `bytes` (at least 1), filled from `init` when given. */
porta_status *clk_buffer(porta_device *device, size_t bytes, const void *init, clk_mem *out);
/* A buffer holding the layout's values. */
porta_status *clk_layout_buffer(porta_device *device, const clk_layout *layout, clk_mem *out);
/* Releases a buffer made by clk_buffer (NULL: nothing), once kernels
 * already launched on it have run. */
void clk_release(porta_device *device, clk_mem buffer);
/* Reads bytes [offset, offset + bytes) of a buffer once the kernels before
 * it have run. */
porta_status *clk_read(porta_device *device, clk_mem buffer, size_t offset, size_t bytes,
                       void *dst);

#endif
