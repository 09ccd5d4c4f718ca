/* Convolution aten ops: convolution (N-d, grouped, transposed too) and
 * convolution_backward. The forward runs on porta_conv, the gradients of
 * the weight and the input on porta_conv_weight_grad and
 * porta_conv_input_grad; a transposed convolution is the latter. The one
 * transposed convolution that primitive cannot express (an output_padding
 * of at least the stride) is composed: a convolution of the input spread
 * out by the stride, padded and run against the flipped, channel-swapped
 * weight. */
#include "aten/dispatch/scope.h"
#include "aten/dispatch/op_reuse.h"
#include "aten/nn/memory_format.h"
#include "aten/shape/copy.h"

#include "core/status.h"
#include "runtime/tensor.h"

/* A conv's geometry, one entry per spatial axis. */
typedef struct conv_geometry {
    int spatial;
    int64_t stride[PORTA_MAX_RANK], padding[PORTA_MAX_RANK], dilation[PORTA_MAX_RANK];
    int64_t output_padding[PORTA_MAX_RANK];
    int64_t groups;
    bool transposed;
} conv_geometry;

/* An int list argument's value for spatial axis i: a single value stands
 * for every axis, as PyTorch expands it. */
static int64_t per_axis(const porta_value *list, int i, int64_t fallback) {
    if (list->kind != PORTA_VALUE_INTS || list->ints.count == 0) return fallback;
    return list->ints.items[list->ints.count == 1 ? 0 : i];
}

static porta_status *read_geometry(const porta_tensor *x, const porta_tensor *w,
                                   const porta_value *args, conv_geometry *g) {
    if (x->rank < 3 || w->rank != x->rank) {
        char bx[CORE_SHAPE_STR_CAP], bw[CORE_SHAPE_STR_CAP];
        return porta_error(PORTA_ERR_SHAPE,
                           "convolution: expected input [batch, channels, *spatial] and a weight "
                           "of the same rank, got input %s and weight %s",
                           core_format_shape(bx, sizeof bx, x->rank, x->sizes),
                           core_format_shape(bw, sizeof bw, w->rank, w->sizes));
    }
    g->spatial = x->rank - 2;
    const porta_value *lists[4] = {&args[0], &args[1], &args[2], &args[4]};
    for (int k = 0; k < 4; k++)
        if (lists[k]->ints.count != 1 && lists[k]->ints.count != g->spatial)
            return porta_error(PORTA_ERR_SHAPE,
                               "convolution: expected stride, padding, dilation and "
                               "output_padding of %d values (one per spatial axis), got %d",
                               g->spatial, lists[k]->ints.count);
    for (int i = 0; i < g->spatial; i++) {
        g->stride[i] = per_axis(&args[0], i, 1);
        g->padding[i] = per_axis(&args[1], i, 0);
        g->dilation[i] = per_axis(&args[2], i, 1);
        g->output_padding[i] = per_axis(&args[4], i, 0);
        if (g->stride[i] < 1 || g->dilation[i] < 1 || g->padding[i] < 0 ||
            g->output_padding[i] < 0)
            return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                               "convolution: expected stride and dilation >= 1, padding and "
                               "output_padding >= 0, got %lld, %lld, %lld, %lld on axis %d",
                               (long long)g->stride[i], (long long)g->dilation[i],
                               (long long)g->padding[i], (long long)g->output_padding[i], i);
    }
    g->transposed = args[3].b;
    g->groups = args[5].i;
    if (g->groups < 1)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "convolution: non-positive groups is not supported, got %lld",
                           (long long)g->groups);
    return NULL;
}

static porta_status *check_dtypes(const porta_tensor *x, const porta_tensor *w,
                                  const porta_tensor *bias) {
    if (x->dtype != w->dtype || (bias && bias->dtype != x->dtype))
        return porta_error(PORTA_ERR_DTYPE,
                           "convolution: input type (%s) and weight type (%s)%s%s should be the "
                           "same",
                           porta_dtype_name(x->dtype), porta_dtype_name(w->dtype),
                           bias ? " and bias type " : "", bias ? porta_dtype_name(bias->dtype) : "");
    if (x->dtype == PORTA_BOOL)
        return porta_error(PORTA_ERR_DTYPE, "convolution: not implemented for 'Bool'");
    return NULL;
}

/* porta_conv computes in floating point; PyTorch CPU convolves integers
 * too, which float64 reproduces exactly for values below 2^53. */
static porta_tensor *computable(aten_scope *s, const porta_tensor *t) {
    if (!t) return NULL;
    return porta_dtype_is_float(t->dtype) ? (porta_tensor *)t : scope_cast(s, t, PORTA_F64);
}

static porta_conv_params forward_params(const conv_geometry *g) {
    porta_conv_params p = {.groups = g->groups};
    for (int i = 0; i < g->spatial; i++) {
        p.stride[i] = g->stride[i];
        p.padding[i] = g->padding[i];
        p.dilation[i] = g->dilation[i];
    }
    return p;
}

/* The forward convolution written straight into a new tensor laid out in
 * `format`: the kernels write through any strides, so a channels-last
 * result costs no copy. */
static porta_tensor *conv_in_format(aten_scope *s, const porta_tensor *x, const porta_tensor *w,
                                    const porta_tensor *bias, const conv_geometry *g,
                                    porta_memory_format format) {
    porta_conv_params p = forward_params(g);
    if (format == PORTA_MEMORY_CONTIGUOUS || !x || !w || s->status)
        return scope_conv(s, x, w, bias, &p);
    int64_t sizes[PORTA_MAX_RANK] = {x->sizes[0], w->sizes[0]}, strides[PORTA_MAX_RANK];
    for (int i = 0; i < g->spatial; i++) {
        int64_t reach = g->dilation[i] * (w->sizes[2 + i] - 1) + 1;
        sizes[2 + i] = (x->sizes[2 + i] + 2 * g->padding[i] - reach) / g->stride[i] + 1;
        /* a window larger than the padded input: porta_conv says so */
        if (x->sizes[2 + i] + 2 * g->padding[i] < reach) return scope_conv(s, x, w, bias, &p);
    }
    aten_format_strides(format, x->rank, sizes, strides);
    porta_tensor *out = NULL;
    porta_status *status = aten_empty_strided(x->buffer->device, x->dtype, x->rank, sizes, strides, &out);
    if (!scope_hold(s, status, out)) return NULL;
    status = porta_conv(x, w, bias, &p, &out);
    return status ? scope_fail(s, status) : out;
}

/* The transposed convolution of y [N, A, *O] by w [A, B/groups, *K]:
 * [N, B, *target]. It is the gradient of conv(·, w) with respect to its
 * input, for an input of spatial size `target`. */
static porta_tensor *conv_transpose(aten_scope *s, const porta_tensor *y, const porta_tensor *w,
                                    const conv_geometry *g, const int64_t *target) {
    if (!y || !w) return NULL;
    int rank = y->rank, spatial = g->spatial;
    /* y spread out by the stride: stride - 1 zeros between elements */
    const porta_tensor *spread = y;
    bool strided = false;
    for (int i = 0; i < spatial; i++) strided |= g->stride[i] > 1;
    if (strided) {
        int64_t sizes[PORTA_MAX_RANK] = {y->sizes[0], y->sizes[1]};
        for (int i = 0; i < spatial; i++)
            sizes[2 + i] = y->sizes[2 + i] ? (y->sizes[2 + i] - 1) * g->stride[i] + 1 : 0;
        porta_tensor *zeros = scope_full(s, y->buffer->device, y->dtype, rank, sizes, 0);
        porta_tensor *view = zeros;
        for (int i = 0; i < spatial; i++)
            view = scope_slice(s, view, 2 + i, 0, sizes[2 + i], g->stride[i]);
        scope_copy(s, y, view);
        spread = zeros;
    }
    if (!spread) return NULL;
    /* padded so that a stride-1 convolution yields `target` */
    int64_t pads[2 * PORTA_MAX_RANK] = {0};
    for (int i = 0; i < spatial; i++) {
        int64_t reach = g->dilation[i] * (w->sizes[2 + i] - 1);
        pads[2 * (2 + i)] = reach - g->padding[i];
        pads[2 * (2 + i) + 1] = target[i] + reach - spread->sizes[2 + i] - pads[2 * (2 + i)];
    }
    porta_tensor *padded = scope_pad(s, spread, pads, 0);
    /* w [A, B/g, *K] -> [g, A/g, B/g, *K] -> [g, B/g, A/g, *K] -> [B, A/g, *K], flipped */
    int64_t a = w->sizes[0], b_per_group = w->sizes[1], groups = g->groups;
    int64_t split[PORTA_MAX_RANK + 1] = {groups, a / groups, b_per_group};
    int64_t joined[PORTA_MAX_RANK] = {groups * b_per_group, a / groups};
    int dims[PORTA_MAX_RANK + 1] = {0, 2, 1}, axes[PORTA_MAX_RANK];
    for (int i = 0; i < spatial; i++) {
        split[3 + i] = joined[2 + i] = w->sizes[2 + i];
        dims[3 + i] = 3 + i;
        axes[i] = 2 + i;
    }
    porta_tensor *swapped = scope_permute(s, scope_reshape(s, w, rank + 1, split), dims);
    porta_tensor *kernel = scope_flip(s, scope_reshape(s, swapped, rank, joined), axes, spatial);
    porta_conv_params p = {.groups = groups};
    for (int i = 0; i < spatial; i++) {
        p.stride[i] = 1;
        p.dilation[i] = g->dilation[i];
    }
    return scope_conv(s, padded, kernel, NULL, &p);
}

/* conv_transpose(x, w) is the input gradient of conv(·, w) at x, for an
 * input of spatial size `target`: the primitive when that convolution
 * maps `target` back onto x's size, that is, without an output_padding of
 * the stride or more (which only a larger dilation allows). */
static porta_tensor *transposed_conv(aten_scope *s, const porta_tensor *x, const porta_tensor *w,
                                     const conv_geometry *g, const int64_t *target) {
    bool fits = true;
    for (int i = 0; i < g->spatial; i++) fits &= g->output_padding[i] < g->stride[i];
    if (!fits) return conv_transpose(s, x, w, g, target);
    porta_conv_params p = forward_params(g);
    return scope_conv_input_grad(s, x, w, &p, target);
}

/* The gradient of conv_transpose(x, w) with respect to w [A, B/groups, *K],
 * given gy [N, B, *target]: conv(gy, w) maps gy back onto x's shape, so
 * this is that convolution's weight gradient with x as its output's
 * gradient. An output_padding of at least the stride leaves that
 * convolution's output a row longer than x: x is padded with zeros there,
 * which add nothing. */
static porta_tensor *transposed_weight_grad(aten_scope *s, const porta_tensor *x,
                                            const porta_tensor *gy, const conv_geometry *g,
                                            const int64_t *kernel) {
    if (!x || !gy) return NULL;
    int64_t pads[2 * PORTA_MAX_RANK] = {0};
    bool padded = false;
    for (int i = 0; i < g->spatial; i++) {
        int64_t reach = g->dilation[i] * (kernel[i] - 1) + 1;
        int64_t size = (gy->sizes[2 + i] + 2 * g->padding[i] - reach) / g->stride[i] + 1;
        pads[2 * (2 + i) + 1] = size - x->sizes[2 + i];
        padded |= size != x->sizes[2 + i];
    }
    const porta_tensor *grad = padded ? scope_pad(s, x, pads, 0) : x;
    porta_conv_params p = forward_params(g);
    return scope_conv_weight_grad(s, gy, grad, &p, kernel);
}

/* The spatial size of conv_transpose's result for input x. */
static void transposed_size(const porta_tensor *x, const porta_tensor *w, const conv_geometry *g,
                            int64_t *target) {
    for (int i = 0; i < g->spatial; i++)
        target[i] = (x->sizes[2 + i] - 1) * g->stride[i] - 2 * g->padding[i] +
                    g->dilation[i] * (w->sizes[2 + i] - 1) + g->output_padding[i] + 1;
}

static porta_status *check_transposed_shapes(const porta_tensor *x, const porta_tensor *w,
                                             const conv_geometry *g, const int64_t *target) {
    char bx[CORE_SHAPE_STR_CAP], bw[CORE_SHAPE_STR_CAP];
    core_format_shape(bx, sizeof bx, x->rank, x->sizes);
    core_format_shape(bw, sizeof bw, w->rank, w->sizes);
    if (x->sizes[1] != w->sizes[0] || w->sizes[0] % g->groups)
        return porta_error(PORTA_ERR_SHAPE,
                           "convolution: transposed weight %s expects %lld input channels (in "
                           "%lld groups), but input %s has %lld",
                           bw, (long long)w->sizes[0], (long long)g->groups, bx,
                           (long long)x->sizes[1]);
    for (int i = 0; i < g->spatial; i++) {
        if (g->output_padding[i] >= g->stride[i] && g->output_padding[i] >= g->dilation[i])
            return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                               "convolution: output padding must be smaller than either stride "
                               "or dilation, got output_padding %lld, stride %lld, dilation %lld",
                               (long long)g->output_padding[i], (long long)g->stride[i],
                               (long long)g->dilation[i]);
        if (target[i] < 1)
            return porta_error(PORTA_ERR_SHAPE,
                               "convolution: transposed output size along spatial axis %d is "
                               "too small (%lld) for input %s and weight %s",
                               i, (long long)target[i], bx, bw);
    }
    return NULL;
}

/* Bias [C] added along axis 1 of y. */
static porta_tensor *add_bias(aten_scope *s, porta_tensor *y, const porta_tensor *bias) {
    if (!y || !bias) return y;
    int64_t sizes[PORTA_MAX_RANK] = {1, bias->sizes[0]};
    for (int i = 2; i < y->rank; i++) sizes[i] = 1;
    return scope_binary(s, PORTA_ADD, y, scope_reshape(s, bias, y->rank, sizes));
}

/* convolution(input, weight, bias?, stride, padding, dilation, transposed,
 * output_padding, groups) */
static porta_status *convolution(const porta_value *args, aten_results *results) {
    const porta_tensor *x = args[0].tensor, *w = args[1].tensor;
    const porta_tensor *bias = args[2].kind == PORTA_VALUE_TENSOR ? args[2].tensor : NULL;
    if (args[0].kind != PORTA_VALUE_TENSOR || args[1].kind != PORTA_VALUE_TENSOR)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "convolution: expected tensors");
    conv_geometry g;
    PORTA_TRY(read_geometry(x, w, &args[3], &g));
    PORTA_TRY(check_dtypes(x, w, bias));
    porta_memory_format format = aten_conv_memory_format(x, w, g.groups);
    int first = results->count;
    aten_scope s;
    scope_begin(&s);
    porta_tensor *cx = computable(&s, x), *cw = computable(&s, w), *cb = computable(&s, bias);
    porta_tensor *y;
    if (g.transposed) {
        int64_t target[PORTA_MAX_RANK];
        transposed_size(x, w, &g, target);
        porta_status *bad = check_transposed_shapes(x, w, &g, target);
        if (bad) scope_fail(&s, bad);
        y = add_bias(&s, transposed_conv(&s, cx, cw, &g, target), cb);
    } else {
        y = conv_in_format(&s, cx, cw, cb, &g, format);
    }
    if (y && y->dtype != x->dtype) y = scope_cast(&s, y, x->dtype);
    scope_push(&s, results, y);
    /* transposed and integer convolutions are laid out by a copy */
    return aten_results_in_format(scope_end(&s), results, first, format);
}

/* convolution_backward(grad_output, input, weight, bias_sizes?, stride,
 * padding, dilation, transposed, output_padding, groups, output_mask) */
static porta_status *convolution_backward(const porta_value *args, aten_results *results) {
    const porta_tensor *gy = args[0].tensor, *x = args[1].tensor, *w = args[2].tensor;
    conv_geometry g;
    PORTA_TRY(read_geometry(x, w, &args[4], &g));
    PORTA_TRY(check_dtypes(x, w, NULL));
    const porta_value *mask = &args[10];
    if (mask->ints.count != 3)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "convolution_backward: expected an output_mask of 3 bools, got %d",
                           mask->ints.count);
    porta_memory_format format = aten_conv_memory_format(x, w, g.groups);
    int first = results->count;
    aten_scope s;
    scope_begin(&s);
    porta_tensor *cgy = computable(&s, gy), *cx = computable(&s, x), *cw = computable(&s, w);
    int64_t in_size[PORTA_MAX_RANK], kernel[PORTA_MAX_RANK];
    for (int i = 0; i < g.spatial; i++) {
        in_size[i] = x->sizes[2 + i];
        kernel[i] = w->sizes[2 + i];
    }
    porta_tensor *gx = NULL, *gw = NULL, *gb = NULL;
    if (mask->ints.items[0]) {
        if (g.transposed) {
            /* an output_padding of at least the stride leaves rows no
             * input row reached: the forward convolution sees them too */
            porta_conv_params p = forward_params(&g);
            gx = scope_conv(&s, cgy, cw, NULL, &p);
            for (int i = 0; i < g.spatial; i++) gx = scope_slice(&s, gx, 2 + i, 0, in_size[i], 1);
            gx = scope_contiguous(&s, gx);
        } else {
            porta_conv_params p = forward_params(&g);
            gx = scope_conv_input_grad(&s, cgy, cw, &p, in_size);
        }
    }
    if (mask->ints.items[1]) {
        porta_conv_params p = forward_params(&g);
        gw = g.transposed ? transposed_weight_grad(&s, cx, cgy, &g, kernel)
                          : scope_conv_weight_grad(&s, cx, cgy, &p, kernel);
    }
    if (mask->ints.items[2]) {
        int axes[PORTA_MAX_RANK] = {0};
        for (int i = 0; i < g.spatial; i++) axes[1 + i] = 2 + i;
        gb = scope_reduce(&s, PORTA_REDUCE_SUM, gy, axes, 1 + g.spatial, false);
    }
    porta_tensor *grads[3] = {gx, gw, gb};
    for (int k = 0; k < 3; k++) {
        if (!mask->ints.items[k]) {
            scope_push_none(&s, results);
            continue;
        }
        porta_tensor *grad = grads[k];
        if (grad && grad->dtype != x->dtype) grad = scope_cast(&s, grad, x->dtype);
        scope_push(&s, results, grad);
    }
    /* each gradient is composed of several primitives: it is copied into
     * the layout at the end */
    return aten_results_in_format(scope_end(&s), results, first, format);
}

const aten_op aten_nn_conv_ops[] = {
    {"convolution", "TTtIIIbIi", convolution},
    {"convolution_backward", "TTTJIIIbIiI", convolution_backward},
    {NULL, NULL, NULL},
};
