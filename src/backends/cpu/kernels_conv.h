/* The CPU convolution's shared pieces: a convolution's geometry as the
 * kernels see it and im2col, used by PRIM_CONV (kernels_conv.c) and by its
 * weight gradient (kernels_conv_weight_grad.c). */
#ifndef PORTA_CPU_KERNELS_CONV_H
#define PORTA_CPU_KERNELS_CONV_H

#include <stdatomic.h>

#include "ir/prim.h"
#include "runtime/tensor.h"

typedef struct conv_job {
    porta_dtype dtype;
    bool wide;      /* double arithmetic (float64), else float */
    size_t ct_size; /* bytes of the arithmetic type */
    int spatial;
    const char *x;
    int64_t x_strides[PORTA_MAX_RANK];
    int64_t in_sizes[PORTA_MAX_RANK - 2];
    int64_t kernel[PORTA_MAX_RANK - 2];
    int64_t stride[PORTA_MAX_RANK - 2], padding[PORTA_MAX_RANK - 2],
        dilation[PORTA_MAX_RANK - 2];
    char *out;
    int64_t out_strides[PORTA_MAX_RANK];
    int64_t out_sizes[PORTA_MAX_RANK - 2];
    int64_t batch;           /* images: out's first size */
    int64_t positions;       /* output positions per image: prod(out_sizes) */
    int64_t position_stride; /* out's stride over positions when one exists, else 0 */
    int64_t groups, in_per_group, out_per_group, taps; /* taps: prod(kernel) */
    int64_t depth;           /* rows of col: in_per_group * taps */
    /* W as a matrix [Cout, depth] in the arithmetic type, and the bias */
    const void *weights;
    int64_t weight_rs;
    const void *bias;
    /* tiling: a tile is tile_positions positions of one image, or, when
     * tile_images > 1, every position of that many images of one group */
    int64_t tile_positions, tile_depth, tiles_per_image, tile_images;
    void *scratch; /* per thread: col tile, then the output tile */
    size_t scratch_stride;
    _Atomic(porta_status *) error;
} conv_job;

/* Fills job's geometry for conv(x, a weight of shape w_sizes) = out: dtype,
 * arithmetic type, strides, sizes, groups and depth (not the weights, bias,
 * tiling or scratch). */
void cpu_conv_describe(conv_job *job, const porta_conv_params *params, const porta_tensor *x,
                       const int64_t *w_sizes, const porta_tensor *out);

/* Rows [row0, row0 + rows) x positions [p0, p0 + count) of image b's col
 * matrix for group g, in the arithmetic type, row r at col + r * ld
 * elements (zeros where a tap reads padding). */
void cpu_conv_im2col(const conv_job *job, int64_t b, int64_t g, int64_t row0, int64_t rows,
                     int64_t p0, int64_t count, int64_t ld, char *col);

/* out[b, channel, positions p0..p0 + count) into dst, widened to the
 * arithmetic type (the gradient of the output, in the gradient kernels). */
void cpu_conv_load_positions(const conv_job *job, int64_t b, int64_t channel, int64_t p0,
                             int64_t count, void *dst);

/* W [Cout, Cin/g, *kernel] as job->weights, a [Cout, depth] matrix in the
 * arithmetic type with rows job->weight_rs apart: float32 weights whose
 * rows are already flat in place, others copied into *owned (to free). */
porta_status *cpu_conv_prepare_weights(conv_job *job, const porta_tensor *w, void **owned);

/* count elements from src (element stride `stride`, the job's dtype) into
 * dst, widened to the arithmetic type. */
void cpu_conv_gather_run(porta_dtype dtype, void *dst, const char *src, int64_t count,
                         int64_t stride);

#endif
