/* Reflection and replication padding of the last 1, 2 or 3 axes
 * (reflection_pad{1,2,3}d, replication_pad{1,2,3}d) and their gradients.
 * Each padded axis is one index_select with the source index of every
 * output position (computed on the host: out integers per axis); the
 * gradient scatter-adds back along the same indices, axis by axis. */
#include <stdlib.h>

#include "aten/dispatch/scope.h"
#include "core/status.h"
#include "runtime/tensor.h"

#define PAD_MAX_DIMS 3

typedef enum pad_mode { PAD_REFLECT, PAD_REPLICATE } pad_mode;

/* A checked padding of x's last `dims` axes. */
typedef struct pad_geometry {
    int dims, rank;
    int64_t before[PAD_MAX_DIMS], after[PAD_MAX_DIMS]; /* per axis, first spatial first */
    int64_t in[PAD_MAX_DIMS], out[PAD_MAX_DIMS];
} pad_geometry;

static const char *const AXIS_LETTERS[PAD_MAX_DIMS][PAD_MAX_DIMS] = {
    {"W"}, {"H", "W"}, {"D", "H", "W"}};

static porta_status *read_pad(const char *op, pad_mode mode, int dims, const porta_tensor *x,
                              const porta_value *padding, pad_geometry *g) {
    char b[CORE_SHAPE_STR_CAP];
    if (padding->ints.count != 2 * dims)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "%s: padding size is expected to be %d, but got: %d", op, 2 * dims,
                           padding->ints.count);
    bool empty_axis = false;
    for (int i = x->rank == dims + 2 ? 1 : 0; i < x->rank; i++) empty_axis |= x->sizes[i] == 0;
    if ((x->rank != dims + 1 && x->rank != dims + 2) || empty_axis)
        return porta_error(PORTA_ERR_SHAPE,
                           "%s: expected %dD or %dD (batch mode) tensor with possibly 0 batch "
                           "size and other non-zero dimensions for input, but got: %s",
                           op, dims + 1, dims + 2,
                           core_format_shape(b, sizeof b, x->rank, x->sizes));
    g->dims = dims;
    g->rank = x->rank;
    for (int i = 0; i < dims; i++) {
        /* padding lists the last axis first: (left, right, top, bottom, ...) */
        int pair = dims - 1 - i, axis = x->rank - dims + i;
        g->before[i] = padding->ints.items[2 * pair];
        g->after[i] = padding->ints.items[2 * pair + 1];
        g->in[i] = x->sizes[axis];
        g->out[i] = g->in[i] + g->before[i] + g->after[i];
        if (mode == PAD_REFLECT && (g->before[i] >= g->in[i] || g->after[i] >= g->in[i]))
            return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                               "%s: padding size should be less than the corresponding input "
                               "dimension, but got: padding (%lld, %lld) at dimension %d of "
                               "input %s",
                               op, (long long)g->before[i], (long long)g->after[i], axis,
                               core_format_shape(b, sizeof b, x->rank, x->sizes));
        if (g->out[i] < 1)
            return porta_error(PORTA_ERR_SHAPE,
                               "%s: input (%s: %lld) is too small. Calculated output %s: %lld", op,
                               AXIS_LETTERS[dims - 1][i], (long long)g->in[i],
                               AXIS_LETTERS[dims - 1][i], (long long)g->out[i]);
    }
    return NULL;
}

/* The input position each output position of spatial axis i reads: int64 [out]. */
static porta_tensor *source_positions(aten_scope *s, const char *op, porta_device *device,
                                      pad_mode mode, const pad_geometry *g, int i) {
    if (s->status) return NULL;
    int64_t n = g->in[i], out = g->out[i];
    double *positions = malloc((size_t)out * sizeof *positions);
    if (!positions) return scope_fail(s, porta_error(PORTA_ERR_OUT_OF_MEMORY, "%s: no memory", op));
    for (int64_t j = 0; j < out; j++) {
        int64_t at = j - g->before[i];
        if (mode == PAD_REFLECT) at = at < 0 ? -at : at >= n ? 2 * (n - 1) - at : at;
        else at = at < 0 ? 0 : at >= n ? n - 1 : at;
        positions[j] = (double)at;
    }
    porta_tensor *t = scope_cast(s, scope_from_host(s, device, 1, &out, positions), PORTA_I64);
    free(positions);
    return t;
}

/* Whether spatial axis i reads anything but its input in order. */
static bool axis_moves(const pad_geometry *g, int i) {
    return g->before[i] != 0 || g->after[i] != 0;
}

/* reflection_pad / replication_pad(self, padding) */
static porta_status *pad(const char *op, pad_mode mode, int dims, const porta_value *args,
                         aten_results *results) {
    const porta_tensor *x = args[0].tensor;
    if (x->dtype == PORTA_BOOL)
        return porta_error(PORTA_ERR_DTYPE, "%s: not implemented for 'Bool'", op);
    pad_geometry g;
    PORTA_TRY(read_pad(op, mode, dims, x, &args[1], &g));
    aten_scope s;
    scope_begin(&s);
    porta_device *device = x->buffer->device;
    porta_tensor *y = (porta_tensor *)x;
    for (int i = 0; i < dims; i++)
        if (axis_moves(&g, i))
            y = scope_index_select(&s, y, g.rank - dims + i,
                                   source_positions(&s, op, device, mode, &g, i));
    /* no padding at all: still a new tensor, as PyTorch returns */
    scope_push(&s, results, y == x ? scope_contiguous(&s, x) : y);
    return scope_end(&s);
}

/* The gradient of index_select(·, axis, index) for an input of `size`
 * there: grad scatter-added along axis into zeros. */
static porta_tensor *select_back(aten_scope *s, porta_tensor *grad, int axis,
                                 const porta_tensor *index, int64_t size) {
    if (!grad || !index) return NULL;
    int64_t shape[PORTA_MAX_RANK], zeros_shape[PORTA_MAX_RANK];
    for (int i = 0; i < grad->rank; i++) {
        shape[i] = i == axis ? index->sizes[0] : 1;
        zeros_shape[i] = i == axis ? size : grad->sizes[i];
    }
    porta_tensor *spread = scope_expand(s, scope_reshape(s, index, grad->rank, shape), grad->rank,
                                        grad->sizes);
    porta_tensor *zeros = scope_full(s, grad->buffer->device, grad->dtype, grad->rank, zeros_shape, 0);
    return scope_scatter(s, zeros, axis, spread, grad, PORTA_SCATTER_ADD);
}

/* reflection_pad / replication_pad _backward(grad_output, self, padding) */
static porta_status *pad_backward(const char *op, pad_mode mode, int dims,
                                  const porta_value *args, aten_results *results) {
    const porta_tensor *gy = args[0].tensor, *x = args[1].tensor;
    pad_geometry g;
    PORTA_TRY(read_pad(op, mode, dims, x, &args[2], &g));
    int64_t expected[PORTA_MAX_RANK];
    for (int i = 0, first = x->rank - dims; i < x->rank; i++)
        expected[i] = i >= first ? g.out[i - first] : x->sizes[i];
    bool shaped = gy->rank == x->rank;
    for (int i = 0; shaped && i < x->rank; i++) shaped = gy->sizes[i] == expected[i];
    if (!shaped) {
        char want[CORE_SHAPE_STR_CAP], got[CORE_SHAPE_STR_CAP];
        return porta_error(PORTA_ERR_SHAPE,
                           "%s: grad_output shape unexpected. Expected: %s, Got: %s", op,
                           core_format_shape(want, sizeof want, x->rank, expected),
                           core_format_shape(got, sizeof got, gy->rank, gy->sizes));
    }
    aten_scope s;
    scope_begin(&s);
    porta_device *device = gy->buffer->device;
    porta_dtype compute = aten_compute_dtype(gy->dtype);
    porta_tensor *gx = compute == gy->dtype ? (porta_tensor *)gy : scope_cast(&s, gy, compute);
    for (int i = dims - 1; i >= 0; i--)
        if (axis_moves(&g, i))
            gx = select_back(&s, gx, g.rank - dims + i,
                             source_positions(&s, op, device, mode, &g, i), g.in[i]);
    if (gx && gx->dtype != gy->dtype) gx = scope_cast(&s, gx, gy->dtype);
    scope_push(&s, results, gx == gy ? scope_contiguous(&s, gy) : gx);
    return scope_end(&s);
}

#define PAD_OPS(name, mode, dims)                                                          \
    static porta_status *name(const porta_value *args, aten_results *results) {            \
        return pad(#name, mode, dims, args, results);                                      \
    }                                                                                      \
    static porta_status *name##_backward(const porta_value *args, aten_results *results) { \
        return pad_backward(#name "_backward", mode, dims, args, results);                 \
    }

PAD_OPS(reflection_pad1d, PAD_REFLECT, 1)
PAD_OPS(reflection_pad2d, PAD_REFLECT, 2)
PAD_OPS(reflection_pad3d, PAD_REFLECT, 3)
PAD_OPS(replication_pad1d, PAD_REPLICATE, 1)
PAD_OPS(replication_pad2d, PAD_REPLICATE, 2)
PAD_OPS(replication_pad3d, PAD_REPLICATE, 3)

const aten_op aten_nn_pad_ops[] = {
    {"reflection_pad1d", "TI", reflection_pad1d},
    {"reflection_pad1d_backward", "TTI", reflection_pad1d_backward},
    {"reflection_pad2d", "TI", reflection_pad2d},
    {"reflection_pad2d_backward", "TTI", reflection_pad2d_backward},
    {"reflection_pad3d", "TI", reflection_pad3d},
    {"reflection_pad3d_backward", "TTI", reflection_pad3d_backward},
    {"replication_pad1d", "TI", replication_pad1d},
    {"replication_pad1d_backward", "TTI", replication_pad1d_backward},
    {"replication_pad2d", "TI", replication_pad2d},
    {"replication_pad2d_backward", "TTI", replication_pad2d_backward},
    {"replication_pad3d", "TI", replication_pad3d},
    {"replication_pad3d_backward", "TTI", replication_pad3d_backward},
    {NULL, NULL, NULL},
};
