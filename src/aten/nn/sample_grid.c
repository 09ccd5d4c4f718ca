/* grid_sampler_2d: input [N, C, H, W] sampled at grid [N, Ho, Wo, 2]
 * (x, y in [-1, 1]) by bilinear, nearest or bicubic interpolation, with
 * zeros, border or reflection padding, and its backward; grid_sampler_3d
 * likewise for volumes [N, C, D, H, W] at grid [N, Do, Ho, Wo, 3] (x, y,
 * z), trilinear or nearest.
 *
 * Every mode is a separable kernel: along each axis, K taps (1, 2 or 4) at
 * integer positions with weights (and their derivatives with respect to the
 * sample coordinate). Tap (j, i, k) reads input at (z_j, y_i, x_k) by a
 * gather over the flattened volume (0 outside it) weighted by
 * wz_j * wy_i * wx_k; the backward
 * scatter-adds the same products into the input's gradient, and the grid's
 * gradient sums value * dw over the taps, times the derivative of the
 * coordinate transform. The formulas follow PyTorch's CPU kernels. Each
 * tap's intermediates live in their own scope, added into accumulators. */
#include <math.h>

#include "aten/nn/sample_grid.h"
#include "aten/dispatch/scope.h"
#include "core/status.h"
#include "runtime/tensor.h"

enum { BILINEAR = 0, NEAREST, BICUBIC };
enum { PAD_ZEROS = 0, PAD_BORDER, PAD_REFLECTION };
#define CUBIC_A (-0.75)
#define MAX_TAPS 4

typedef struct axis_kernel {
    int taps;
    porta_tensor *position[MAX_TAPS]; /* integer-valued, compute dtype, [N, P] */
    porta_tensor *weight[MAX_TAPS];
    porta_tensor *slope[MAX_TAPS];    /* d weight / d coordinate */
    porta_tensor *chain;              /* d coordinate / d grid value */
} axis_kernel;

typedef struct sampler {
    int mode, padding;
    bool align;
    int axes;               /* 2, or 3 for volumes */
    porta_device *device;
    porta_dtype dtype;      /* the compute dtype */
    int64_t n, c, d, h, w, points; /* d = 1 for planes */
    porta_tensor *plane;    /* input [N, C, D * H * W], compute dtype */
    axis_kernel x, y, z;    /* z: one tap at 0 for planes */
} sampler;

static porta_tensor *scalar(aten_scope *s, const sampler *g, double value) {
    return scope_full(s, g->device, g->dtype, 0, NULL, value);
}

/* A grid coordinate in [-1, 1] to a pixel coordinate, and its derivative. */
static porta_tensor *unnormalize(aten_scope *s, const sampler *g, porta_tensor *coord, int64_t size,
                                 double *scale) {
    porta_tensor *shifted = scope_binary_number(s, PORTA_ADD, coord, 1);
    if (g->align) {
        *scale = (double)(size - 1) / 2;
        return scope_binary_number(s, PORTA_MUL, scope_binary_number(s, PORTA_DIV, shifted, 2),
                                   (double)(size - 1));
    }
    *scale = (double)size / 2;
    return scope_binary_number(s, PORTA_DIV,
                         scope_binary_number(s, PORTA_SUB, scope_binary_number(s, PORTA_MUL, shifted,
                                                                   (double)size), 1), 2);
}

/* Clips to [0, size - 1]; *grad (if asked) times 0 where clipped. */
static porta_tensor *clip(aten_scope *s, const sampler *g, porta_tensor *coord, int64_t size,
                          porta_tensor **grad) {
    if (grad) {
        porta_tensor *inside = scope_binary(s, PORTA_LOGICAL_AND, scope_binary_number(s, PORTA_GT, coord, 0),
                                         scope_binary_number(s, PORTA_LT, coord, (double)(size - 1)));
        *grad = scope_binary(s, PORTA_MUL, *grad, scope_cast(s, inside, g->dtype));
    }
    return scope_binary_number(s, PORTA_MINIMUM, scope_binary_number(s, PORTA_MAXIMUM, coord, 0),
                               (double)(size - 1));
}

/* Reflects into [low, high] (given doubled); *grad times -1 per reflection. */
static porta_tensor *reflect(aten_scope *s, const sampler *g, porta_tensor *coord, int64_t twice_low,
                             int64_t twice_high, porta_tensor **grad) {
    if (twice_low == twice_high) {
        if (grad) *grad = scope_binary(s, PORTA_MUL, *grad, scalar(s, g, 0));
        return scope_binary(s, PORTA_MUL, coord, scalar(s, g, 0));
    }
    double low = (double)twice_low / 2, span = (double)(twice_high - twice_low) / 2;
    porta_tensor *offset = scope_binary_number(s, PORTA_SUB, coord, low);
    porta_tensor *distance = scope_unary(s, PORTA_ABS, offset);
    porta_tensor *extra = scope_binary_number(s, PORTA_FMOD, distance, span);
    porta_tensor *flips = scope_unary(s, PORTA_FLOOR, scope_binary_number(s, PORTA_DIV, distance, span));
    porta_tensor *even = scope_binary_number(s, PORTA_EQ, scope_binary_number(s, PORTA_FMOD, flips, 2), 0);
    if (grad) {
        porta_tensor *sign = scope_ternary(s, PORTA_WHERE, scope_binary_number(s, PORTA_LT, offset, 0),
                                           scalar(s, g, -1), scalar(s, g, 1));
        porta_tensor *flip = scope_ternary(s, PORTA_WHERE, even, scalar(s, g, 1), scalar(s, g, -1));
        *grad = scope_binary(s, PORTA_MUL, *grad, scope_binary(s, PORTA_MUL, sign, flip));
    }
    porta_tensor *reflected = scope_ternary(s, PORTA_WHERE, even, extra,
                                         scope_binary_number(s, PORTA_SUB, scope_unary(s, PORTA_NEG, extra),
                                                             -span));
    return scope_binary_number(s, PORTA_ADD, reflected, low);
}

/* PyTorch's compute_coordinates: the padding mode applied to a pixel
 * coordinate; *grad (if asked) times its derivative. */
static porta_tensor *pad_coordinate(aten_scope *s, const sampler *g, porta_tensor *coord,
                                    int64_t size, porta_tensor **grad) {
    if (g->padding == PAD_BORDER) return clip(s, g, coord, size, grad);
    if (g->padding == PAD_REFLECTION) {
        coord = g->align ? reflect(s, g, coord, 0, 2 * (size - 1), grad)
                         : reflect(s, g, coord, -1, 2 * size - 1, grad);
        return clip(s, g, coord, size, grad);
    }
    return coord;
}

/* The cubic convolution weights of the four taps at t in [0, 1), or their
 * derivatives with respect to t. */
static void cubic(aten_scope *s, porta_tensor *t, bool slope, porta_tensor **out) {
    const double a = CUBIC_A;
    for (int k = 0; k < 4; k++) {
        /* distance from the tap: 1 + t, t, 1 - t, 2 - t */
        porta_tensor *x = k == 0 ? scope_binary_number(s, PORTA_ADD, t, 1)
                          : k == 1 ? t
                          : scope_binary_number(s, PORTA_ADD, scope_unary(s, PORTA_NEG, t), k - 1);
        bool inner = k == 1 || k == 2;
        if (!slope) { /* inner: ((a+2)x - (a+3))x^2 + 1; outer: ((ax - 5a)x + 8a)x - 4a */
            porta_tensor *p = inner ? scope_binary_number(s, PORTA_SUB,
                                                    scope_binary_number(s, PORTA_MUL, x, a + 2), a + 3)
                                    : scope_binary_number(s, PORTA_SUB, scope_binary_number(s, PORTA_MUL, x, a),
                                                          5 * a);
            p = scope_binary(s, PORTA_MUL, p, x);
            p = inner ? scope_binary(s, PORTA_MUL, p, x) : scope_binary_number(s, PORTA_ADD, p, 8 * a);
            out[k] = inner ? scope_binary_number(s, PORTA_ADD, p, 1)
                           : scope_binary_number(s, PORTA_SUB, scope_binary(s, PORTA_MUL, p, x), 4 * a);
            continue;
        }
        /* d/dt of the weights above (dx/dt = +1 for k = 0, 1, -1 for k = 2, 3) */
        double sign = k < 2 ? 1 : -1;
        porta_tensor *p = inner ? scope_binary_number(s, PORTA_SUB, scope_binary_number(s, PORTA_MUL, x,
                                                                             3 * (a + 2)),
                                                2 * (a + 3))
                                : scope_binary_number(s, PORTA_SUB, scope_binary_number(s, PORTA_MUL, x, 3 * a),
                                                      10 * a);
        p = scope_binary(s, PORTA_MUL, p, x);
        if (!inner) p = scope_binary_number(s, PORTA_ADD, p, 8 * a);
        out[k] = scope_binary_number(s, PORTA_MUL, p, sign);
    }
}

/* The kernel along one axis from that axis's grid values [N, P]. */
static void build_axis(aten_scope *s, const sampler *g, porta_tensor *coord, int64_t size,
                       bool want_grad, axis_kernel *k) {
    double scale;
    porta_tensor *pixel = unnormalize(s, g, coord, size, &scale);
    k->chain = want_grad ? scope_binary_number(s, PORTA_ADD, scope_binary(s, PORTA_MUL, pixel,
                                                                          scalar(s, g, 0)), scale)
                         : NULL;
    if (g->mode != BICUBIC) pixel = pad_coordinate(s, g, pixel, size, want_grad ? &k->chain : NULL);
    if (g->mode == NEAREST) {
        k->taps = 1;
        k->position[0] = scope_unary(s, PORTA_ROUND, pixel);
        k->weight[0] = scope_binary_number(s, PORTA_ADD, scope_binary(s, PORTA_MUL, pixel,
                                                                      scalar(s, g, 0)), 1);
        k->slope[0] = scope_binary(s, PORTA_MUL, pixel, scalar(s, g, 0));
        return;
    }
    porta_tensor *base = scope_unary(s, PORTA_FLOOR, pixel);
    if (g->mode == BILINEAR) { /* weights (base + 1 - x) and (x - base) */
        k->taps = 2;
        k->position[0] = base;
        k->position[1] = scope_binary_number(s, PORTA_ADD, base, 1);
        k->weight[0] = scope_binary(s, PORTA_SUB, k->position[1], pixel);
        k->weight[1] = scope_binary(s, PORTA_SUB, pixel, base);
        k->slope[0] = scope_binary_number(s, PORTA_SUB, scope_binary(s, PORTA_MUL, pixel, scalar(s, g, 0)), 1);
        k->slope[1] = scope_binary_number(s, PORTA_ADD, scope_binary(s, PORTA_MUL, pixel, scalar(s, g, 0)), 1);
        return;
    }
    k->taps = 4;
    porta_tensor *t = scope_binary(s, PORTA_SUB, pixel, base);
    cubic(s, t, false, k->weight);
    if (want_grad) cubic(s, t, true, k->slope);
    for (int i = 0; i < 4; i++) {
        k->position[i] = scope_binary_number(s, PORTA_ADD, base, (double)(i - 1));
        if (!want_grad) k->slope[i] = NULL;
    }
}

/* One tap's reads: the gather index over the plane [N, C, P] and the mask
 * of positions inside it [N, 1, P] in the compute dtype. Bicubic taps get
 * the padding mode per tap, as PyTorch's get_value_bounded does. */
static void tap_index(aten_scope *s, const sampler *g, porta_tensor *x, porta_tensor *y,
                      porta_tensor *z, porta_tensor **index, porta_tensor **mask) {
    if (g->mode == BICUBIC) {
        x = pad_coordinate(s, g, x, g->w, NULL);
        y = pad_coordinate(s, g, y, g->h, NULL);
    }
    porta_tensor *inside = scope_binary(
        s, PORTA_LOGICAL_AND,
        scope_binary(s, PORTA_LOGICAL_AND, scope_binary_number(s, PORTA_GE, x, 0),
                     scope_binary_number(s, PORTA_LT, x, (double)g->w)),
        scope_binary(s, PORTA_LOGICAL_AND, scope_binary_number(s, PORTA_GE, y, 0),
                     scope_binary_number(s, PORTA_LT, y, (double)g->h)));
    porta_tensor *cx = scope_binary_number(s, PORTA_MINIMUM, scope_binary_number(s, PORTA_MAXIMUM, x, 0),
                                           (double)(g->w - 1));
    porta_tensor *cy = scope_binary_number(s, PORTA_MINIMUM, scope_binary_number(s, PORTA_MAXIMUM, y, 0),
                                           (double)(g->h - 1));
    porta_tensor *linear = scope_binary(s, PORTA_ADD, scope_binary_number(s, PORTA_MUL, cy, (double)g->w),
                                        cx);
    if (z) {
        inside = scope_binary(s, PORTA_LOGICAL_AND, inside,
                              scope_binary(s, PORTA_LOGICAL_AND, scope_binary_number(s, PORTA_GE, z, 0),
                                           scope_binary_number(s, PORTA_LT, z, (double)g->d)));
        porta_tensor *cz = scope_binary_number(
            s, PORTA_MINIMUM, scope_binary_number(s, PORTA_MAXIMUM, z, 0), (double)(g->d - 1));
        linear = scope_binary(s, PORTA_ADD, linear,
                              scope_binary_number(s, PORTA_MUL, cz, (double)(g->h * g->w)));
    }
    int64_t one[3] = {g->n, 1, g->points}, all[3] = {g->n, g->c, g->points};
    porta_tensor *flat = scope_reshape(s, scope_cast(s, linear, PORTA_I64), 3, one);
    *index = scope_expand(s, flat, 3, all);
    *mask = scope_reshape(s, scope_cast(s, inside, g->dtype), 3, one);
}

/* Adds t into the accumulator acc (same shape) in place. */
static void accumulate(aten_scope *s, porta_tensor *acc, const porta_tensor *t) {
    if (!acc || !t) return;
    porta_tensor *into = acc;
    porta_status *status = porta_binary(PORTA_ADD, acc, t, &into);
    if (status) scope_fail(s, status);
}

static porta_status *check_sampler(int axes, const porta_tensor *input, const porta_tensor *grid,
                                   int64_t mode, int64_t padding) {
    char bi[CORE_SHAPE_STR_CAP], bg[CORE_SHAPE_STR_CAP];
    core_format_shape(bi, sizeof bi, input->rank, input->sizes);
    core_format_shape(bg, sizeof bg, grid->rank, grid->sizes);
    if (input->rank != axes + 2 || grid->rank != axes + 2)
        return porta_error(PORTA_ERR_SHAPE,
                           "grid_sampler_%dd(): expected %dD input and grid, but got input with "
                           "sizes %s and grid with sizes %s", axes, axes + 2, bi, bg);
    if (axes == 3 && mode == BICUBIC)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "grid_sampler(): bicubic interpolation only supports 4D input");
    if (input->sizes[0] != grid->sizes[0])
        return porta_error(PORTA_ERR_SHAPE,
                           "grid_sampler(): expected grid and input to have same batch size, "
                           "but got input with sizes %s and grid with sizes %s", bi, bg);
    if (grid->sizes[axes + 1] != axes)
        return porta_error(PORTA_ERR_SHAPE,
                           "grid_sampler(): expected grid to have size %d in last dimension, but "
                           "got grid with sizes %s", axes, bg);
    for (int d = 2; d < axes + 2; d++)
        if (input->sizes[d] == 0)
            return porta_error(PORTA_ERR_SHAPE,
                               "grid_sampler(): expected input to have non-empty spatial "
                               "dimensions, but input has sizes %s with dimension %d being empty",
                               bi, d);
    if (!porta_dtype_is_float(input->dtype) || input->dtype != grid->dtype)
        return porta_error(PORTA_ERR_DTYPE,
                           "grid_sampler(): expected input and grid of one float dtype, got %s "
                           "and %s", porta_dtype_name(input->dtype), porta_dtype_name(grid->dtype));
    if (mode < BILINEAR || mode > BICUBIC || padding < PAD_ZEROS || padding > PAD_REFLECTION)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "grid_sampler(): expected interpolation_mode 0..2 and padding_mode "
                           "0..2, got %lld and %lld", (long long)mode, (long long)padding);
    return NULL;
}

/* Ends an inner scope, passing its failure to the outer one. */
static void end_tap(aten_scope *outer, aten_scope *tap) {
    porta_status *status = scope_end(tap);
    if (status) scope_fail(outer, status);
}

/* Builds one axis's kernel in a scope of its own (the coordinate transforms
 * make many intermediates) and moves the kernel's tensors to `outer`. */
static void build_axis_kept(aten_scope *outer, const sampler *g, porta_tensor *coord,
                            int64_t size, bool want_grad, axis_kernel *k) {
    aten_scope a;
    scope_begin(&a);
    *k = (axis_kernel){0};
    build_axis(&a, g, coord, size, want_grad, k);
    if (!a.status) {
        porta_tensor **kept[1 + 3 * MAX_TAPS] = {&k->chain};
        for (int i = 0; i < MAX_TAPS; i++) {
            kept[1 + 3 * i] = &k->position[i];
            kept[2 + 3 * i] = &k->weight[i];
            kept[3 + 3 * i] = &k->slope[i];
        }
        for (int i = 0; i < 1 + 3 * MAX_TAPS; i++) {
            if (!*kept[i]) continue;
            porta_tensor_retain(*kept[i]);
            scope_hold(outer, NULL, *kept[i]);
        }
    }
    end_tap(outer, &a);
}

/* Reads the arguments (input, grid, interpolation_mode, padding_mode,
 * align_corners) and builds both axes' kernels. */
static void setup(aten_scope *s, int axes, const porta_tensor *input, const porta_tensor *grid,
                  const porta_value *modes, bool want_grad, sampler *g) {
    bool volume = axes == 3;
    *g = (sampler){.mode = (int)modes[0].i, .padding = (int)modes[1].i, .align = modes[2].b,
                   .axes = axes, .device = input->buffer->device,
                   .dtype = aten_compute_dtype(input->dtype), .n = input->sizes[0],
                   .c = input->sizes[1], .d = volume ? input->sizes[2] : 1,
                   .h = input->sizes[axes], .w = input->sizes[axes + 1],
                   .points = grid->sizes[1] * grid->sizes[2] * (volume ? grid->sizes[3] : 1)};
    int64_t plane[3] = {g->n, g->c, g->d * g->h * g->w}, pairs[3] = {g->n, g->points, axes};
    int64_t flat[2] = {g->n, g->points};
    g->plane = scope_reshape(s, scope_cast(s, input, g->dtype), 3, plane);
    porta_tensor *coords = scope_reshape(s, scope_cast(s, grid, g->dtype), 3, pairs);
    porta_tensor *gx = scope_reshape(s, scope_slice(s, coords, 2, 0, 1, 1), 2, flat);
    porta_tensor *gy = scope_reshape(s, scope_slice(s, coords, 2, 1, 2, 1), 2, flat);
    porta_tensor *gz = volume ? scope_reshape(s, scope_slice(s, coords, 2, 2, 3, 1), 2, flat) : NULL;
    if (s->status) return;
    build_axis_kept(s, g, gx, g->w, want_grad, &g->x);
    build_axis_kept(s, g, gy, g->h, want_grad, &g->y);
    if (volume) {
        build_axis_kept(s, g, gz, g->d, want_grad, &g->z);
    } else { /* one depth tap, never read: tap_weight and depth_of skip z on planes */
        g->z = (axis_kernel){.taps = 1};
    }
}

/* Tap (j, i, k)'s weight wz_j * wy_i * wx_k, [N, 1, P], times tap_index's
 * mask: zero where the tap's pixel lies outside the input. */
static porta_tensor *tap_weight(aten_scope *s, const sampler *g, int j, int i, int k,
                                porta_tensor *mask) {
    int64_t one[3] = {g->n, 1, g->points};
    porta_tensor *weight = scope_binary(s, PORTA_MUL, g->y.weight[i], g->x.weight[k]);
    if (g->axes == 3) weight = scope_binary(s, PORTA_MUL, g->z.weight[j], weight);
    return scope_binary(s, PORTA_MUL, mask, scope_reshape(s, weight, 3, one));
}

/* The z position of tap j for tap_index: NULL for planes. */
static porta_tensor *depth_of(const sampler *g, int j) {
    return g->axes == 3 ? g->z.position[j] : NULL;
}

/* grid_sampler_{2,3}d(input, grid, interpolation_mode, padding_mode,
 * align_corners) */
static porta_status *grid_sampler(int axes, const porta_value *args, aten_results *results) {
    const porta_tensor *input = args[0].tensor, *grid = args[1].tensor;
    PORTA_TRY(check_sampler(axes, input, grid, args[2].i, args[3].i));
    int rank = axes + 2;
    int64_t shape[5] = {input->sizes[0], input->sizes[1], grid->sizes[1], grid->sizes[2],
                        axes == 3 ? grid->sizes[3] : 1};
    aten_scope s;
    scope_begin(&s);
    if (core_shape_numel(rank, shape) == 0) {
        scope_push(&s, results, scope_full(&s, input->buffer->device, input->dtype, rank, shape, 0));
        return scope_end(&s);
    }
    sampler g;
    setup(&s, axes, input, grid, &args[2], false, &g);
    int64_t all[3] = {g.n, g.c, g.points};
    porta_tensor *out = scope_full(&s, g.device, g.dtype, 3, all, 0);
    for (int j = 0; j < g.z.taps && !s.status; j++) {
        for (int i = 0; i < g.y.taps && !s.status; i++) {
            for (int k = 0; k < g.x.taps && !s.status; k++) {
                aten_scope t;
                scope_begin(&t);
                porta_tensor *index, *mask;
                tap_index(&t, &g, g.x.position[k], g.y.position[i], depth_of(&g, j), &index, &mask);
                porta_tensor *weight = tap_weight(&t, &g, j, i, k, mask);
                accumulate(&t, out, scope_binary(&t, PORTA_MUL, scope_gather(&t, g.plane, 2, index),
                                                 weight));
                end_tap(&s, &t);
            }
        }
    }
    scope_push(&s, results, scope_cast(&s, scope_reshape(&s, out, rank, shape), input->dtype));
    return scope_end(&s);
}

porta_status *aten_grid_sampler_2d(const porta_value *args, aten_results *results) {
    return grid_sampler(2, args, results);
}
porta_status *aten_grid_sampler_3d(const porta_value *args, aten_results *results) {
    return grid_sampler(3, args, results);
}

/* [N, P] x, y (and z) gradients as the grid's [N, ..., axes] gradient:
 * each padded with zeros into its column. */
static porta_tensor *stack_grid_grad(aten_scope *s, const sampler *g, porta_tensor **parts,
                                     const porta_tensor *grid) {
    int64_t column[3] = {g->n, g->points, 1};
    porta_tensor *all = NULL;
    for (int a = 0; a < g->axes; a++) {
        int64_t pads[6] = {0, 0, 0, 0, a, g->axes - 1 - a};
        porta_tensor *placed = scope_pad(s, scope_reshape(s, parts[a], 3, column), pads, 0);
        all = all ? scope_binary(s, PORTA_ADD, all, placed) : placed;
    }
    return scope_cast(s, scope_reshape(s, all, grid->rank, grid->sizes), grid->dtype);
}

/* grid_sampler_{2,3}d_backward(grad_output, input, grid,
 * interpolation_mode, padding_mode, align_corners, output_mask) ->
 * (grad_input, grad_grid) */
static porta_status *grid_sampler_backward(int axes, const porta_value *args,
                                           aten_results *results) {
    const porta_tensor *grad = args[0].tensor, *input = args[1].tensor, *grid = args[2].tensor;
    PORTA_TRY(check_sampler(axes, input, grid, args[3].i, args[4].i));
    const porta_value *mask_arg = &args[6];
    bool want_input = mask_arg->ints.count < 1 || mask_arg->ints.items[0];
    bool want_grid = mask_arg->ints.count < 2 || mask_arg->ints.items[1];
    aten_scope s;
    scope_begin(&s);
    sampler g;
    int64_t numel = input->sizes[0] * input->sizes[1] * porta_tensor_numel(grid) / axes;
    int rank = axes + 2;
    if (numel == 0) {
        porta_device *device = input->buffer->device;
        if (want_input) scope_push(&s, results, scope_full(&s, device, input->dtype, rank, input->sizes, 0));
        else scope_push_none(&s, results);
        if (want_grid) scope_push(&s, results, scope_full(&s, device, grid->dtype, rank, grid->sizes, 0));
        else scope_push_none(&s, results);
        return scope_end(&s);
    }
    setup(&s, axes, input, grid, &args[3], want_grid, &g);
    int64_t all[3] = {g.n, g.c, g.points}, plane[3] = {g.n, g.c, g.d * g.h * g.w};
    int64_t flat[2] = {g.n, g.points};
    porta_tensor *gout = scope_reshape(&s, scope_cast(&s, grad, g.dtype), 3, all);
    porta_tensor *grad_plane = scope_full(&s, g.device, g.dtype, 3, plane, 0);
    bool grid_flows = want_grid && g.mode != NEAREST; /* nearest: the grid's gradient is 0 */
    porta_tensor *gx = scope_full(&s, g.device, g.dtype, 2, flat, 0);
    porta_tensor *gy = scope_full(&s, g.device, g.dtype, 2, flat, 0);
    porta_tensor *gz = axes == 3 ? scope_full(&s, g.device, g.dtype, 2, flat, 0) : NULL;
    int channels[1] = {1};
    for (int tap = 0; tap < g.z.taps * g.y.taps * g.x.taps && !s.status; tap++) {
        int j = tap / (g.y.taps * g.x.taps), i = tap / g.x.taps % g.y.taps, k = tap % g.x.taps;
        aten_scope t;
        scope_begin(&t);
        porta_tensor *index, *mask;
        tap_index(&t, &g, g.x.position[k], g.y.position[i], depth_of(&g, j), &index, &mask);
        if (want_input) {
            porta_tensor *weight = tap_weight(&t, &g, j, i, k, mask);
            porta_tensor *into = grad_plane;
            porta_tensor *src = scope_binary(&t, PORTA_MUL, gout, weight);
            if (src && index) {
                porta_status *status = porta_scatter(grad_plane, 2, index, src,
                                                     PORTA_SCATTER_ADD, &into);
                if (status) scope_fail(&t, status);
            }
        }
        if (grid_flows) {
            porta_tensor *values = scope_binary(&t, PORTA_MUL, scope_gather(&t, g.plane, 2, index),
                                                mask);
            porta_tensor *spread = scope_reduce(&t, PORTA_REDUCE_SUM,
                                             scope_binary(&t, PORTA_MUL, gout, values), channels,
                                             1, false);
            if (axes == 3) {
                porta_tensor *across = scope_binary(&t, PORTA_MUL, g.y.weight[i], g.x.weight[k]);
                accumulate(&t, gz, scope_binary(&t, PORTA_MUL, spread,
                                                scope_binary(&t, PORTA_MUL, g.z.slope[j], across)));
                spread = scope_binary(&t, PORTA_MUL, spread, g.z.weight[j]);
            }
            accumulate(&t, gx, scope_binary(&t, PORTA_MUL, spread,
                                         scope_binary(&t, PORTA_MUL, g.y.weight[i], g.x.slope[k])));
            accumulate(&t, gy, scope_binary(&t, PORTA_MUL, spread,
                                         scope_binary(&t, PORTA_MUL, g.y.slope[i], g.x.weight[k])));
        }
        end_tap(&s, &t);
    }
    if (want_input)
        scope_push(&s, results, scope_cast(&s, scope_reshape(&s, grad_plane, rank, input->sizes), input->dtype));
    else
        scope_push_none(&s, results);
    if (want_grid) {
        porta_tensor *parts[3] = {scope_binary(&s, PORTA_MUL, gx, g.x.chain),
                                  scope_binary(&s, PORTA_MUL, gy, g.y.chain),
                                  gz ? scope_binary(&s, PORTA_MUL, gz, g.z.chain) : NULL};
        scope_push(&s, results, stack_grid_grad(&s, &g, parts, grid));
    } else {
        scope_push_none(&s, results);
    }
    return scope_end(&s);
}

porta_status *aten_grid_sampler_2d_backward(const porta_value *args, aten_results *results) {
    return grid_sampler_backward(2, args, results);
}
porta_status *aten_grid_sampler_3d_backward(const porta_value *args, aten_results *results) {
    return grid_sampler_backward(3, args, results);
}
