/* shlo_render_prim at the level of its text (no plugin needed): pad with
 * negative edges, gather and index_select as one gather of single elements
 * at built coordinates, sort as a stable two-operand sort whose comparator
 * orders NaN as the CPU does, scatter's combiners, max pooling's taps,
 * convolutions and their gradients, and what it refuses. What the modules
 * compute is checked on a PJRT device by the conformance suite and
 * test_pjrt_execute.c. */
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen_stablehlo.h"
#include "test.h"

/* Operand i: a contiguous tensor of `dtype` and sizes in its own buffer. */
static void operand(shlo_prim *p, int i, porta_dtype dtype, int rank, const int64_t *sizes) {
    p->dtype[i] = dtype;
    p->rank[i] = rank;
    int64_t numel = 1;
    for (int d = rank - 1; d >= 0; d--) {
        p->sizes[i][d] = sizes[d];
        p->layout.strides[i][d] = numel;
        numel *= sizes[d];
    }
    p->layout.buffer[i] = i;
    p->layout.buffer_bytes[i] = numel * (int64_t)porta_dtype_size(dtype);
    if (i + 1 > p->count) p->count = p->layout.buffer_count = i + 1;
}

static int count(const char *text, const char *needle) {
    int n = 0;
    for (const char *at = strstr(text, needle); at; at = strstr(at + 1, needle)) n++;
    return n;
}

static char *render(const shlo_prim *p) {
    char *text = NULL;
    porta_status *status = shlo_render_prim(p, &text, NULL);
    if (status) {
        test_fail(__FILE__, __LINE__, "render: %s", porta_status_message(status));
        porta_status_free(status);
    }
    return text;
}

TEST(stablehlo_pad_crops_with_negative_edges) {
    shlo_prim p;
    memset(&p, 0, sizeof p);
    p.prim = (ir_prim){.kind = PRIM_PAD, .value = 1.5, .pads = {1, 2, -1, 0}};
    const int64_t x[2] = {3, 4}, out[2] = {6, 3};
    operand(&p, 0, PORTA_F32, 2, x);
    operand(&p, 1, PORTA_F32, 2, out);
    char *t = render(&p);
    CHECK(t && strstr(t, "edge_padding_low = array<i64: 1, -1>, "
                         "edge_padding_high = array<i64: 2, 0>, "
                         "interior_padding = array<i64: 0, 0>"));
    CHECK(t && strstr(t, ": (tensor<3x4xf32>, tensor<f32>) -> tensor<6x3xf32>"));
    CHECK(t && strstr(t, "dense<0x3FC00000> : tensor<f32>")); /* 1.5 */
    free(t);
}

TEST(stablehlo_gather_builds_each_elements_coordinates) {
    shlo_prim p;
    memset(&p, 0, sizeof p);
    p.prim = (ir_prim){.kind = PRIM_GATHER, .axis = 1};
    const int64_t x[2] = {3, 5}, index[2] = {2, 4};
    operand(&p, 0, PORTA_I32, 2, x);
    operand(&p, 1, PORTA_I64, 2, index);
    operand(&p, 2, PORTA_I32, 2, index);
    char *t = render(&p);
    /* dim 0 from an iota, dim 1 from the index values */
    CHECK(t && strstr(t, "{iota_dimension = 0 : i64} : () -> tensor<2x4xi64>"));
    CHECK(t && strstr(t, "\"stablehlo.concatenate\""));
    CHECK(t && strstr(t, "collapsed_slice_dims = [0, 1], start_index_map = [0, 1], "
                         "index_vector_dim = 2>, slice_sizes = array<i64: 1, 1>"));
    CHECK(t && strstr(t, "(tensor<3x5xi32>, tensor<2x4x2xi64>) -> tensor<2x4xi32>"));
    free(t);
}

TEST(stablehlo_index_select_broadcasts_its_index_along_axis) {
    shlo_prim p;
    memset(&p, 0, sizeof p);
    p.prim = (ir_prim){.kind = PRIM_INDEX_SELECT, .axis = 0};
    const int64_t x[2] = {3, 5}, index[1] = {4}, out[2] = {4, 5};
    operand(&p, 0, PORTA_F16, 2, x);
    operand(&p, 1, PORTA_I64, 1, index);
    operand(&p, 2, PORTA_F16, 2, out);
    /* the index a strided view at an offset: gathered, the offset at run time */
    p.layout.strides[1][0] = 2;
    p.layout.buffer_bytes[1] = 80;
    char *t = render(&p);
    CHECK(t && strstr(t, "broadcast_dimensions = array<i64: 0>} : (tensor<4xi64>) -> "
                         "tensor<4x5xi64>"));
    CHECK(t && strstr(t, "-> tensor<4x5xf32>")); /* halves gathered as their compute type */
    CHECK(t && strstr(t, "@main(%1: tensor<30xui8>, %2: tensor<80xui8>, %3: tensor<40xui8>, "
                         "%4: tensor<"));
    free(t);
}

TEST(stablehlo_sort_is_stable_with_nan_largest) {
    shlo_prim p;
    memset(&p, 0, sizeof p);
    p.prim = (ir_prim){.kind = PRIM_SORT, .axis = 1, .op = PORTA_SORT_DESCENDING};
    const int64_t x[2] = {2, 7};
    operand(&p, 0, PORTA_F64, 2, x);
    operand(&p, 1, PORTA_I64, 2, x);
    char *t = render(&p);
    CHECK(t && strstr(t, "{dimension = 1 : i64, is_stable = true} : (tensor<2x7xf64>, "
                         "tensor<2x7xi64>) -> (tensor<2x7xf64>, tensor<2x7xi64>)"));
    CHECK(t && strstr(t, "comparison_direction GT"));
    CHECK(t && strstr(t, "\"stablehlo.or\"")); /* a NaN before every number */
    free(t);
    /* integers need no NaN test; bools sort as 0 and 1 */
    p.prim.op = PORTA_SORT_ASCENDING;
    p.dtype[0] = PORTA_BOOL;
    p.layout.buffer_bytes[0] = 14;
    t = render(&p);
    CHECK(t && strstr(t, "comparison_direction LT") && !strstr(t, "\"stablehlo.or\""));
    CHECK(t && strstr(t, "(tensor<2x7xui8>, tensor<2x7xi64>) -> (tensor<2x7xui8>"));
    free(t);
}

TEST(stablehlo_scatter_combines_in_index_order) {
    shlo_prim p;
    memset(&p, 0, sizeof p);
    p.prim = (ir_prim){.kind = PRIM_SCATTER, .axis = 0, .op = PORTA_SCATTER_AMAX};
    const int64_t x[2] = {4, 3}, index[2] = {2, 3}, src[2] = {5, 3};
    operand(&p, 0, PORTA_F16, 2, x);
    operand(&p, 1, PORTA_I64, 2, index);
    operand(&p, 2, PORTA_F16, 2, src);
    operand(&p, 3, PORTA_F16, 2, x);
    char *t = render(&p);
    /* src read at the index's shape; the coordinates [2, 3, 2] */
    CHECK(t && strstr(t, "scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = "
                         "[0, 1], scatter_dims_to_operand_dims = [0, 1], index_vector_dim = 2>, "
                         "unique_indices = false} : (tensor<4x3xf32>, tensor<2x3x2xi64>, "
                         "tensor<2x3xf32>) -> tensor<4x3xf32>"));
    /* amax keeps a NaN; each step rounded to float16 */
    CHECK(t && strstr(t, "comparison_direction NE") && strstr(t, "-> tensor<f16>"));
    free(t);
    p.prim.op = PORTA_SCATTER_NONE;
    t = render(&p);
    CHECK(t && !strstr(t, "comparison_direction") && !strstr(t, "-> tensor<f16>"));
    free(t);
}

/* A 2x2 window, stride 2, padding 1 over [1, 2, 3, 4]: four taps, each a
 * strided slice of x padded, folded with a mask of what lies inside x. */
TEST(stablehlo_pool_max_folds_its_taps_in_window_order) {
    shlo_prim p;
    memset(&p, 0, sizeof p);
    p.prim = (ir_prim){.kind = PRIM_POOL_MAX, .rank = 2, .sizes = {2, 2}};
    p.prim.conv = (porta_conv_params){.stride = {2, 2}, .padding = {1, 1}, .dilation = {1, 1}};
    const int64_t x[4] = {1, 2, 3, 4}, out[4] = {1, 2, 2, 3};
    operand(&p, 0, PORTA_I16, 4, x);
    operand(&p, 1, PORTA_I64, 4, out);
    char *t = render(&p);
    CHECK(t && strstr(t, "edge_padding_low = array<i64: 0, 0, 1, 1>, "
                         "edge_padding_high = array<i64: 0, 0, 0, 1>"));
    CHECK(t && count(t, "\"stablehlo.slice\"") == 8);
    CHECK(t && strstr(t, "{start_indices = array<i64: 0, 0, 1, 1>, limit_indices = array<i64: "
                         "1, 2, 4, 6>, strides = array<i64: 1, 1, 2, 2>}"));
    CHECK(t && strstr(t, "-> tensor<1x2x2x3xi1>") && strstr(t, "-> tensor<1x2x2x3xi64>"));
    free(t);
}

static ir_prim conv_prim(ir_prim_kind kind, int64_t groups) {
    ir_prim prim = {.kind = kind};
    prim.conv = (porta_conv_params){.stride = {2, 1}, .padding = {1, 0}, .dilation = {1, 2},
                                    .groups = groups};
    return prim;
}

TEST(stablehlo_conv_and_its_bias) {
    shlo_prim p;
    memset(&p, 0, sizeof p);
    p.prim = conv_prim(PRIM_CONV, 2);
    const int64_t x[4] = {1, 4, 7, 6}, w[4] = {6, 2, 3, 2}, bias[1] = {6}, out[4] = {1, 6, 4, 4};
    operand(&p, 0, PORTA_BF16, 4, x);
    operand(&p, 1, PORTA_BF16, 4, w);
    operand(&p, 2, PORTA_BF16, 1, bias);
    operand(&p, 3, PORTA_BF16, 4, out);
    char *t = render(&p);
    CHECK(t && strstr(t, "{batch_group_count = 1 : i64, dimension_numbers = "
                         "#stablehlo.conv<[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]>, "
                         "feature_group_count = 2 : i64, lhs_dilation = array<i64: 1, 1>, "
                         "padding = dense<[[1, 1], [0, 0]]> : tensor<2x2xi64>, "
                         "rhs_dilation = array<i64: 1, 2>, window_strides = array<i64: 2, 1>}"));
    CHECK(t && strstr(t, "(tensor<1x4x7x6xf32>, tensor<6x2x3x2xf32>) -> tensor<1x6x4x4xf32>"));
    CHECK(t && strstr(t, "broadcast_dimensions = array<i64: 1>} : (tensor<6xf32>) -> "
                         "tensor<1x6x4x4xf32>"));
    free(t);
}

/* The gradients of the convolution above, as XLA derives them. */
TEST(stablehlo_conv_gradients_are_convolutions) {
    shlo_prim p;
    memset(&p, 0, sizeof p);
    p.prim = conv_prim(PRIM_CONV_INPUT_GRAD, 2);
    const int64_t x[4] = {1, 4, 7, 6}, w[4] = {6, 2, 3, 2}, gy[4] = {1, 6, 4, 4};
    operand(&p, 0, PORTA_F32, 4, gy);
    operand(&p, 1, PORTA_F32, 4, w);
    operand(&p, 2, PORTA_F32, 4, x);
    char *t = render(&p);
    CHECK(t && strstr(t, "\"stablehlo.reverse\"") && strstr(t, "-> tensor<3x4x3x2xf32>"));
    /* gy dilated by the stride to 7x4, windows 3x3: low = window - 1 - padding,
     * high what makes the result span x */
    CHECK(t && strstr(t, "[b, f, 0, 1]x[i, o, 0, 1]->[b, f, 0, 1]>, feature_group_count = 2 "
                         ": i64, lhs_dilation = array<i64: 2, 1>, padding = dense<[[1, 1], "
                         "[2, 2]]>"));
    free(t);
    memset(&p, 0, sizeof p);
    p.prim = conv_prim(PRIM_CONV_WEIGHT_GRAD, 2);
    operand(&p, 0, PORTA_F32, 4, x);
    operand(&p, 1, PORTA_F32, 4, gy);
    operand(&p, 2, PORTA_F32, 4, w);
    t = render(&p);
    /* channels as the batch, split into the groups; 3 and 2 window positions */
    CHECK(t && strstr(t, "{batch_group_count = 2 : i64, dimension_numbers = "
                         "#stablehlo.conv<[f, b, 0, 1]x[i, o, 0, 1]->[f, b, 0, 1]>, "
                         "feature_group_count = 1 : i64, lhs_dilation = array<i64: 1, 1>, "
                         "padding = dense<[[1, 1], [0, 0]]> : tensor<2x2xi64>, "
                         "rhs_dilation = array<i64: 2, 1>, window_strides = array<i64: 1, 2>}"));
    CHECK(t && strstr(t, "(tensor<1x4x7x6xf32>, tensor<1x6x4x4xf32>) -> tensor<6x2x3x2xf32>"));
    free(t);
}

TEST(stablehlo_prim_refuses_other_kinds_and_bad_buffers) {
    shlo_prim p;
    memset(&p, 0, sizeof p);
    p.prim = (ir_prim){.kind = PRIM_RANDOM};
    const int64_t x[1] = {4};
    operand(&p, 0, PORTA_F32, 1, x);
    operand(&p, 1, PORTA_F32, 1, x);
    char *t = NULL;
    CHECK_ERR(shlo_render_prim(&p, &t, NULL), PORTA_ERR_UNSUPPORTED, "expected pad, gather");
    p.prim.kind = PRIM_PAD;
    p.layout.buffer[1] = 5;
    CHECK_ERR(shlo_render_prim(&p, &t, NULL), PORTA_ERR_INVALID_ARGUMENT, "expected 0..1");
    /* gather's index must be int64 */
    p.prim.kind = PRIM_GATHER;
    porta_dtype dtypes[3] = {PORTA_F32, PORTA_I32, PORTA_F32};
    int ranks[3] = {1, 1, 1};
    CHECK(!shlo_prim_supported(&p.prim, dtypes, ranks, 2));
    dtypes[1] = PORTA_I64;
    CHECK(shlo_prim_supported(&p.prim, dtypes, ranks, 2));
    /* a scatter into a scalar has no dim to index */
    p.prim.kind = PRIM_SCATTER;
    p.prim.op = PORTA_SCATTER_NONE;
    CHECK(shlo_prim_supported(&p.prim, dtypes, ranks, 3));
    ranks[0] = 0;
    CHECK(!shlo_prim_supported(&p.prim, dtypes, ranks, 3));
}

TEST(stablehlo_fft_pairs_become_complex_around_one_transform) {
    /* backward C2C over axis 0 of [8, 3] complex values: stablehlo's IFFT
     * divides by 8, which the primitive (unnormalized) multiplies back */
    shlo_prim p;
    memset(&p, 0, sizeof p);
    p.prim = (ir_prim){.kind = PRIM_FFT, .op = PORTA_FFT_C2C, .value = 1, .axis_count = 1,
                       .axes = {0}};
    const int64_t x[3] = {8, 3, 2};
    operand(&p, 0, PORTA_F32, 3, x);
    operand(&p, 1, PORTA_F32, 3, x);
    char *t = render(&p);
    CHECK(t && strstr(t, "\"stablehlo.complex\""));
    CHECK(t && strstr(t, "permutation = array<i64: 1, 0>"));
    CHECK(t && strstr(t, "{fft_type = #stablehlo<fft_type IFFT>, fft_length = array<i64: 8>} : "
                         "(tensor<3x8xcomplex<f32>>) -> tensor<3x8xcomplex<f32>>"));
    CHECK(t && strstr(t, "dense<0x41000000> : tensor<8x3x2xf32>")); /* 8 */
    CHECK(t && count(t, "\"stablehlo.transpose\"") == 2);
    free(t);

    /* R2C over both axes of a real [4, 6], the last halved, scaled by 1/24 */
    memset(&p, 0, sizeof p);
    p.prim = (ir_prim){.kind = PRIM_FFT, .op = PORTA_FFT_R2C, .value = -1,
                       .axis = PORTA_FFT_NORM_BY_N, .axis_count = 2, .axes = {0, 1}};
    operand(&p, 0, PORTA_F64, 2, (const int64_t[]){4, 6});
    operand(&p, 1, PORTA_F64, 3, (const int64_t[]){4, 4, 2});
    t = render(&p);
    CHECK(t && strstr(t, "{fft_type = #stablehlo<fft_type RFFT>, fft_length = array<i64: 4, 6>} "
                         ": (tensor<4x6xf64>) -> tensor<4x4xcomplex<f64>>"));
    CHECK(t && strstr(t, "{dimension = 2 : i64} : (tensor<4x4x1xf64>, tensor<4x4x1xf64>) -> "
                         "tensor<4x4x2xf64>"));
    CHECK(t && !strstr(t, "\"stablehlo.complex\""));
    free(t);
}
