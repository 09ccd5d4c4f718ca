/* 2-D upsampling. upsample_nearest2d picks rows then columns with
 * index_select; its gradient scatter-adds them back. upsample_bilinear2d is
 * separable: rows and columns are each mixed by an interpolation matrix
 * [out, in] (two non-zero weights a row), so the op is A_h @ x @ A_w^T and
 * its gradient A_h^T @ g @ A_w. Source positions and weights are computed
 * on the host in the precision PyTorch's kernels use. */
#include <math.h>
#include <stdlib.h>

#include "aten/dispatch/scope.h"
#include "aten/nn/upsample_linear.h"
#include "aten/nn/memory_format.h"
#include "core/status.h"
#include "runtime/tensor.h"

/* PyTorch's nearest_idx for every output position: int64 [out]. */
static porta_tensor *source_indices(aten_scope *s, porta_device *device, int64_t in, int64_t out,
                                    const porta_value *scale) {
    if (s->status) return NULL;
    double *indices = malloc((size_t)(out ? out : 1) * sizeof *indices);
    if (!indices)
        return scope_fail(s, porta_error(PORTA_ERR_OUT_OF_MEMORY, "upsample_nearest2d: no memory"));
    bool given = scale->kind != PORTA_VALUE_NONE && aten_number(scale) > 0;
    float step = given ? (float)(1.0 / aten_number(scale)) : (float)in / (float)out;
    for (int64_t i = 0; i < out; i++) {
        int64_t at = out == in ? i : out == 2 * in ? i >> 1 : (int64_t)floorf((float)i * step);
        indices[i] = (double)(at < in - 1 ? at : in - 1);
    }
    porta_tensor *t = scope_cast(s, scope_from_host(s, device, 1, &out, indices), PORTA_I64);
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
        char b[CORE_SHAPE_STR_CAP];
        return porta_error(PORTA_ERR_SHAPE, "upsample_nearest2d: expected a 4D input, got %s",
                           core_format_shape(b, sizeof b, x->rank, x->sizes));
    }
    PORTA_TRY(check_sizes("upsample_nearest2d", &args[1], x->sizes[2], x->sizes[3]));
    porta_memory_format format = aten_suggest_memory_format(args[0].tensor);
    int first = results->count;
    aten_scope s;
    scope_begin(&s);
    porta_device *device = x->buffer->device;
    porta_tensor *rows = source_indices(&s, device, x->sizes[2], args[1].ints.items[0], &args[2]);
    porta_tensor *cols = source_indices(&s, device, x->sizes[3], args[1].ints.items[1], &args[3]);
    scope_push(&s, results, scope_index_select(&s, scope_index_select(&s, x, 2, rows), 3, cols));
    return aten_results_in_format(scope_end(&s), results, first, format);
}

porta_tensor *upsample_select_back(aten_scope *s, const porta_tensor *grad, int axis,
                                   const porta_tensor *index, int64_t size) {
    if (!grad || !index) return NULL;
    int64_t shape[PORTA_MAX_RANK], zeros_shape[PORTA_MAX_RANK];
    for (int i = 0; i < grad->rank; i++) {
        shape[i] = i == axis ? index->sizes[0] : 1;
        zeros_shape[i] = i == axis ? size : grad->sizes[i];
    }
    porta_tensor *spread =
        scope_expand(s, scope_reshape(s, index, grad->rank, shape), grad->rank, grad->sizes);
    porta_tensor *zeros =
        scope_full(s, grad->buffer->device, grad->dtype, grad->rank, zeros_shape, 0);
    return scope_scatter(s, zeros, axis, spread, grad, PORTA_SCATTER_ADD);
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
    porta_memory_format format = aten_suggest_memory_format(args[0].tensor);
    int first = results->count;
    aten_scope s;
    scope_begin(&s);
    porta_device *device = gy->buffer->device;
    porta_dtype compute = aten_compute_dtype(gy->dtype);
    porta_tensor *rows =
        source_indices(&s, device, in->ints.items[2], args[1].ints.items[0], &args[3]);
    porta_tensor *cols =
        source_indices(&s, device, in->ints.items[3], args[1].ints.items[1], &args[4]);
    porta_tensor *g = scope_cast(&s, gy, compute);
    porta_tensor *gx = upsample_select_back(
        &s, upsample_select_back(&s, g, 3, cols, in->ints.items[3]), 2, rows, in->ints.items[2]);
    scope_push(&s, results, scope_cast(&s, gx, gy->dtype));
    return aten_results_in_format(scope_end(&s), results, first, format);
}

/* The bilinear interpolation matrix [out, in] along one axis, with
 * PyTorch's source positions: align_corners maps the corner pixels onto
 * each other, otherwise pixel centres are scaled (by 1/scale when a scale
 * was given) and clamped at 0. */
porta_tensor *bilinear_weights(aten_scope *s, porta_device *device, porta_dtype dtype,
                               int64_t in, int64_t out, bool align_corners,
                               const porta_value *scale) {
    if (s->status) return NULL;
    double *weights = calloc((size_t)(in * out), sizeof *weights);
    if (!weights)
        return scope_fail(s, porta_error(PORTA_ERR_OUT_OF_MEMORY, "upsample_bilinear2d: no memory"));
    bool single = dtype != PORTA_F64;
    bool given = scale->kind != PORTA_VALUE_NONE && aten_number(scale) > 0;
    double step = align_corners ? (out > 1 ? in_math((double)(in - 1), single) / (double)(out - 1)
                                           : 0)
                  : given ? 1.0 / aten_number(scale)
                          : in_math((double)in, single) / (double)out;
    step = in_math(step, single);
    for (int64_t i = 0; i < out; i++) {
        double at = align_corners
                        ? in_math(step * (double)i, single)
                        : in_math(in_math(step * ((double)i + 0.5), single) - 0.5, single);
        if (at < 0) at = 0;
        int64_t low = (int64_t)floor(at) < in - 1 ? (int64_t)floor(at) : in - 1;
        double lambda = in_math(at - (double)low, single);
        lambda = lambda < 0 ? 0 : lambda > 1 ? 1 : lambda;
        int64_t high = low < in - 1 ? low + 1 : low;
        weights[i * in + low] += in_math(1 - lambda, single);
        weights[i * in + high] += lambda;
    }
    int64_t sizes[2] = {out, in};
    porta_tensor *t = scope_cast(s, scope_from_host(s, device, 2, sizes, weights), dtype);
    free(weights);
    return t;
}

/* x in dtype: x itself when it has it (a cast would copy). */
static porta_tensor *in_dtype(aten_scope *s, const porta_tensor *x, porta_dtype dtype) {
    if (x && x->dtype == dtype) return (porta_tensor *)x;
    return scope_cast(s, x, dtype);
}

static porta_status *check_bilinear_dtype(const char *op, porta_dtype dtype) {
    if (!porta_dtype_is_float(dtype))
        return porta_error(PORTA_ERR_DTYPE, "%s: not implemented for '%s'", op,
                           porta_dtype_name(dtype));
    return NULL;
}

/* upsample_bilinear2d(self, output_size, align_corners, scales_h?, scales_w?) */
static porta_status *upsample_bilinear2d(const porta_value *args, aten_results *results) {
    const porta_tensor *x = args[0].tensor;
    if (x->rank != 4) {
        char b[CORE_SHAPE_STR_CAP];
        return porta_error(PORTA_ERR_SHAPE, "upsample_bilinear2d: expected a 4D input, got %s",
                           core_format_shape(b, sizeof b, x->rank, x->sizes));
    }
    PORTA_TRY(check_bilinear_dtype("upsample_bilinear2d", x->dtype));
    PORTA_TRY(check_sizes("upsample_bilinear2d", &args[1], x->sizes[2], x->sizes[3]));
    porta_memory_format format = aten_suggest_memory_format(args[0].tensor);
    int first = results->count;
    aten_scope s;
    scope_begin(&s);
    porta_device *device = x->buffer->device;
    porta_dtype compute = aten_compute_dtype(x->dtype);
    bool align = args[2].b;
    porta_tensor *rows = bilinear_weights(&s, device, compute, x->sizes[2], args[1].ints.items[0],
                                          align, &args[3]);
    porta_tensor *cols = bilinear_weights(&s, device, compute, x->sizes[3], args[1].ints.items[1],
                                          align, &args[4]);
    int swap[2] = {1, 0};
    porta_tensor *y = scope_matmul(
        &s, rows, scope_matmul(&s, in_dtype(&s, x, compute), scope_permute(&s, cols, swap)));
    scope_push(&s, results, in_dtype(&s, y, x->dtype));
    return aten_results_in_format(scope_end(&s), results, first, format);
}

/* upsample_bilinear2d_backward(grad_output, output_size, input_size,
 * align_corners, scales_h?, scales_w?) */
static porta_status *upsample_bilinear2d_backward(const porta_value *args, aten_results *results) {
    const porta_tensor *gy = args[0].tensor;
    const porta_value *in = &args[2];
    if (in->ints.count != 4 || gy->rank != 4)
        return porta_error(PORTA_ERR_SHAPE,
                           "upsample_bilinear2d_backward: expected a 4D grad_output and an "
                           "input_size of 4 values, got rank %d and %d values",
                           gy->rank, in->ints.count);
    PORTA_TRY(check_bilinear_dtype("upsample_bilinear2d_backward", gy->dtype));
    PORTA_TRY(check_sizes("upsample_bilinear2d_backward", &args[1], in->ints.items[2],
                          in->ints.items[3]));
    porta_memory_format format = aten_suggest_memory_format(args[0].tensor);
    int first = results->count;
    aten_scope s;
    scope_begin(&s);
    porta_device *device = gy->buffer->device;
    porta_dtype compute = aten_compute_dtype(gy->dtype);
    bool align = args[3].b;
    porta_tensor *rows = bilinear_weights(&s, device, compute, in->ints.items[2],
                                          args[1].ints.items[0], align, &args[4]);
    porta_tensor *cols = bilinear_weights(&s, device, compute, in->ints.items[3],
                                          args[1].ints.items[1], align, &args[5]);
    int swap[2] = {1, 0};
    porta_tensor *gx = scope_matmul(&s, scope_permute(&s, rows, swap),
                                    scope_matmul(&s, in_dtype(&s, gy, compute), cols));
    scope_push(&s, results, in_dtype(&s, gx, gy->dtype));
    return aten_results_in_format(scope_end(&s), results, first, format);
}

const aten_op aten_nn_upsample_ops[] = {
    {"upsample_bilinear2d", "TIbgg", upsample_bilinear2d},
    {"upsample_bilinear2d_backward", "TIIbgg", upsample_bilinear2d_backward},
    {"upsample_nearest2d", "TIgg", upsample_nearest2d},
    {"upsample_nearest2d_backward", "TIIgg", upsample_nearest2d_backward},
    {NULL, NULL, NULL},
};
