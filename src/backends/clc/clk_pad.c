/* PRIM_PAD in OpenCL C: one item per output element. Out coordinate o on dim
 * d reads x coordinate o - before[d] when that lies inside x, else takes
 * the pad value; negative pads crop. Elements move as unsigned integers of
 * the dtype's width, and the value arrives as its bit pattern in out's
 * dtype, so one kernel per width serves every dtype. */
#include <stdio.h>
#include <string.h>

#include "backends/clc/clk_kernels.h"
#include "backends/clc/clk_source.h"
#include "core/dtype.h"
#include "core/status.h"

/* Layout: rank, then per dim its size, out's stride, x's stride, the pad
 * before and x's size. */
#define PAD_KERNEL(W, T)                                                                     \
    CLK_SOURCE(__kernel void pad_##W(__global T *out, long out_off, __global const T *x,     \
                                     long x_off, __global const long *L, ulong value,        \
                                     long count) {                                           \
        long i = get_global_id(0);                                                           \
        if (i >= count) return;                                                              \
        int inside = 1;                                                                      \
        for (int d = (int)L[0] - 1; d >= 0; d--) {                                           \
            __global const long *dim = L + 1 + 5 * d;                                        \
            long at = i % dim[0];                                                            \
            i /= dim[0];                                                                     \
            long from = at - dim[3];                                                         \
            inside = inside && from >= 0 && from < dim[4];                                   \
            out_off += at * dim[1];                                                          \
            x_off += from * dim[2];                                                          \
        }                                                                                    \
        out[out_off] = inside ? x[x_off] : (T)value;                                         \
    })

static const char pad_source[] = CLK_COMMON_SOURCE PAD_KERNEL(1, uchar) PAD_KERNEL(2, ushort)
    PAD_KERNEL(4, uint) PAD_KERNEL(8, ulong);

void clk_pad_programs(clk_program_visit visit, void *ctx) { visit(ctx, "pad", pad_source, true); }

porta_status *clk_exec_pad(const clk_launcher *launcher, porta_device *device,
                           const ir_prim *prim, const porta_tensor *const *inputs,
                           int input_count, porta_tensor *out) {
    if (input_count != 1)
        return porta_error(PORTA_ERR_INTERNAL, "pad kernel: expected 1 input, got %d",
                           input_count);
    const porta_tensor *x = inputs[0];
    if (x->dtype != out->dtype || x->rank != out->rank)
        return porta_error(PORTA_ERR_INTERNAL,
                           "pad kernel: x (%s, rank %d) and out (%s, rank %d) differ",
                           porta_dtype_name(x->dtype), x->rank, porta_dtype_name(out->dtype),
                           out->rank);
    PORTA_TRY(clk_check_dtype(device, "pad", out->dtype));
    int64_t count = porta_tensor_numel(out);
    if (count == 0) return NULL;
    clk_layout layout = {.count = 0};
    clk_push(&layout, out->rank);
    for (int d = 0; d < out->rank; d++) {
        clk_push(&layout, out->sizes[d]);
        clk_push(&layout, out->strides[d]);
        clk_push(&layout, x->strides[d]);
        clk_push(&layout, prim->pads[2 * d]);
        clk_push(&layout, x->sizes[d]);
    }
    unsigned char bytes[8] = {0};
    core_store_from_double(out->dtype, bytes, prim->value);
    uint64_t value;
    memcpy(&value, bytes, sizeof value); /* little-endian host and device: the low bytes */
    clk_mem layout_buffer;
    PORTA_TRY(clk_layout_buffer(device, &layout, &layout_buffer));
    char name[16];
    snprintf(name, sizeof name, "pad_%zu", porta_dtype_size(out->dtype));
    clk_args args;
    porta_status *status = clk_begin(launcher, device, pad_source, name, &args);
    if (!status) {
        clk_arg_tensor(&args, out);
        clk_arg_tensor(&args, x);
        clk_arg_buffer(&args, layout_buffer);
        clk_arg_value(&args, sizeof value, &value);
        clk_arg_long(&args, count);
        status = clk_launch(&args, count);
    }
    clk_release(device, layout_buffer);
    return status;
}
