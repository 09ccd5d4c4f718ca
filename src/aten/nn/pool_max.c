/* Max pooling ops beside the windowed ones (nn/pool.c): adaptive max
 * pooling over 2 or 3 spatial axes with its gradient, and max unpooling.
 * Adaptive windows differ in length, so every window is gathered at once
 * through a host table of flat input positions (a window shorter than the
 * longest repeats its last position, which changes neither its maximum
 * nor the first place it occurs); the argmax over the taps picks the
 * value and, through the same table, its flat index. Unpooling and the
 * gradient are scatters at those flat indices. */
#include <stdlib.h>

#include "aten/index/common.h"
#include "aten/dispatch/scope.h"
#include "aten/dispatch/op_reuse.h"
#include "aten/nn/memory_format.h"
#include "core/status.h"
#include "runtime/tensor.h"

#define POOL_MAX_DIMS 3

/* The input's batch (every leading axis folded) and spatial sizes. */
typedef struct pool_layout {
    int dims;
    int64_t batch, in[POOL_MAX_DIMS], in_volume;
} pool_layout;

static void layout_of(const porta_tensor *x, int dims, pool_layout *p) {
    p->dims = dims;
    p->batch = 1;
    p->in_volume = 1;
    for (int i = 0; i < x->rank - dims; i++) p->batch *= x->sizes[i];
    for (int i = 0; i < dims; i++) {
        p->in[i] = x->sizes[x->rank - dims + i];
        p->in_volume *= p->in[i];
    }
}

static porta_status *check_adaptive_max(const char *op, int dims, const porta_tensor *x,
                                        const porta_value *output_size) {
    char b[CORE_SHAPE_STR_CAP];
    if (output_size->ints.count != dims)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "%s(): internal error: output_size.size() must be %d, got %d", op,
                           dims, output_size->ints.count);
    for (int i = 0; i < dims; i++)
        if (output_size->ints.items[i] < 0)
            return porta_error(PORTA_ERR_INVALID_ARGUMENT, "%s(): output_size must be >= 0, got %lld",
                               op, (long long)output_size->ints.items[i]);
    if (x->rank != dims + 1 && x->rank != dims + 2)
        return porta_error(PORTA_ERR_SHAPE, "%s(): Expected %dD or %dD tensor, but got: %s", op,
                           dims + 1, dims + 2, core_format_shape(b, sizeof b, x->rank, x->sizes));
    for (int i = x->rank - dims - 1; i < x->rank; i++)
        if (x->sizes[i] == 0)
            return porta_error(PORTA_ERR_SHAPE,
                               "%s(): Expected input to have non-zero size for non-batch "
                               "dimensions, but input has sizes %s with dimension %d being empty",
                               op, core_format_shape(b, sizeof b, x->rank, x->sizes), i);
    if (!porta_dtype_is_float(x->dtype))
        return porta_error(PORTA_ERR_DTYPE, "\"%s\" not implemented for '%s'", op,
                           porta_dtype_name(x->dtype));
    return NULL;
}

/* The window of output o along an axis of `in` inputs pooled to `out`. */
static int64_t window_start(int64_t o, int64_t in, int64_t out) { return o * in / out; }
static int64_t window_end(int64_t o, int64_t in, int64_t out) {
    return ((o + 1) * in + out - 1) / out;
}

/* The int64 table [out_volume, taps] of flat input positions each window
 * covers; taps is the largest window volume (at least 1). */
static porta_tensor *window_table(aten_scope *s, porta_device *device, const pool_layout *p,
                                  const int64_t *out, int64_t *taps_out) {
    if (s->status) return NULL;
    int dims = p->dims;
    int64_t longest[POOL_MAX_DIMS], taps = 1, out_volume = 1;
    for (int i = 0; i < dims; i++) {
        longest[i] = 1;
        for (int64_t o = 0; o < out[i]; o++) {
            int64_t length = window_end(o, p->in[i], out[i]) - window_start(o, p->in[i], out[i]);
            if (length > longest[i]) longest[i] = length;
        }
        taps *= longest[i];
        out_volume *= out[i];
    }
    size_t count = (size_t)(out_volume * taps);
    int64_t *positions = malloc((count ? count : 1) * sizeof *positions);
    if (!positions)
        return scope_fail(s, porta_error(PORTA_ERR_OUT_OF_MEMORY, "adaptive max pooling: no memory"));
    for (int64_t w = 0; w < out_volume; w++) {
        int64_t start[POOL_MAX_DIMS], last[POOL_MAX_DIMS];
        int64_t rest = w;
        for (int i = dims - 1; i >= 0; i--) {
            int64_t o = rest % out[i];
            rest /= out[i];
            start[i] = window_start(o, p->in[i], out[i]);
            last[i] = window_end(o, p->in[i], out[i]) - 1;
        }
        for (int64_t t = 0; t < taps; t++) {
            int64_t flat = 0, tap_rest = t;
            int64_t tap[POOL_MAX_DIMS];
            for (int i = dims - 1; i >= 0; i--) {
                tap[i] = tap_rest % longest[i];
                tap_rest /= longest[i];
            }
            for (int i = 0; i < dims; i++) {
                int64_t at = start[i] + tap[i];
                flat = flat * p->in[i] + (at < last[i] ? at : last[i]);
            }
            positions[w * taps + t] = flat;
        }
    }
    int64_t sizes[2] = {out_volume, taps};
    porta_tensor *table = NULL;
    porta_status *status = porta_tensor_from_host(device, PORTA_I64, 2, sizes, positions, &table);
    free(positions);
    *taps_out = taps;
    return scope_hold(s, status, table);
}

/* adaptive_max_pool{2,3}d(self, output_size): (values, int64 flat indices
 * into each plane). */
static porta_status *adaptive_max_pool(const char *op, int dims, const porta_value *a,
                                       aten_results *results) {
    const porta_tensor *x = a[0].tensor;
    PORTA_TRY(check_adaptive_max(op, dims, x, &a[1]));
    const int64_t *out = a[1].ints.items;
    pool_layout p;
    layout_of(x, dims, &p);
    int64_t taps = 1, out_volume = 1, result_sizes[PORTA_MAX_RANK];
    for (int i = 0; i < dims; i++) out_volume *= out[i];
    for (int i = 0; i < x->rank; i++)
        result_sizes[i] = i < x->rank - dims ? x->sizes[i] : out[i - (x->rank - dims)];
    porta_memory_format format = aten_suggest_memory_format(a[0].tensor);
    int first = results->count;
    aten_scope s;
    scope_begin(&s);
    porta_tensor *table = window_table(&s, x->buffer->device, &p, out, &taps);
    int64_t planes[2] = {p.batch, p.in_volume}, flat_count = out_volume * taps;
    int64_t gathered_sizes[3] = {p.batch, out_volume, taps};
    porta_tensor *flat_table = scope_reshape(&s, table, 1, &flat_count);
    porta_tensor *windows = scope_reshape(
        &s, scope_index_select(&s, scope_reshape(&s, x, 2, planes), 1, flat_table), 3, gathered_sizes);
    int tap_axis = 2;
    porta_tensor *best = scope_reduce(&s, PORTA_REDUCE_ARGMAX, windows, &tap_axis, 1, true);
    porta_tensor *values = scope_gather(&s, windows, 2, best);
    int64_t table_sizes[3] = {1, out_volume, taps};
    porta_tensor *every_table = scope_expand(&s, scope_reshape(&s, table, 3, table_sizes), 3, gathered_sizes);
    porta_tensor *indices = scope_gather(&s, every_table, 2, best);
    scope_push(&s, results, scope_reshape(&s, values, x->rank, result_sizes));
    scope_push(&s, results, scope_reshape(&s, indices, x->rank, result_sizes));
    return aten_results_in_format(scope_end(&s), results, first, format);
}

/* adaptive_max_pool{2,3}d_backward(grad_output, self, indices): each
 * output's gradient added at its maximum's flat position. */
static porta_status *adaptive_max_pool_backward(const char *op, int dims, const porta_value *a,
                                                aten_results *results) {
    const porta_tensor *gy = a[0].tensor, *x = a[1].tensor, *indices = a[2].tensor;
    char g[CORE_SHAPE_STR_CAP], i[CORE_SHAPE_STR_CAP];
    bool same = gy->rank == indices->rank && gy->rank == x->rank;
    for (int d = 0; same && d < gy->rank; d++) same = gy->sizes[d] == indices->sizes[d];
    if (!same || x->rank < dims)
        return porta_error(PORTA_ERR_SHAPE,
                           "%s: grad_output %s and indices %s must have the same shape, of the "
                           "input's rank %d",
                           op, core_format_shape(g, sizeof g, gy->rank, gy->sizes),
                           core_format_shape(i, sizeof i, indices->rank, indices->sizes), x->rank);
    pool_layout p;
    layout_of(x, dims, &p);
    int64_t out_volume = porta_tensor_numel(gy) / (p.batch ? p.batch : 1);
    int64_t planes[2] = {p.batch, p.in_volume}, outputs[2] = {p.batch, p.batch ? out_volume : 0};
    porta_memory_format format = aten_suggest_memory_format(a[1].tensor);
    int first = results->count;
    aten_scope s;
    scope_begin(&s);
    porta_tensor *zeros = scope_full(&s, x->buffer->device, gy->dtype, 2, planes, 0);
    porta_tensor *gx = scope_scatter(&s, zeros, 1, scope_reshape(&s, indices, 2, outputs),
                                     scope_reshape(&s, gy, 2, outputs), PORTA_SCATTER_ADD);
    scope_push(&s, results, scope_reshape(&s, gx, x->rank, x->sizes));
    return aten_results_in_format(scope_end(&s), results, first, format);
}

static porta_status *adaptive_max_pool2d(const porta_value *a, aten_results *r) {
    return adaptive_max_pool("adaptive_max_pool2d", 2, a, r);
}
static porta_status *adaptive_max_pool3d(const porta_value *a, aten_results *r) {
    return adaptive_max_pool("adaptive_max_pool3d", 3, a, r);
}
static porta_status *adaptive_max_pool2d_out(const porta_value *a, aten_results *r) {
    return aten_into_outs(adaptive_max_pool2d, a, 2, 2, r);
}
static porta_status *adaptive_max_pool3d_out(const porta_value *a, aten_results *r) {
    return aten_into_outs(adaptive_max_pool3d, a, 2, 2, r);
}
static porta_status *adaptive_max_pool2d_backward(const porta_value *a, aten_results *r) {
    return adaptive_max_pool_backward("adaptive_max_pool2d_backward", 2, a, r);
}
static porta_status *adaptive_max_pool3d_backward(const porta_value *a, aten_results *r) {
    return adaptive_max_pool_backward("adaptive_max_pool3d_backward", 3, a, r);
}
ATEN_OUT_KERNEL(adaptive_max_pool2d_backward_out, adaptive_max_pool2d_backward, 3)
ATEN_OUT_KERNEL(adaptive_max_pool3d_backward_out, adaptive_max_pool3d_backward, 3)

/* max_unpool{2,3}d(self, indices, output_size[, stride, padding]): zeros of
 * the output size with self's values written at indices (flat positions in
 * each output plane). */
static porta_status *max_unpool(const char *op, int dims, const porta_value *a,
                                aten_results *results) {
    const porta_tensor *x = a[0].tensor, *indices = a[1].tensor;
    const porta_value *output_size = &a[2];
    char b[CORE_SHAPE_STR_CAP], c[CORE_SHAPE_STR_CAP];
    if (output_size->ints.count != dims)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "%s: output_size must have %d elements, but got %d elements.", op, dims,
                           output_size->ints.count);
    if (x->rank != dims + 1 && x->rank != dims + 2)
        return porta_error(PORTA_ERR_SHAPE,
                           "Input to %s should be a %dd or %dd Tensor, but got a tensor with %d "
                           "dimensions.",
                           op, dims + 1, dims + 2, x->rank);
    if (indices->dtype != PORTA_I64)
        return porta_error(PORTA_ERR_DTYPE, "elements in indices should be type int64 but got: %s",
                           porta_dtype_name(indices->dtype));
    bool same = indices->rank == x->rank;
    for (int d = 0; same && d < x->rank; d++) same = indices->sizes[d] == x->sizes[d];
    if (!same)
        return porta_error(PORTA_ERR_SHAPE,
                           "Expected shape of indices to be same as that of the input tensor "
                           "(%s) but got indices tensor with shape: %s",
                           core_format_shape(b, sizeof b, x->rank, x->sizes),
                           core_format_shape(c, sizeof c, indices->rank, indices->sizes));
    if (dims == 3)
        for (int i = 0; i < 3; i++)
            if (a[3].ints.count != 3 || a[3].ints.items[i] <= 0)
                return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                                   "strides should be greater than zero, but got stride: %s",
                                   core_format_shape(b, sizeof b, a[3].ints.count, a[3].ints.items));
    if (!porta_dtype_is_float(x->dtype))
        return porta_error(PORTA_ERR_DTYPE, "\"max_unpool%dd\" not implemented for '%s'", dims,
                           porta_dtype_name(x->dtype));
    pool_layout p;
    layout_of(x, dims, &p);
    int64_t out_volume = 1, sizes[PORTA_MAX_RANK];
    for (int i = 0; i < dims; i++) out_volume *= output_size->ints.items[i];
    for (int i = 0; i < x->rank; i++)
        sizes[i] = i < x->rank - dims ? x->sizes[i] : output_size->ints.items[i - (x->rank - dims)];
    int64_t planes[2] = {p.batch, out_volume}, inputs[2] = {p.batch, p.in_volume};
    porta_memory_format format = aten_suggest_memory_format(a[0].tensor);
    int first = results->count;
    aten_scope s;
    scope_begin(&s);
    porta_tensor *zeros = scope_full(&s, x->buffer->device, x->dtype, 2, planes, 0);
    porta_tensor *flat_indices = scope_reshape(&s, indices, 2, inputs);
    porta_tensor *flat_x = scope_reshape(&s, x, 2, inputs);
    porta_tensor *out = NULL;
    if (!s.status) {
        /* PyTorch raises RuntimeError (not IndexError) for a bad index */
        porta_status *status = index_recode(porta_scatter(zeros, 1, flat_indices, flat_x,
                                                          PORTA_SCATTER_NONE, &out),
                                            PORTA_ERR_OUT_OF_RANGE, PORTA_ERR_INVALID_ARGUMENT);
        scope_hold(&s, status, out);
    }
    scope_push(&s, results, scope_reshape(&s, out, x->rank, sizes));
    return aten_results_in_format(scope_end(&s), results, first, format);
}

static porta_status *max_unpool2d(const porta_value *a, aten_results *r) {
    return max_unpool("max_unpooling2d", 2, a, r);
}
static porta_status *max_unpool3d(const porta_value *a, aten_results *r) {
    return max_unpool("max_unpooling3d", 3, a, r);
}
ATEN_OUT_KERNEL(max_unpool2d_out, max_unpool2d, 3)
ATEN_OUT_KERNEL(max_unpool3d_out, max_unpool3d, 5)

const aten_op aten_nn_pool_max_ops[] = {
    {"adaptive_max_pool2d", "TI", adaptive_max_pool2d},
    {"adaptive_max_pool2d.out", "TITT", adaptive_max_pool2d_out},
    {"adaptive_max_pool2d_backward", "TTT", adaptive_max_pool2d_backward},
    {"adaptive_max_pool2d_backward.grad_input", "TTTT", adaptive_max_pool2d_backward_out},
    {"adaptive_max_pool3d", "TI", adaptive_max_pool3d},
    {"adaptive_max_pool3d.out", "TITT", adaptive_max_pool3d_out},
    {"adaptive_max_pool3d_backward", "TTT", adaptive_max_pool3d_backward},
    {"adaptive_max_pool3d_backward.grad_input", "TTTT", adaptive_max_pool3d_backward_out},
    {"max_unpool2d", "TTI", max_unpool2d},
    {"max_unpool2d.out", "TTIT", max_unpool2d_out},
    {"max_unpool3d", "TTIII", max_unpool3d},
    {"max_unpool3d.out", "TTIIIT", max_unpool3d_out},
    {NULL, NULL, NULL},
};
