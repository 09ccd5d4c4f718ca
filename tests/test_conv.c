/* conv against a double-precision reference: 1-d to 4-d, stride, padding,
 * dilation, groups (depthwise included), bias, channels-last / flipped /
 * stepped operands and outputs, zero sizes, errors and allocation failure. */
#include <stdlib.h>
#include <string.h>

#include "test.h"
#include "test_conv_common.h"

/* Checks out == conv(x, w, bias) computed in double from the tensors' own
 * (already rounded) values; tolerance scales with sum |x w|. */
static void check_conv(const porta_tensor *x, const porta_tensor *w, const porta_tensor *bias,
                       const porta_conv_params *p, const porta_tensor *out, const char *what) {
    int rank = porta_tensor_rank(x), spatial = rank - 2;
    const int64_t *xs = porta_tensor_sizes(x), *ws = porta_tensor_sizes(w);
    const int64_t *os = porta_tensor_sizes(out);
    for (int d = 0; d < spatial; d++) {
        int64_t span = p->dilation[d] * (ws[2 + d] - 1) + 1;
        CHECK_MSG(os[2 + d] == (xs[2 + d] + 2 * p->padding[d] - span) / p->stride[d] + 1,
                  "%s: output size along axis %d", what, d);
    }
    double *vx = test_to_doubles(x), *vw = test_to_doubles(w), *vo = test_to_doubles(out);
    double *vb = bias ? test_to_doubles(bias) : NULL;
    /* The arithmetic may be narrower than out (out= casts the result). */
    porta_dtype dtype = porta_tensor_dtype(out);
    double rtol = 4 * fmax(test_rtol(dtype), test_rtol(porta_tensor_dtype(x)));
    int64_t cin_g = ws[1], cout_g = os[1] / p->groups;
    int64_t oidx[PORTA_MAX_RANK] = {0};
    int64_t n = porta_tensor_numel(out);
    int failures = 0;
    for (int64_t i = 0; i < n; i++, test_next_index(rank, os, oidx)) {
        int64_t co = oidx[1], g = co / cout_g;
        double sum = vb ? vb[co] : 0.0, mag = fabs(sum);
        for (int64_t ci = 0; ci < cin_g; ci++) {
            int64_t kidx[PORTA_MAX_RANK] = {0};
            do {
                int64_t xidx[PORTA_MAX_RANK] = {oidx[0], g * cin_g + ci};
                bool inside = true;
                for (int d = 0; d < spatial; d++) {
                    int64_t at = oidx[2 + d] * p->stride[d] - p->padding[d] +
                                 kidx[d] * p->dilation[d];
                    inside &= at >= 0 && at < xs[2 + d];
                    xidx[2 + d] = at;
                }
                if (!inside) continue;
                int64_t widx[PORTA_MAX_RANK] = {co, ci};
                memcpy(widx + 2, kidx, (size_t)spatial * sizeof *kidx);
                double term = vx[conv_flat_index(rank, xs, xidx)] *
                              vw[conv_flat_index(rank, ws, widx)];
                sum += term;
                mag += fabs(term);
            } while (test_next_index(spatial, ws + 2, kidx));
        }
        if (fabs(vo[i] - sum) > rtol * mag + 1e-30 && failures++ < 3)
            test_fail(__FILE__, __LINE__, "%s (%s): element %lld is %.9g, expected %.9g", what,
                      porta_dtype_name(dtype), (long long)i, vo[i], sum);
    }
    free(vx);
    free(vw);
    free(vo);
    free(vb);
}

/* Builds x [B, Cin, *S], w [Cout, Cin/g, *K] and bias, runs porta_conv and
 * checks it. */
static void run_case(test_rng *rng, porta_dtype dtype, int rank, const int64_t *x_sizes,
                     const int64_t *w_sizes, bool with_bias, const porta_conv_params *p,
                     conv_layout lx, conv_layout lw, const char *what) {
    porta_tensor *x = conv_random_layout(rng, dtype, rank, x_sizes, lx);
    porta_tensor *w = conv_random_layout(rng, dtype, rank, w_sizes, lw);
    porta_tensor *bias = with_bias ? test_random_tensor(rng, dtype, 1, w_sizes, -1.0, 1.0) : NULL;
    porta_tensor *out = NULL;
    if (x && w) {
        porta_status *status = porta_conv(x, w, bias, p, &out);
        if (status) {
            test_fail(__FILE__, __LINE__, "%s (%s): %s", what, porta_dtype_name(dtype),
                      porta_status_message(status));
            porta_status_free(status);
        } else {
            CHECK(porta_tensor_dtype(out) == dtype);
            check_conv(x, w, bias, p, out, what);
        }
    }
    porta_tensor_release(x);
    porta_tensor_release(w);
    porta_tensor_release(bias);
    porta_tensor_release(out);
}

/* Random 1-d, 2-d and 3-d convolutions with every parameter varied. */
TEST(test_conv_random_1d_2d_3d_every_dtype) {
    test_rng rng = test_rng_make(11);
    for (int trial = 0; trial < 48; trial++) {
        porta_dtype dtype = conv_float_dtypes[trial % CONV_FLOAT_DTYPE_COUNT];
        int spatial = 1 + trial % 3, rank = spatial + 2;
        int64_t groups = test_int(&rng, 1, 3);
        int64_t x_sizes[PORTA_MAX_RANK] = {test_int(&rng, 1, 3), groups * test_int(&rng, 1, 3)};
        int64_t w_sizes[PORTA_MAX_RANK] = {groups * test_int(&rng, 1, 3), x_sizes[1] / groups};
        porta_conv_params p;
        memset(&p, 0, sizeof p);
        p.groups = groups;
        for (int d = 0; d < spatial; d++) {
            p.stride[d] = test_int(&rng, 1, 3);
            p.padding[d] = test_int(&rng, 0, 2);
            p.dilation[d] = test_int(&rng, 1, 2);
            w_sizes[2 + d] = test_int(&rng, 1, 3);
            int64_t span = p.dilation[d] * (w_sizes[2 + d] - 1) + 1;
            /* at least one output position */
            int64_t least = span - 2 * p.padding[d] > 1 ? span - 2 * p.padding[d] : 1;
            x_sizes[2 + d] = least + test_int(&rng, 0, spatial == 3 ? 4 : 9);
        }
        run_case(&rng, dtype, rank, x_sizes, w_sizes, test_int(&rng, 0, 1), &p,
                 (conv_layout)test_int(&rng, 0, LAYOUT_COUNT - 1),
                 (conv_layout)test_int(&rng, 0, LAYOUT_COUNT - 1), "random conv");
    }
}

TEST(test_conv_depthwise_and_grouped) {
    test_rng rng = test_rng_make(12);
    for (int d = 0; d < CONV_FLOAT_DTYPE_COUNT; d++) {
        /* depthwise 3x3, channel multiplier 1 and 2 */
        int64_t xs[4] = {2, 6, 11, 9}, ws[4] = {6, 1, 3, 3}, ws2[4] = {12, 1, 3, 3};
        porta_conv_params p = conv_params(2, 1, 1, 1, 6);
        run_case(&rng, conv_float_dtypes[d], 4, xs, ws, true, &p, LAYOUT_CHANNELS_LAST,
                 LAYOUT_CONTIGUOUS, "depthwise");
        porta_conv_params p2 = conv_params(2, 2, 1, 1, 6);
        run_case(&rng, conv_float_dtypes[d], 4, xs, ws2, false, &p2, LAYOUT_CONTIGUOUS,
                 LAYOUT_FLIPPED, "depthwise x2 stride 2");
        /* 1-d grouped, dilated */
        int64_t x1[3] = {3, 8, 20}, w1[3] = {4, 4, 3};
        porta_conv_params p1 = conv_params(1, 1, 2, 2, 2);
        run_case(&rng, conv_float_dtypes[d], 3, x1, w1, true, &p1, LAYOUT_STEPPED, LAYOUT_STEPPED,
                 "grouped 1-d");
    }
}

TEST(test_conv_4d_spatial) {
    test_rng rng = test_rng_make(13);
    int64_t xs[6] = {1, 2, 4, 3, 5, 4}, ws[6] = {3, 2, 2, 1, 3, 2};
    porta_conv_params p;
    memset(&p, 0, sizeof p);
    const int64_t stride[4] = {1, 2, 1, 2}, padding[4] = {0, 1, 1, 0}, dilation[4] = {2, 1, 1, 1};
    for (int d = 0; d < 4; d++) {
        p.stride[d] = stride[d];
        p.padding[d] = padding[d];
        p.dilation[d] = dilation[d];
    }
    p.groups = 1;
    run_case(&rng, PORTA_F32, 6, xs, ws, true, &p, LAYOUT_FLIPPED, LAYOUT_CONTIGUOUS, "4-d");
    run_case(&rng, PORTA_F64, 6, xs, ws, false, &p, LAYOUT_CHANNELS_LAST, LAYOUT_STEPPED, "4-d");
}

/* Shapes that need several column tiles, and columns taller than one tile
 * (the GEMM then accumulates over depth chunks). */
TEST(test_conv_large_and_tall_columns) {
    test_rng rng = test_rng_make(14);
    int64_t xs[4] = {2, 64, 20, 20}, ws[4] = {64, 64, 3, 3};
    porta_conv_params p = conv_params(2, 1, 1, 1, 1);
    run_case(&rng, PORTA_F32, 4, xs, ws, true, &p, LAYOUT_CONTIGUOUS, LAYOUT_CONTIGUOUS,
             "resnet-like 3x3");
    run_case(&rng, PORTA_BF16, 4, xs, ws, false, &p, LAYOUT_CHANNELS_LAST, LAYOUT_CONTIGUOUS,
             "resnet-like 3x3");
    int64_t tall_x[4] = {1, 460, 9, 9}, tall_w[4] = {5, 460, 3, 3};
    run_case(&rng, PORTA_F32, 4, tall_x, tall_w, true, &p, LAYOUT_CONTIGUOUS, LAYOUT_STEPPED,
             "depth over one tile");
    int64_t tall_xd[4] = {1, 240, 8, 8}, tall_wd[4] = {3, 240, 3, 3};
    run_case(&rng, PORTA_F64, 4, tall_xd, tall_wd, true, &p, LAYOUT_CONTIGUOUS,
             LAYOUT_CONTIGUOUS, "depth over one tile");
}

/* Small images with enough output channels for sgemm: several images to
 * a tile, written through scratch into contiguous, channels-last and
 * stepped outputs, grouped, and with columns taller than one tile. */
TEST(test_conv_several_small_images_per_tile) {
    test_rng rng = test_rng_make(20);
    porta_conv_params p = conv_params(2, 1, 1, 1, 1);
    int64_t xs[4] = {5, 6, 7, 7}, ws[4] = {8, 6, 3, 3};
    for (int d = 0; d < CONV_FLOAT_DTYPE_COUNT; d++)
        for (int l = 0; l < LAYOUT_COUNT; l++)
            run_case(&rng, conv_float_dtypes[d], 4, xs, ws, l % 2 == 0, &p, (conv_layout)l,
                     LAYOUT_CONTIGUOUS, "small images");
    porta_conv_params grouped = conv_params(2, 2, 1, 1, 2);
    int64_t xg[4] = {9, 8, 6, 6}, wg[4] = {12, 4, 3, 3};
    run_case(&rng, PORTA_F32, 4, xg, wg, true, &grouped, LAYOUT_CHANNELS_LAST,
             LAYOUT_CONTIGUOUS, "small images, grouped");
    int64_t xt[4] = {16, 1000, 4, 4}, wt[4] = {6, 1000, 3, 3};
    run_case(&rng, PORTA_F32, 4, xt, wt, true, &p, LAYOUT_CONTIGUOUS, LAYOUT_CONTIGUOUS,
             "small images, depth over one tile");
}

/* out= given as views: channels-last and flipped outputs are written
 * directly by sgemm, a stepped one through scratch; a float64 out of a
 * float32 conv is cast. */
TEST(test_conv_strided_out) {
    test_rng rng = test_rng_make(15);
    int64_t xs[4] = {2, 4, 7, 6}, ws[4] = {5, 4, 3, 2}, os[4] = {2, 5, 5, 5};
    porta_conv_params p = conv_params(2, 1, 0, 1, 1);
    for (int d = 0; d < CONV_FLOAT_DTYPE_COUNT; d++) {
        porta_tensor *x = conv_random_layout(&rng, conv_float_dtypes[d], 4, xs, LAYOUT_CONTIGUOUS);
        porta_tensor *w =
            conv_random_layout(&rng, conv_float_dtypes[d], 4, ws, LAYOUT_CHANNELS_LAST);
        porta_tensor *bias = test_random_tensor(&rng, conv_float_dtypes[d], 1, ws, -1.0, 1.0);
        for (int kind = 1; kind < LAYOUT_COUNT; kind++) {
            porta_tensor *out =
                conv_random_layout(&rng, conv_float_dtypes[d], 4, os, (conv_layout)kind);
            porta_tensor *target = out;
            CHECK_OK(porta_conv(x, w, bias, &p, &target));
            CHECK(target == out);
            check_conv(x, w, bias, &p, out, "strided out");
            porta_tensor_release(out);
        }
        porta_tensor *wide = NULL;
        CHECK_OK(porta_tensor_empty(test_cpu(), PORTA_F64, 4, os, &wide));
        porta_tensor *target = wide;
        CHECK_OK(porta_conv(x, w, bias, &p, &target));
        check_conv(x, w, bias, &p, wide, "float64 out");
        porta_tensor_release(wide);
        porta_tensor_release(x);
        porta_tensor_release(w);
        porta_tensor_release(bias);
    }
}

/* out= may be the input itself when the shapes agree (3x3, padding 1). */
TEST(test_conv_out_aliasing_the_input) {
    test_rng rng = test_rng_make(20);
    int64_t xs[4] = {2, 6, 9, 8}, ws[4] = {6, 6, 3, 3};
    porta_conv_params p = conv_params(2, 1, 1, 1, 1);
    porta_conv_params depthwise = conv_params(2, 1, 1, 1, 6);
    int64_t wd[4] = {6, 1, 3, 3};
    for (int d = 0; d < CONV_FLOAT_DTYPE_COUNT; d++) {
        for (int dw = 0; dw < 2; dw++) {
            porta_tensor *x = test_random_tensor(&rng, conv_float_dtypes[d], 4, xs, -1, 1);
            porta_tensor *w =
                test_random_tensor(&rng, conv_float_dtypes[d], 4, dw ? wd : ws, -1, 1);
            const porta_conv_params *params = dw ? &depthwise : &p;
            porta_tensor *want = NULL, *target = x;
            CHECK_OK(porta_conv(x, w, NULL, params, &want));
            CHECK_OK(porta_conv(x, w, NULL, params, &target));
            double *got = test_to_doubles(x), *ref = test_to_doubles(want);
            CHECK(test_close("x = conv(x, w)", got, ref, 2 * 6 * 9 * 8, 0.0, 0.0));
            free(got);
            free(ref);
            porta_tensor_release(want);
            porta_tensor_release(x);
            porta_tensor_release(w);
        }
    }
}

/* A conv node with bias runs to the same result as the eager call. */
TEST(test_conv_in_a_graph) {
    test_rng rng = test_rng_make(21);
    int64_t xs[4] = {2, 4, 7, 7}, ws[4] = {6, 2, 3, 3};
    porta_conv_params p = conv_params(2, 2, 1, 1, 2);
    porta_tensor *x = test_random_tensor(&rng, PORTA_F64, 4, xs, -1, 1);
    porta_tensor *w = test_random_tensor(&rng, PORTA_F64, 4, ws, -1, 1);
    porta_tensor *b = test_random_tensor(&rng, PORTA_F64, 1, ws, -1, 1);
    porta_tensor *got = NULL, *want = NULL;
    porta_graph *graph = NULL;
    CHECK_OK(porta_graph_create(&graph));
    porta_node nx, nw, nb, ny;
    porta_status *status = porta_graph_input(graph, PORTA_F64, 4, xs, &nx);
    if (!status) status = porta_graph_input(graph, PORTA_F64, 4, ws, &nw);
    if (!status) status = porta_graph_input(graph, PORTA_F64, 1, ws, &nb);
    if (!status) status = porta_graph_conv(graph, nx, nw, nb, &p, &ny);
    if (!status) status = porta_graph_output(graph, ny);
    porta_tensor *inputs[3] = {x, w, b};
    if (!status) status = porta_graph_run(graph, test_cpu(), inputs, 3, &got, 1);
    if (!status) status = porta_conv(x, w, b, &p, &want);
    if (status) {
        test_fail(__FILE__, __LINE__, "%s", porta_status_message(status));
        porta_status_free(status);
    } else {
        check_conv(x, w, b, &p, got, "graph conv");
        double *g = test_to_doubles(got), *e = test_to_doubles(want);
        CHECK(test_close("graph conv vs eager", g, e, porta_tensor_numel(want), 0.0, 0.0));
        free(g);
        free(e);
    }
    porta_graph_free(graph);
    porta_tensor_release(got);
    porta_tensor_release(want);
    porta_tensor_release(x);
    porta_tensor_release(w);
    porta_tensor_release(b);
}

TEST(test_conv_type_promotion) {
    test_rng rng = test_rng_make(16);
    int64_t xs[3] = {1, 2, 6}, ws[3] = {3, 2, 2};
    porta_tensor *x = test_random_tensor(&rng, PORTA_F16, 3, xs, -1.0, 1.0);
    porta_tensor *w = test_random_tensor(&rng, PORTA_BF16, 3, ws, -1.0, 1.0);
    porta_tensor *b = test_random_tensor(&rng, PORTA_F64, 1, ws, -1.0, 1.0);
    porta_conv_params p = conv_params(1, 1, 0, 1, 1);
    porta_tensor *out = NULL, *out2 = NULL;
    CHECK_OK(porta_conv(x, w, NULL, &p, &out));
    CHECK(porta_tensor_dtype(out) == PORTA_F32);
    check_conv(x, w, NULL, &p, out, "float16 x bfloat16");
    CHECK_OK(porta_conv(x, w, b, &p, &out2));
    CHECK(porta_tensor_dtype(out2) == PORTA_F64);
    porta_tensor_release(out);
    porta_tensor_release(out2);
    porta_tensor_release(x);
    porta_tensor_release(w);
    porta_tensor_release(b);
}

TEST(test_conv_zero_sizes) {
    test_rng rng = test_rng_make(17);
    porta_conv_params p = conv_params(2, 1, 1, 1, 1);
    for (int d = 0; d < CONV_FLOAT_DTYPE_COUNT; d++) {
        int64_t xs[4] = {0, 3, 5, 5}, ws[4] = {4, 3, 3, 3};
        run_case(&rng, conv_float_dtypes[d], 4, xs, ws, true, &p, LAYOUT_CONTIGUOUS,
                 LAYOUT_CONTIGUOUS, "empty batch");
        int64_t xs2[4] = {2, 3, 5, 5}, ws2[4] = {0, 3, 3, 3};
        run_case(&rng, conv_float_dtypes[d], 4, xs2, ws2, true, &p, LAYOUT_CONTIGUOUS,
                 LAYOUT_CONTIGUOUS, "no output channels");
        /* No input channels: every output is its bias (or 0). */
        int64_t xs3[4] = {2, 0, 5, 5}, ws3[4] = {4, 0, 3, 3};
        run_case(&rng, conv_float_dtypes[d], 4, xs3, ws3, true, &p, LAYOUT_CONTIGUOUS,
                 LAYOUT_CONTIGUOUS, "no input channels");
        run_case(&rng, conv_float_dtypes[d], 4, xs3, ws3, false, &p, LAYOUT_CONTIGUOUS,
                 LAYOUT_CONTIGUOUS, "no input channels, no bias");
    }
}

TEST(test_conv_errors) {
    test_rng rng = test_rng_make(18);
    int64_t xs[4] = {1, 4, 5, 5}, ws[4] = {6, 2, 3, 3}, s2[2] = {4, 5}, b5[1] = {5};
    int64_t w3[3] = {6, 4, 3}, wbad[4] = {6, 3, 3, 3}, wbig[4] = {6, 2, 7, 3};
    porta_tensor *x = test_random_tensor(&rng, PORTA_F32, 4, xs, -1, 1);
    porta_tensor *w = test_random_tensor(&rng, PORTA_F32, 4, ws, -1, 1);
    porta_tensor *flat = test_random_tensor(&rng, PORTA_F32, 2, s2, -1, 1);
    porta_tensor *bias5 = test_random_tensor(&rng, PORTA_F32, 1, b5, -1, 1);
    porta_tensor *wr3 = test_random_tensor(&rng, PORTA_F32, 3, w3, -1, 1);
    porta_tensor *wb = test_random_tensor(&rng, PORTA_F32, 4, wbad, -1, 1);
    porta_tensor *wk = test_random_tensor(&rng, PORTA_F32, 4, wbig, -1, 1);
    porta_tensor *xi = test_random_tensor(&rng, PORTA_I32, 4, xs, -1, 1);
    porta_tensor *wi = test_random_tensor(&rng, PORTA_I32, 4, ws, -1, 1);
    porta_tensor *out = NULL;
    porta_conv_params p = conv_params(2, 1, 0, 1, 2);
    CHECK_ERR(porta_conv(flat, w, NULL, &p, &out), PORTA_ERR_SHAPE, "rank >= 3");
    CHECK_ERR(porta_conv(x, wr3, NULL, &p, &out), PORTA_ERR_SHAPE, "weight of rank 4");
    CHECK_ERR(porta_conv(x, wb, NULL, &p, &out), PORTA_ERR_SHAPE, "input channels");
    CHECK_ERR(porta_conv(x, w, bias5, &p, &out), PORTA_ERR_SHAPE, "bias of shape [6]");
    CHECK_ERR(porta_conv(x, w, flat, &p, &out), PORTA_ERR_SHAPE, "bias");
    CHECK_ERR(porta_conv(x, wk, NULL, &p, &out), PORTA_ERR_SHAPE,
              "computed output size along spatial axis 0 is too small");
    CHECK_ERR(porta_conv(xi, wi, NULL, &p, &out), PORTA_ERR_DTYPE, "floating-point");
    CHECK_ERR(porta_conv(x, w, NULL, NULL, &out), PORTA_ERR_INVALID_ARGUMENT, "params");
    CHECK_ERR(porta_conv(NULL, w, NULL, &p, &out), PORTA_ERR_INVALID_ARGUMENT, "NULL");
    porta_conv_params bad = p;
    bad.groups = 3;
    CHECK_ERR(porta_conv(x, w, NULL, &bad, &out), PORTA_ERR_SHAPE, "groups 3 must divide");
    bad.groups = 0;
    CHECK_ERR(porta_conv(x, w, NULL, &bad, &out), PORTA_ERR_INVALID_ARGUMENT, "groups");
    bad = p;
    bad.stride[1] = 0;
    CHECK_ERR(porta_conv(x, w, NULL, &bad, &out), PORTA_ERR_INVALID_ARGUMENT,
              "stride[1] must be >= 1, got 0");
    bad = p;
    bad.dilation[0] = 0;
    CHECK_ERR(porta_conv(x, w, NULL, &bad, &out), PORTA_ERR_INVALID_ARGUMENT, "dilation[0]");
    bad = p;
    bad.padding[1] = -1;
    CHECK_ERR(porta_conv(x, w, NULL, &bad, &out), PORTA_ERR_INVALID_ARGUMENT, "padding[1]");
    bad = p;
    bad.padding[0] = INT64_MAX / 2;
    CHECK_ERR(porta_conv(x, w, NULL, &bad, &out), PORTA_ERR_INVALID_ARGUMENT, "too large");
    CHECK(out == NULL);
    /* Entries past the spatial axes are ignored: these two build one node. */
    porta_graph *graph = NULL;
    CHECK_OK(porta_graph_create(&graph));
    porta_node nx, nw, n1, n2, nbad;
    CHECK_OK(porta_graph_input(graph, PORTA_F32, 4, xs, &nx));
    CHECK_OK(porta_graph_input(graph, PORTA_F32, 4, ws, &nw));
    porta_conv_params junk = p;
    junk.stride[5] = 9;
    CHECK_OK(porta_graph_conv(graph, nx, nw, -1, &p, &n1));
    CHECK_OK(porta_graph_conv(graph, nx, nw, -1, &junk, &n2));
    CHECK(n1 == n2);
    int rank;
    int64_t sizes[PORTA_MAX_RANK];
    CHECK_OK(porta_graph_node_type(graph, n1, NULL, &rank, sizes));
    CHECK(rank == 4 && sizes[0] == 1 && sizes[1] == 6 && sizes[2] == 3 && sizes[3] == 3);
    CHECK_ERR(porta_graph_conv(graph, nx, nw, nx, &p, &nbad), PORTA_ERR_SHAPE, "bias");
    porta_graph_free(graph);
    porta_tensor_release(x);
    porta_tensor_release(w);
    porta_tensor_release(flat);
    porta_tensor_release(bias5);
    porta_tensor_release(wr3);
    porta_tensor_release(wb);
    porta_tensor_release(wk);
    porta_tensor_release(xi);
    porta_tensor_release(wi);
}

/* Each allocation (output, weight and bias copies, column tiles) fails
 * cleanly under a memory limit. */
TEST(test_conv_out_of_memory) {
    test_rng rng = test_rng_make(19);
    int64_t xs[4] = {2, 3, 8, 8}, ws[4] = {4, 3, 3, 3}, os[4] = {2, 4, 6, 6};
    porta_conv_params p = conv_params(2, 1, 0, 1, 1);
    for (int d = 0; d < CONV_FLOAT_DTYPE_COUNT; d++) {
        porta_tensor *x = test_random_tensor(&rng, conv_float_dtypes[d], 4, xs, -1, 1);
        porta_tensor *w = test_random_tensor(&rng, conv_float_dtypes[d], 4, ws, -1, 1);
        porta_tensor *b = test_random_tensor(&rng, conv_float_dtypes[d], 1, ws, -1, 1);
        porta_tensor *out = NULL, *given = NULL;
        CHECK_OK(porta_tensor_empty(test_cpu(), conv_float_dtypes[d], 4, os, &given));
        porta_set_memory_limit(porta_memory_allocated() + 16);
        CHECK_ERR(porta_conv(x, w, b, &p, &out), PORTA_ERR_OUT_OF_MEMORY, NULL);
        porta_tensor *target = given;
        CHECK_ERR(porta_conv(x, w, b, &p, &target), PORTA_ERR_OUT_OF_MEMORY, NULL);
        porta_set_memory_limit(0);
        CHECK(out == NULL);
        porta_tensor_release(given);
        porta_tensor_release(x);
        porta_tensor_release(w);
        porta_tensor_release(b);
    }
}
