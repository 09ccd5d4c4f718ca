/* Pooling aten ops over windows of 2 or 3 spatial axes (the geometry takes
 * 1 to 3): max_pool2d/3d with indices, avg_pool2d/3d and their gradients.
 * Max pooling's indices come from the pooling primitive (one pass over the
 * windows) and its maxima are gathered at them. Average pooling views the
 * windows as a strided view of the padded input ([N, C, out..., kernel...])
 * reduced over its window axes; gradients scatter-add back through the
 * windows' flat indices. Adaptive pooling is in nn/pool_adaptive.c. */
#include <math.h>
#include <stdio.h>

#include "aten/dispatch/scope.h"
#include "aten/nn/memory_format.h"
#include "core/status.h"
#include "ir/infer.h"
#include "runtime/tensor.h"

#define POOL_MAX_DIMS 3

typedef struct pool_geometry {
    int dims;                    /* spatial axes: 1, 2 or 3 */
    int64_t n, c;                /* input as [N, C, in...] */
    int64_t in[POOL_MAX_DIMS], out[POOL_MAX_DIMS];
    int64_t kernel[POOL_MAX_DIMS], stride[POOL_MAX_DIMS], padding[POOL_MAX_DIMS],
        dilation[POOL_MAX_DIMS];
    int64_t extra[POOL_MAX_DIMS]; /* padding past the end that ceil_mode's last windows reach */
    bool batched;                 /* the input had a batch axis */
} pool_geometry;

/* One value of an int[dims] argument: a single value stands for all. */
static int64_t list_value(const porta_value *v, int i, int64_t fallback) {
    if (v->kind != PORTA_VALUE_INTS || v->ints.count == 0) return fallback;
    return v->ints.items[v->ints.count == 1 ? 0 : i];
}

/* "C x D x H x W" of a pooling geometry's input or output. */
static const char *format_volume(char *buf, size_t cap, int64_t c, const int64_t *sizes,
                                 int dims) {
    int used = snprintf(buf, cap, "%lld", (long long)c);
    for (int i = 0; i < dims && used > 0 && (size_t)used < cap; i++)
        used += snprintf(buf + used, cap - (size_t)used, "x%lld", (long long)sizes[i]);
    return buf;
}

/* The counts an int[dims] argument may have: a single int or `dims` ints
 * (1-D pooling takes only one); stride may also be empty (the kernel). */
static bool list_count_ok(const porta_value *v, int dims, bool may_be_empty) {
    int count = v->ints.count;
    return count == 1 || count == dims || (may_be_empty && count == 0);
}

/* Reads kernel_size, stride, padding, dilation (NULL: 1) for input x
 * pooled over its last `dims` axes. */
static porta_status *read_pool(const char *op, int dims, const porta_tensor *x,
                               const porta_value *kernel, const porta_value *stride,
                               const porta_value *padding, const porta_value *dilation,
                               bool ceil_mode, pool_geometry *g) {
    const porta_value *lists[4] = {kernel, stride, padding, dilation};
    for (int k = 0; k < 4; k++)
        if (lists[k] && !list_count_ok(lists[k], dims, k == 1))
            return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                               "%s: kernel_size, stride, padding and dilation must be a single "
                               "int or %d ints (stride may be empty), got %d values",
                               op, dims, lists[k]->ints.count);
    char b[CORE_SHAPE_STR_CAP];
    if (x->rank != dims + 1 && x->rank != dims + 2)
        return porta_error(PORTA_ERR_SHAPE, "%s: expected a %dD or %dD input, got %s", op,
                           dims + 1, dims + 2, core_format_shape(b, sizeof b, x->rank, x->sizes));
    g->dims = dims;
    g->batched = x->rank == dims + 2;
    g->n = g->batched ? x->sizes[0] : 1;
    g->c = x->sizes[x->rank - dims - 1];
    bool empty = false;
    for (int i = 0; i < dims; i++) {
        g->in[i] = x->sizes[x->rank - dims + i];
        g->kernel[i] = list_value(kernel, i, 1);
        g->stride[i] = list_value(stride, i, g->kernel[i]);
        g->padding[i] = list_value(padding, i, 0);
        g->dilation[i] = dilation ? list_value(dilation, i, 1) : 1;
        if (g->kernel[i] < 1 || g->stride[i] < 1 || g->dilation[i] < 1 || g->padding[i] < 0)
            return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                               "%s: kernel size, stride and dilation must be > 0 and padding "
                               ">= 0, got %lld, %lld, %lld, %lld",
                               op, (long long)g->kernel[i], (long long)g->stride[i],
                               (long long)g->dilation[i], (long long)g->padding[i]);
        if (g->padding[i] > g->kernel[i] / 2)
            return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                               "%s: pad should be at most half of effective kernel size, but "
                               "got pad=%lld, kernel_size=%lld",
                               op, (long long)g->padding[i], (long long)g->kernel[i]);
        g->out[i] = ir_pooled_size(g->in[i], g->kernel[i], g->padding[i], g->stride[i],
                                g->dilation[i], ceil_mode);
        int64_t reach = (g->out[i] - 1) * g->stride[i] + g->dilation[i] * (g->kernel[i] - 1) + 1,
                padded = g->in[i] + 2 * g->padding[i];
        g->extra[i] = reach > padded ? reach - padded : 0;
        empty = empty || g->out[i] < 1;
    }
    if (empty) {
        char in[CORE_SHAPE_STR_CAP], out[CORE_SHAPE_STR_CAP];
        return porta_error(PORTA_ERR_SHAPE,
                           "%s: given input size (%s), calculated output size (%s) is too small",
                           op, format_volume(in, sizeof in, g->c, g->in, dims),
                           format_volume(out, sizeof out, g->c, g->out, dims));
    }
    return NULL;
}

static int64_t product(const int64_t *sizes, int count) {
    int64_t p = 1;
    for (int i = 0; i < count; i++) p *= sizes[i];
    return p;
}

/* [N, C, then `dims` sizes]: the rank 2 + dims shape. */
static int pool_shape(const pool_geometry *g, const int64_t *spatial, int64_t *shape) {
    shape[0] = g->n;
    shape[1] = g->c;
    for (int i = 0; i < g->dims; i++) shape[2 + i] = spatial[i];
    return 2 + g->dims;
}

/* x as [N, C, in...]. */
static porta_tensor *as_batched(aten_scope *s, const porta_tensor *x, const pool_geometry *g) {
    int64_t shape[2 + POOL_MAX_DIMS];
    return scope_reshape(s, x, pool_shape(g, g->in, shape), shape);
}

/* A pooled [N, C, out...] result in the input's layout (no batch axis if
 * the input had none). */
static porta_tensor *as_input_rank(aten_scope *s, porta_tensor *y, const pool_geometry *g) {
    if (g->batched || !y) return y;
    return scope_reshape(s, y, y->rank - 1, y->sizes + 1);
}

/* The windows of x [N, C, in...] padded with `pad_value` (and ceil_mode's
 * extra with `extra_value`): a view [N, C, out..., kernel...]. */
static porta_tensor *windows(aten_scope *s, const porta_tensor *x, const pool_geometry *g,
                             double pad_value, double extra_value) {
    int rank = 2 + g->dims;
    int64_t pads[2 * (2 + POOL_MAX_DIMS)] = {0}, more[2 * (2 + POOL_MAX_DIMS)] = {0};
    bool padding = false, extra = false;
    for (int i = 0; i < g->dims; i++) {
        pads[2 * (2 + i)] = pads[2 * (2 + i) + 1] = g->padding[i];
        more[2 * (2 + i) + 1] = g->extra[i];
        padding = padding || g->padding[i];
        extra = extra || g->extra[i];
    }
    /* without padding the windows are a view of x itself: no copy */
    const porta_tensor *padded = padding ? scope_pad(s, x, pads, pad_value) : x;
    if (extra) padded = scope_pad(s, padded, more, extra_value);
    if (!padded) return NULL;
    int64_t sizes[2 + 2 * POOL_MAX_DIMS], strides[2 + 2 * POOL_MAX_DIMS];
    for (int i = 0; i < 2; i++) {
        sizes[i] = padded->sizes[i];
        strides[i] = padded->strides[i];
    }
    for (int i = 0; i < g->dims; i++) {
        int64_t step = padded->strides[2 + i];
        sizes[2 + i] = g->out[i];
        strides[2 + i] = step * g->stride[i];
        sizes[rank + i] = g->kernel[i];
        strides[rank + i] = step * g->dilation[i];
    }
    return scope_restride(s, padded, rank + g->dims, sizes, strides);
}

/* The lowest value of a dtype: what max pooling pads with. */
static double lowest(porta_dtype dtype) {
    switch (dtype) {
    case PORTA_U8: return 0;
    case PORTA_I8: return -128;
    case PORTA_I16: return -32768;
    case PORTA_I32: return -2147483648.0;
    case PORTA_I64: return -9223372036854775808.0;
    default: return -INFINITY;
    }
}

static porta_status *check_dtype(const char *op, const porta_tensor *x, bool integers) {
    if (x->dtype == PORTA_BOOL || (!integers && !porta_dtype_is_float(x->dtype) &&
                                   x->dtype != PORTA_I64))
        return porta_error(PORTA_ERR_DTYPE, "%s: not implemented for '%s'", op,
                           porta_dtype_name(x->dtype));
    return NULL;
}

/* Scatter-adds grad [N, C, L] at flat input indices [N, C, L] (any
 * broadcast of them) into zeros [N, C, size]. */
static porta_tensor *scatter_back(aten_scope *s, const porta_tensor *grad, const porta_tensor *index,
                                  int64_t n, int64_t c, int64_t size) {
    if (!grad || !index) return NULL;
    int64_t flat[3] = {n, c, size};
    /* one zero broadcast: the scatter's copy of it into its result is then
     * the only pass that writes the zeros */
    porta_tensor *zero = scope_full(s, grad->buffer->device, grad->dtype, 0, NULL, 0);
    porta_tensor *zeros = scope_expand(s, zero, 3, flat);
    return scope_scatter(s, zeros, 2, index, grad, PORTA_SCATTER_ADD);
}

/* Whether every window has a tap inside the input. Only windows that
 * start in the left padding can miss it, when the dilation steps over the
 * whole input; PyTorch gives such a window -inf (the dtype's lowest) at the
 * index its first tap would have, past the input. */
static bool windows_reach_input(const pool_geometry *g) {
    for (int i = 0; i < g->dims; i++)
        for (int64_t start = -g->padding[i]; start < 0; start += g->stride[i]) {
            int64_t steps = (-start + g->dilation[i] - 1) / g->dilation[i];
            if (start + steps * g->dilation[i] >= g->in[i]) return false;
        }
    return true;
}

/* The window maxima of x [N, C, in...] and their flat indices [N, C,
 * out...]: the indices from the pooling primitive (one pass over the
 * windows, no temporaries), the maxima gathered at them; where a window
 * lies wholly in the padding, whose index points past the input, the maxima
 * are reduced over the padded windows instead. */
static void max_pool_values(aten_scope *s, const porta_tensor *x, const pool_geometry *g,
                            bool ceil_mode, porta_tensor **values, porta_tensor **indices) {
    porta_tensor *index =
        scope_max_pool_indices(s, x, g->kernel, g->stride, g->padding, g->dilation,
                               ceil_mode ? PORTA_POOL_CEIL : PORTA_POOL_FLOOR);
    *indices = index;
    int64_t shape[2 + POOL_MAX_DIMS];
    int rank = pool_shape(g, g->out, shape);
    if (windows_reach_input(g)) {
        int64_t rows[3] = {g->n, g->c, product(g->in, g->dims)},
                picked[3] = {g->n, g->c, product(g->out, g->dims)};
        porta_tensor *flat = scope_gather(s, scope_reshape(s, x, 3, rows), 2,
                                          scope_reshape(s, index, 3, picked));
        *values = scope_reshape(s, flat, rank, shape);
        return;
    }
    int axes[POOL_MAX_DIMS];
    for (int i = 0; i < g->dims; i++) axes[i] = rank + i;
    *values = scope_reduce(s, PORTA_REDUCE_MAX,
                           windows(s, x, g, lowest(x->dtype), lowest(x->dtype)), axes, g->dims,
                           false);
}

/* max_pool{2,3}d_with_indices(self, kernel_size, stride, padding, dilation,
 * ceil_mode): the window maxima and their flat indices into in... */
static porta_status *max_pool(const char *op, int dims, const porta_value *args,
                              aten_results *results) {
    const porta_tensor *x = args[0].tensor;
    pool_geometry g;
    PORTA_TRY(check_dtype(op, x, true));
    PORTA_TRY(read_pool(op, dims, x, &args[1], &args[2], &args[3], &args[4], args[5].b, &g));
    porta_memory_format format = aten_suggest_memory_format(args[0].tensor);
    int first = results->count;
    aten_scope s;
    scope_begin(&s);
    porta_tensor *values = NULL, *index = NULL;
    porta_tensor *batched = as_batched(&s, x, &g);
    if (batched) max_pool_values(&s, batched, &g, args[5].b, &values, &index);
    scope_push(&s, results, as_input_rank(&s, values, &g));
    scope_push(&s, results, as_input_rank(&s, index, &g));
    return aten_results_in_format(scope_end(&s), results, first, format);
}

/* max_pool{2,3}d_with_indices_backward(grad_output, self, kernel_size,
 * stride, padding, dilation, ceil_mode, indices) */
static porta_status *max_pool_backward(const char *op, int dims, const porta_value *args,
                                       aten_results *results) {
    const porta_tensor *gy = args[0].tensor, *x = args[1].tensor, *indices = args[7].tensor;
    pool_geometry g;
    PORTA_TRY(read_pool(op, dims, x, &args[2], &args[3], &args[4], &args[5], args[6].b, &g));
    porta_memory_format format = aten_suggest_memory_format(args[1].tensor);
    int first = results->count;
    aten_scope s;
    scope_begin(&s);
    int64_t flat[3] = {g.n, g.c, product(g.out, dims)};
    porta_tensor *grad = scope_reshape(&s, gy, 3, flat);
    porta_tensor *index = scope_reshape(&s, indices, 3, flat);
    porta_tensor *gx = scatter_back(&s, grad, index, g.n, g.c, product(g.in, dims));
    scope_push(&s, results, scope_reshape(&s, gx, x->rank, x->sizes));
    return aten_results_in_format(scope_end(&s), results, first, format);
}

/* What each average window's sum is divided by: [1, 1, out...] (or a
 * rank-0 divisor_override). */
static porta_tensor *avg_divisors(aten_scope *s, porta_device *device, porta_dtype dtype,
                                  const pool_geometry *g, bool count_include_pad,
                                  const porta_value *divisor_override) {
    if (divisor_override->kind == PORTA_VALUE_INT)
        return scope_full(s, device, dtype, 0, NULL, (double)divisor_override->i);
    pool_geometry single = *g;
    single.n = single.c = 1;
    int64_t shape[2 + POOL_MAX_DIMS];
    int rank = pool_shape(&single, g->in, shape);
    porta_tensor *ones = scope_full(s, device, dtype, rank, shape, 1);
    int axes[POOL_MAX_DIMS];
    for (int i = 0; i < g->dims; i++) axes[i] = rank + i;
    return scope_reduce(s, PORTA_REDUCE_SUM, windows(s, ones, g, count_include_pad ? 1 : 0, 0),
                        axes, g->dims, false);
}

static porta_status *check_divisor(const char *op, const porta_value *divisor_override) {
    if (divisor_override->kind == PORTA_VALUE_INT && divisor_override->i == 0)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "%s: divisor must be not zero", op);
    return NULL;
}

/* sum / divisor in x's dtype; int64 divides toward zero as PyTorch's
 * integer kernel does. */
static porta_tensor *divide(aten_scope *s, porta_tensor *sum, porta_tensor *divisor,
                            porta_dtype dtype) {
    if (porta_dtype_is_float(dtype)) return scope_binary(s, PORTA_DIV, sum, divisor);
    porta_tensor *q = scope_binary(s, PORTA_DIV, scope_cast(s, sum, PORTA_F64),
                                   scope_cast(s, divisor, PORTA_F64));
    return scope_cast(s, scope_unary(s, PORTA_TRUNC, q), dtype);
}

/* avg_pool{2,3}d(self, kernel_size, stride, padding, ceil_mode,
 * count_include_pad, divisor_override) */
static porta_status *avg_pool(const char *op, int dims, const porta_value *args,
                              aten_results *results) {
    const porta_tensor *x = args[0].tensor;
    const porta_value *divisor_override = &args[6];
    pool_geometry g;
    PORTA_TRY(check_dtype(op, x, false));
    PORTA_TRY(check_divisor(op, divisor_override));
    PORTA_TRY(read_pool(op, dims, x, &args[1], &args[2], &args[3], NULL, args[4].b, &g));
    porta_memory_format format = aten_suggest_2d_memory_format(args[0].tensor);
    int first = results->count;
    aten_scope s;
    scope_begin(&s);
    int axes[POOL_MAX_DIMS];
    for (int i = 0; i < dims; i++) axes[i] = 2 + dims + i;
    porta_tensor *win = windows(&s, as_batched(&s, x, &g), &g, 0, 0);
    porta_tensor *sum = scope_reduce(&s, PORTA_REDUCE_SUM, win, axes, dims, false);
    porta_tensor *divisor =
        avg_divisors(&s, x->buffer->device, x->dtype, &g, args[5].b, divisor_override);
    porta_tensor *y = divide(&s, sum, divisor, x->dtype);
    if (y && y->dtype != x->dtype) y = scope_cast(&s, y, x->dtype);
    scope_push(&s, results, as_input_rank(&s, y, &g));
    return aten_results_in_format(scope_end(&s), results, first, format);
}

/* avg_pool{2,3}d_backward(grad_output, self, kernel_size, stride, padding,
 * ceil_mode, count_include_pad, divisor_override) */
static porta_status *avg_pool_backward(const char *op, int dims, const porta_value *args,
                                       aten_results *results) {
    const porta_tensor *gy = args[0].tensor, *x = args[1].tensor;
    pool_geometry g;
    PORTA_TRY(check_dtype(op, x, false));
    PORTA_TRY(check_divisor(op, &args[7]));
    PORTA_TRY(read_pool(op, dims, x, &args[2], &args[3], &args[4], NULL, args[5].b, &g));
    porta_memory_format format = aten_suggest_2d_memory_format(args[1].tensor);
    int first = results->count;
    aten_scope s;
    scope_begin(&s);
    porta_device *device = x->buffer->device;
    int64_t out_shape[2 + POOL_MAX_DIMS];
    int rank = pool_shape(&g, g.out, out_shape);
    porta_tensor *share = divide(&s, scope_reshape(&s, gy, rank, out_shape),
                                 avg_divisors(&s, device, gy->dtype, &g, args[6].b, &args[7]),
                                 gy->dtype);
    /* every window element receives its window's share */
    int64_t share_shape[2 + 2 * POOL_MAX_DIMS], spread_shape[2 + 2 * POOL_MAX_DIMS];
    pool_shape(&g, g.out, share_shape);
    pool_shape(&g, g.out, spread_shape);
    for (int i = 0; i < dims; i++) {
        share_shape[rank + i] = 1;
        spread_shape[rank + i] = g.kernel[i];
    }
    int64_t count = product(g.out, dims) * product(g.kernel, dims);
    int64_t flat[3] = {g.n, g.c, count}, one_row[3] = {1, 1, count};
    porta_tensor *spread = scope_reshape(
        &s, scope_expand(&s, scope_reshape(&s, share, rank + dims, share_shape), rank + dims,
                         spread_shape),
        3, flat);
    /* the flat padded index of every window element: windows of an arange */
    pool_geometry unpadded = g;
    unpadded.n = unpadded.c = 1;
    for (int i = 0; i < dims; i++) {
        unpadded.in[i] = g.in[i] + 2 * g.padding[i] + g.extra[i];
        unpadded.padding[i] = unpadded.extra[i] = 0;
    }
    int64_t padded_size = product(unpadded.in, dims), positions_shape[2 + POOL_MAX_DIMS];
    pool_shape(&unpadded, unpadded.in, positions_shape);
    porta_tensor *positions =
        scope_reshape(&s, scope_arange(&s, device, padded_size), rank, positions_shape);
    porta_tensor *index = scope_expand(
        &s, scope_reshape(&s, windows(&s, positions, &unpadded, 0, 0), 3, one_row), 3, flat);
    porta_tensor *padded = scatter_back(&s, spread, index, g.n, g.c, padded_size);
    int64_t padded_shape[2 + POOL_MAX_DIMS];
    pool_shape(&g, unpadded.in, padded_shape);
    porta_tensor *gx = scope_reshape(&s, padded, rank, padded_shape);
    for (int i = 0; i < dims; i++)
        gx = scope_slice(&s, gx, 2 + i, g.padding[i], g.padding[i] + g.in[i], 1);
    scope_push(&s, results, scope_reshape(&s, scope_contiguous(&s, gx), x->rank, x->sizes));
    return aten_results_in_format(scope_end(&s), results, first, format);
}

static porta_status *max_pool2d_with_indices(const porta_value *args, aten_results *results) {
    return max_pool("max_pool2d", 2, args, results);
}
static porta_status *max_pool3d_with_indices(const porta_value *args, aten_results *results) {
    return max_pool("max_pool3d", 3, args, results);
}
static porta_status *max_pool2d_with_indices_backward(const porta_value *args,
                                                      aten_results *results) {
    return max_pool_backward("max_pool2d_backward", 2, args, results);
}
static porta_status *max_pool3d_with_indices_backward(const porta_value *args,
                                                      aten_results *results) {
    return max_pool_backward("max_pool3d_backward", 3, args, results);
}
static porta_status *avg_pool2d(const porta_value *args, aten_results *results) {
    return avg_pool("avg_pool2d", 2, args, results);
}
static porta_status *avg_pool3d(const porta_value *args, aten_results *results) {
    return avg_pool("avg_pool3d", 3, args, results);
}
static porta_status *avg_pool2d_backward(const porta_value *args, aten_results *results) {
    return avg_pool_backward("avg_pool2d_backward", 2, args, results);
}
static porta_status *avg_pool3d_backward(const porta_value *args, aten_results *results) {
    return avg_pool_backward("avg_pool3d_backward", 3, args, results);
}

const aten_op aten_nn_pool_ops[] = {
    {"avg_pool2d", "TIIIbbj", avg_pool2d},
    {"avg_pool2d_backward", "TTIIIbbj", avg_pool2d_backward},
    {"avg_pool3d", "TIIIbbj", avg_pool3d},
    {"avg_pool3d_backward", "TTIIIbbj", avg_pool3d_backward},
    {"max_pool2d_with_indices", "TIIIIb", max_pool2d_with_indices},
    {"max_pool2d_with_indices_backward", "TTIIIIbT", max_pool2d_with_indices_backward},
    {"max_pool3d_with_indices", "TIIIIb", max_pool3d_with_indices},
    {"max_pool3d_with_indices_backward", "TTIIIIbT", max_pool3d_with_indices_backward},
    {NULL, NULL, NULL},
};
