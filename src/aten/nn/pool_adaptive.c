/* Adaptive average pooling over 2 or 3 spatial axes (the plan takes 1 to
 * 3): _adaptive_avg_pool2d, _adaptive_avg_pool3d and their gradients. The
 * windows along each axis are a 0/1 matrix [out, in] applied with one
 * matmul per axis; the sums are divided by the window volumes once, as
 * PyTorch's kernels divide. (Windowed pooling of every rank: nn/pool.c.) */
#include <stdlib.h>

#include "aten/dispatch/scope.h"
#include "aten/nn/memory_format.h"
#include "core/status.h"
#include "runtime/tensor.h"

#define ADAPTIVE_MAX_DIMS 3

/* Per spatial axis its window matrix, and the window volumes [out...], all
 * in the dtype the op computes in. */
typedef struct adaptive_plan {
    int dims;
    porta_tensor *marks[ADAPTIVE_MAX_DIMS];
    porta_tensor *volumes;
} adaptive_plan;

/* The 0/1 matrix [out, in] whose row i marks adaptive window i, and each
 * window's length. */
static porta_tensor *adaptive_windows(aten_scope *s, const char *op, porta_device *device,
                                      int64_t in, int64_t out, double *lengths) {
    if (s->status) return NULL;
    size_t count = (size_t)(in * out);
    double *marks = calloc(count ? count : 1, sizeof *marks);
    if (!marks) return scope_fail(s, porta_error(PORTA_ERR_OUT_OF_MEMORY, "%s: no memory", op));
    for (int64_t i = 0; i < out; i++) {
        int64_t start = i * in / out, end = ((i + 1) * in + out - 1) / out;
        for (int64_t j = start; j < end; j++) marks[i * in + j] = 1;
        lengths[i] = (double)(end - start);
    }
    int64_t sizes[2] = {out, in};
    porta_tensor *t = scope_from_host(s, device, 2, sizes, marks);
    free(marks);
    return t;
}

/* The plan for pooling x's last `dims` axes to `out`. */
static void adaptive_setup(aten_scope *s, const char *op, const porta_tensor *x, int dims,
                           const int64_t *out, adaptive_plan *p) {
    porta_device *device = x->buffer->device;
    porta_dtype dtype = aten_compute_dtype(x->dtype);
    int64_t volume_count = 1, length_count = 0;
    for (int i = 0; i < dims; i++) {
        volume_count *= out[i];
        length_count += out[i];
    }
    double *lengths = malloc((size_t)(length_count + volume_count + 1) * sizeof *lengths);
    if (!lengths) {
        scope_fail(s, porta_error(PORTA_ERR_OUT_OF_MEMORY, "%s: no memory", op));
        return;
    }
    p->dims = dims;
    double *axis_lengths[ADAPTIVE_MAX_DIMS], *volumes = lengths + length_count;
    for (int i = 0, at = 0; i < dims; at += (int)out[i], i++) {
        axis_lengths[i] = lengths + at;
        p->marks[i] = scope_cast(s, adaptive_windows(s, op, device, x->sizes[x->rank - dims + i],
                                                     out[i], axis_lengths[i]),
                              dtype);
    }
    /* volume of window (o_0, o_1, ...) = product of its lengths, row-major */
    for (int64_t f = 0; f < volume_count; f++) {
        double volume = 1;
        for (int64_t i = dims - 1, rest = f; i >= 0; rest /= out[i], i--)
            volume *= axis_lengths[i][rest % out[i]];
        volumes[f] = volume;
    }
    p->volumes = scope_cast(s, scope_from_host(s, device, dims, out, volumes), dtype);
    free(lengths);
}

/* m [a, b] applied along axis of t (whose size there is b): the sum over
 * that axis weighted by m's rows; the axis becomes a long. */
static porta_tensor *along_axis(aten_scope *s, porta_tensor *t, const porta_tensor *m, int axis) {
    if (!t || !m) return NULL;
    if (axis == t->rank - 1) {
        int swap[2] = {1, 0};
        return scope_matmul(s, t, scope_permute(s, m, swap));
    }
    int64_t folded[PORTA_MAX_RANK], sizes[PORTA_MAX_RANK];
    for (int i = 0; i <= axis; i++) folded[i] = t->sizes[i];
    folded[axis + 1] = 1;
    for (int i = axis + 1; i < t->rank; i++) folded[axis + 1] *= t->sizes[i];
    for (int i = 0; i < t->rank; i++) sizes[i] = i == axis ? m->sizes[0] : t->sizes[i];
    int rank = t->rank;
    porta_tensor *y = scope_matmul(s, m, scope_reshape(s, t, axis + 2, folded));
    return scope_reshape(s, y, rank, sizes);
}

static porta_status *check_adaptive(const char *op, int dims, const porta_tensor *x,
                                    const porta_value *output_size) {
    if (!porta_dtype_is_float(x->dtype))
        return porta_error(PORTA_ERR_DTYPE, "%s: not implemented for '%s'", op,
                           porta_dtype_name(x->dtype));
    if (output_size->ints.count != dims)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "%s: output_size must be %d ints, got %d",
                           op, dims, output_size->ints.count);
    for (int i = 0; i < dims; i++)
        if (output_size->ints.items[i] < 0)
            return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                               "%s: output_size must be >= 0, got %lld", op,
                               (long long)output_size->ints.items[i]);
    char b[CORE_SHAPE_STR_CAP];
    if (x->rank != dims + 1 && x->rank != dims + 2)
        return porta_error(PORTA_ERR_SHAPE, "%s: expected a %dD or %dD input, got %s", op,
                           dims + 1, dims + 2, core_format_shape(b, sizeof b, x->rank, x->sizes));
    for (int i = x->rank - dims - 1; i < x->rank; i++)
        if (x->sizes[i] == 0)
            return porta_error(PORTA_ERR_SHAPE,
                               "%s: expected input to have non-zero size for non-batch "
                               "dimensions, but input has sizes %s with dimension %d being empty",
                               op, core_format_shape(b, sizeof b, x->rank, x->sizes), i);
    return NULL;
}

/* _adaptive_avg_pool{2,3}d(self, output_size): the window sums along every
 * axis, divided by the volumes. */
static porta_status *adaptive_avg_pool(const char *op, int dims, const porta_value *args,
                                       aten_results *results) {
    const porta_tensor *x = args[0].tensor;
    PORTA_TRY(check_adaptive(op, dims, x, &args[1]));
    porta_memory_format format = aten_suggest_2d_memory_format(args[0].tensor);
    int first = results->count;
    aten_scope s;
    scope_begin(&s);
    adaptive_plan p = {0};
    adaptive_setup(&s, op, x, dims, args[1].ints.items, &p);
    porta_tensor *sums = scope_cast(&s, x, aten_compute_dtype(x->dtype));
    for (int i = dims - 1; i >= 0; i--) sums = along_axis(&s, sums, p.marks[i], x->rank - dims + i);
    scope_push(&s, results, scope_cast(&s, scope_binary(&s, PORTA_DIV, sums, p.volumes), x->dtype));
    return aten_results_in_format(scope_end(&s), results, first, format);
}

/* _adaptive_avg_pool{2,3}d_backward(grad_output, self): each window's share
 * (grad / volume) summed back through the transposed window matrices. */
static porta_status *adaptive_avg_pool_backward(const char *op, int dims, const porta_value *args,
                                                aten_results *results) {
    const porta_tensor *gy = args[0].tensor, *x = args[1].tensor;
    if (gy->rank != x->rank || gy->rank < dims)
        return porta_error(PORTA_ERR_SHAPE,
                           "%s: grad_output rank %d differs from input rank %d", op, gy->rank,
                           x->rank);
    const porta_value output_size = {.kind = PORTA_VALUE_INTS,
                                     .ints = {gy->sizes + gy->rank - dims, dims}};
    PORTA_TRY(check_adaptive(op, dims, x, &output_size));
    porta_memory_format format = aten_suggest_2d_memory_format(args[1].tensor);
    int first = results->count;
    aten_scope s;
    scope_begin(&s);
    adaptive_plan p = {0};
    adaptive_setup(&s, op, x, dims, output_size.ints.items, &p);
    int swap[2] = {1, 0};
    porta_tensor *gx = scope_binary(&s, PORTA_DIV, scope_cast(&s, gy, aten_compute_dtype(gy->dtype)),
                                    p.volumes);
    for (int i = dims - 1; i >= 0; i--)
        gx = along_axis(&s, gx, scope_permute(&s, p.marks[i], swap), x->rank - dims + i);
    scope_push(&s, results, scope_cast(&s, gx, gy->dtype));
    return aten_results_in_format(scope_end(&s), results, first, format);
}

static porta_status *adaptive_avg_pool2d(const porta_value *args, aten_results *results) {
    return adaptive_avg_pool("adaptive_avg_pool2d", 2, args, results);
}
static porta_status *adaptive_avg_pool3d(const porta_value *args, aten_results *results) {
    return adaptive_avg_pool("adaptive_avg_pool3d", 3, args, results);
}
static porta_status *adaptive_avg_pool2d_backward(const porta_value *args,
                                                  aten_results *results) {
    return adaptive_avg_pool_backward("adaptive_avg_pool2d_backward", 2, args, results);
}
static porta_status *adaptive_avg_pool3d_backward(const porta_value *args,
                                                  aten_results *results) {
    return adaptive_avg_pool_backward("adaptive_avg_pool3d_backward", 3, args, results);
}

const aten_op aten_nn_pool_adaptive_ops[] = {
    {"_adaptive_avg_pool2d", "TI", adaptive_avg_pool2d},
    {"_adaptive_avg_pool2d_backward", "TT", adaptive_avg_pool2d_backward},
    {"_adaptive_avg_pool3d", "TI", adaptive_avg_pool3d},
    {"_adaptive_avg_pool3d_backward", "TT", adaptive_avg_pool3d_backward},
    {NULL, NULL, NULL},
};
