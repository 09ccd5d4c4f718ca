/* Running graphs end to end on the CPU device, as fused kernels: softmax and an MLP layer
 * against double references, every kind of node against its eager op,
 * intermediates released early, dead nodes skipped, and the errors run
 * reports. */
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "test.h"

#define SHAPE(...) ((const int64_t[]){__VA_ARGS__})

/* How an input tensor is laid out in memory. */
typedef enum layout { CONTIGUOUS, TRANSPOSED, ROWS_REVERSED, LAYOUT_COUNT } layout;

/* A random [rows, cols] tensor laid out as asked: a view on a buffer filled
 * with random values. */
static porta_tensor *random_matrix(test_rng *rng, porta_dtype dtype, int64_t rows, int64_t cols,
                                   layout how, double low, double high) {
    porta_tensor *storage = test_random_tensor(rng, dtype, 1, SHAPE(rows * cols), low, high);
    if (!storage || how == CONTIGUOUS) {
        porta_tensor *reshaped = NULL;
        porta_status *status =
            storage ? porta_reshape(storage, 2, SHAPE(rows, cols), &reshaped) : NULL;
        if (status) {
            test_fail(__FILE__, __LINE__, "reshape: %s", porta_status_message(status));
            porta_status_free(status);
        }
        porta_tensor_release(storage);
        return reshaped;
    }
    int64_t strides[2], offset = 0;
    if (how == TRANSPOSED) {
        strides[0] = 1;
        strides[1] = rows;
    } else {
        strides[0] = -cols;
        strides[1] = 1;
        offset = rows > 0 ? (rows - 1) * cols : 0;
    }
    porta_tensor *view = NULL;
    porta_status *status = porta_tensor_view(porta_tensor_buffer(storage), dtype, 2,
                                             SHAPE(rows, cols), strides, offset, &view);
    if (status) {
        test_fail(__FILE__, __LINE__, "view: %s", porta_status_message(status));
        porta_status_free(status);
    }
    porta_tensor_release(storage);
    return view;
}

/* softmax over the last axis of a [rows, cols] input, as a graph of
 * primitives: exp(x - max(x)) / sum(exp(x - max(x))). */
static porta_status *build_softmax(porta_graph *g, porta_dtype dtype, int64_t rows,
                                   int64_t cols) {
    porta_node x, m, d, e, s, y;
    const int axis[] = {1};
    PORTA_TRY(porta_graph_input(g, dtype, 2, SHAPE(rows, cols), &x));
    PORTA_TRY(porta_graph_reduce(g, PORTA_REDUCE_MAX, x, axis, 1, true, &m));
    PORTA_TRY(porta_graph_binary(g, PORTA_SUB, x, m, &d));
    PORTA_TRY(porta_graph_unary(g, PORTA_EXP, d, &e));
    PORTA_TRY(porta_graph_reduce(g, PORTA_REDUCE_SUM, e, axis, 1, true, &s));
    PORTA_TRY(porta_graph_binary(g, PORTA_DIV, e, s, &y));
    return porta_graph_output(g, y);
}

static void softmax_reference(const double *x, int64_t rows, int64_t cols, double *y) {
    for (int64_t r = 0; r < rows; r++) {
        const double *row = x + r * cols;
        double max = row[0], sum = 0;
        for (int64_t c = 1; c < cols; c++) max = row[c] > max ? row[c] : max;
        for (int64_t c = 0; c < cols; c++) sum += exp(row[c] - max);
        for (int64_t c = 0; c < cols; c++) y[r * cols + c] = exp(row[c] - max) / sum;
    }
}

/* Runs a one-input, one-output graph and compares with `want`. */
static void run_and_compare(const char *what, const porta_graph *g, porta_tensor *input,
                            const double *want, double rtol, double atol) {
    porta_tensor *out = NULL;
    porta_status *status = porta_graph_run(g, test_cpu(), &input, 1, &out, 1);
    if (status) {
        test_fail(__FILE__, __LINE__, "%s: run failed: %s", what, porta_status_message(status));
        porta_status_free(status);
        return;
    }
    double *got = test_to_doubles(out);
    test_close(what, got, want, porta_tensor_numel(out), rtol, atol);
    free(got);
    porta_tensor_release(out);
}

TEST(test_graph_run_softmax) {
    test_rng rng = test_rng_make(11);
    const porta_dtype dtypes[] = {PORTA_F32, PORTA_F64, PORTA_F16, PORTA_BF16};
    for (size_t t = 0; t < sizeof dtypes / sizeof dtypes[0]; t++) {
        porta_dtype dtype = dtypes[t];
        /* Half types round after each of the five steps; the others are held
         * to their usual tolerance. */
        double rtol = test_rtol(dtype) * (porta_dtype_size(dtype) == 2 ? 5 : 1);
        for (int trial = 0; trial < 12; trial++) {
            int64_t rows = trial == 0 ? 0 : test_int(&rng, 1, 9);
            int64_t cols = trial == 1 ? 1 : test_int(&rng, 1, 70);
            porta_graph *g;
            CHECK_OK(porta_graph_create(&g));
            porta_status *status = build_softmax(g, dtype, rows, cols);
            CHECK_MSG(!status, "build: %s", porta_status_message(status));
            porta_status_free(status);
            layout how = (layout)(trial % LAYOUT_COUNT);
            porta_tensor *x = random_matrix(&rng, dtype, rows, cols, how, -4, 4);
            double *values = test_to_doubles(x);
            double *want = malloc((size_t)(rows * cols + 1) * sizeof *want);
            softmax_reference(values, rows, cols, want);
            char what[96];
            snprintf(what, sizeof what, "softmax %s [%lld, %lld] layout %d",
                     porta_dtype_name(dtype), (long long)rows, (long long)cols, (int)how);
            run_and_compare(what, g, x, want, rtol, rtol * 1e-2);
            free(values);
            free(want);
            porta_tensor_release(x);
            porta_graph_free(g);
        }
    }
}

/* A graph runs as the compiler's trace: softmax's five nodes become one
 * fused kernel, and fusion is left as it was, off or on. */
TEST(test_graph_run_is_fused_and_leaves_fusion_as_it_was) {
    test_cache_begin();
    porta_graph *g;
    CHECK_OK(porta_graph_create(&g));
    CHECK_OK(build_softmax(g, PORTA_F32, 8, 64));
    test_rng rng = test_rng_make(12);
    porta_tensor *x = random_matrix(&rng, PORTA_F32, 8, 64, CONTIGUOUS, -4, 4);
    double *values = test_to_doubles(x);
    double want[8 * 64];
    softmax_reference(values, 8, 64, want);
    for (int fusion_on = 0; fusion_on < 2; fusion_on++) {
        CHECK_OK(porta_set_fusion(fusion_on));
        porta_compiler_stats_reset();
        run_and_compare("fused softmax", g, x, want, 1e-6, 1e-8);
        porta_compiler_stats stats;
        porta_compiler_stats_get(&stats);
        CHECK_MSG(stats.flushes == 1 && stats.last_trace_kernels == 1 && stats.prims_fused == 5,
                  "flushes %llu, kernels %llu, fused %llu", (unsigned long long)stats.flushes,
                  (unsigned long long)stats.last_trace_kernels,
                  (unsigned long long)stats.prims_fused);
        CHECK(porta_get_fusion() == (bool)fusion_on);
    }
    CHECK_OK(porta_set_fusion(false));
    free(values);
    porta_tensor_release(x);
    porta_graph_free(g);
    test_cache_end();
}

/* relu(x @ w + b) with the zero as a constant node. */
TEST(test_graph_run_mlp_layer) {
    test_rng rng = test_rng_make(12);
    const porta_dtype dtypes[] = {PORTA_F32, PORTA_F64};
    for (size_t t = 0; t < 2; t++) {
        porta_dtype dtype = dtypes[t];
        for (int trial = 0; trial < 6; trial++) {
            int64_t batch = test_int(&rng, 1, 9), in = test_int(&rng, 1, 40),
                    out_features = test_int(&rng, 1, 24);
            porta_graph *g;
            CHECK_OK(porta_graph_create(&g));
            porta_node x, w, b, zero, h, hb, y;
            CHECK_OK(porta_graph_input(g, dtype, 2, SHAPE(batch, in), &x));
            CHECK_OK(porta_graph_input(g, dtype, 2, SHAPE(in, out_features), &w));
            CHECK_OK(porta_graph_input(g, dtype, 1, SHAPE(out_features), &b));
            CHECK_OK(porta_graph_constant(g, PORTA_F64, 0.0, &zero));
            CHECK_OK(porta_graph_matmul(g, x, w, &h));
            CHECK_OK(porta_graph_binary(g, PORTA_ADD, h, b, &hb));
            CHECK_OK(porta_graph_binary(g, PORTA_MAXIMUM, hb, zero, &y));
            CHECK_OK(porta_graph_output(g, y));
            porta_dtype y_dtype;
            CHECK_OK(porta_graph_node_type(g, y, &y_dtype, NULL, NULL));
            CHECK(y_dtype == dtype); /* the f64 constant does not widen f32 */

            porta_tensor *xt = random_matrix(&rng, dtype, batch, in, (layout)(trial % 3), -1, 1);
            porta_tensor *wt =
                random_matrix(&rng, dtype, in, out_features, (layout)((trial + 1) % 3), -1, 1);
            porta_tensor *bt = test_random_tensor(&rng, dtype, 1, SHAPE(out_features), -1, 1);
            double *xv = test_to_doubles(xt), *wv = test_to_doubles(wt), *bv = test_to_doubles(bt);
            double *want = malloc((size_t)(batch * out_features) * sizeof *want);
            for (int64_t i = 0; i < batch; i++)
                for (int64_t j = 0; j < out_features; j++) {
                    double acc = bv[j];
                    for (int64_t k = 0; k < in; k++) acc += xv[i * in + k] * wv[k * out_features + j];
                    want[i * out_features + j] = acc > 0 ? acc : 0;
                }
            porta_tensor *inputs[] = {xt, wt, bt};
            porta_tensor *result = NULL;
            porta_status *status = porta_graph_run(g, test_cpu(), inputs, 3, &result, 1);
            CHECK_MSG(!status, "run: %s", porta_status_message(status));
            porta_status_free(status);
            if (result) {
                double *got = test_to_doubles(result);
                double tol = dtype == PORTA_F32 ? 1e-5 : 1e-12;
                test_close("mlp", got, want, batch * out_features, tol, tol * (double)in);
                free(got);
                porta_tensor_release(result);
            }
            free(xv);
            free(wv);
            free(bv);
            free(want);
            porta_tensor_release(xt);
            porta_tensor_release(wt);
            porta_tensor_release(bt);
            porta_graph_free(g);
        }
    }
}

/* A tensor holding the given int64 values. */
static porta_tensor *int64_tensor(int rank, const int64_t *sizes, const int64_t *values) {
    porta_tensor *t = NULL;
    porta_status *status = porta_tensor_from_host(test_cpu(), PORTA_I64, rank, sizes, values, &t);
    if (status) {
        test_fail(__FILE__, __LINE__, "from_host: %s", porta_status_message(status));
        porta_status_free(status);
    }
    return t;
}

/* Checks that a graph output equals what the eager op gave, exactly: both
 * take the same path to the same kernels. */
static void expect_same(const char *what, const porta_tensor *got, const porta_tensor *want) {
    if (!got || !want) {
        test_fail(__FILE__, __LINE__, "%s: missing result", what);
        return;
    }
    CHECK_MSG(porta_tensor_dtype(got) == porta_tensor_dtype(want), "%s: dtype %s vs %s", what,
              porta_dtype_name(porta_tensor_dtype(got)), porta_dtype_name(porta_tensor_dtype(want)));
    int rank = porta_tensor_rank(got);
    bool same_shape = rank == porta_tensor_rank(want) &&
                      !memcmp(porta_tensor_sizes(got), porta_tensor_sizes(want),
                              (size_t)rank * sizeof(int64_t));
    CHECK_MSG(same_shape, "%s: shapes differ", what);
    if (!same_shape) return;
    double *g = test_to_doubles(got), *w = test_to_doubles(want);
    test_close(what, g, w, porta_tensor_numel(got), 0, 0);
    free(g);
    free(w);
}

enum { EAGER_CASES = 19 };

/* Every kind of node, run as one graph with many outputs, against the eager
 * op on the same tensors. */
TEST(test_graph_run_every_kind_matches_eager) {
    test_rng rng = test_rng_make(13);
    porta_tensor *x = test_random_tensor(&rng, PORTA_F32, 2, SHAPE(3, 4), -2, 2);
    porta_tensor *y = test_random_tensor(&rng, PORTA_F32, 2, SHAPE(3, 4), -2, 2);
    porta_tensor *cond = test_random_tensor(&rng, PORTA_BOOL, 2, SHAPE(3, 4), 0, 1);
    porta_tensor *src = test_random_tensor(&rng, PORTA_F32, 2, SHAPE(3, 2), -2, 2);
    porta_tensor *img = test_random_tensor(&rng, PORTA_F64, 4, SHAPE(1, 2, 6, 5), -1, 1);
    porta_tensor *kern = test_random_tensor(&rng, PORTA_F64, 4, SHAPE(3, 2, 3, 3), -1, 1);
    porta_tensor *bias = test_random_tensor(&rng, PORTA_F64, 1, SHAPE(3), -1, 1);
    int64_t idx_values[6], row_values[5];
    for (int i = 0; i < 6; i++) idx_values[i] = test_int(&rng, 0, 3);
    for (int i = 0; i < 5; i++) row_values[i] = test_int(&rng, 0, 2);
    porta_tensor *idx = int64_tensor(2, SHAPE(3, 2), idx_values);
    porta_tensor *rows = int64_tensor(1, SHAPE(5), row_values);
    porta_conv_params conv = {.stride = {2, 1}, .padding = {1, 0}, .dilation = {1, 2}, .groups = 1};
    const int axis1[] = {1}, perm[] = {1, 0}, axis0[] = {0};
    const int64_t pads[] = {1, 0, -1, 2};

    porta_graph *g;
    CHECK_OK(porta_graph_create(&g));
    porta_node nx, ny, ncond, nsrc, nimg, nkern, nbias, nidx, nrows, n[EAGER_CASES], t;
    CHECK_OK(porta_graph_input(g, PORTA_F32, 2, SHAPE(3, 4), &nx));
    CHECK_OK(porta_graph_input(g, PORTA_F32, 2, SHAPE(3, 4), &ny));
    CHECK_OK(porta_graph_input(g, PORTA_BOOL, 2, SHAPE(3, 4), &ncond));
    CHECK_OK(porta_graph_input(g, PORTA_F32, 2, SHAPE(3, 2), &nsrc));
    CHECK_OK(porta_graph_input(g, PORTA_F64, 4, SHAPE(1, 2, 6, 5), &nimg));
    CHECK_OK(porta_graph_input(g, PORTA_F64, 4, SHAPE(3, 2, 3, 3), &nkern));
    CHECK_OK(porta_graph_input(g, PORTA_F64, 1, SHAPE(3), &nbias));
    CHECK_OK(porta_graph_input(g, PORTA_I64, 2, SHAPE(3, 2), &nidx));
    CHECK_OK(porta_graph_input(g, PORTA_I64, 1, SHAPE(5), &nrows));
    CHECK_OK(porta_graph_unary(g, PORTA_EXP, nx, &n[0]));
    CHECK_OK(porta_graph_binary(g, PORTA_ATAN2, nx, ny, &n[1]));
    CHECK_OK(porta_graph_ternary(g, PORTA_WHERE, ncond, nx, ny, &n[2]));
    CHECK_OK(porta_graph_cast(g, nx, PORTA_F16, &n[3]));
    CHECK_OK(porta_graph_reduce(g, PORTA_REDUCE_ARGMAX, nx, axis1, 1, false, &n[4]));
    CHECK_OK(porta_graph_reduce(g, PORTA_REDUCE_PROD, ny, NULL, 0, false, &n[5]));
    CHECK_OK(porta_graph_reshape(g, nx, 2, SHAPE(2, 6), &n[6]));
    CHECK_OK(porta_graph_permute(g, nx, perm, &n[7]));
    CHECK_OK(porta_graph_reshape(g, ny, 3, SHAPE(3, 1, 4), &t));
    CHECK_OK(porta_graph_expand(g, t, 3, SHAPE(3, 5, 4), &n[8]));
    CHECK_OK(porta_graph_slice(g, nx, 1, 3, 0, -2, &n[9]));
    CHECK_OK(porta_graph_flip(g, nx, axis0, 1, &n[10]));
    CHECK_OK(porta_graph_pad(g, nx, pads, 7.0, &n[11]));
    CHECK_OK(porta_graph_gather(g, nx, 1, nidx, &n[12]));
    CHECK_OK(porta_graph_scatter(g, nx, 1, nidx, nsrc, PORTA_SCATTER_AMAX, &n[13]));
    CHECK_OK(porta_graph_index_select(g, nx, 0, nrows, &n[14]));
    CHECK_OK(porta_graph_permute(g, ny, perm, &t));
    CHECK_OK(porta_graph_matmul(g, nx, t, &n[15]));
    CHECK_OK(porta_graph_conv(g, nimg, nkern, nbias, &conv, &n[16]));
    CHECK_OK(porta_graph_random(g, PORTA_F32, 2, SHAPE(3, 4), true, 5, 9, &n[17]));
    CHECK_OK(porta_graph_constant(g, PORTA_I32, -2.7, &n[18]));
    for (int i = 0; i < EAGER_CASES; i++) CHECK_OK(porta_graph_output(g, n[i]));

    porta_tensor *inputs[] = {x, y, cond, src, img, kern, bias, idx, rows};
    porta_tensor *got[EAGER_CASES] = {NULL};
    CHECK_OK(porta_graph_run(g, test_cpu(), inputs, 9, got, EAGER_CASES));

    porta_tensor *want[EAGER_CASES] = {NULL}, *tmp = NULL, *yt = NULL;
    CHECK_OK(porta_unary(PORTA_EXP, x, &want[0]));
    CHECK_OK(porta_binary(PORTA_ATAN2, x, y, &want[1]));
    CHECK_OK(porta_ternary(PORTA_WHERE, cond, x, y, &want[2]));
    CHECK_OK(porta_cast(x, PORTA_F16, &want[3]));
    CHECK_OK(porta_reduce(PORTA_REDUCE_ARGMAX, x, axis1, 1, false, &want[4]));
    CHECK_OK(porta_reduce(PORTA_REDUCE_PROD, y, NULL, 0, false, &want[5]));
    CHECK_OK(porta_reshape(x, 2, SHAPE(2, 6), &want[6]));
    CHECK_OK(porta_permute(x, perm, &want[7]));
    CHECK_OK(porta_reshape(y, 3, SHAPE(3, 1, 4), &tmp));
    CHECK_OK(porta_expand(tmp, 3, SHAPE(3, 5, 4), &want[8]));
    CHECK_OK(porta_slice(x, 1, 3, 0, -2, &want[9]));
    CHECK_OK(porta_flip(x, axis0, 1, &want[10]));
    CHECK_OK(porta_pad(x, pads, 7.0, &want[11]));
    CHECK_OK(porta_gather(x, 1, idx, &want[12]));
    CHECK_OK(porta_scatter(x, 1, idx, src, PORTA_SCATTER_AMAX, &want[13]));
    CHECK_OK(porta_index_select(x, 0, rows, &want[14]));
    CHECK_OK(porta_permute(y, perm, &yt));
    CHECK_OK(porta_matmul(x, yt, &want[15]));
    CHECK_OK(porta_conv(img, kern, bias, &conv, &want[16]));
    CHECK_OK(porta_tensor_empty(test_cpu(), PORTA_F32, 2, SHAPE(3, 4), &want[17]));
    CHECK_OK(porta_random_normal(want[17], 5, 9, 0.0, 1.0));
    CHECK_OK(porta_tensor_empty(test_cpu(), PORTA_I32, 0, NULL, &want[18]));
    CHECK_OK(porta_fill(want[18], -2.7));
    for (int i = 0; i < EAGER_CASES; i++) {
        char what[32];
        snprintf(what, sizeof what, "output %d", i);
        expect_same(what, got[i], want[i]);
        porta_tensor_release(got[i]);
        porta_tensor_release(want[i]);
    }
    porta_tensor *held[] = {x, y, cond, src, img, kern, bias, idx, rows, tmp, yt};
    for (size_t i = 0; i < sizeof held / sizeof held[0]; i++) porta_tensor_release(held[i]);
    porta_graph_free(g);
}

/* Rank-0 and zero-size values flow through a graph; an input or a node may
 * be an output, several times. */
TEST(test_graph_run_scalars_empty_and_aliased_outputs) {
    porta_graph *g;
    CHECK_OK(porta_graph_create(&g));
    porta_node s, z, three, s3, y, zsum, zexp;
    CHECK_OK(porta_graph_input(g, PORTA_F64, 0, NULL, &s));
    CHECK_OK(porta_graph_input(g, PORTA_F32, 2, SHAPE(0, 4), &z));
    CHECK_OK(porta_graph_constant(g, PORTA_I32, 3, &three));
    CHECK_OK(porta_graph_binary(g, PORTA_MUL, s, three, &s3));
    CHECK_OK(porta_graph_binary(g, PORTA_ADD, s3, s, &y));
    CHECK_OK(porta_graph_reduce(g, PORTA_REDUCE_SUM, z, (const int[]){0}, 1, false, &zsum));
    CHECK_OK(porta_graph_unary(g, PORTA_EXP, z, &zexp));
    const porta_node outs[] = {y, zsum, zexp, z, y, s};
    for (int i = 0; i < 6; i++) CHECK_OK(porta_graph_output(g, outs[i]));

    double value = 1.25;
    porta_tensor *st, *zt;
    CHECK_OK(porta_tensor_from_host(test_cpu(), PORTA_F64, 0, NULL, &value, &st));
    CHECK_OK(porta_tensor_empty(test_cpu(), PORTA_F32, 2, SHAPE(0, 4), &zt));
    porta_tensor *inputs[] = {st, zt};
    porta_tensor *out[6] = {NULL};
    CHECK_OK(porta_graph_run(g, test_cpu(), inputs, 2, out, 6));
    double got;
    CHECK_OK(porta_tensor_to_host(out[0], &got, sizeof got));
    CHECK(porta_tensor_rank(out[0]) == 0 && got == 5.0);
    CHECK(out[4] == out[0]); /* the same node twice: two references to one tensor */
    CHECK(out[3] == zt && out[5] == st);
    CHECK(porta_tensor_rank(out[1]) == 1 && porta_tensor_sizes(out[1])[0] == 4);
    double *sums = test_to_doubles(out[1]);
    test_close("sum over an empty axis", sums, (const double[]){0, 0, 0, 0}, 4, 0, 0);
    free(sums);
    CHECK(porta_tensor_numel(out[2]) == 0 && porta_tensor_sizes(out[2])[1] == 4);
    for (int i = 0; i < 6; i++) porta_tensor_release(out[i]);
    porta_tensor_release(st);
    porta_tensor_release(zt);
    porta_graph_free(g);
}
