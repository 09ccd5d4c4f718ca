/* Normalization aten ops: batch, layer and group norm and their
 * gradients. Each normalizes over a set of axes, computing in float32 for
 * float16/bfloat16 inputs as PyTorch's CPU kernels do; the saved
 * statistics take the weight's dtype when there is one. */
#include "aten/dispatch/scope.h"
#include "aten/nn/memory_format.h"

#include "core/status.h"
#include "runtime/tensor.h"

/* A per-channel vector [C] shaped to broadcast along axis 1 of rank. */
static porta_tensor *per_channel(aten_scope *s, const porta_tensor *v, int rank, porta_dtype dtype) {
    if (!v) return NULL;
    int64_t sizes[PORTA_MAX_RANK] = {1, v->sizes[0]};
    for (int i = 2; i < rank; i++) sizes[i] = 1;
    return scope_reshape(s, scope_cast(s, v, dtype), rank, sizes);
}

/* x * weight + bias, either optional. */
static porta_tensor *affine(aten_scope *s, porta_tensor *x, porta_tensor *weight,
                            porta_tensor *bias) {
    if (weight) x = scope_binary(s, PORTA_MUL, x, weight);
    if (bias) x = scope_binary(s, PORTA_ADD, x, bias);
    return x;
}

/* Biased mean and variance of x over axes (keepdim). */
static void moments(aten_scope *s, porta_tensor *x, const int *axes, int count, porta_tensor **mean,
                    porta_tensor **var) {
    *mean = scope_mean(s, x, axes, count);
    porta_tensor *centered = scope_binary(s, PORTA_SUB, x, *mean);
    *var = scope_mean(s, scope_binary(s, PORTA_MUL, centered, centered), axes, count);
}

static porta_tensor *inverse_std(aten_scope *s, porta_tensor *var, double eps) {
    return scope_unary(s, PORTA_RSQRT, scope_binary_number(s, PORTA_ADD, var, eps));
}

/* The input gradient of a normalization over axes holding n elements:
 * scale * (gw - mean(gw) - xhat * mean(gw * xhat)), gw the upstream
 * gradient times the weight. */
static porta_tensor *normalized_grad(aten_scope *s, porta_tensor *gw, porta_tensor *xhat,
                                     porta_tensor *scale, const int *axes, int count) {
    porta_tensor *mean_g = scope_mean(s, gw, axes, count);
    porta_tensor *mean_gx = scope_mean(s, scope_binary(s, PORTA_MUL, gw, xhat), axes, count);
    porta_tensor *centered = scope_binary(s, PORTA_SUB, scope_binary(s, PORTA_SUB, gw, mean_g),
                                          scope_binary(s, PORTA_MUL, xhat, mean_gx));
    return scope_binary(s, PORTA_MUL, centered, scale);
}

static porta_status *check_float(const char *op, const porta_tensor *x) {
    if (!porta_dtype_is_float(x->dtype))
        return porta_error(PORTA_ERR_DTYPE, "%s: expected a floating-point input, got %s", op,
                           porta_dtype_name(x->dtype));
    return NULL;
}

/* ---- batch norm ---- */

static porta_status *check_batch_input(const porta_tensor *x, const porta_tensor *const *vectors) {
    PORTA_TRY(check_float("batch_norm", x));
    char b[CORE_SHAPE_STR_CAP];
    if (x->rank < 2)
        return porta_error(PORTA_ERR_SHAPE, "batch_norm: expected an input of rank >= 2, got %s",
                           core_format_shape(b, sizeof b, x->rank, x->sizes));
    for (int i = 0; i < 4; i++)
        if (vectors[i] && (vectors[i]->rank != 1 || vectors[i]->sizes[0] != x->sizes[1]))
            return porta_error(PORTA_ERR_SHAPE,
                               "batch_norm: expected weight, bias and running stats of shape "
                               "[%lld], got %s",
                               (long long)x->sizes[1],
                               core_format_shape(b, sizeof b, vectors[i]->rank, vectors[i]->sizes));
    return NULL;
}

/* The axes batch norm reduces: every one but the channel axis. */
static int batch_axes(const porta_tensor *x, int *axes) {
    int count = 0;
    for (int i = 0; i < x->rank; i++)
        if (i != 1) axes[count++] = i;
    return count;
}

static porta_status *batch_norm(const porta_tensor *x, const porta_tensor *weight,
                                const porta_tensor *bias, porta_tensor *running_mean,
                                porta_tensor *running_var, bool training, double momentum,
                                double eps, aten_results *results) {
    const porta_tensor *vectors[4] = {weight, bias, running_mean, running_var};
    PORTA_TRY(check_batch_input(x, vectors));
    if (!training && (!running_mean || !running_var))
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "batch_norm: running_mean and running_var must be defined in "
                           "evaluation mode");
    int axes[PORTA_MAX_RANK], count = batch_axes(x, axes);
    int64_t n = porta_tensor_numel(x) / x->sizes[1];
    if (training && n <= 1)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "batch_norm: expected more than 1 value per channel when training, "
                           "got input size [%lld, %lld, ...]",
                           (long long)x->sizes[0], (long long)x->sizes[1]);
    porta_memory_format format = aten_suggest_memory_format(x);
    int first = results->count;
    aten_scope s;
    scope_begin(&s);
    porta_dtype compute = aten_compute_dtype(x->dtype);
    porta_dtype stats_dtype = weight ? weight->dtype : x->dtype;
    porta_tensor *cx = scope_cast(&s, x, compute), *mean, *var;
    if (training) {
        moments(&s, cx, axes, count, &mean, &var);
    } else {
        mean = per_channel(&s, running_mean, x->rank, compute);
        var = per_channel(&s, running_var, x->rank, compute);
    }
    porta_tensor *invstd = inverse_std(&s, var, eps);
    porta_tensor *y = affine(&s, scope_binary(&s, PORTA_MUL, scope_binary(&s, PORTA_SUB, cx, mean), invstd),
                             per_channel(&s, weight, x->rank, compute),
                             per_channel(&s, bias, x->rank, compute));
    scope_push(&s, results, scope_cast(&s, y, x->dtype));
    if (training) {
        int64_t c = x->sizes[1];
        porta_tensor *flat_mean = scope_reshape(&s, mean, 1, &c), *flat_var = scope_reshape(&s, var, 1, &c);
        if (running_mean) {
            porta_tensor *kept = scope_binary_number(&s, PORTA_MUL, scope_cast(&s, running_mean, compute),
                                                     1 - momentum);
            scope_copy(&s, scope_binary(&s, PORTA_ADD, kept,
                                        scope_binary_number(&s, PORTA_MUL, flat_mean, momentum)),
                    running_mean);
        }
        if (running_var) { /* the running variance is unbiased */
            porta_tensor *kept = scope_binary_number(&s, PORTA_MUL, scope_cast(&s, running_var, compute),
                                                     1 - momentum);
            porta_tensor *unbiased = scope_binary_number(&s, PORTA_MUL, flat_var, (double)n / (double)(n - 1));
            scope_copy(&s, scope_binary(&s, PORTA_ADD, kept,
                                        scope_binary_number(&s, PORTA_MUL, unbiased, momentum)),
                    running_var);
        }
        scope_push(&s, results, scope_cast(&s, flat_mean, stats_dtype));
        scope_push(&s, results, scope_cast(&s, scope_reshape(&s, invstd, 1, &c), stats_dtype));
    } else { /* evaluation saves no statistics */
        int64_t zero = 0;
        scope_push(&s, results, scope_full(&s, x->buffer->device, stats_dtype, 1, &zero, 0));
        scope_push(&s, results, scope_full(&s, x->buffer->device, stats_dtype, 1, &zero, 0));
    }
    return aten_results_in_format(scope_end(&s), results, first, format);
}

/* native_batch_norm(input, weight?, bias?, running_mean?, running_var?,
 * training, momentum, eps); _native_batch_norm_legit has the same
 * arguments with the running stats required. */
static porta_status *native_batch_norm(const porta_value *args, aten_results *results) {
    return batch_norm(args[0].tensor, aten_optional_tensor(&args[1]), aten_optional_tensor(&args[2]),
                      (porta_tensor *)aten_optional_tensor(&args[3]), (porta_tensor *)aten_optional_tensor(&args[4]),
                      args[5].b, aten_number(&args[6]), aten_number(&args[7]), results);
}

/* _native_batch_norm_legit.no_stats(input, weight?, bias?, training, momentum, eps) */
static porta_status *batch_norm_no_stats(const porta_value *args, aten_results *results) {
    return batch_norm(args[0].tensor, aten_optional_tensor(&args[1]), aten_optional_tensor(&args[2]), NULL, NULL,
                      args[3].b, aten_number(&args[4]), aten_number(&args[5]), results);
}

/* _native_batch_norm_legit_no_training(input, weight?, bias?, running_mean,
 * running_var, momentum, eps) */
static porta_status *batch_norm_no_training(const porta_value *args, aten_results *results) {
    return batch_norm(args[0].tensor, aten_optional_tensor(&args[1]), aten_optional_tensor(&args[2]), args[3].tensor,
                      args[4].tensor, false, aten_number(&args[5]), aten_number(&args[6]),
                      results);
}

/* native_batch_norm_backward(grad_out, input, weight?, running_mean?,
 * running_var?, save_mean?, save_invstd?, train, eps, output_mask) */
static porta_status *native_batch_norm_backward(const porta_value *args, aten_results *results) {
    const porta_tensor *gy = args[0].tensor, *x = args[1].tensor, *weight = aten_optional_tensor(&args[2]);
    bool train = args[7].b;
    const porta_value *mask = &args[9];
    const porta_tensor *mean_v = aten_optional_tensor(&args[train ? 5 : 3]);
    const porta_tensor *spread_v = aten_optional_tensor(&args[train ? 6 : 4]);
    if (!mean_v || !spread_v || mask->ints.count != 3)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "batch_norm_backward: expected the %s statistics and a mask of 3",
                           train ? "saved" : "running");
    int axes[PORTA_MAX_RANK], count = batch_axes(x, axes);
    porta_memory_format format = aten_suggest_memory_format(args[1].tensor);
    int first = results->count;
    aten_scope s;
    scope_begin(&s);
    porta_dtype compute = aten_compute_dtype(x->dtype);
    porta_tensor *cx = scope_cast(&s, x, compute), *cg = scope_cast(&s, gy, compute);
    porta_tensor *mean = per_channel(&s, mean_v, x->rank, compute);
    porta_tensor *invstd = per_channel(&s, spread_v, x->rank, compute);
    if (!train) invstd = inverse_std(&s, invstd, aten_number(&args[8]));
    porta_tensor *w = per_channel(&s, weight, x->rank, compute);
    porta_tensor *xhat = scope_binary(&s, PORTA_MUL, scope_binary(&s, PORTA_SUB, cx, mean), invstd);
    porta_tensor *gw = w ? scope_binary(&s, PORTA_MUL, cg, w) : cg;
    int64_t c = x->sizes[1];
    porta_dtype param_dtype = weight ? weight->dtype : x->dtype;
    if (mask->ints.items[0]) {
        porta_tensor *gx = train ? normalized_grad(&s, gw, xhat, invstd, axes, count)
                                 : scope_binary(&s, PORTA_MUL, gw, invstd);
        scope_push(&s, results, scope_cast(&s, gx, x->dtype));
    } else {
        scope_push_none(&s, results);
    }
    if (mask->ints.items[1]) {
        porta_tensor *sum = scope_reduce(&s, PORTA_REDUCE_SUM, scope_binary(&s, PORTA_MUL, cg, xhat),
                                         axes, count, false);
        scope_push(&s, results, scope_cast(&s, scope_reshape(&s, sum, 1, &c), param_dtype));
    } else {
        scope_push_none(&s, results);
    }
    if (mask->ints.items[2])
        scope_push(&s, results,
                scope_cast(&s, scope_reduce(&s, PORTA_REDUCE_SUM, cg, axes, count, false), param_dtype));
    else
        scope_push_none(&s, results);
    return aten_results_in_format(scope_end(&s), results, first, format);
}

/* ---- layer norm ---- */

/* The normalized axes: the last len(normalized_shape), which must match. */
static porta_status *layer_axes(const porta_tensor *x, const porta_value *shape, int *axes,
                                int *count) {
    int k = shape->ints.count;
    bool ok = k >= 1 && k <= x->rank;
    for (int i = 0; ok && i < k; i++) ok = x->sizes[x->rank - k + i] == shape->ints.items[i];
    if (!ok) {
        char bx[CORE_SHAPE_STR_CAP], bn[CORE_SHAPE_STR_CAP];
        return porta_error(PORTA_ERR_SHAPE,
                           "layer_norm: given normalized_shape=%s, expected input ending in "
                           "those sizes, but got input of size %s",
                           core_format_shape(bn, sizeof bn, k, shape->ints.items),
                           core_format_shape(bx, sizeof bx, x->rank, x->sizes));
    }
    for (int i = 0; i < k; i++) axes[i] = x->rank - k + i;
    *count = k;
    return NULL;
}

/* native_layer_norm(input, normalized_shape, weight?, bias?, eps) */
static porta_status *native_layer_norm(const porta_value *args, aten_results *results) {
    const porta_tensor *x = args[0].tensor, *weight = aten_optional_tensor(&args[2]), *bias = aten_optional_tensor(&args[3]);
    int axes[PORTA_MAX_RANK], count;
    PORTA_TRY(check_float("layer_norm", x));
    PORTA_TRY(layer_axes(x, &args[1], axes, &count));
    aten_scope s;
    scope_begin(&s);
    porta_dtype compute = aten_compute_dtype(x->dtype);
    porta_dtype stats_dtype = weight ? weight->dtype : x->dtype;
    porta_tensor *cx = scope_cast(&s, x, compute), *mean, *var;
    moments(&s, cx, axes, count, &mean, &var);
    porta_tensor *rstd = inverse_std(&s, var, aten_number(&args[4]));
    porta_tensor *y = affine(&s, scope_binary(&s, PORTA_MUL, scope_binary(&s, PORTA_SUB, cx, mean), rstd),
                             weight ? scope_cast(&s, weight, compute) : NULL,
                             bias ? scope_cast(&s, bias, compute) : NULL);
    scope_push(&s, results, scope_cast(&s, y, x->dtype));
    scope_push(&s, results, scope_cast(&s, mean, stats_dtype));
    scope_push(&s, results, scope_cast(&s, rstd, stats_dtype));
    return scope_end(&s);
}

/* native_layer_norm_backward(grad_out, input, normalized_shape, mean, rstd,
 * weight?, bias?, output_mask) */
static porta_status *native_layer_norm_backward(const porta_value *args, aten_results *results) {
    const porta_tensor *gy = args[0].tensor, *x = args[1].tensor, *weight = aten_optional_tensor(&args[5]);
    const porta_tensor *bias = aten_optional_tensor(&args[6]);
    const porta_value *mask = &args[7];
    int axes[PORTA_MAX_RANK], count;
    PORTA_TRY(layer_axes(x, &args[2], axes, &count));
    if (mask->ints.count != 3)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "layer_norm_backward: expected an output_mask of 3 bools");
    int batch[PORTA_MAX_RANK], batch_count = x->rank - count;
    for (int i = 0; i < batch_count; i++) batch[i] = i;
    aten_scope s;
    scope_begin(&s);
    porta_dtype compute = aten_compute_dtype(x->dtype);
    porta_tensor *cx = scope_cast(&s, x, compute), *cg = scope_cast(&s, gy, compute);
    porta_tensor *rstd = scope_cast(&s, args[4].tensor, compute);
    porta_tensor *xhat =
        scope_binary(&s, PORTA_MUL, scope_binary(&s, PORTA_SUB, cx, scope_cast(&s, args[3].tensor, compute)),
                     rstd);
    porta_tensor *gw = weight ? scope_binary(&s, PORTA_MUL, cg, scope_cast(&s, weight, compute)) : cg;
    if (mask->ints.items[0])
        scope_push(&s, results,
                   scope_cast(&s, normalized_grad(&s, gw, xhat, rstd, axes, count), x->dtype));
    else
        scope_push_none(&s, results);
    /* parameter gradients: summed over the batch axes (none: the identity) */
    porta_tensor *per_param[2] = {scope_binary(&s, PORTA_MUL, cg, xhat), cg};
    const porta_tensor *params[2] = {weight, bias};
    for (int k = 0; k < 2; k++) {
        if (!mask->ints.items[1 + k] || !params[k]) {
            scope_push_none(&s, results);
            continue;
        }
        porta_tensor *sum = batch_count ? scope_reduce(&s, PORTA_REDUCE_SUM, per_param[k], batch,
                                                       batch_count, false)
                                        : per_param[k];
        scope_push(&s, results, scope_cast(&s, sum, params[k]->dtype));
    }
    return scope_end(&s);
}

/* ---- group norm ---- */

typedef struct group_shape {
    int64_t n, c, hw, groups;
} group_shape;

static porta_status *read_groups(const char *op, const porta_tensor *x, const porta_value *args,
                                 group_shape *g) {
    *g = (group_shape){args[0].i, args[1].i, args[2].i, args[3].i};
    PORTA_TRY(check_float(op, x));
    if (g->groups < 1 || g->c % g->groups || g->n * g->c * g->hw != porta_tensor_numel(x))
        return porta_error(PORTA_ERR_SHAPE,
                           "%s: expected input of %lld x %lld x %lld elements with the %lld "
                           "channels divisible by groups %lld, got %lld elements",
                           op, (long long)g->n, (long long)g->c, (long long)g->hw,
                           (long long)g->c, (long long)g->groups,
                           (long long)porta_tensor_numel(x));
    return NULL;
}

/* v [C] (or NULL) shaped [1, G, C/G, 1] to broadcast over x as [N, G, C/G, HxW]. */
static porta_tensor *per_group_channel(aten_scope *s, const porta_tensor *v, const group_shape *g,
                                       porta_dtype dtype) {
    if (!v) return NULL;
    int64_t sizes[4] = {1, g->groups, g->c / g->groups, 1};
    return scope_reshape(s, scope_cast(s, v, dtype), 4, sizes);
}

/* native_group_norm(input, weight?, bias?, N, C, HxW, group, eps) */
static porta_status *native_group_norm(const porta_value *args, aten_results *results) {
    const porta_tensor *x = args[0].tensor, *weight = aten_optional_tensor(&args[1]), *bias = aten_optional_tensor(&args[2]);
    group_shape g;
    PORTA_TRY(read_groups("group_norm", x, &args[3], &g));
    aten_scope s;
    scope_begin(&s);
    porta_dtype compute = aten_compute_dtype(x->dtype);
    porta_dtype stats_dtype = weight ? weight->dtype : x->dtype;
    int64_t grouped[4] = {g.n, g.groups, g.c / g.groups, g.hw}, stats[2] = {g.n, g.groups};
    porta_tensor *cx = scope_reshape(&s, scope_cast(&s, x, compute), 4, grouped), *mean, *var;
    int axes[2] = {2, 3};
    moments(&s, cx, axes, 2, &mean, &var);
    porta_tensor *rstd = inverse_std(&s, var, aten_number(&args[7]));
    porta_tensor *y = affine(&s, scope_binary(&s, PORTA_MUL, scope_binary(&s, PORTA_SUB, cx, mean), rstd),
                             per_group_channel(&s, weight, &g, compute),
                             per_group_channel(&s, bias, &g, compute));
    scope_push(&s, results, scope_cast(&s, scope_reshape(&s, y, x->rank, x->sizes), x->dtype));
    scope_push(&s, results, scope_cast(&s, scope_reshape(&s, mean, 2, stats), stats_dtype));
    scope_push(&s, results, scope_cast(&s, scope_reshape(&s, rstd, 2, stats), stats_dtype));
    return scope_end(&s);
}

/* native_group_norm_backward(grad_out, input, mean, rstd, weight?, N, C,
 * HxW, group, output_mask) */
static porta_status *native_group_norm_backward(const porta_value *args, aten_results *results) {
    const porta_tensor *gy = args[0].tensor, *x = args[1].tensor, *weight = aten_optional_tensor(&args[4]);
    const porta_value *mask = &args[9];
    group_shape g;
    PORTA_TRY(read_groups("group_norm_backward", x, &args[5], &g));
    if (mask->ints.count != 3)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "group_norm_backward: expected an output_mask of 3 bools");
    aten_scope s;
    scope_begin(&s);
    porta_dtype compute = aten_compute_dtype(x->dtype);
    int64_t grouped[4] = {g.n, g.groups, g.c / g.groups, g.hw}, stats[4] = {g.n, g.groups, 1, 1};
    porta_tensor *cx = scope_reshape(&s, scope_cast(&s, x, compute), 4, grouped);
    porta_tensor *cg = scope_reshape(&s, scope_cast(&s, gy, compute), 4, grouped);
    porta_tensor *mean = scope_reshape(&s, scope_cast(&s, args[2].tensor, compute), 4, stats);
    porta_tensor *rstd = scope_reshape(&s, scope_cast(&s, args[3].tensor, compute), 4, stats);
    porta_tensor *xhat = scope_binary(&s, PORTA_MUL, scope_binary(&s, PORTA_SUB, cx, mean), rstd);
    porta_tensor *w = per_group_channel(&s, weight, &g, compute);
    porta_tensor *gw = w ? scope_binary(&s, PORTA_MUL, cg, w) : cg;
    int axes[2] = {2, 3};
    if (mask->ints.items[0])
        scope_push(&s, results,
                scope_cast(&s, scope_reshape(&s, normalized_grad(&s, gw, xhat, rstd, axes, 2), x->rank,
                                             x->sizes),
                        x->dtype));
    else
        scope_push_none(&s, results);
    /* parameter gradients: per channel, summed over the batch and HxW */
    porta_dtype param_dtype = weight ? weight->dtype : x->dtype;
    int batch_axes_[2] = {0, 3};
    porta_tensor *per_param[2] = {scope_binary(&s, PORTA_MUL, cg, xhat), cg};
    for (int k = 0; k < 2; k++) {
        if (!mask->ints.items[1 + k]) {
            scope_push_none(&s, results);
            continue;
        }
        porta_tensor *sum = scope_reduce(&s, PORTA_REDUCE_SUM, per_param[k], batch_axes_, 2, false);
        scope_push(&s, results, scope_cast(&s, scope_reshape(&s, sum, 1, &g.c), param_dtype));
    }
    return scope_end(&s);
}

const aten_op aten_nn_norm_ops[] = {
    {"_native_batch_norm_legit", "TttTTbff", native_batch_norm},
    {"_native_batch_norm_legit.no_stats", "Tttbff", batch_norm_no_stats},
    {"_native_batch_norm_legit_no_training", "TttTTff", batch_norm_no_training},
    {"native_batch_norm", "Tttttbff", native_batch_norm},
    {"native_batch_norm_backward", "TTtttttbfI", native_batch_norm_backward},
    {"native_group_norm", "Tttiiiif", native_group_norm},
    {"native_group_norm_backward", "TTTTtiiiiI", native_group_norm_backward},
    {"native_layer_norm", "TIttf", native_layer_norm},
    {"native_layer_norm_backward", "TTITTttI", native_layer_norm_backward},
    {NULL, NULL, NULL},
};
