/* The host side the convolution programs share (see clk_conv_layout.h). */
#include "backends/clc/clk_conv_layout.h"

#include <stdio.h>

#include "backends/clc/clk_source.h"
#include "core/status.h"

void clk_push_conv_axes(clk_layout *layout, const ir_prim *prim, int spatial,
                        const porta_tensor *a, const porta_tensor *b, const porta_tensor *c) {
    for (int s = 0; s < spatial; s++) {
        clk_push(layout, a->sizes[2 + s]);
        clk_push(layout, a->strides[2 + s]);
        clk_push(layout, b->sizes[2 + s]);
        clk_push(layout, b->strides[2 + s]);
        clk_push(layout, c->sizes[2 + s]);
        clk_push(layout, c->strides[2 + s]);
        clk_push(layout, prim->conv.stride[s]);
        clk_push(layout, prim->conv.padding[s]);
        clk_push(layout, prim->conv.dilation[s]);
    }
}

porta_status *clk_launch_conv_grad(const clk_launcher *launcher, porta_device *device,
                                   const char *source, const char *kernel, porta_tensor *out,
                                   const porta_tensor *a, const porta_tensor *b,
                                   const clk_layout *layout, int64_t count) {
    clk_mem layout_buffer;
    PORTA_TRY(clk_layout_buffer(device, layout, &layout_buffer));
    char name[48];
    snprintf(name, sizeof name, "%s_%s", kernel, clk_dtype_suffix(out->dtype));
    clk_args args;
    porta_status *status = clk_begin(launcher, device, source, name, &args);
    if (!status) {
        clk_arg_tensor(&args, out);
        clk_arg_tensor(&args, a);
        clk_arg_tensor(&args, b);
        clk_arg_buffer(&args, layout_buffer);
        clk_arg_long(&args, count);
        status = clk_launch(&args, count);
    }
    clk_release(device, layout_buffer);
    return status;
}
