/* conv_input_grad against a double-precision reference: 1-d to 3-d,
 * stride, padding, dilation, groups, every float dtype, channels-last,
 * flipped and stepped operands, images wider than a column tile, zero sizes and
 * errors. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"
#include "test_conv_common.h"

/* Checks gx against the sum, for each element of gy and each kernel tap
 * reading inside the input, of gy times the tap's weight, added at the
 * element the tap reads; in double from the tensors' own values. */
static void check_input_grad(const porta_tensor *gy, const porta_tensor *w,
                             const porta_conv_params *p, const porta_tensor *gx,
                             const char *what) {
    int rank = porta_tensor_rank(gy), spatial = rank - 2;
    const int64_t *ys = porta_tensor_sizes(gy), *ws = porta_tensor_sizes(w);
    const int64_t *xs = porta_tensor_sizes(gx);
    double *vy = test_to_doubles(gy), *vw = test_to_doubles(w), *vx = test_to_doubles(gx);
    int64_t n = porta_tensor_numel(gx);
    double *want = calloc((size_t)(n > 0 ? n : 1), sizeof *want);
    double *mag = calloc((size_t)(n > 0 ? n : 1), sizeof *mag);
    int64_t cin_g = ws[1], cout_g = ws[0] / p->groups;
    int64_t yidx[PORTA_MAX_RANK] = {0};
    for (int64_t i = 0; i < porta_tensor_numel(gy); i++, test_next_index(rank, ys, yidx)) {
        int64_t co = yidx[1], g = co / cout_g;
        int64_t widx[PORTA_MAX_RANK] = {co, 0};
        for (int64_t e = 0; e < porta_tensor_numel(w) / ws[0]; e++) {
            int64_t xidx[PORTA_MAX_RANK] = {yidx[0], g * cin_g + widx[1]};
            bool inside = true;
            for (int d = 0; d < spatial; d++) {
                xidx[2 + d] =
                    yidx[2 + d] * p->stride[d] - p->padding[d] + widx[2 + d] * p->dilation[d];
                inside &= xidx[2 + d] >= 0 && xidx[2 + d] < xs[2 + d];
            }
            if (inside) {
                double term = vy[i] * vw[conv_flat_index(rank, ws, widx)];
                want[conv_flat_index(rank, xs, xidx)] += term;
                mag[conv_flat_index(rank, xs, xidx)] += fabs(term);
            }
            for (int d = rank - 1; d >= 1 && ++widx[d] == ws[d]; d--) widx[d] = 0;
        }
    }
    double rtol = 4 * test_rtol(porta_tensor_dtype(gx));
    int failures = 0;
    for (int64_t i = 0; i < n; i++)
        if (fabs(vx[i] - want[i]) > rtol * mag[i] + 1e-30 && failures++ < 3)
            test_fail(__FILE__, __LINE__, "%s (%s): element %lld is %.9g, expected %.9g", what,
                      porta_dtype_name(porta_tensor_dtype(gx)), (long long)i, vx[i], want[i]);
    free(want);
    free(mag);
    free(vy);
    free(vw);
    free(vx);
}

/* gy of conv(x [B, Cin, *S], w)'s output shape: runs porta_conv_input_grad
 * and checks it. */
static void run_case(test_rng *rng, porta_dtype dtype, int rank, const int64_t *x_sizes,
                     const int64_t *w_sizes, const porta_conv_params *p, conv_layout ly,
                     conv_layout lw, const char *what) {
    int64_t y_sizes[PORTA_MAX_RANK] = {x_sizes[0], w_sizes[0]};
    for (int d = 0; d < rank - 2; d++) {
        int64_t span = p->dilation[d] * (w_sizes[2 + d] - 1) + 1;
        y_sizes[2 + d] = (x_sizes[2 + d] + 2 * p->padding[d] - span) / p->stride[d] + 1;
    }
    porta_tensor *gy = conv_random_layout(rng, dtype, rank, y_sizes, ly);
    porta_tensor *w = conv_random_layout(rng, dtype, rank, w_sizes, lw);
    porta_tensor *gx = NULL;
    if (gy && w) {
        porta_status *status = porta_conv_input_grad(gy, w, p, x_sizes + 2, &gx);
        if (status) {
            test_fail(__FILE__, __LINE__, "%s (%s): %s", what, porta_dtype_name(dtype),
                      porta_status_message(status));
            porta_status_free(status);
        } else {
            CHECK(porta_tensor_dtype(gx) == dtype && porta_tensor_rank(gx) == rank);
            for (int d = 0; d < rank; d++) CHECK(porta_tensor_sizes(gx)[d] == x_sizes[d]);
            check_input_grad(gy, w, p, gx, what);
        }
    }
    porta_tensor_release(gy);
    porta_tensor_release(w);
    porta_tensor_release(gx);
}

TEST(test_conv_input_grad_random_1d_2d_3d_every_dtype) {
    test_rng rng = test_rng_make(51);
    for (int trial = 0; trial < 40; trial++) {
        porta_dtype dtype = conv_float_dtypes[trial % CONV_FLOAT_DTYPE_COUNT];
        int spatial = 1 + trial % 3, rank = spatial + 2;
        int64_t groups = test_int(&rng, 1, 3);
        int64_t x_sizes[PORTA_MAX_RANK] = {test_int(&rng, 1, 3), groups * test_int(&rng, 1, 3)};
        int64_t w_sizes[PORTA_MAX_RANK] = {groups * test_int(&rng, 1, 6), x_sizes[1] / groups};
        porta_conv_params p;
        memset(&p, 0, sizeof p);
        p.groups = groups;
        for (int d = 0; d < spatial; d++) {
            p.stride[d] = test_int(&rng, 1, 3);
            p.padding[d] = test_int(&rng, 0, 2);
            p.dilation[d] = test_int(&rng, 1, 2);
            w_sizes[2 + d] = test_int(&rng, 1, 3);
            int64_t span = p.dilation[d] * (w_sizes[2 + d] - 1) + 1;
            int64_t least = span - 2 * p.padding[d] > 1 ? span - 2 * p.padding[d] : 1;
            x_sizes[2 + d] = least + test_int(&rng, 0, spatial == 3 ? 4 : 9);
        }
        run_case(&rng, dtype, rank, x_sizes, w_sizes, &p,
                 (conv_layout)test_int(&rng, 0, LAYOUT_COUNT - 1),
                 (conv_layout)test_int(&rng, 0, LAYOUT_COUNT - 1), "random");
    }
}

/* The demo CNN's second layer, and positions and depth over one column
 * tile. */
TEST(test_conv_input_grad_demo_layer_and_large_tiles) {
    test_rng rng = test_rng_make(52);
    porta_conv_params p = conv_params(2, 1, 1, 1, 1);
    int64_t xs[4] = {64, 16, 8, 8}, ws[4] = {32, 16, 3, 3};
    run_case(&rng, PORTA_F32, 4, xs, ws, &p, LAYOUT_CONTIGUOUS, LAYOUT_CONTIGUOUS, "demo");
    run_case(&rng, PORTA_F32, 4, xs, ws, &p, LAYOUT_CHANNELS_LAST, LAYOUT_FLIPPED,
             "demo, channels last");
    int64_t wide_x[4] = {1, 120, 40, 40}, wide_w[4] = {6, 120, 3, 3};
    porta_conv_params strided = conv_params(2, 2, 1, 1, 1);
    run_case(&rng, PORTA_F32, 4, wide_x, wide_w, &strided, LAYOUT_CONTIGUOUS, LAYOUT_CONTIGUOUS,
             "tiles of positions and depth");
}

TEST(test_conv_input_grad_zero_sizes_and_errors) {
    test_rng rng = test_rng_make(53);
    porta_conv_params p = conv_params(2, 1, 1, 1, 1);
    int64_t empty[4] = {0, 3, 5, 5}, ws[4] = {4, 3, 3, 3};
    for (int d = 0; d < CONV_FLOAT_DTYPE_COUNT; d++)
        run_case(&rng, conv_float_dtypes[d], 4, empty, ws, &p, LAYOUT_CONTIGUOUS, LAYOUT_CONTIGUOUS,
                 "empty batch");
    int64_t ys[4] = {2, 4, 5, 5}, in[2] = {5, 5}, bad_in[2] = {9, 5}, w3[3] = {4, 3, 3};
    porta_tensor *gy = test_random_tensor(&rng, PORTA_F32, 4, ys, -1, 1);
    porta_tensor *w = test_random_tensor(&rng, PORTA_F32, 4, ws, -1, 1);
    porta_tensor *wr = test_random_tensor(&rng, PORTA_F32, 3, w3, -1, 1);
    porta_tensor *out = NULL;
    CHECK_ERR(porta_conv_input_grad(gy, w, &p, bad_in, &out), PORTA_ERR_SHAPE,
              "does not match the convolution's output");
    CHECK_ERR(porta_conv_input_grad(gy, wr, &p, in, &out), PORTA_ERR_SHAPE, "of the same rank");
    CHECK_ERR(porta_conv_input_grad(gy, w, &p, NULL, &out), PORTA_ERR_INVALID_ARGUMENT,
              "input_sizes");
    porta_conv_params bad = p;
    bad.groups = 0;
    CHECK_ERR(porta_conv_input_grad(gy, w, &bad, in, &out), PORTA_ERR_INVALID_ARGUMENT, "groups");
    CHECK(out == NULL);
    porta_tensor_release(gy);
    porta_tensor_release(w);
    porta_tensor_release(wr);
}
