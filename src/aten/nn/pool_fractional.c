/* fractional_max_pool2d and 3d with their backward ops. The windows'
 * starts along each axis come from the op's random samples (one per plane
 * and axis, read to the host) by PyTorch's generate_intervals; each output
 * gathers its window from the flattened plane and keeps the largest value
 * (NaN counts as largest) and its flat index. The backward scatter-adds
 * the gradient at the indices. */
#include <math.h>
#include <stdlib.h>

#include "aten/dispatch/op_reuse.h"
#include "aten/dispatch/scope.h"
#include "aten/reduce/common.h"
#include "core/status.h"
#include "runtime/tensor.h"

#define MAX_AXES 3

/* The pooled planes: [planes, spatial...] with planes = N * C. */
typedef struct {
    int axes;
    bool batched;
    int64_t n, c, in[MAX_AXES], out[MAX_AXES], kernel[MAX_AXES];
} pool_shape;

static porta_status *check_pool(const char *op, int axes, const porta_tensor *x,
                                const porta_value *kernel, const porta_value *output,
                                pool_shape *p) {
    char b[CORE_SHAPE_STR_CAP];
    p->axes = axes;
    p->batched = x->rank == axes + 2;
    if (x->rank != axes + 1 && !p->batched)
        return porta_error(PORTA_ERR_SHAPE, "%s(): Expected %dD or %dD tensor, but got: %s", op,
                           axes + 1, axes + 2, core_format_shape(b, sizeof b, x->rank, x->sizes));
    if (kernel->ints.count != axes || output->ints.count != axes)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "%s(): kernel_size and output_size must have %d values each", op, axes);
    PORTA_TRY(aten_check_float(op, x));
    p->n = p->batched ? x->sizes[0] : 1;
    p->c = x->sizes[p->batched];
    for (int d = 0; d < axes; d++) {
        p->in[d] = x->sizes[x->rank - axes + d];
        p->out[d] = output->ints.items[d];
        p->kernel[d] = kernel->ints.items[d];
        if (p->kernel[d] <= 0 || p->out[d] <= 0)
            return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                               "%s(): kernel_size and output_size must be greater than zero, but "
                               "got %lld and %lld", op, (long long)p->kernel[d],
                               (long long)p->out[d]);
        /* PyTorch's 2-D kernel lets the last window end at the border,
         * its 3-D kernel does not */
        if (p->out[d] + p->kernel[d] - 1 > p->in[d] - (axes == 3))
            return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                               "%s(): pool size %lld too large relative to input size %lld at "
                               "spatial axis %d with output size %lld", op,
                               (long long)p->kernel[d], (long long)p->in[d], d,
                               (long long)p->out[d]);
    }
    return NULL;
}

/* PyTorch's generate_intervals in the input's precision: window starts
 * spread over [0, in - kernel] by the sample. */
static void intervals(double sample, int64_t in, int64_t out, int64_t kernel, bool single,
                      int64_t *starts) {
    if (out > 1) {
        double alpha = (double)(in - kernel) / (double)(out - 1);
        if (single) alpha = (float)alpha;
        for (int64_t i = 0; i < out - 1; i++) {
            double at = single ? (double)(float)(((float)i + (float)sample) * (float)alpha)
                               : ((double)i + sample) * alpha;
            double base = single ? (double)(float)((float)sample * (float)alpha) : sample * alpha;
            starts[i] = (int64_t)at - (int64_t)base;
        }
    }
    starts[out - 1] = in - kernel;
}

/* The flat input index of every (plane, output position, window tap),
 * int64 [planes, outputs, taps], from the samples [N, C, axes]: in 2-D
 * the first sample is the width's, in 3-D the depth's, as PyTorch reads
 * them. */
static porta_tensor *window_indices(aten_scope *s, const pool_shape *p, const porta_tensor *samples,
                                    bool single) {
    if (s->status) return NULL;
    int64_t planes = p->n * p->c, outputs = 1, taps = 1;
    for (int d = 0; d < p->axes; d++) {
        outputs *= p->out[d];
        taps *= p->kernel[d];
    }
    int64_t count = planes * p->axes;
    double *drawn = malloc((size_t)count * sizeof *drawn);
    double *index = malloc((size_t)(planes * outputs * taps) * sizeof *index);
    int64_t *starts = malloc((size_t)(p->out[0] + p->out[1] + (p->axes == 3 ? p->out[2] : 0)) *
                             sizeof *starts);
    porta_tensor *as_double = scope_contiguous(s, scope_cast(s, samples, PORTA_F64));
    if (!drawn || !index || !starts) {
        scope_fail(s, porta_error(PORTA_ERR_OUT_OF_MEMORY, "fractional_max_pool: no memory"));
    } else if (as_double && !s->status) {
        porta_status *status = porta_tensor_to_host(as_double, drawn, (size_t)count * sizeof *drawn);
        if (status) scope_fail(s, status);
    }
    if (!s->status) {
        for (int64_t plane = 0; plane < planes; plane++) {
            int64_t *axis_starts[MAX_AXES];
            int64_t *next = starts;
            for (int d = 0; d < p->axes; d++) {
                axis_starts[d] = next;
                intervals(drawn[plane * p->axes + (p->axes == 2 ? 1 - d : d)], p->in[d], p->out[d],
                          p->kernel[d], single, next);
                next += p->out[d];
            }
            double *at = index + plane * outputs * taps;
            for (int64_t o = 0; o < outputs; o++)
                for (int64_t t = 0; t < taps; t++) {
                    int64_t flat = 0, orest = o, trest = t, stride_o = outputs, stride_t = taps;
                    for (int d = 0; d < p->axes; d++) {
                        stride_o /= p->out[d];
                        stride_t /= p->kernel[d];
                        int64_t od = orest / stride_o, td = trest / stride_t;
                        orest %= stride_o;
                        trest %= stride_t;
                        flat = flat * p->in[d] + axis_starts[d][od] + td;
                    }
                    *at++ = (double)flat;
                }
        }
    }
    int64_t sizes[3] = {planes, outputs, taps};
    porta_tensor *t = s->status ? NULL
                                : scope_cast(s, scope_from_host(s, samples->buffer->device, 3, sizes,
                                                                index),
                                             PORTA_I64);
    free(drawn);
    free(index);
    free(starts);
    return t;
}

/* The result's sizes: [N,] C, out... */
static int result_sizes(const pool_shape *p, int64_t *sizes) {
    int rank = 0;
    if (p->batched) sizes[rank++] = p->n;
    sizes[rank++] = p->c;
    for (int d = 0; d < p->axes; d++) sizes[rank++] = p->out[d];
    return rank;
}

/* fractional_max_pool{2,3}d(self, kernel_size, output_size, random_samples)
 * -> (output, indices) */
static porta_status *fractional_max_pool(const char *op, int axes, const porta_value *a,
                                         aten_results *results) {
    const porta_tensor *x = a[0].tensor, *samples = a[3].tensor;
    pool_shape p;
    PORTA_TRY(check_pool(op, axes, x, &a[1], &a[2], &p));
    char b[CORE_SHAPE_STR_CAP];
    if (samples->rank != 3 || samples->sizes[0] != p.n || samples->sizes[1] != p.c ||
        samples->sizes[2] != axes)
        return porta_error(PORTA_ERR_SHAPE,
                           "%s(): expected _random_samples of shape (%lld, %lld, %d), got %s", op,
                           (long long)p.n, (long long)p.c, axes,
                           core_format_shape(b, sizeof b, samples->rank, samples->sizes));
    int64_t planes = p.n * p.c, area = 1, outputs = 1;
    for (int d = 0; d < axes; d++) {
        area *= p.in[d];
        outputs *= p.out[d];
    }
    int64_t flat_sizes[2] = {planes, area}, sizes[MAX_AXES + 2];
    int rank = result_sizes(&p, sizes);
    aten_scope s;
    scope_begin(&s);
    porta_tensor *index = window_indices(&s, &p, samples, x->dtype != PORTA_F64);
    int64_t taps = index ? index->sizes[2] : 1, gathered_sizes[2] = {planes, outputs * taps};
    int64_t windows[3] = {planes, outputs, taps};
    porta_tensor *flat = scope_reshape(&s, scope_contiguous(&s, x), 2, flat_sizes);
    porta_tensor *values = scope_reshape(
        &s, scope_gather(&s, flat, 1, scope_reshape(&s, index, 2, gathered_sizes)), 3, windows);
    int last = 2;
    porta_tensor *best = scope_reduce(&s, PORTA_REDUCE_ARGMAX, values, &last, 1, true);
    scope_push(&s, results, scope_reshape(&s, scope_gather(&s, values, 2, best), rank, sizes));
    scope_push(&s, results, scope_reshape(&s, scope_gather(&s, index, 2, best), rank, sizes));
    return scope_end(&s);
}

/* fractional_max_pool{2,3}d_backward(grad_output, self, kernel_size,
 * output_size, indices) */
static porta_status *fractional_max_pool_backward(const char *op, int axes, const porta_value *a,
                                                  aten_results *results) {
    const porta_tensor *gy = a[0].tensor, *x = a[1].tensor, *indices = a[4].tensor;
    pool_shape p;
    PORTA_TRY(check_pool(op, axes, x, &a[2], &a[3], &p));
    int64_t planes = p.n * p.c, area = 1, outputs = 1;
    for (int d = 0; d < axes; d++) {
        area *= p.in[d];
        outputs *= p.out[d];
    }
    int64_t grad_sizes[2] = {planes, outputs}, flat_sizes[2] = {planes, area};
    aten_scope s;
    scope_begin(&s);
    porta_dtype compute = aten_compute_dtype(gy->dtype);
    porta_tensor *zeros = scope_full(&s, gy->buffer->device, compute, 2, flat_sizes, 0);
    porta_tensor *g = scope_reshape(&s, scope_contiguous(&s, scope_cast(&s, gy, compute)), 2,
                                    grad_sizes);
    porta_tensor *at = scope_reshape(&s, scope_contiguous(&s, indices), 2, grad_sizes);
    porta_tensor *gx = scope_scatter(&s, zeros, 1, at, g, PORTA_SCATTER_ADD);
    scope_push(&s, results, scope_cast(&s, scope_reshape(&s, gx, x->rank, x->sizes), gy->dtype));
    return scope_end(&s);
}

static porta_status *pool2d(const porta_value *a, aten_results *r) {
    return fractional_max_pool("fractional_max_pool2d", 2, a, r);
}
static porta_status *pool3d(const porta_value *a, aten_results *r) {
    return fractional_max_pool("fractional_max_pool3d", 3, a, r);
}
static porta_status *pool2d_backward(const porta_value *a, aten_results *r) {
    return fractional_max_pool_backward("fractional_max_pool2d_backward", 2, a, r);
}
static porta_status *pool3d_backward(const porta_value *a, aten_results *r) {
    return fractional_max_pool_backward("fractional_max_pool3d_backward", 3, a, r);
}
static porta_status *pool2d_out(const porta_value *a, aten_results *r) {
    return aten_into_outs(pool2d, a, 4, 2, r);
}
static porta_status *pool3d_out(const porta_value *a, aten_results *r) {
    return aten_into_outs(pool3d, a, 4, 2, r);
}
ATEN_OUT_KERNEL(pool2d_backward_out, pool2d_backward, 5)
ATEN_OUT_KERNEL(pool3d_backward_out, pool3d_backward, 5)

const aten_op aten_nn_pool_fractional_ops[] = {
    {"fractional_max_pool2d", "TIIT", pool2d},
    {"fractional_max_pool2d.output", "TIITTT", pool2d_out},
    {"fractional_max_pool2d_backward", "TTIIT", pool2d_backward},
    {"fractional_max_pool2d_backward.grad_input", "TTIITT", pool2d_backward_out},
    {"fractional_max_pool3d", "TIIT", pool3d},
    {"fractional_max_pool3d.output", "TIITTT", pool3d_out},
    {"fractional_max_pool3d_backward", "TTIIT", pool3d_backward},
    {"fractional_max_pool3d_backward.grad_input", "TTIITT", pool3d_backward_out},
    {NULL, NULL, NULL},
};
