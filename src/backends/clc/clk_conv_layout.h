/* The host side the convolution programs share (clk_conv.c and the two
 * gradients): their per-axis layout values and the gradients' launch. */
#ifndef PORTA_BACKENDS_CLC_CLK_CONV_LAYOUT_H
#define PORTA_BACKENDS_CLC_CLK_CONV_LAYOUT_H

#include "backends/clc/clk_buffers.h"
#include "backends/clc/clk_launch.h"
#include "ir/prim.h"

/* Pushes each spatial axis's 9 values: the size and stride of `a`, `b` and
 * `c` on that axis (in the order the program reads them), then the
 * convolution's stride, padding and dilation there. */
void clk_push_conv_axes(clk_layout *layout, const ir_prim *prim, int spatial,
                        const porta_tensor *a, const porta_tensor *b, const porta_tensor *c);

/* Runs `kernel`_<out's dtype> of `source`, one item per element of out
 * (`count`), with the arguments (out, a, b, layout, count); the layout is
 * uploaded for the launch and released after it. */
porta_status *clk_launch_conv_grad(const clk_launcher *launcher, porta_device *device,
                                   const char *source, const char *kernel, porta_tensor *out,
                                   const porta_tensor *a, const porta_tensor *b,
                                   const clk_layout *layout, int64_t count);

#endif
