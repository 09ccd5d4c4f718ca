/* Nearest-neighbour upsampling: upsample_nearest2d picks rows then columns
 * with index_select; its gradient scatter-adds them back. The source index
 * of each output position is computed on the host in float32, exactly as
 * PyTorch's kernels compute it. */
#include <math.h>
#include <stdlib.h>

#include "aten/nn_scope.h"
#include "core/status.h"
#include "core/tensor.h"

/* PyTorch's nearest_idx for every output position: int64 [out]. */
static porta_tensor *source_indices(nn_scope *s, porta_device *device, int64_t in, int64_t out,
                                    const porta_value *scale) {
    if (s->status) return NULL;
    double *indices = malloc((size_t)(out ? out : 1) * sizeof *indices);
    if (!indices)
        return nn_fail(s, porta_error(PORTA_ERR_OUT_OF_MEMORY, "upsample_nearest2d: no memory"));
    bool given = scale->kind != PORTA_VALUE_NONE && aten_number(scale) > 0;
    float step = given ? (float)(1.0 / aten_number(scale)) : (float)in / (float)out;
    for (int64_t i = 0; i < out; i++) {
        int64_t at = out == in ? i : out == 2 * in ? i >> 1 : (int64_t)floorf((float)i * step);
        indices[i] = (double)(at < in - 1 ? at : in - 1);
    }
    porta_tensor *t = nn_cast(s, nn_from_host(s, device, 1, &out, indices), PORTA_I64);
    free(indices);
    return t;
}

static porta_status *check_sizes(const char *op, const porta_value *output_size, int64_t h,
                                 int64_t w) {
    if (output_size->ints.count != 2)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "%s: expected output_size of 2 values, got %d", op,
                           output_size->ints.count);
    if (h < 1 || w < 1 || output_size->ints.items[0] < 1 || output_size->ints.items[1] < 1)
        return porta_error(PORTA_ERR_SHAPE,
                           "%s: input (H: %lld, W: %lld) and output (H: %lld, W: %lld) sizes "
                           "should be greater than 0",
                           op, (long long)h, (long long)w, (long long)output_size->ints.items[0],
                           (long long)output_size->ints.items[1]);
    return NULL;
}

/* upsample_nearest2d(self, output_size, scales_h?, scales_w?) */
static porta_status *upsample_nearest2d(const porta_value *args, aten_results *results) {
    const porta_tensor *x = args[0].tensor;
    if (x->rank != 4) {
        char b[PORTA_SHAPE_STR_CAP];
        return porta_error(PORTA_ERR_SHAPE, "upsample_nearest2d: expected a 4D input, got %s",
                           porta_format_shape(b, sizeof b, x->rank, x->sizes));
    }
    PORTA_TRY(check_sizes("upsample_nearest2d", &args[1], x->sizes[2], x->sizes[3]));
    nn_scope s = {0};
    porta_device *device = x->buffer->device;
    porta_tensor *rows = source_indices(&s, device, x->sizes[2], args[1].ints.items[0], &args[2]);
    porta_tensor *cols = source_indices(&s, device, x->sizes[3], args[1].ints.items[1], &args[3]);
    nn_push(&s, results, nn_index_select(&s, nn_index_select(&s, x, 2, rows), 3, cols));
    return nn_end(&s);
}

/* Scatter-adds grad along axis into zeros of `size` there: the gradient of
 * index_select(·, axis, index). */
static porta_tensor *select_back(nn_scope *s, porta_tensor *grad, int axis, porta_tensor *index,
                                 int64_t size) {
    if (!grad || !index) return NULL;
    int64_t shape[4] = {1, 1, 1, 1}, zeros_shape[4];
    shape[axis] = index->sizes[0];
    for (int i = 0; i < 4; i++) zeros_shape[i] = i == axis ? size : grad->sizes[i];
    porta_tensor *spread = nn_expand(s, nn_reshape(s, index, 4, shape), 4, grad->sizes);
    porta_tensor *zeros = nn_full(s, grad->buffer->device, grad->dtype, 4, zeros_shape, 0);
    return nn_scatter(s, zeros, axis, spread, grad, PORTA_SCATTER_ADD);
}

/* upsample_nearest2d_backward(grad_output, output_size, input_size,
 * scales_h?, scales_w?) */
static porta_status *upsample_nearest2d_backward(const porta_value *args, aten_results *results) {
    const porta_tensor *gy = args[0].tensor;
    const porta_value *in = &args[2];
    if (in->ints.count != 4 || gy->rank != 4)
        return porta_error(PORTA_ERR_SHAPE,
                           "upsample_nearest2d_backward: expected a 4D grad_output and an "
                           "input_size of 4 values, got rank %d and %d values",
                           gy->rank, in->ints.count);
    PORTA_TRY(check_sizes("upsample_nearest2d_backward", &args[1], in->ints.items[2],
                          in->ints.items[3]));
    nn_scope s = {0};
    porta_device *device = gy->buffer->device;
    porta_dtype compute = nn_compute_dtype(gy->dtype);
    porta_tensor *rows =
        source_indices(&s, device, in->ints.items[2], args[1].ints.items[0], &args[3]);
    porta_tensor *cols =
        source_indices(&s, device, in->ints.items[3], args[1].ints.items[1], &args[4]);
    porta_tensor *g = nn_cast(&s, gy, compute);
    porta_tensor *gx = select_back(&s, select_back(&s, g, 3, cols, in->ints.items[3]), 2, rows,
                                   in->ints.items[2]);
    nn_push(&s, results, nn_cast(&s, gx, gy->dtype));
    return nn_end(&s);
}

const aten_op aten_nn_upsample_ops[] = {
    {"upsample_nearest2d", "TIgg", upsample_nearest2d},
    {"upsample_nearest2d_backward", "TIIgg", upsample_nearest2d_backward},
    {NULL, NULL, NULL},
};
