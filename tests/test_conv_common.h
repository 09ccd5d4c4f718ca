/* Helpers the convolution tests share (test_conv_common.c). */
#ifndef PORTA_TESTS_TEST_CONV_COMMON_H
#define PORTA_TESTS_TEST_CONV_COMMON_H

#include "test.h"

#define CONV_FLOAT_DTYPE_COUNT 4
extern const porta_dtype conv_float_dtypes[CONV_FLOAT_DTYPE_COUNT];

typedef enum conv_layout {
    LAYOUT_CONTIGUOUS,
    LAYOUT_CHANNELS_LAST, /* axis 1 innermost in memory */
    LAYOUT_FLIPPED,       /* spatial axes walked backwards */
    LAYOUT_STEPPED,       /* every other element of a wider last axis */
    LAYOUT_COUNT
} conv_layout;

/* A random tensor of `sizes` (rank >= 2) seen through `kind`, built with the
 * public movement ops; NULL (and a test failure) when it cannot be made. */
porta_tensor *conv_random_layout(test_rng *rng, porta_dtype dtype, int rank,
                                 const int64_t *sizes, conv_layout kind);
/* Row-major flat index of idx over sizes. */
int64_t conv_flat_index(int rank, const int64_t *sizes, const int64_t *idx);
/* The same stride, padding and dilation on each of `spatial` axes. */
porta_conv_params conv_params(int spatial, int64_t stride, int64_t padding, int64_t dilation,
                              int64_t groups);

#endif
