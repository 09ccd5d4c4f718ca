/* Nearest-exact, bicubic and antialiased upsampling, all separable: each
 * spatial axis is resampled on its own. Nearest-exact picks source
 * positions with index_select (its gradient scatter-adds them back, so
 * integer dtypes work too); bicubic and the antialiased modes mix each axis
 * by an interpolation matrix A [out, in] computed on the host in the
 * precision of PyTorch's kernels, so the op is a matmul per axis and its
 * gradient one with A^T. */
#include <math.h>
#include <stdlib.h>

#include "aten/dispatch/op_reuse.h"
#include "aten/dispatch/scope.h"
#include "aten/nn/memory_format.h"
#include "aten/nn/upsample_linear.h"
#include "aten/reduce/common.h"
#include "core/status.h"
#include "runtime/tensor.h"

/* PyTorch's compute_scales_value: 1/scale when a positive scale was given,
 * else in/out (in float32 for float32 kernels). */
static double scale_value(const porta_value *scale, int64_t in, int64_t out, bool single) {
    if (scale->kind != PORTA_VALUE_NONE && aten_number(scale) > 0)
        return in_math(1.0 / aten_number(scale), single);
    return in_math((double)in / (double)out, single);
}

/* PyTorch's area_pixel_compute_scale. */
static double area_scale(const porta_value *scale, int64_t in, int64_t out, bool align_corners,
                         bool single) {
    if (align_corners) return out > 1 ? in_math((double)(in - 1) / (double)(out - 1), single) : 0;
    return scale_value(scale, in, out, single);
}

/* ---- nearest-exact ---- */

/* PyTorch's nearest_neighbor_exact_compute_source_index for every output
 * position: min(floor((i + 0.5) * scale), in - 1), int64 [out]. */
static porta_tensor *exact_indices(aten_scope *s, porta_device *device, int64_t in, int64_t out,
                                   const porta_value *scale) {
    if (s->status) return NULL;
    double *indices = malloc((size_t)out * sizeof *indices);
    if (!indices) return scope_fail(s, porta_error(PORTA_ERR_OUT_OF_MEMORY, "upsample: no memory"));
    float step = (float)scale_value(scale, in, out, true);
    for (int64_t i = 0; i < out; i++) {
        int64_t at = (int64_t)floorf((float)(((double)i + 0.5) * step));
        indices[i] = (double)(at < in - 1 ? at : in - 1);
    }
    porta_tensor *t = scope_cast(s, scope_from_host(s, device, 1, &out, indices), PORTA_I64);
    free(indices);
    return t;
}

/* _upsample_nearest_exact{1,2,3}d(self, output_size, scales...) */
static porta_status *nearest_exact(const porta_value *a, int axes, aten_results *results) {
    const porta_tensor *x = a[0].tensor;
    PORTA_TRY(upsample_check_input("upsample_nearest_exact", x, axes, &a[1], x->sizes + 2, false));
    porta_memory_format format = aten_suggest_memory_format(x);
    int first = results->count;
    aten_scope s;
    scope_begin(&s);
    porta_tensor *y = (porta_tensor *)x;
    for (int d = 0; d < axes; d++)
        y = scope_index_select(&s, y, 2 + d,
                               exact_indices(&s, x->buffer->device, x->sizes[2 + d],
                                             a[1].ints.items[d], &a[2 + d]));
    scope_push(&s, results, y);
    return aten_results_in_format(scope_end(&s), results, first, format);
}

/* _upsample_nearest_exact{1,2,3}d_backward(grad_output, output_size,
 * input_size, scales...) */
static porta_status *nearest_exact_backward(const porta_value *a, int axes,
                                            aten_results *results) {
    const porta_tensor *gy = a[0].tensor;
    const porta_value *in = &a[2];
    if (in->ints.count != axes + 2)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "upsample_nearest_exact_backward: expected input_size of %d values, "
                           "got %d", axes + 2, in->ints.count);
    PORTA_TRY(upsample_check_input("upsample_nearest_exact_backward", gy, axes, &a[1],
                                   in->ints.items + 2, true));
    aten_scope s;
    scope_begin(&s);
    porta_dtype compute = aten_compute_dtype(gy->dtype);
    porta_tensor *g = scope_cast(&s, gy, compute);
    for (int d = axes - 1; d >= 0; d--) {
        int64_t size = in->ints.items[2 + d];
        g = upsample_select_back(&s, g, 2 + d,
                        exact_indices(&s, gy->buffer->device, size, a[1].ints.items[d], &a[3 + d]),
                        size);
    }
    scope_push(&s, results, scope_cast(&s, g, gy->dtype));
    return scope_end(&s);
}

static porta_status *nearest_exact1d(const porta_value *a, aten_results *r) {
    return nearest_exact(a, 1, r);
}
static porta_status *nearest_exact2d(const porta_value *a, aten_results *r) {
    return nearest_exact(a, 2, r);
}
static porta_status *nearest_exact3d(const porta_value *a, aten_results *r) {
    return nearest_exact(a, 3, r);
}
static porta_status *nearest_exact1d_backward(const porta_value *a, aten_results *r) {
    return nearest_exact_backward(a, 1, r);
}
static porta_status *nearest_exact2d_backward(const porta_value *a, aten_results *r) {
    return nearest_exact_backward(a, 2, r);
}
static porta_status *nearest_exact3d_backward(const porta_value *a, aten_results *r) {
    return nearest_exact_backward(a, 3, r);
}

/* ---- interpolation matrices ---- */

typedef enum { BICUBIC, AA_BILINEAR, AA_BICUBIC } interp_mode;

/* Keys' cubic convolution for |x| <= 1 and 1 < |x| < 2. */
static double cubic1(double x, double a, bool single) {
    return in_math(in_math(in_math((a + 2) * x - (a + 3), single) * x * x, single) + 1, single);
}
static double cubic2(double x, double a, bool single) {
    return in_math(in_math(in_math(in_math(a * x - 5 * a, single) * x + 8 * a, single) * x, single) -
                       4 * a,
                   single);
}

/* The filters of the antialiased modes (PIL's): a triangle, and the cubic
 * with a = -0.5. */
static double aa_filter(interp_mode mode, double x, bool single) {
    x = fabs(x);
    if (mode == AA_BILINEAR) return x < 1 ? in_math(1 - x, single) : 0;
    if (x < 1) return cubic1(x, -0.5, single);
    if (x < 2) return cubic2(x, -0.5, single);
    return 0;
}

/* Row i of the bicubic matrix: four taps around the source position
 * (A = -0.75), clamped at the borders. */
static void bicubic_row(double *row, int64_t i, int64_t in, double scale, bool align_corners,
                        bool single) {
    double real = align_corners ? in_math(scale * (double)i, single)
                                : in_math(in_math(scale * ((double)i + 0.5), single) - 0.5, single);
    int64_t low = (int64_t)floor(real) < in - 1 ? (int64_t)floor(real) : in - 1;
    double t = in_math(real - (double)low, single);
    t = t < 0 ? 0 : t > 1 ? 1 : t;
    double coeffs[4] = {cubic2(t + 1, -0.75, single), cubic1(t, -0.75, single),
                        cubic1(1 - t, -0.75, single), cubic2(2 - t, -0.75, single)};
    for (int k = 0; k < 4; k++) {
        int64_t at = low - 1 + k;
        at = at < 0 ? 0 : at > in - 1 ? in - 1 : at;
        row[at] += coeffs[k];
    }
}

/* Row i of an antialiased matrix: the filter stretched by the scale when
 * downsampling, over the source pixels within its support, normalized. */
static void aa_row(double *row, interp_mode mode, int64_t i, int64_t in, double scale, bool single) {
    double half = mode == AA_BILINEAR ? 1 : 2;
    double support = in_math(scale >= 1 ? half * scale : half, single);
    double center = in_math(scale * ((double)i + 0.5), single);
    double invscale = scale >= 1 ? in_math(1 / scale, single) : 1;
    int64_t low = (int64_t)in_math(center - support + 0.5, single);
    int64_t high = (int64_t)in_math(center + support + 0.5, single);
    low = low > 0 ? low : 0;
    high = high < in ? high : in;
    double total = 0;
    for (int64_t j = low; j < high; j++) {
        row[j] = aa_filter(mode, in_math(((double)j - center + 0.5) * invscale, single), single);
        total = in_math(total + row[j], single);
    }
    if (total != 0)
        for (int64_t j = low; j < high; j++) row[j] = in_math(row[j] / total, single);
}

/* The interpolation matrix [out, in] of one axis in `dtype`. */
static porta_tensor *interp_matrix(aten_scope *s, porta_device *device, porta_dtype dtype,
                                   interp_mode mode, int64_t in, int64_t out, bool align_corners,
                                   const porta_value *scale) {
    if (s->status) return NULL;
    double *weights = calloc((size_t)(in * out), sizeof *weights);
    if (!weights) return scope_fail(s, porta_error(PORTA_ERR_OUT_OF_MEMORY, "upsample: no memory"));
    bool single = dtype != PORTA_F64;
    double step = area_scale(scale, in, out, align_corners, single);
    for (int64_t i = 0; i < out; i++) {
        if (mode == BICUBIC)
            bicubic_row(weights + i * in, i, in, step, align_corners, single);
        else
            aa_row(weights + i * in, mode, i, in, step, single);
    }
    int64_t sizes[2] = {out, in};
    porta_tensor *t = scope_cast(s, scope_from_host(s, device, 2, sizes, weights), dtype);
    free(weights);
    return t;
}

/* x with `axis` mixed by m [out, in] (m^T when `transposed`): the axis
 * moved last, multiplied, moved back. */
static porta_tensor *mix_axis(aten_scope *s, const porta_tensor *x, int axis,
                              const porta_tensor *m, bool transposed) {
    if (!x) return NULL;
    int rank = x->rank, to_last[PORTA_MAX_RANK], back[PORTA_MAX_RANK], swap[2] = {1, 0};
    for (int i = 0, k = 0; i < rank; i++)
        if (i != axis) to_last[k++] = i;
    to_last[rank - 1] = axis;
    for (int i = 0; i < rank; i++) back[to_last[i]] = i;
    porta_tensor *moved = scope_permute(s, x, to_last);
    porta_tensor *mixed = scope_matmul(s, moved, transposed ? m : scope_permute(s, m, swap));
    return scope_permute(s, mixed, back);
}

/* upsample_bicubic2d and the _aa ops (self, output_size, align_corners,
 * scales_h?, scales_w?). */
static porta_status *interp2d(const char *op, interp_mode mode, const porta_value *a,
                              aten_results *results) {
    const porta_tensor *x = a[0].tensor;
    PORTA_TRY(upsample_check_input(op, x, 2, &a[1], x->sizes + 2, true));
    porta_memory_format format = aten_suggest_memory_format(x);
    int first = results->count;
    aten_scope s;
    scope_begin(&s);
    porta_dtype compute = aten_compute_dtype(x->dtype);
    porta_tensor *y = scope_as_dtype(&s, x, compute);
    for (int d = 0; d < 2; d++)
        y = mix_axis(&s, y, 2 + d,
                     interp_matrix(&s, x->buffer->device, compute, mode, x->sizes[2 + d],
                                   a[1].ints.items[d], a[2].b, &a[3 + d]),
                     false);
    scope_push(&s, results, scope_contiguous(&s, scope_as_dtype(&s, y, x->dtype)));
    return aten_results_in_format(scope_end(&s), results, first, format);
}

/* Their backward ops (grad_output, output_size, input_size, align_corners,
 * scales_h?, scales_w?). */
static porta_status *interp2d_backward(const char *op, interp_mode mode, const porta_value *a,
                                       aten_results *results) {
    const porta_tensor *gy = a[0].tensor;
    const porta_value *in = &a[2];
    if (in->ints.count != 4)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "%s: expected input_size of 4 values, got %d",
                           op, in->ints.count);
    PORTA_TRY(upsample_check_input(op, gy, 2, &a[1], in->ints.items + 2, true));
    aten_scope s;
    scope_begin(&s);
    porta_dtype compute = aten_compute_dtype(gy->dtype);
    porta_tensor *g = scope_as_dtype(&s, gy, compute);
    for (int d = 0; d < 2; d++)
        g = mix_axis(&s, g, 2 + d,
                     interp_matrix(&s, gy->buffer->device, compute, mode, in->ints.items[2 + d],
                                   a[1].ints.items[d], a[3].b, &a[4 + d]),
                     true);
    scope_push(&s, results, scope_contiguous(&s, scope_as_dtype(&s, g, gy->dtype)));
    return scope_end(&s);
}

static porta_status *bicubic2d(const porta_value *a, aten_results *r) {
    return interp2d("upsample_bicubic2d", BICUBIC, a, r);
}
static porta_status *bicubic2d_backward(const porta_value *a, aten_results *r) {
    return interp2d_backward("upsample_bicubic2d_backward", BICUBIC, a, r);
}
static porta_status *bilinear2d_aa(const porta_value *a, aten_results *r) {
    return interp2d("_upsample_bilinear2d_aa", AA_BILINEAR, a, r);
}
static porta_status *bilinear2d_aa_backward(const porta_value *a, aten_results *r) {
    return interp2d_backward("_upsample_bilinear2d_aa_backward", AA_BILINEAR, a, r);
}
static porta_status *bicubic2d_aa(const porta_value *a, aten_results *r) {
    return interp2d("_upsample_bicubic2d_aa", AA_BICUBIC, a, r);
}
static porta_status *bicubic2d_aa_backward(const porta_value *a, aten_results *r) {
    return interp2d_backward("_upsample_bicubic2d_aa_backward", AA_BICUBIC, a, r);
}

ATEN_OUT_KERNEL(nearest_exact1d_out, nearest_exact1d, 3)
ATEN_OUT_KERNEL(nearest_exact2d_out, nearest_exact2d, 4)
ATEN_OUT_KERNEL(nearest_exact3d_out, nearest_exact3d, 5)
ATEN_OUT_KERNEL(nearest_exact1d_backward_out, nearest_exact1d_backward, 4)
ATEN_OUT_KERNEL(nearest_exact2d_backward_out, nearest_exact2d_backward, 5)
ATEN_OUT_KERNEL(nearest_exact3d_backward_out, nearest_exact3d_backward, 6)
ATEN_OUT_KERNEL(bicubic2d_out, bicubic2d, 5)
ATEN_OUT_KERNEL(bicubic2d_backward_out, bicubic2d_backward, 6)
ATEN_OUT_KERNEL(bilinear2d_aa_out, bilinear2d_aa, 5)
ATEN_OUT_KERNEL(bilinear2d_aa_backward_out, bilinear2d_aa_backward, 6)
ATEN_OUT_KERNEL(bicubic2d_aa_out, bicubic2d_aa, 5)
ATEN_OUT_KERNEL(bicubic2d_aa_backward_out, bicubic2d_aa_backward, 6)

const aten_op aten_nn_upsample_exact_cubic_aa_ops[] = {
    {"_upsample_nearest_exact1d", "TIg", nearest_exact1d},
    {"_upsample_nearest_exact1d.out", "TIgT", nearest_exact1d_out},
    {"_upsample_nearest_exact1d_backward", "TIIg", nearest_exact1d_backward},
    {"_upsample_nearest_exact1d_backward.grad_input", "TIIgT", nearest_exact1d_backward_out},
    {"_upsample_nearest_exact2d", "TIgg", nearest_exact2d},
    {"_upsample_nearest_exact2d.out", "TIggT", nearest_exact2d_out},
    {"_upsample_nearest_exact2d_backward", "TIIgg", nearest_exact2d_backward},
    {"_upsample_nearest_exact2d_backward.grad_input", "TIIggT", nearest_exact2d_backward_out},
    {"_upsample_nearest_exact3d", "TIggg", nearest_exact3d},
    {"_upsample_nearest_exact3d.out", "TIgggT", nearest_exact3d_out},
    {"_upsample_nearest_exact3d_backward", "TIIggg", nearest_exact3d_backward},
    {"_upsample_nearest_exact3d_backward.grad_input", "TIIgggT", nearest_exact3d_backward_out},
    {"upsample_bicubic2d", "TIbgg", bicubic2d},
    {"upsample_bicubic2d.out", "TIbggT", bicubic2d_out},
    {"upsample_bicubic2d_backward", "TIIbgg", bicubic2d_backward},
    {"upsample_bicubic2d_backward.grad_input", "TIIbggT", bicubic2d_backward_out},
    {"_upsample_bilinear2d_aa", "TIbgg", bilinear2d_aa},
    {"_upsample_bilinear2d_aa.out", "TIbggT", bilinear2d_aa_out},
    {"_upsample_bilinear2d_aa_backward", "TIIbgg", bilinear2d_aa_backward},
    {"_upsample_bilinear2d_aa_backward.grad_input", "TIIbggT", bilinear2d_aa_backward_out},
    {"_upsample_bicubic2d_aa", "TIbgg", bicubic2d_aa},
    {"_upsample_bicubic2d_aa.out", "TIbggT", bicubic2d_aa_out},
    {"_upsample_bicubic2d_aa_backward", "TIIbgg", bicubic2d_aa_backward},
    {"_upsample_bicubic2d_aa_backward.grad_input", "TIIbggT", bicubic2d_aa_backward_out},
    {NULL, NULL, NULL},
};
