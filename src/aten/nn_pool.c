/* Pooling aten ops over 2-D windows: max_pool2d_with_indices, avg_pool2d,
 * _adaptive_avg_pool2d and their gradients. A pooling window is a strided
 * view of the padded input ([N, C, OH, OW, KH, KW]), reduced over its two
 * window axes; gradients scatter-add back through the windows' flat
 * indices. Adaptive pooling sums windows with 0/1 matrices on each side. */
#include <math.h>
#include <stdlib.h>

#include "aten/nn_scope.h"
#include "core/status.h"
#include "core/tensor.h"

typedef struct pool_geometry {
    int64_t n, c, h, w;        /* input, as 4-D */
    int64_t oh, ow;            /* output */
    int64_t kernel[2], stride[2], padding[2], dilation[2];
    int64_t extra[2];          /* padding past the end that ceil_mode's last windows reach */
    bool batched;              /* the input had a batch axis */
} pool_geometry;

/* One value of an int[2] argument: a single value stands for both. */
static int64_t pair_value(const porta_value *v, int i, int64_t fallback) {
    if (v->kind != PORTA_VALUE_INTS || v->ints.count == 0) return fallback;
    return v->ints.items[v->ints.count == 1 ? 0 : i];
}

static int64_t pooled_size(int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dilation,
                           bool ceil_mode) {
    int64_t span = in + 2 * pad - dilation * (k - 1) - 1 + (ceil_mode ? stride - 1 : 0);
    int64_t out = (span >= 0 ? span / stride : -((-span + stride - 1) / stride)) + 1;
    /* the last window must start inside the input or its left padding */
    if (ceil_mode && (out - 1) * stride >= in + pad) out--;
    return out;
}

/* Reads kernel_size, stride, padding, dilation (NULL: 1) for input x. */
static porta_status *read_pool(const char *op, const porta_tensor *x, const porta_value *kernel,
                               const porta_value *stride, const porta_value *padding,
                               const porta_value *dilation, bool ceil_mode, pool_geometry *g) {
    const porta_value *lists[3] = {kernel, padding, dilation};
    for (int k = 0; k < 3; k++)
        if (lists[k] && lists[k]->ints.count != 1 && lists[k]->ints.count != 2)
            return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                               "%s: kernel_size, padding and dilation must be a single int or "
                               "a pair of ints, got %d values",
                               op, lists[k]->ints.count);
    if (stride->ints.count != 0 && stride->ints.count != 1 && stride->ints.count != 2)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "%s: stride must be empty, a single int or a pair of ints, got %d "
                           "values",
                           op, stride->ints.count);
    if (x->rank != 3 && x->rank != 4) {
        char b[PORTA_SHAPE_STR_CAP];
        return porta_error(PORTA_ERR_SHAPE, "%s: expected a 3D or 4D input, got %s", op,
                           porta_format_shape(b, sizeof b, x->rank, x->sizes));
    }
    g->batched = x->rank == 4;
    g->n = g->batched ? x->sizes[0] : 1;
    g->c = x->sizes[x->rank - 3];
    g->h = x->sizes[x->rank - 2];
    g->w = x->sizes[x->rank - 1];
    int64_t in[2] = {g->h, g->w}, out[2];
    for (int i = 0; i < 2; i++) {
        g->kernel[i] = pair_value(kernel, i, 1);
        g->stride[i] = pair_value(stride, i, g->kernel[i]);
        g->padding[i] = pair_value(padding, i, 0);
        g->dilation[i] = dilation ? pair_value(dilation, i, 1) : 1;
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
        out[i] = pooled_size(in[i], g->kernel[i], g->padding[i], g->stride[i], g->dilation[i],
                             ceil_mode);
        int64_t reach = (out[i] - 1) * g->stride[i] + g->dilation[i] * (g->kernel[i] - 1) + 1;
        g->extra[i] = reach > in[i] + 2 * g->padding[i] ? reach - in[i] - 2 * g->padding[i] : 0;
    }
    g->oh = out[0];
    g->ow = out[1];
    if (g->oh < 1 || g->ow < 1)
        return porta_error(PORTA_ERR_SHAPE,
                           "%s: given input size (%lldx%lldx%lld), calculated output size "
                           "(%lldx%lldx%lld) is too small",
                           op, (long long)g->c, (long long)g->h, (long long)g->w,
                           (long long)g->c, (long long)g->oh, (long long)g->ow);
    return NULL;
}

/* x as [N, C, H, W]. */
static porta_tensor *as_4d(nn_scope *s, const porta_tensor *x, const pool_geometry *g) {
    int64_t sizes[4] = {g->n, g->c, g->h, g->w};
    return nn_reshape(s, x, 4, sizes);
}

/* A pooled [N, C, OH, OW] result in the input's layout (3-D input: no batch). */
static porta_tensor *as_input_rank(nn_scope *s, porta_tensor *y, const pool_geometry *g) {
    if (g->batched || !y) return y;
    return nn_reshape(s, y, 3, y->sizes + 1);
}

/* The windows of x [N, C, H, W] padded with `pad_value` (and ceil_mode's
 * extra with `extra_value`): a view [N, C, OH, OW, KH, KW]. */
static porta_tensor *windows(nn_scope *s, const porta_tensor *x, const pool_geometry *g,
                             double pad_value, double extra_value) {
    int64_t pads[8] = {0, 0, 0, 0, g->padding[0], g->padding[0], g->padding[1], g->padding[1]};
    porta_tensor *padded = nn_pad(s, x, pads, pad_value);
    if (g->extra[0] || g->extra[1]) {
        int64_t more[8] = {0, 0, 0, 0, 0, g->extra[0], 0, g->extra[1]};
        padded = nn_pad(s, padded, more, extra_value);
    }
    if (!padded) return NULL;
    const int64_t *st = padded->strides;
    int64_t sizes[6] = {padded->sizes[0], padded->sizes[1], g->oh, g->ow, g->kernel[0],
                        g->kernel[1]};
    int64_t strides[6] = {st[0], st[1], st[2] * g->stride[0], st[3] * g->stride[1],
                          st[2] * g->dilation[0], st[3] * g->dilation[1]};
    return nn_restride(s, padded, 6, sizes, strides);
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
static porta_tensor *scatter_back(nn_scope *s, const porta_tensor *grad, const porta_tensor *index,
                                  int64_t n, int64_t c, int64_t size) {
    if (!grad || !index) return NULL;
    int64_t flat[3] = {n, c, size};
    porta_tensor *zeros = nn_full(s, grad->buffer->device, grad->dtype, 3, flat, 0);
    return nn_scatter(s, zeros, 2, index, grad, PORTA_SCATTER_ADD);
}

/* oh * stride - padding for each output position: int64 [out]. */
static porta_tensor *window_starts(nn_scope *s, porta_device *device, int64_t out, int64_t stride,
                                   int64_t padding) {
    porta_tensor *at = nn_binary_num(s, PORTA_MUL, nn_arange(s, device, out), (double)stride);
    return nn_binary_num(s, PORTA_SUB, at, (double)padding);
}

/* max_pool2d_with_indices(self, kernel_size, stride, padding, dilation, ceil_mode) */
static porta_status *max_pool2d_with_indices(const porta_value *args, aten_results *results) {
    const porta_tensor *x = args[0].tensor;
    pool_geometry g;
    PORTA_TRY(check_dtype("max_pool2d", x, true));
    PORTA_TRY(read_pool("max_pool2d", x, &args[1], &args[2], &args[3], &args[4], args[5].b, &g));
    nn_scope s = {0};
    porta_device *device = x->buffer->device;
    porta_tensor *win = windows(&s, as_4d(&s, x, &g), &g, lowest(x->dtype), lowest(x->dtype));
    int64_t flat[5] = {g.n, g.c, g.oh, g.ow, g.kernel[0] * g.kernel[1]};
    porta_tensor *rows = nn_reshape(&s, win, 5, flat);
    int last = 4;
    porta_tensor *values = nn_reduce(&s, PORTA_REDUCE_MAX, rows, &last, 1, false);
    porta_tensor *local = nn_reduce(&s, PORTA_REDUCE_ARGMAX, rows, &last, 1, false);
    /* window position (kh, kw) of output (oh, ow) -> flat input index h * W + w */
    porta_tensor *kh = nn_binary_num(&s, PORTA_FLOOR_DIVIDE, local, (double)g.kernel[1]);
    porta_tensor *kw = nn_binary_num(&s, PORTA_REMAINDER, local, (double)g.kernel[1]);
    int64_t column[2] = {g.oh, 1};
    porta_tensor *top = nn_reshape(&s, window_starts(&s, device, g.oh, g.stride[0], g.padding[0]),
                                   2, column);
    porta_tensor *left = window_starts(&s, device, g.ow, g.stride[1], g.padding[1]);
    porta_tensor *h = nn_binary(&s, PORTA_ADD, top,
                                nn_binary_num(&s, PORTA_MUL, kh, (double)g.dilation[0]));
    porta_tensor *w = nn_binary(&s, PORTA_ADD, left,
                                nn_binary_num(&s, PORTA_MUL, kw, (double)g.dilation[1]));
    porta_tensor *index = nn_binary(&s, PORTA_ADD, nn_binary_num(&s, PORTA_MUL, h, (double)g.w), w);
    nn_push(&s, results, as_input_rank(&s, values, &g));
    nn_push(&s, results, as_input_rank(&s, index, &g));
    return nn_end(&s);
}

/* max_pool2d_with_indices_backward(grad_output, self, kernel_size, stride,
 * padding, dilation, ceil_mode, indices) */
static porta_status *max_pool2d_with_indices_backward(const porta_value *args,
                                                      aten_results *results) {
    const porta_tensor *gy = args[0].tensor, *x = args[1].tensor, *indices = args[7].tensor;
    pool_geometry g;
    PORTA_TRY(read_pool("max_pool2d_backward", x, &args[2], &args[3], &args[4], &args[5],
                        args[6].b, &g));
    nn_scope s = {0};
    int64_t flat[3] = {g.n, g.c, g.oh * g.ow};
    porta_tensor *grad = nn_reshape(&s, gy, 3, flat);
    porta_tensor *index = nn_reshape(&s, indices, 3, flat);
    porta_tensor *gx = scatter_back(&s, grad, index, g.n, g.c, g.h * g.w);
    nn_push(&s, results, nn_reshape(&s, gx, x->rank, x->sizes));
    return nn_end(&s);
}

/* What each avg_pool2d window's sum is divided by: [1, 1, OH, OW] (or a
 * rank-0 divisor_override). */
static porta_tensor *avg_divisors(nn_scope *s, porta_device *device, porta_dtype dtype,
                                  const pool_geometry *g, bool count_include_pad,
                                  const porta_value *divisor_override) {
    if (divisor_override->kind == PORTA_VALUE_INT)
        return nn_full(s, device, dtype, 0, NULL, (double)divisor_override->i);
    int64_t sizes[4] = {1, 1, g->h, g->w};
    porta_tensor *ones = nn_full(s, device, dtype, 4, sizes, 1);
    int axes[2] = {4, 5};
    return nn_reduce(s, PORTA_REDUCE_SUM, windows(s, ones, g, count_include_pad ? 1 : 0, 0), axes,
                     2, false);
}

static porta_status *check_divisor(const porta_value *divisor_override) {
    if (divisor_override->kind == PORTA_VALUE_INT && divisor_override->i == 0)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "avg_pool2d: divisor must be not zero");
    return NULL;
}

/* sum / divisor in x's dtype; int64 divides toward zero as PyTorch's
 * integer kernel does. */
static porta_tensor *divide(nn_scope *s, porta_tensor *sum, porta_tensor *divisor,
                            porta_dtype dtype) {
    if (porta_dtype_is_float(dtype)) return nn_binary(s, PORTA_DIV, sum, divisor);
    porta_tensor *q = nn_binary(s, PORTA_DIV, nn_cast(s, sum, PORTA_F64),
                                nn_cast(s, divisor, PORTA_F64));
    return nn_cast(s, nn_unary(s, PORTA_TRUNC, q), dtype);
}

/* avg_pool2d(self, kernel_size, stride, padding, ceil_mode,
 * count_include_pad, divisor_override) */
static porta_status *avg_pool2d(const porta_value *args, aten_results *results) {
    const porta_tensor *x = args[0].tensor;
    pool_geometry g;
    PORTA_TRY(check_dtype("avg_pool2d", x, false));
    PORTA_TRY(check_divisor(&args[6]));
    PORTA_TRY(read_pool("avg_pool2d", x, &args[1], &args[2], &args[3], NULL, args[4].b, &g));
    nn_scope s = {0};
    int axes[2] = {4, 5};
    porta_tensor *sum =
        nn_reduce(&s, PORTA_REDUCE_SUM, windows(&s, as_4d(&s, x, &g), &g, 0, 0), axes, 2, false);
    porta_tensor *divisor =
        avg_divisors(&s, x->buffer->device, x->dtype, &g, args[5].b, &args[6]);
    porta_tensor *y = divide(&s, sum, divisor, x->dtype);
    if (y && y->dtype != x->dtype) y = nn_cast(&s, y, x->dtype);
    nn_push(&s, results, as_input_rank(&s, y, &g));
    return nn_end(&s);
}

/* avg_pool2d_backward(grad_output, self, kernel_size, stride, padding,
 * ceil_mode, count_include_pad, divisor_override) */
static porta_status *avg_pool2d_backward(const porta_value *args, aten_results *results) {
    const porta_tensor *gy = args[0].tensor, *x = args[1].tensor;
    pool_geometry g;
    PORTA_TRY(check_dtype("avg_pool2d_backward", x, false));
    PORTA_TRY(check_divisor(&args[7]));
    PORTA_TRY(read_pool("avg_pool2d_backward", x, &args[2], &args[3], &args[4], NULL, args[5].b,
                        &g));
    nn_scope s = {0};
    porta_device *device = x->buffer->device;
    int64_t out4[4] = {g.n, g.c, g.oh, g.ow};
    porta_tensor *share = divide(&s, nn_reshape(&s, gy, 4, out4),
                                 avg_divisors(&s, device, gy->dtype, &g, args[6].b, &args[7]),
                                 gy->dtype);
    /* every window element receives its window's share */
    int64_t k = g.kernel[0] * g.kernel[1], count = g.oh * g.ow * k;
    int64_t share6[6] = {g.n, g.c, g.oh, g.ow, 1, 1};
    int64_t spread6[6] = {g.n, g.c, g.oh, g.ow, g.kernel[0], g.kernel[1]};
    int64_t flat[3] = {g.n, g.c, count};
    porta_tensor *spread =
        nn_reshape(&s, nn_expand(&s, nn_reshape(&s, share, 6, share6), 6, spread6), 3, flat);
    /* the flat padded index of every window element: windows of an arange */
    int64_t hp = g.h + 2 * g.padding[0] + g.extra[0], wp = g.w + 2 * g.padding[1] + g.extra[1];
    int64_t positions4[4] = {1, 1, hp, wp}, one_row[3] = {1, 1, count};
    pool_geometry unpadded = g;
    unpadded.h = hp;
    unpadded.w = wp;
    unpadded.padding[0] = unpadded.padding[1] = unpadded.extra[0] = unpadded.extra[1] = 0;
    porta_tensor *positions = nn_reshape(&s, nn_arange(&s, device, hp * wp), 4, positions4);
    porta_tensor *index = nn_expand(
        &s, nn_reshape(&s, windows(&s, positions, &unpadded, 0, 0), 3, one_row), 3, flat);
    porta_tensor *padded = scatter_back(&s, spread, index, g.n, g.c, hp * wp);
    int64_t padded4[4] = {g.n, g.c, hp, wp};
    porta_tensor *gx = nn_reshape(&s, padded, 4, padded4);
    gx = nn_slice(&s, gx, 2, g.padding[0], g.padding[0] + g.h, 1);
    gx = nn_slice(&s, gx, 3, g.padding[1], g.padding[1] + g.w, 1);
    nn_push(&s, results, nn_reshape(&s, nn_contiguous(&s, gx), x->rank, x->sizes));
    return nn_end(&s);
}

/* The 0/1 matrix [out, in] whose row i marks adaptive window i, and each
 * window's length. */
static porta_tensor *adaptive_windows(nn_scope *s, porta_device *device, int64_t in, int64_t out,
                                      double *lengths) {
    if (s->status) return NULL;
    size_t count = (size_t)(in * out);
    double *marks = calloc(count ? count : 1, sizeof *marks);
    if (!marks)
        return nn_fail(s, porta_error(PORTA_ERR_OUT_OF_MEMORY, "adaptive_avg_pool2d: no memory"));
    for (int64_t i = 0; i < out; i++) {
        int64_t start = i * in / out, end = ((i + 1) * in + out - 1) / out;
        for (int64_t j = start; j < end; j++) marks[i * in + j] = 1;
        lengths[i] = (double)(end - start);
    }
    int64_t sizes[2] = {out, in};
    porta_tensor *t = nn_from_host(s, device, 2, sizes, marks);
    free(marks);
    return t;
}

/* The adaptive pooling matrices for rows and columns and
 * the window sizes [OH, OW]. */
static void adaptive_setup(nn_scope *s, const porta_tensor *x, int64_t oh, int64_t ow,
                           porta_tensor **rows, porta_tensor **cols, porta_tensor **sizes) {
    porta_device *device = x->buffer->device;
    int64_t h = x->sizes[x->rank - 2], w = x->sizes[x->rank - 1];
    double *lengths = malloc((size_t)(oh + ow + oh * ow + 1) * sizeof *lengths);
    if (!lengths) {
        nn_fail(s, porta_error(PORTA_ERR_OUT_OF_MEMORY, "adaptive_avg_pool2d: no memory"));
        return;
    }
    porta_dtype dtype = nn_compute_dtype(x->dtype);
    *rows = nn_cast(s, adaptive_windows(s, device, h, oh, lengths), dtype);
    *cols = nn_cast(s, adaptive_windows(s, device, w, ow, lengths + oh), dtype);
    double *area = lengths + oh + ow;
    for (int64_t i = 0; i < oh; i++)
        for (int64_t j = 0; j < ow; j++) area[i * ow + j] = lengths[i] * lengths[oh + j];
    int64_t shape[2] = {oh, ow};
    *sizes = nn_cast(s, nn_from_host(s, device, 2, shape, area), dtype);
    free(lengths);
}

static porta_status *check_adaptive(const porta_tensor *x, const porta_value *output_size) {
    PORTA_TRY(check_dtype("adaptive_avg_pool2d", x, false));
    if (x->dtype == PORTA_I64)
        return porta_error(PORTA_ERR_DTYPE, "adaptive_avg_pool2d: not implemented for 'Long'");
    if (output_size->ints.count != 2)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "adaptive_avg_pool2d: output_size must be 2, got %d",
                           output_size->ints.count);
    char b[PORTA_SHAPE_STR_CAP];
    if (x->rank != 3 && x->rank != 4)
        return porta_error(PORTA_ERR_SHAPE,
                           "adaptive_avg_pool2d: expected a 3D or 4D input, got %s",
                           porta_format_shape(b, sizeof b, x->rank, x->sizes));
    for (int i = 1; i < x->rank; i++)
        if (x->sizes[i] == 0)
            return porta_error(PORTA_ERR_SHAPE,
                               "adaptive_avg_pool2d: expected input to have non-zero size for "
                               "non-batch dimensions, but input has sizes %s with dimension %d "
                               "being empty",
                               porta_format_shape(b, sizeof b, x->rank, x->sizes), i);
    return NULL;
}

/* _adaptive_avg_pool2d(self, output_size): rows @ x @ cols^T / sizes */
static porta_status *adaptive_avg_pool2d(const porta_value *args, aten_results *results) {
    const porta_tensor *x = args[0].tensor;
    PORTA_TRY(check_adaptive(x, &args[1]));
    nn_scope s = {0};
    porta_tensor *rows = NULL, *cols = NULL, *sizes = NULL;
    adaptive_setup(&s, x, args[1].ints.items[0], args[1].ints.items[1], &rows, &cols, &sizes);
    int swap[2] = {1, 0};
    porta_tensor *cx = nn_cast(&s, x, nn_compute_dtype(x->dtype));
    porta_tensor *sums = nn_matmul(&s, rows, nn_matmul(&s, cx, nn_permute(&s, cols, swap)));
    nn_push(&s, results, nn_cast(&s, nn_binary(&s, PORTA_DIV, sums, sizes), x->dtype));
    return nn_end(&s);
}

/* _adaptive_avg_pool2d_backward(grad_output, self): rows^T @ (g / sizes) @ cols */
static porta_status *adaptive_avg_pool2d_backward(const porta_value *args, aten_results *results) {
    const porta_tensor *gy = args[0].tensor, *x = args[1].tensor;
    if (gy->rank != x->rank || gy->rank < 2)
        return porta_error(PORTA_ERR_SHAPE,
                           "adaptive_avg_pool2d_backward: grad_output rank %d differs from "
                           "input rank %d",
                           gy->rank, x->rank);
    const porta_value output_size = {.kind = PORTA_VALUE_INTS,
                                     .ints = {gy->sizes + gy->rank - 2, 2}};
    PORTA_TRY(check_adaptive(x, &output_size));
    nn_scope s = {0};
    porta_tensor *rows = NULL, *cols = NULL, *sizes = NULL;
    adaptive_setup(&s, x, output_size.ints.items[0], output_size.ints.items[1], &rows, &cols,
                   &sizes);
    int swap[2] = {1, 0};
    porta_tensor *share = nn_binary(&s, PORTA_DIV, nn_cast(&s, gy, nn_compute_dtype(gy->dtype)),
                                    sizes);
    porta_tensor *gx = nn_matmul(&s, nn_permute(&s, rows, swap), nn_matmul(&s, share, cols));
    nn_push(&s, results, nn_cast(&s, gx, gy->dtype));
    return nn_end(&s);
}

const aten_op aten_nn_pool_ops[] = {
    {"_adaptive_avg_pool2d", "TI", adaptive_avg_pool2d},
    {"_adaptive_avg_pool2d_backward", "TT", adaptive_avg_pool2d_backward},
    {"avg_pool2d", "TIIIbbj", avg_pool2d},
    {"avg_pool2d_backward", "TTIIIbbj", avg_pool2d_backward},
    {"max_pool2d_with_indices", "TIIIIb", max_pool2d_with_indices},
    {"max_pool2d_with_indices_backward", "TTIIIIbT", max_pool2d_with_indices_backward},
    {NULL, NULL, NULL},
};
