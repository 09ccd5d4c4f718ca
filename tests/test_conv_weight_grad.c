/* conv_weight_grad against a double-precision reference: 1-d to 3-d,
 * stride, padding, dilation, groups, every float dtype, channels-last,
 * flipped and stepped operands, images wider than a column tile, zero sizes and
 * errors. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"
#include "test_conv_common.h"

/* The next (batch, *position) of idx over sizes, axis 1 held. */
static bool next_position(int rank, const int64_t *sizes, int64_t *idx) {
    for (int d = rank - 1; d >= 0; d--) {
        if (d == 1) continue;
        if (++idx[d] < sizes[d]) return true;
        idx[d] = 0;
    }
    return false;
}

/* Checks gw == the sum over the batch and output positions of
 * gy[n, co, o] * x[n, channel, o * stride - padding + k * dilation], in
 * double from the tensors' own values. */
static void check_weight_grad(const porta_tensor *x, const porta_tensor *gy,
                              const porta_conv_params *p, const porta_tensor *gw,
                              const char *what) {
    int rank = porta_tensor_rank(x), spatial = rank - 2;
    const int64_t *xs = porta_tensor_sizes(x), *ys = porta_tensor_sizes(gy);
    const int64_t *ws = porta_tensor_sizes(gw);
    double *vx = test_to_doubles(x), *vy = test_to_doubles(gy), *vw = test_to_doubles(gw);
    double rtol = 4 * test_rtol(porta_tensor_dtype(gw));
    int64_t cin_g = ws[1], cout_g = ws[0] / p->groups;
    int64_t widx[PORTA_MAX_RANK] = {0};
    int failures = 0;
    for (int64_t i = 0; i < porta_tensor_numel(gw); i++, test_next_index(rank, ws, widx)) {
        int64_t co = widx[0], channel = co / cout_g * cin_g + widx[1];
        double sum = 0.0, mag = 0.0;
        int64_t yidx[PORTA_MAX_RANK] = {0, co};
        bool terms = porta_tensor_numel(gy) > 0;
        while (terms) {
            int64_t xidx[PORTA_MAX_RANK] = {yidx[0], channel};
            bool inside = true;
            for (int d = 0; d < spatial; d++) {
                xidx[2 + d] =
                    yidx[2 + d] * p->stride[d] - p->padding[d] + widx[2 + d] * p->dilation[d];
                inside &= xidx[2 + d] >= 0 && xidx[2 + d] < xs[2 + d];
            }
            if (inside) {
                double term = vy[conv_flat_index(rank, ys, yidx)] *
                              vx[conv_flat_index(rank, xs, xidx)];
                sum += term;
                mag += fabs(term);
            }
            terms = next_position(rank, ys, yidx);
        }
        if (fabs(vw[i] - sum) > rtol * mag + 1e-30 && failures++ < 3)
            test_fail(__FILE__, __LINE__, "%s (%s): element %lld is %.9g, expected %.9g", what,
                      porta_dtype_name(porta_tensor_dtype(gw)), (long long)i, vw[i], sum);
    }
    free(vx);
    free(vy);
    free(vw);
}

/* x [B, Cin, *S], gy of conv(x, w [Cout, Cin/g, *K])'s output shape: runs
 * porta_conv_weight_grad and checks it. */
static void run_case(test_rng *rng, porta_dtype dtype, int rank, const int64_t *x_sizes,
                     int64_t out_channels, const int64_t *kernel, const porta_conv_params *p,
                     conv_layout lx, conv_layout ly, const char *what) {
    int64_t y_sizes[PORTA_MAX_RANK] = {x_sizes[0], out_channels};
    for (int d = 0; d < rank - 2; d++) {
        int64_t span = p->dilation[d] * (kernel[d] - 1) + 1;
        y_sizes[2 + d] = (x_sizes[2 + d] + 2 * p->padding[d] - span) / p->stride[d] + 1;
    }
    porta_tensor *x = conv_random_layout(rng, dtype, rank, x_sizes, lx);
    porta_tensor *gy = conv_random_layout(rng, dtype, rank, y_sizes, ly);
    porta_tensor *gw = NULL;
    if (x && gy) {
        porta_status *status = porta_conv_weight_grad(x, gy, p, kernel, &gw);
        if (status) {
            test_fail(__FILE__, __LINE__, "%s (%s): %s", what, porta_dtype_name(dtype),
                      porta_status_message(status));
            porta_status_free(status);
        } else {
            const int64_t *ws = porta_tensor_sizes(gw);
            CHECK(porta_tensor_dtype(gw) == dtype && porta_tensor_rank(gw) == rank);
            CHECK(ws[0] == out_channels && ws[1] == x_sizes[1] / p->groups);
            check_weight_grad(x, gy, p, gw, what);
        }
    }
    porta_tensor_release(x);
    porta_tensor_release(gy);
    porta_tensor_release(gw);
}

TEST(test_conv_weight_grad_random_1d_2d_3d_every_dtype) {
    test_rng rng = test_rng_make(41);
    for (int trial = 0; trial < 40; trial++) {
        porta_dtype dtype = conv_float_dtypes[trial % CONV_FLOAT_DTYPE_COUNT];
        int spatial = 1 + trial % 3, rank = spatial + 2;
        int64_t groups = test_int(&rng, 1, 3);
        int64_t x_sizes[PORTA_MAX_RANK] = {test_int(&rng, 1, 3), groups * test_int(&rng, 1, 3)};
        int64_t out_channels = groups * test_int(&rng, 1, 3), kernel[PORTA_MAX_RANK];
        porta_conv_params p;
        memset(&p, 0, sizeof p);
        p.groups = groups;
        for (int d = 0; d < spatial; d++) {
            p.stride[d] = test_int(&rng, 1, 3);
            p.padding[d] = test_int(&rng, 0, 2);
            p.dilation[d] = test_int(&rng, 1, 2);
            kernel[d] = test_int(&rng, 1, 3);
            int64_t span = p.dilation[d] * (kernel[d] - 1) + 1;
            int64_t least = span - 2 * p.padding[d] > 1 ? span - 2 * p.padding[d] : 1;
            x_sizes[2 + d] = least + test_int(&rng, 0, spatial == 3 ? 4 : 9);
        }
        run_case(&rng, dtype, rank, x_sizes, out_channels, kernel, &p,
                 (conv_layout)test_int(&rng, 0, LAYOUT_COUNT - 1),
                 (conv_layout)test_int(&rng, 0, LAYOUT_COUNT - 1), "random");
    }
}

/* The demo CNN's layers (many small images side by side in one product),
 * and images wider than a column tile (tiles of one image's positions). */
TEST(test_conv_weight_grad_small_images_and_wide_images) {
    test_rng rng = test_rng_make(42);
    porta_conv_params p = conv_params(2, 1, 1, 1, 1);
    int64_t k3[2] = {3, 3};
    int64_t first[4] = {64, 1, 8, 8}, second[4] = {64, 16, 8, 8}, wide[4] = {2, 200, 20, 20};
    run_case(&rng, PORTA_F32, 4, first, 16, k3, &p, LAYOUT_CONTIGUOUS, LAYOUT_CONTIGUOUS,
             "first layer");
    run_case(&rng, PORTA_F32, 4, second, 32, k3, &p, LAYOUT_CHANNELS_LAST, LAYOUT_CHANNELS_LAST,
             "second layer");
    run_case(&rng, PORTA_F32, 4, wide, 8, k3, &p, LAYOUT_CONTIGUOUS, LAYOUT_FLIPPED,
             "deep columns");
    porta_conv_params grouped = conv_params(2, 2, 0, 1, 4);
    int64_t depthwise[4] = {5, 4, 9, 9};
    run_case(&rng, PORTA_F64, 4, depthwise, 8, k3, &grouped, LAYOUT_CONTIGUOUS,
             LAYOUT_CONTIGUOUS, "grouped float64");
}

/* An empty batch sums nothing: the gradient is zero. */
TEST(test_conv_weight_grad_zero_sizes) {
    test_rng rng = test_rng_make(43);
    porta_conv_params p = conv_params(2, 1, 1, 1, 1);
    int64_t k3[2] = {3, 3}, empty[4] = {0, 3, 5, 5}, no_channels[4] = {2, 0, 5, 5};
    for (int d = 0; d < CONV_FLOAT_DTYPE_COUNT; d++) {
        run_case(&rng, conv_float_dtypes[d], 4, empty, 4, k3, &p, LAYOUT_CONTIGUOUS,
                 LAYOUT_CONTIGUOUS, "empty batch");
        run_case(&rng, conv_float_dtypes[d], 4, no_channels, 4, k3, &p, LAYOUT_CONTIGUOUS,
                 LAYOUT_CONTIGUOUS, "no input channels");
    }
}

TEST(test_conv_weight_grad_errors) {
    test_rng rng = test_rng_make(44);
    int64_t xs[4] = {2, 4, 5, 5}, ys[4] = {2, 6, 3, 3}, wrong[4] = {2, 6, 4, 3};
    int64_t other_batch[4] = {3, 6, 3, 3}, ys3[3] = {2, 6, 3}, k3[2] = {3, 3};
    porta_tensor *x = test_random_tensor(&rng, PORTA_F32, 4, xs, -1, 1);
    porta_tensor *gy = test_random_tensor(&rng, PORTA_F32, 4, ys, -1, 1);
    porta_tensor *gy_wrong = test_random_tensor(&rng, PORTA_F32, 4, wrong, -1, 1);
    porta_tensor *gy_batch = test_random_tensor(&rng, PORTA_F32, 4, other_batch, -1, 1);
    porta_tensor *gy_rank = test_random_tensor(&rng, PORTA_F32, 3, ys3, -1, 1);
    porta_tensor *xi = test_random_tensor(&rng, PORTA_I32, 4, xs, -1, 1);
    porta_tensor *gyi = test_random_tensor(&rng, PORTA_I32, 4, ys, -1, 1);
    porta_tensor *out = NULL;
    porta_conv_params p = conv_params(2, 1, 0, 1, 2);
    CHECK_OK(porta_conv_weight_grad(x, gy, &p, k3, &out));
    porta_tensor_release(out);
    out = NULL;
    CHECK_ERR(porta_conv_weight_grad(x, gy_wrong, &p, k3, &out), PORTA_ERR_SHAPE,
              "does not match the convolution's output");
    CHECK_ERR(porta_conv_weight_grad(x, gy_batch, &p, k3, &out), PORTA_ERR_SHAPE,
              "of the same rank");
    CHECK_ERR(porta_conv_weight_grad(x, gy_rank, &p, k3, &out), PORTA_ERR_SHAPE,
              "of the same rank");
    CHECK_ERR(porta_conv_weight_grad(xi, gyi, &p, k3, &out), PORTA_ERR_DTYPE, "floating-point");
    CHECK_ERR(porta_conv_weight_grad(x, gy, NULL, k3, &out), PORTA_ERR_INVALID_ARGUMENT,
              "params");
    CHECK_ERR(porta_conv_weight_grad(x, gy, &p, NULL, &out), PORTA_ERR_INVALID_ARGUMENT,
              "kernel");
    porta_conv_params bad = p;
    bad.groups = 4;
    CHECK_ERR(porta_conv_weight_grad(x, gy, &bad, k3, &out), PORTA_ERR_SHAPE, "groups");
    CHECK(out == NULL);
    porta_tensor_release(x);
    porta_tensor_release(gy);
    porta_tensor_release(gy_wrong);
    porta_tensor_release(gy_batch);
    porta_tensor_release(gy_rank);
    porta_tensor_release(xi);
    porta_tensor_release(gyi);
}
