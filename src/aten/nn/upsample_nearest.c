/* Nearest upsampling over 1 and 3 spatial axes through the registered
 * upsample_nearest2d and its gradient (nn/upsample.c): a 1-D signal is a
 * plane of height 1, and a volume is upsampled over (H, W) with the depth
 * folded into the channels, then over D with (H, W) flattened into a row
 * whose size does not change (nearest at scale 1 is the identity). */
#include "aten/dispatch/scope.h"
#include "aten/dispatch/op_reuse.h"
#include "aten/nn/memory_format.h"
#include "core/status.h"
#include "runtime/tensor.h"

static const porta_value no_scale = {.kind = PORTA_VALUE_NONE};

static porta_value ints_value(const int64_t *items, int count) {
    return (porta_value){.kind = PORTA_VALUE_INTS, .ints = {items, count}};
}

/* upsample_nearest2d(x, [out_h, out_w], scale_h, scale_w) on x viewed as
 * `planes` (4 sizes), the result viewed as `rank, sizes`. */
static porta_tensor *nearest2d(aten_scope *s, const porta_tensor *x, const int64_t *planes,
                               const int64_t *out, const porta_value *scale_h,
                               const porta_value *scale_w, int rank, const int64_t *sizes) {
    porta_tensor *view = scope_reshape(s, x, 4, planes);
    if (!view) return NULL;
    porta_value args[4] = {{.kind = PORTA_VALUE_TENSOR, .tensor = view}, ints_value(out, 2),
                           *scale_h, *scale_w};
    return scope_reshape(s, scope_call(s, "upsample_nearest2d", args, 4), rank, sizes);
}

/* upsample_nearest2d_backward(g, [out_h, out_w], in_planes, scale_h,
 * scale_w) on g viewed as out_planes, the result viewed as `rank, sizes`. */
static porta_tensor *nearest2d_back(aten_scope *s, const porta_tensor *g, const int64_t *out_planes,
                                    const int64_t *in_planes, const porta_value *scale_h,
                                    const porta_value *scale_w, int rank, const int64_t *sizes) {
    porta_tensor *view = scope_reshape(s, g, 4, out_planes);
    if (!view) return NULL;
    porta_value args[5] = {{.kind = PORTA_VALUE_TENSOR, .tensor = view},
                           ints_value(out_planes + 2, 2), ints_value(in_planes, 4), *scale_h,
                           *scale_w};
    return scope_reshape(s, scope_call(s, "upsample_nearest2d_backward", args, 5), rank, sizes);
}

static porta_status *check_ranks(const char *op, int dims, const porta_tensor *x,
                                 const porta_value *output_size, const porta_value *input_size) {
    char b[CORE_SHAPE_STR_CAP];
    if (x->rank != dims + 2)
        return porta_error(PORTA_ERR_SHAPE, "%s: expected a %dD input, got %s", op, dims + 2,
                           core_format_shape(b, sizeof b, x->rank, x->sizes));
    if (output_size->ints.count != dims)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "%s: expected output_size of %d values, got %d", op, dims,
                           output_size->ints.count);
    if (input_size && input_size->ints.count != dims + 2)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "%s: expected input_size of %d values, got %d", op, dims + 2,
                           input_size->ints.count);
    return NULL;
}

/* upsample_nearest1d(self, output_size, scales?) */
static porta_status *upsample_nearest1d(const porta_value *a, aten_results *results) {
    const porta_tensor *x = a[0].tensor;
    PORTA_TRY(check_ranks("upsample_nearest1d", 1, x, &a[1], NULL));
    int64_t n = x->sizes[0], c = x->sizes[1], length = a[1].ints.items[0];
    int64_t planes[4] = {n, c, 1, x->sizes[2]}, out[2] = {1, length}, sizes[3] = {n, c, length};
    aten_scope s;
    scope_begin(&s);
    scope_push(&s, results, nearest2d(&s, x, planes, out, &no_scale, &a[2], 3, sizes));
    return scope_end(&s);
}

/* upsample_nearest1d_backward(grad_output, output_size, input_size, scales?) */
static porta_status *upsample_nearest1d_backward(const porta_value *a, aten_results *results) {
    const porta_tensor *g = a[0].tensor;
    PORTA_TRY(check_ranks("upsample_nearest1d_backward", 1, g, &a[1], &a[2]));
    const int64_t *in = a[2].ints.items;
    int64_t out_planes[4] = {g->sizes[0], g->sizes[1], 1, a[1].ints.items[0]};
    int64_t in_planes[4] = {in[0], in[1], 1, in[2]};
    aten_scope s;
    scope_begin(&s);
    scope_push(&s, results, nearest2d_back(&s, g, out_planes, in_planes, &no_scale, &a[3], 3, in));
    return scope_end(&s);
}

/* upsample_nearest3d(self, output_size, scales_d?, scales_h?, scales_w?) */
static porta_status *upsample_nearest3d(const porta_value *a, aten_results *results) {
    const porta_tensor *x = a[0].tensor;
    PORTA_TRY(check_ranks("upsample_nearest3d", 3, x, &a[1], NULL));
    const int64_t *out = a[1].ints.items, *in = x->sizes;
    int64_t n = in[0], c = in[1];
    int64_t folded[4] = {n, c * in[2], in[3], in[4]};
    int64_t rows[4] = {n, c, in[2], out[1] * out[2]}, row_out[2] = {out[0], out[1] * out[2]};
    int64_t sizes[5] = {n, c, out[0], out[1], out[2]};
    porta_memory_format format = aten_suggest_memory_format(a[0].tensor);
    int first = results->count;
    aten_scope s;
    scope_begin(&s);
    porta_tensor *planes = nearest2d(&s, x, folded, out + 1, &a[3], &a[4], 4, rows);
    scope_push(&s, results, nearest2d(&s, planes, rows, row_out, &a[2], &no_scale, 5, sizes));
    return aten_results_in_format(scope_end(&s), results, first, format);
}

/* upsample_nearest3d_backward(grad_output, output_size, input_size,
 * scales_d?, scales_h?, scales_w?): the two steps of the forward undone in
 * reverse order. */
static porta_status *upsample_nearest3d_backward(const porta_value *a, aten_results *results) {
    const porta_tensor *g = a[0].tensor;
    PORTA_TRY(check_ranks("upsample_nearest3d_backward", 3, g, &a[1], &a[2]));
    const int64_t *out = a[1].ints.items, *in = a[2].ints.items;
    int64_t n = in[0], c = in[1], row = out[1] * out[2];
    int64_t out_rows[4] = {g->sizes[0], g->sizes[1], out[0], row}, in_rows[4] = {n, c, in[2], row};
    int64_t out_planes[4] = {n, c * in[2], out[1], out[2]};
    int64_t in_planes[4] = {n, c * in[2], in[3], in[4]};
    aten_scope s;
    scope_begin(&s);
    porta_tensor *rows = nearest2d_back(&s, g, out_rows, in_rows, &a[3], &no_scale, 4, in_rows);
    /* contiguous for a channels_last_3d gradient too, as on PyTorch's CPU */
    scope_push(&s, results, nearest2d_back(&s, rows, out_planes, in_planes, &a[4], &a[5], 5, in));
    return scope_end(&s);
}

ATEN_OUT_KERNEL(upsample_nearest1d_out, upsample_nearest1d, 3)
ATEN_OUT_KERNEL(upsample_nearest1d_backward_out, upsample_nearest1d_backward, 4)
ATEN_OUT_KERNEL(upsample_nearest3d_out, upsample_nearest3d, 5)
ATEN_OUT_KERNEL(upsample_nearest3d_backward_out, upsample_nearest3d_backward, 6)

const aten_op aten_nn_upsample_nearest_ops[] = {
    {"upsample_nearest1d", "TIg", upsample_nearest1d},
    {"upsample_nearest1d.out", "TIgT", upsample_nearest1d_out},
    {"upsample_nearest1d_backward", "TIIg", upsample_nearest1d_backward},
    {"upsample_nearest1d_backward.grad_input", "TIIgT", upsample_nearest1d_backward_out},
    {"upsample_nearest3d", "TIggg", upsample_nearest3d},
    {"upsample_nearest3d.out", "TIgggT", upsample_nearest3d_out},
    {"upsample_nearest3d_backward", "TIIggg", upsample_nearest3d_backward},
    {"upsample_nearest3d_backward.grad_input", "TIIgggT", upsample_nearest3d_backward_out},
    {NULL, NULL, NULL},
};
