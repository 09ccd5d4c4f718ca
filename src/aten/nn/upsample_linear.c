/* 1-D and 3-D linear upsampling, separable as upsample_bilinear2d is (see
 * nn/upsample.c): each spatial axis is mixed by its interpolation matrix
 * A [out, in], so the op applies A along every axis in turn and its
 * gradient applies A^T. The depth axis of 3-D inputs is mixed with
 * height and width flattened behind it, one matmul for all three. */
#include "aten/nn/upsample_linear.h"
#include "aten/dispatch/op_reuse.h"
#include "aten/nn/memory_format.h"
#include "core/status.h"
#include "runtime/tensor.h"

porta_status *upsample_check_input(const char *op, const porta_tensor *x, int axes,
                                   const porta_value *output_size, const int64_t *in_sizes,
                                   bool float_only) {
    char b[CORE_SHAPE_STR_CAP];
    if (x->rank != axes + 2)
        return porta_error(PORTA_ERR_SHAPE, "%s: expected a %dD input, got %s", op, axes + 2,
                           core_format_shape(b, sizeof b, x->rank, x->sizes));
    if (float_only) PORTA_TRY(aten_check_float(op, x));
    if (output_size->ints.count != axes)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "%s: expected output_size of %d values, got %d", op, axes,
                           output_size->ints.count);
    for (int d = 0; d < axes; d++)
        if (in_sizes[d] < 1 || output_size->ints.items[d] < 1)
            return porta_error(PORTA_ERR_SHAPE,
                               "%s: Input and output sizes should be greater than 0, but got "
                               "input %s and output size %lld at spatial axis %d",
                               op, core_format_shape(b, sizeof b, axes, in_sizes),
                               (long long)output_size->ints.items[d], d);
    return NULL;
}

/* x [..., in] @ A^T or, with `transposed`, @ A (A [out, in]): the last
 * axis mixed. */
static porta_tensor *mix_last(aten_scope *s, const porta_tensor *x, const porta_tensor *a,
                              bool transposed) {
    int swap[2] = {1, 0};
    return scope_matmul(s, x, transposed ? a : scope_permute(s, a, swap));
}

/* A (or A^T) @ x [..., in, w]: the second to last axis mixed. */
static porta_tensor *mix_second_last(aten_scope *s, const porta_tensor *a, const porta_tensor *x,
                                     bool transposed) {
    int swap[2] = {1, 0};
    return scope_matmul(s, transposed ? scope_permute(s, a, swap) : a, x);
}

/* x [N, C, d, h, w] with the depth axis mixed by A (or A^T): h and w
 * flattened behind it. */
static porta_tensor *mix_depth(aten_scope *s, const porta_tensor *x, const porta_tensor *a,
                               bool transposed, int64_t depth_out) {
    if (!x) return NULL;
    int64_t flat[4] = {x->sizes[0], x->sizes[1], x->sizes[2], x->sizes[3] * x->sizes[4]};
    int64_t back[5] = {x->sizes[0], x->sizes[1], depth_out, x->sizes[3], x->sizes[4]};
    porta_tensor *rows = scope_reshape(s, scope_contiguous(s, x), 4, flat);
    return scope_reshape(s, mix_second_last(s, a, rows, transposed), 5, back);
}

/* The interpolation matrices of `axes` spatial axes, from `in` to `out`
 * sizes, with scales args[first_scale + d]. */
static void axis_weights(aten_scope *s, porta_device *device, porta_dtype dtype, int axes,
                         const int64_t *in, const int64_t *out, bool align,
                         const porta_value *scales, porta_tensor **weights) {
    for (int d = 0; d < axes; d++)
        weights[d] = bilinear_weights(s, device, dtype, in[d], out[d], align, &scales[d]);
}

/* upsample_linear1d(self, output_size, align_corners, scales?) and
 * upsample_trilinear3d(self, output_size, align_corners, scales_d?,
 * scales_h?, scales_w?): `axes` is 1 or 3. */
static porta_status *upsample_linear(const char *op, int axes, const porta_value *args,
                                     aten_results *results) {
    const porta_tensor *x = args[0].tensor;
    PORTA_TRY(upsample_check_input(op, x, axes, &args[1],
                                   x->rank == axes + 2 ? x->sizes + 2 : x->sizes, true));
    porta_memory_format format = aten_suggest_memory_format(args[0].tensor);
    int first = results->count;
    aten_scope s;
    scope_begin(&s);
    porta_dtype compute = aten_compute_dtype(x->dtype);
    porta_tensor *a[3];
    const int64_t *out = args[1].ints.items;
    axis_weights(&s, porta_tensor_device(x), compute, axes, x->sizes + 2, out, args[2].b, &args[3], a);
    porta_tensor *y = scope_cast(&s, x, compute);
    if (axes == 3) y = mix_second_last(&s, a[1], mix_depth(&s, y, a[0], false, out[0]), false);
    y = mix_last(&s, y, a[axes - 1], false);
    scope_push(&s, results, scope_cast(&s, y, x->dtype));
    return aten_results_in_format(scope_end(&s), results, first, format);
}

/* The backward ops (grad_output, output_size, input_size, align_corners,
 * scales...): the transposed matrices in the reverse order. */
static porta_status *upsample_linear_backward(const char *op, int axes, const porta_value *args,
                                              aten_results *results) {
    const porta_tensor *gy = args[0].tensor;
    const porta_value *in = &args[2];
    if (in->ints.count != axes + 2)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "%s: expected input_size of %d values, got %d",
                           op, axes + 2, in->ints.count);
    PORTA_TRY(upsample_check_input(op, gy, axes, &args[1], in->ints.items + 2, true));
    for (int d = 0; d < axes + 2; d++)
        if (gy->sizes[d] != (d < 2 ? in->ints.items[d] : args[1].ints.items[d - 2])) {
            char b[CORE_SHAPE_STR_CAP];
            return porta_error(PORTA_ERR_SHAPE,
                               "%s: grad_output %s does not match the output size at dim %d",
                               op, core_format_shape(b, sizeof b, gy->rank, gy->sizes), d);
        }
    porta_memory_format format = aten_suggest_memory_format(args[0].tensor);
    int first = results->count;
    aten_scope s;
    scope_begin(&s);
    porta_dtype compute = aten_compute_dtype(gy->dtype);
    porta_tensor *a[3];
    const int64_t *sizes = in->ints.items + 2;
    axis_weights(&s, porta_tensor_device(gy), compute, axes, sizes, args[1].ints.items, args[3].b,
                 &args[4], a);
    porta_tensor *gx = mix_last(&s, scope_cast(&s, gy, compute), a[axes - 1], true);
    if (axes == 3) gx = mix_depth(&s, mix_second_last(&s, a[1], gx, true), a[0], true, sizes[0]);
    scope_push(&s, results, scope_cast(&s, gx, gy->dtype));
    return aten_results_in_format(scope_end(&s), results, first, format);
}

static porta_status *upsample_linear1d(const porta_value *args, aten_results *results) {
    return upsample_linear("upsample_linear1d", 1, args, results);
}
static porta_status *upsample_trilinear3d(const porta_value *args, aten_results *results) {
    return upsample_linear("upsample_trilinear3d", 3, args, results);
}
static porta_status *upsample_linear1d_backward(const porta_value *args, aten_results *results) {
    return upsample_linear_backward("upsample_linear1d_backward", 1, args, results);
}
static porta_status *upsample_trilinear3d_backward(const porta_value *args, aten_results *results) {
    return upsample_linear_backward("upsample_trilinear3d_backward", 3, args, results);
}

/* The out= variants. */
ATEN_OUT_KERNEL(upsample_linear1d_out, upsample_linear1d, 4)
ATEN_OUT_KERNEL(upsample_trilinear3d_out, upsample_trilinear3d, 6)
ATEN_OUT_KERNEL(upsample_linear1d_backward_out, upsample_linear1d_backward, 5)
ATEN_OUT_KERNEL(upsample_trilinear3d_backward_out, upsample_trilinear3d_backward, 7)

const aten_op aten_nn_upsample_linear_ops[] = {
    {"upsample_linear1d", "TIbg", upsample_linear1d},
    {"upsample_linear1d.out", "TIbgT", upsample_linear1d_out},
    {"upsample_linear1d_backward", "TIIbg", upsample_linear1d_backward},
    {"upsample_linear1d_backward.grad_input", "TIIbgT", upsample_linear1d_backward_out},
    {"upsample_trilinear3d", "TIbggg", upsample_trilinear3d},
    {"upsample_trilinear3d.out", "TIbgggT", upsample_trilinear3d_out},
    {"upsample_trilinear3d_backward", "TIIbggg", upsample_trilinear3d_backward},
    {"upsample_trilinear3d_backward.grad_input", "TIIbgggT", upsample_trilinear3d_backward_out},
    {NULL, NULL, NULL},
};
