/* Helpers the convolution tests share: operands in several layouts, the
 * parameters of a convolution, flat indices for the double references. */
#include "test_conv_common.h"

#include <stdlib.h>
#include <string.h>

const porta_dtype conv_float_dtypes[CONV_FLOAT_DTYPE_COUNT] = {PORTA_F16, PORTA_BF16, PORTA_F32,
                                                               PORTA_F64};

/* A random tensor of `sizes` (rank >= 2) seen through `kind`, built with the
 * public movement ops. */
porta_tensor *conv_random_layout(test_rng *rng, porta_dtype dtype, int rank,
                                 const int64_t *sizes, conv_layout kind) {
    int64_t base_sizes[PORTA_MAX_RANK];
    memcpy(base_sizes, sizes, (size_t)rank * sizeof *sizes);
    int dims[PORTA_MAX_RANK];
    if (kind == LAYOUT_CHANNELS_LAST) { /* [B, *S, C], permuted to [B, C, *S] */
        for (int d = 1; d < rank - 1; d++) base_sizes[d] = sizes[d + 1];
        base_sizes[rank - 1] = sizes[1];
        dims[0] = 0;
        dims[1] = rank - 1;
        for (int d = 2; d < rank; d++) dims[d] = d - 1;
    }
    if (kind == LAYOUT_STEPPED) base_sizes[rank - 1] = 2 * sizes[rank - 1];
    porta_tensor *base = test_random_tensor(rng, dtype, rank, base_sizes, -1.0, 1.0);
    if (!base) return NULL;
    porta_tensor *view = NULL;
    porta_status *status = NULL;
    switch (kind) {
    case LAYOUT_CONTIGUOUS: return base;
    case LAYOUT_CHANNELS_LAST: status = porta_permute(base, dims, &view); break;
    case LAYOUT_FLIPPED: {
        int axes[PORTA_MAX_RANK];
        for (int d = 2; d < rank; d++) axes[d - 2] = d;
        status = porta_flip(base, axes, rank - 2, &view);
        break;
    }
    default: status = porta_slice(base, rank - 1, 1, INT64_MAX, 2, &view); break;
    }
    porta_tensor_release(base);
    if (status) {
        test_fail(__FILE__, __LINE__, "layout %d: %s", (int)kind, porta_status_message(status));
        porta_status_free(status);
        return NULL;
    }
    return view;
}

/* Row-major flat index of idx over sizes. */
int64_t conv_flat_index(int rank, const int64_t *sizes, const int64_t *idx) {
    int64_t flat = 0;
    for (int d = 0; d < rank; d++) flat = flat * sizes[d] + idx[d];
    return flat;
}

porta_conv_params conv_params(int spatial, int64_t stride, int64_t padding, int64_t dilation,
                              int64_t groups) {
    porta_conv_params p;
    memset(&p, 0, sizeof p);
    for (int d = 0; d < spatial; d++) {
        p.stride[d] = stride;
        p.padding[d] = padding;
        p.dilation[d] = dilation;
    }
    p.groups = groups;
    return p;
}
