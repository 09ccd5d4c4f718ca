/* Sampling ops: col2im (fold) and its adjoint im2col (unfold), and
 * grid_sampler_2d and 3d.
 *
 * (grid_sampler_2d and 3d live in nn/sample_grid.c.)
 *
 * col2im and im2col share one int64 map, computed on the host, from each
 * (kernel offset, block) column element to its position in the zero-padded
 * image plane: im2col gathers the padded image through it, col2im
 * scatter-adds the columns through it and crops the padding. */
#include <stdlib.h>

#include "aten/nn/sample_grid.h"
#include "aten/dispatch/scope.h"
#include "aten/reduce/common.h"
#include "core/status.h"
#include "runtime/tensor.h"

/* The geometry of sliding blocks over an image. */
typedef struct blocks {
    int64_t kernel[2], dilation[2], padding[2], stride[2];
    int64_t image[2];  /* H, W */
    int64_t count[2];  /* blocks along H and W */
} blocks;

static int64_t block_count(const blocks *b, int d) {
    return (b->image[d] + 2 * b->padding[d] - b->dilation[d] * (b->kernel[d] - 1) - 1) /
               b->stride[d] + 1;
}

/* Reads the four int[2] arguments from args[0..3] (kernel_size, dilation,
 * padding, stride) with PyTorch's checks. */
static porta_status *read_blocks(const porta_value *args, blocks *b) {
    static const char *const names[4] = {"kernel_size", "dilation", "padding", "stride"};
    int64_t *fields[4] = {b->kernel, b->dilation, b->padding, b->stride};
    for (int i = 0; i < 4; i++) {
        if (args[i].ints.count != 2)
            return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                               "It is expected %s equals to 2, but got size %d", names[i],
                               args[i].ints.count);
        fields[i][0] = args[i].ints.items[0];
        fields[i][1] = args[i].ints.items[1];
        bool bad = i == 2 ? fields[i][0] < 0 || fields[i][1] < 0
                          : fields[i][0] <= 0 || fields[i][1] <= 0;
        if (bad)
            return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                               "%s should be %s, but got %s_height: %lld %s_width: %lld",
                               names[i], i == 2 ? "non-negative" : "greater than zero",
                               i == 0 ? "kernel" : names[i], (long long)fields[i][0],
                               i == 0 ? "kernel" : names[i], (long long)fields[i][1]);
    }
    return NULL;
}

static porta_status *check_block_count(const blocks *b) {
    if (b->count[0] >= 1 && b->count[1] >= 1) return NULL;
    return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                       "Given input with spatial size (%lld, %lld), kernel_size=(%lld, %lld), "
                       "dilation=(%lld, %lld), padding=(%lld, %lld), calculated shape of the "
                       "array of sliding blocks as (%lld, %lld), but its components must be at "
                       "least one.",
                       (long long)b->image[0], (long long)b->image[1], (long long)b->kernel[0],
                       (long long)b->kernel[1], (long long)b->dilation[0],
                       (long long)b->dilation[1], (long long)b->padding[0],
                       (long long)b->padding[1], (long long)b->count[0], (long long)b->count[1]);
}

/* int64 [kernel area * blocks]: column element (k, l) -> position in the
 * padded [H + 2ph, W + 2pw] plane, laid out [1, 1, K * L]. */
static porta_tensor *column_positions(aten_scope *s, porta_device *device, const blocks *b) {
    if (s->status) return NULL;
    int64_t area = b->kernel[0] * b->kernel[1], count = b->count[0] * b->count[1];
    int64_t n = area * count, padded_w = b->image[1] + 2 * b->padding[1];
    double *positions = malloc((size_t)(n ? n : 1) * sizeof *positions);
    if (!positions)
        return scope_fail(s, porta_error(PORTA_ERR_OUT_OF_MEMORY, "im2col: no memory for %lld "
                                                               "positions", (long long)n));
    for (int64_t k = 0; k < area; k++) {
        int64_t ki = k / b->kernel[1], kj = k % b->kernel[1];
        for (int64_t l = 0; l < count; l++) {
            int64_t row = (l / b->count[1]) * b->stride[0] + ki * b->dilation[0];
            int64_t col = (l % b->count[1]) * b->stride[1] + kj * b->dilation[1];
            positions[k * count + l] = (double)(row * padded_w + col);
        }
    }
    int64_t shape[3] = {1, 1, n};
    porta_tensor *t = scope_cast(s, scope_from_host(s, device, 3, shape, positions), PORTA_I64);
    free(positions);
    return t;
}

/* PyTorch's CPU kernels take the float dtypes only. */
static porta_status *check_float(const char *kernel, const porta_tensor *x) {
    if (porta_dtype_is_float(x->dtype)) return NULL;
    return porta_error(PORTA_ERR_UNSUPPORTED, "\"%s\" not implemented for '%s'", kernel,
                       aten_dtype_label(x->dtype));
}

/* col2im(self, output_size, kernel_size, dilation, padding, stride) */
static porta_status *col2im(const porta_value *args, aten_results *results) {
    const porta_tensor *x = args[0].tensor;
    blocks b;
    PORTA_TRY(check_float("col2im_out_cpu", x));
    PORTA_TRY(read_blocks(&args[2], &b));
    if (args[1].ints.count != 2)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "It is expected output_size equals to 2, but got size %d",
                           args[1].ints.count);
    b.image[0] = args[1].ints.items[0];
    b.image[1] = args[1].ints.items[1];
    b.count[0] = block_count(&b, 0);
    b.count[1] = block_count(&b, 1);
    bool batched = x->rank == 3;
    if ((x->rank != 2 && x->rank != 3) || x->sizes[batched] == 0 || x->sizes[batched + 1] == 0) {
        char shape[CORE_SHAPE_STR_CAP];
        return porta_error(PORTA_ERR_SHAPE,
                           "Expected 2D or 3D (batch mode) tensor for input with possibly 0 "
                           "batch size and non-zero dimensions for input, but got: %s",
                           core_format_shape(shape, sizeof shape, x->rank, x->sizes));
    }
    int64_t area = b.kernel[0] * b.kernel[1], rows = x->sizes[batched];
    if (rows % area)
        return porta_error(PORTA_ERR_SHAPE,
                           "Expected size of input's dimension 1 to be divisible by the product "
                           "of kernel_size, but got input.size(1)=%lld and kernel_size=(%lld, "
                           "%lld).",
                           (long long)rows, (long long)b.kernel[0], (long long)b.kernel[1]);
    PORTA_TRY(check_block_count(&b));
    int64_t count = b.count[0] * b.count[1];
    if (x->sizes[batched + 1] != count)
        return porta_error(PORTA_ERR_SHAPE,
                           "Given output_size=(%lld, %lld), kernel_size=(%lld, %lld), "
                           "dilation=(%lld, %lld), padding=(%lld, %lld), stride=(%lld, %lld), "
                           "expected size of input's dimension 2 to match the calculated number "
                           "of sliding blocks %lld * %lld = %lld, but got input.size(2)=%lld.",
                           (long long)b.image[0], (long long)b.image[1],
                           (long long)b.kernel[0], (long long)b.kernel[1],
                           (long long)b.dilation[0], (long long)b.dilation[1],
                           (long long)b.padding[0], (long long)b.padding[1],
                           (long long)b.stride[0], (long long)b.stride[1],
                           (long long)b.count[0], (long long)b.count[1], (long long)count,
                           (long long)x->sizes[batched + 1]);
    int64_t batch = batched ? x->sizes[0] : 1, channels = rows / area;
    int64_t padded[2] = {b.image[0] + 2 * b.padding[0], b.image[1] + 2 * b.padding[1]};
    int64_t columns[3] = {batch, channels, area * count};
    int64_t planes[3] = {batch, channels, padded[0] * padded[1]};
    int64_t images[4] = {batch, channels, padded[0], padded[1]};
    aten_scope s;
    scope_begin(&s);
    porta_device *device = x->buffer->device;
    porta_tensor *index = scope_expand(&s, column_positions(&s, device, &b), 3, columns);
    porta_tensor *zeros = scope_full(&s, device, x->dtype, 3, planes, 0);
    porta_tensor *summed = scope_scatter(&s, zeros, 2, index, scope_reshape(&s, x, 3, columns),
                                         PORTA_SCATTER_ADD);
    porta_tensor *image = scope_reshape(&s, summed, 4, images);
    image = scope_slice(&s, image, 2, b.padding[0], b.padding[0] + b.image[0], 1);
    image = scope_contiguous(&s, scope_slice(&s, image, 3, b.padding[1], b.padding[1] + b.image[1], 1));
    int64_t unbatched[3] = {channels, b.image[0], b.image[1]};
    scope_push(&s, results, batched ? image : scope_reshape(&s, image, 3, unbatched));
    return scope_end(&s);
}

/* im2col(self, kernel_size, dilation, padding, stride) */
static porta_status *im2col(const porta_value *args, aten_results *results) {
    const porta_tensor *x = args[0].tensor;
    blocks b;
    PORTA_TRY(check_float("im2col_out_cpu", x));
    PORTA_TRY(read_blocks(&args[1], &b));
    bool batched = x->rank == 4;
    bool empty_plane = x->rank >= 3 && (x->sizes[batched] == 0 || x->sizes[batched + 1] == 0 ||
                                        x->sizes[batched + 2] == 0);
    if ((x->rank != 3 && x->rank != 4) || empty_plane) {
        char shape[CORE_SHAPE_STR_CAP];
        return porta_error(PORTA_ERR_SHAPE,
                           "Expected 3D or 4D (batch mode) tensor with possibly 0 batch size "
                           "and other non-zero dimensions for input, but got: %s",
                           core_format_shape(shape, sizeof shape, x->rank, x->sizes));
    }
    b.image[0] = x->sizes[batched + 1];
    b.image[1] = x->sizes[batched + 2];
    b.count[0] = block_count(&b, 0);
    b.count[1] = block_count(&b, 1);
    PORTA_TRY(check_block_count(&b));
    int64_t batch = batched ? x->sizes[0] : 1, channels = x->sizes[batched];
    int64_t area = b.kernel[0] * b.kernel[1], count = b.count[0] * b.count[1];
    int64_t padded[2] = {b.image[0] + 2 * b.padding[0], b.image[1] + 2 * b.padding[1]};
    int64_t images[4] = {batch, channels, b.image[0], b.image[1]};
    int64_t planes[3] = {batch, channels, padded[0] * padded[1]};
    int64_t columns[3] = {batch, channels, area * count};
    int64_t out[3] = {batch, channels * area, count};
    int64_t pads[8] = {0, 0, 0, 0, b.padding[0], b.padding[0], b.padding[1], b.padding[1]};
    aten_scope s;
    scope_begin(&s);
    porta_device *device = x->buffer->device;
    porta_tensor *index = scope_expand(&s, column_positions(&s, device, &b), 3, columns);
    porta_tensor *image = scope_pad(&s, scope_reshape(&s, x, 4, images), pads, 0);
    porta_tensor *picked = scope_gather(&s, scope_reshape(&s, image, 3, planes), 2, index);
    scope_push(&s, results, scope_reshape(&s, picked, batched ? 3 : 2, batched ? out : out + 1));
    return scope_end(&s);
}

const aten_op aten_nn_sample_ops[] = {
    {"col2im", "TIIIII", col2im},
    {"grid_sampler_2d", "TTiib", aten_grid_sampler_2d},
    {"grid_sampler_2d_backward", "TTTiibI", aten_grid_sampler_2d_backward},
    {"grid_sampler_3d", "TTiib", aten_grid_sampler_3d},
    {"grid_sampler_3d_backward", "TTTiibI", aten_grid_sampler_3d_backward},
    {"im2col", "TIIII", im2col},
    {NULL, NULL, NULL},
};
