/* Fused execution of recorded primitives: results equal to eager ones,
 * kernel counts of typical groups, reuse of schedules, sync points, the
 * order of reads and writes kept, and errors at flush naming their site. */
#include <stdlib.h>
#include <string.h>

#include "test.h"

#define SHAPE(...) ((const int64_t[]){__VA_ARGS__})

static void fusion_begin(void) {
    test_cache_begin();
    porta_compiler_stats_reset();
}

static void fusion_end(void) {
    porta_status *status = porta_set_fusion(false);
    if (status) {
        test_fail(__FILE__, __LINE__, "set_fusion(false): %s", porta_status_message(status));
        porta_status_free(status);
    }
    test_cache_end();
}

static porta_tensor *scalar(double value) {
    porta_tensor *t = NULL;
    porta_status *status = porta_tensor_full(test_cpu(), PORTA_F32, 0, NULL, value, &t);
    if (status) {
        test_fail(__FILE__, __LINE__, "full: %s", porta_status_message(status));
        porta_status_free(status);
    }
    return t;
}

/* Largest |a - b| / (1 + |b|) over two float32 tensors of equal size. */
static double max_error(const porta_tensor *a, const porta_tensor *b) {
    int64_t n = porta_tensor_numel(b);
    float *x = malloc((size_t)n * sizeof *x), *y = malloc((size_t)n * sizeof *y);
    double worst = -1;
    if (x && y && !porta_tensor_numel(a) == !n) {
        porta_status *s1 = porta_tensor_to_host(a, x, (size_t)n * sizeof *x);
        porta_status *s2 = porta_tensor_to_host(b, y, (size_t)n * sizeof *y);
        if (!s1 && !s2) {
            worst = 0;
            for (int64_t i = 0; i < n; i++) {
                double e = fabs((double)x[i] - y[i]) / (1 + fabs((double)y[i]));
                if (!(e <= worst)) worst = e; /* NaN counts as the worst */
            }
        }
        porta_status_free(s1);
        porta_status_free(s2);
    }
    free(x);
    free(y);
    return worst;
}

/* (a * b + 1).relu().sum(1) * 2, from public ops. */
static porta_status *sum_of_relu(const porta_tensor *a, const porta_tensor *b,
                                 porta_tensor **out) {
    porta_tensor *one = scalar(1), *zero = scalar(0), *two = scalar(2);
    porta_tensor *ab = NULL, *plus = NULL, *relu = NULL, *sum = NULL;
    porta_status *status = porta_binary(PORTA_MUL, a, b, &ab);
    if (!status) status = porta_binary(PORTA_ADD, ab, one, &plus);
    if (!status) status = porta_binary(PORTA_MAXIMUM, plus, zero, &relu);
    if (!status) status = porta_reduce(PORTA_REDUCE_SUM, relu, (const int[]){1}, 1, false, &sum);
    if (!status) status = porta_binary(PORTA_MUL, sum, two, out);
    porta_tensor_release(one);
    porta_tensor_release(zero);
    porta_tensor_release(two);
    porta_tensor_release(ab);
    porta_tensor_release(plus);
    porta_tensor_release(relu);
    porta_tensor_release(sum);
    return status;
}

TEST(test_fusion_elementwise_into_reduction_is_one_kernel) {
    fusion_begin();
    test_rng rng = test_rng_make(1);
    porta_tensor *a = test_random_tensor(&rng, PORTA_F32, 2, SHAPE(64, 8192), -1, 1);
    porta_tensor *b = test_random_tensor(&rng, PORTA_F32, 2, SHAPE(64, 8192), -1, 1);
    porta_tensor *eager = NULL, *fused = NULL;
    porta_status *status = sum_of_relu(a, b, &eager);
    if (!status) status = porta_set_fusion(true);
    if (!status) status = sum_of_relu(a, b, &fused);
    if (!status) status = porta_flush();
    if (status) {
        test_fail(__FILE__, __LINE__, "%s", porta_status_message(status));
        porta_status_free(status);
    } else {
        porta_compiler_stats stats;
        porta_compiler_stats_get(&stats);
        CHECK_MSG(stats.last_trace_kernels == 1, "kernels: %llu",
                  (unsigned long long)stats.last_trace_kernels);
        CHECK_MSG(stats.kernels_run == 1, "fused kernels run: %llu",
                  (unsigned long long)stats.kernels_run);
        double error = max_error(fused, eager);
        CHECK_MSG(error >= 0 && error < 1e-5, "error %g", error);
    }
    porta_tensor_release(a);
    porta_tensor_release(b);
    porta_tensor_release(eager);
    porta_tensor_release(fused);
    fusion_end();
}

/* softmax over rows: x - max, exp, / sum. */
static porta_status *softmax(const porta_tensor *x, porta_tensor **out) {
    porta_tensor *max = NULL, *shifted = NULL, *e = NULL, *sum = NULL;
    const int axis[] = {1};
    porta_status *status = porta_reduce(PORTA_REDUCE_MAX, x, axis, 1, true, &max);
    if (!status) status = porta_binary(PORTA_SUB, x, max, &shifted);
    if (!status) status = porta_unary(PORTA_EXP, shifted, &e);
    if (!status) status = porta_reduce(PORTA_REDUCE_SUM, e, axis, 1, true, &sum);
    if (!status) status = porta_binary(PORTA_DIV, e, sum, out);
    porta_tensor_release(max);
    porta_tensor_release(shifted);
    porta_tensor_release(e);
    porta_tensor_release(sum);
    return status;
}

TEST(test_fusion_softmax_is_one_kernel_and_schedule_is_reused) {
    fusion_begin();
    test_rng rng = test_rng_make(2);
    porta_tensor *x = test_random_tensor(&rng, PORTA_F32, 2, SHAPE(37, 1000), -20, 20);
    porta_tensor *eager = NULL;
    CHECK_OK(softmax(x, &eager));
    CHECK_OK(porta_set_fusion(true));
    for (int step = 0; step < 3; step++) {
        porta_tensor *fused = NULL;
        porta_status *status = softmax(x, &fused);
        if (!status) status = porta_flush();
        if (status) {
            test_fail(__FILE__, __LINE__, "%s", porta_status_message(status));
            porta_status_free(status);
            porta_tensor_release(fused);
            break;
        }
        porta_compiler_stats stats;
        porta_compiler_stats_get(&stats);
        CHECK(stats.last_trace_kernels == 1);
        double error = max_error(fused, eager);
        CHECK_MSG(error >= 0 && error < 1e-6, "step %d: error %g", step, error);
        porta_tensor_release(fused);
    }
    porta_compiler_stats stats;
    porta_compiler_stats_get(&stats);
    CHECK_MSG(stats.graphs_compiled == 1 && stats.graph_cache_hits == 2,
              "compiled %llu, reused %llu", (unsigned long long)stats.graphs_compiled,
              (unsigned long long)stats.graph_cache_hits);
    CHECK(stats.kernels_compiled <= 1);
    porta_tensor_release(x);
    porta_tensor_release(eager);
    fusion_end();
}

TEST(test_fusion_reading_a_result_flushes) {
    fusion_begin();
    porta_tensor *a = scalar(3), *b = scalar(4), *sum = NULL, *product = NULL;
    CHECK_OK(porta_set_fusion(true));
    CHECK_OK(porta_binary(PORTA_ADD, a, b, &sum));
    CHECK_OK(porta_binary(PORTA_MUL, sum, b, &product));
    float value = 0;
    CHECK_OK(porta_tensor_to_host(product, &value, sizeof value));
    CHECK(value == 28);
    porta_compiler_stats stats;
    porta_compiler_stats_get(&stats);
    CHECK(stats.flushes == 1);
    porta_tensor_release(a);
    porta_tensor_release(b);
    porta_tensor_release(sum);
    porta_tensor_release(product);
    fusion_end();
}

/* y = x * 2, then x += 1 in place, then z = y + x: every element must see
 * the old x in y and the new x in z, whatever the kernel fuses. */
TEST(test_fusion_keeps_in_place_order) {
    fusion_begin();
    test_rng rng = test_rng_make(3);
    porta_tensor *x = test_random_tensor(&rng, PORTA_F32, 2, SHAPE(16, 33), -1, 1);
    porta_tensor *two = scalar(2), *one = scalar(1);
    float before[16 * 33], after[16 * 33];
    CHECK_OK(porta_tensor_to_host(x, before, sizeof before));
    porta_tensor *y = NULL, *z = NULL;
    CHECK_OK(porta_set_fusion(true));
    CHECK_OK(porta_binary(PORTA_MUL, x, two, &y));
    CHECK_OK(porta_binary(PORTA_ADD, x, one, &x));
    CHECK_OK(porta_binary(PORTA_ADD, y, x, &z));
    CHECK_OK(porta_tensor_to_host(z, after, sizeof after));
    for (int i = 0; i < 16 * 33; i++)
        CHECK_MSG(after[i] == before[i] * 2 + (before[i] + 1), "element %d", i);
    porta_tensor *tensors[] = {x, two, one, y, z};
    for (int i = 0; i < 5; i++) porta_tensor_release(tensors[i]);
    fusion_end();
}

TEST(test_fusion_matmul_bias_relu_is_one_gemm_with_epilogue) {
    fusion_begin();
    test_rng rng = test_rng_make(4);
    porta_tensor *x = test_random_tensor(&rng, PORTA_F32, 2, SHAPE(70, 50), -1, 1);
    porta_tensor *w = test_random_tensor(&rng, PORTA_F32, 2, SHAPE(50, 90), -1, 1);
    porta_tensor *bias = test_random_tensor(&rng, PORTA_F32, 1, SHAPE(90), -1, 1);
    porta_tensor *zero = scalar(0);
    porta_tensor *results[2] = {NULL, NULL};
    for (int fused = 0; fused < 2; fused++) {
        porta_tensor *mm = NULL, *biased = NULL;
        CHECK_OK(porta_set_fusion(fused));
        if (fused) porta_explain_start(false);
        CHECK_OK(porta_matmul(x, w, &mm));
        CHECK_OK(porta_binary(PORTA_ADD, mm, bias, &biased));
        CHECK_OK(porta_binary(PORTA_MAXIMUM, biased, zero, &results[fused]));
        CHECK_OK(porta_flush());
        if (fused) {
            char *report = porta_explain_stop();
            CHECK_MSG(report && strstr(report, "-> 1 kernels") &&
                          strstr(report, "matmul with fused epilogue"),
                      "report: %s", report ? report : "(null)");
            free(report);
        }
        porta_tensor_release(mm);
        porta_tensor_release(biased);
    }
    double error = max_error(results[1], results[0]);
    CHECK_MSG(error >= 0 && error < 1e-5, "error %g", error);
    porta_tensor *tensors[] = {x, w, bias, zero, results[0], results[1]};
    for (int i = 0; i < 6; i++) porta_tensor_release(tensors[i]);
    fusion_end();
}

TEST(test_fusion_error_at_flush_names_the_site) {
    fusion_begin();
    porta_tensor *x = scalar(1), *index = NULL, *gathered = NULL;
    int64_t bad[] = {5};
    CHECK_OK(porta_tensor_from_host(test_cpu(), PORTA_I64, 1, SHAPE(1), bad, &index));
    porta_tensor *row = NULL;
    CHECK_OK(porta_reshape(x, 1, SHAPE(1), &row));
    CHECK_OK(porta_set_fusion(true));
    porta_trace_set_site("model.py:42");
    porta_status *status = porta_gather(row, 0, index, &gathered);
    porta_trace_set_site(NULL);
    if (!status) status = porta_flush();
    CHECK_ERR(status, PORTA_ERR_OUT_OF_RANGE, "model.py:42");
    porta_tensor_release(x);
    porta_tensor_release(row);
    porta_tensor_release(index);
    porta_tensor_release(gathered);
    fusion_end();
}

/* exp(tanh(x) * 2 + 1) - x, its intermediates released as soon as they are
 * used, as Python's temporaries are. */
static porta_status *chain(const porta_tensor *x, const porta_tensor *two,
                           const porta_tensor *one, porta_tensor **out) {
    porta_tensor *t = NULL, *scaled = NULL, *shifted = NULL, *e = NULL;
    porta_status *status = porta_unary(PORTA_TANH, x, &t);
    if (!status) status = porta_binary(PORTA_MUL, t, two, &scaled);
    porta_tensor_release(t);
    if (!status) status = porta_binary(PORTA_ADD, scaled, one, &shifted);
    porta_tensor_release(scaled);
    if (!status) status = porta_unary(PORTA_EXP, shifted, &e);
    porta_tensor_release(shifted);
    if (!status) status = porta_binary(PORTA_SUB, e, x, out);
    porta_tensor_release(e);
    return status;
}

/* Intermediates a fused kernel keeps in registers never get memory: the
 * flush's peak is the result alone, where eager execution holds a
 * temporary beside it. */
TEST(test_fusion_intermediates_take_no_memory) {
    fusion_begin();
    test_rng rng = test_rng_make(5);
    const int64_t n = 1 << 20;
    porta_tensor *x = test_random_tensor(&rng, PORTA_F32, 1, SHAPE(n), -1, 1);
    porta_tensor *two = scalar(2), *one = scalar(1);
    uint64_t peak[2];
    porta_tensor *results[2] = {NULL, NULL};
    for (int fused = 0; fused < 2; fused++) {
        CHECK_OK(porta_set_fusion(fused));
        uint64_t base = porta_memory_allocated();
        porta_memory_reset_peak();
        CHECK_OK(chain(x, two, one, &results[fused]));
        CHECK_OK(porta_flush());
        peak[fused] = porta_memory_peak() - base;
    }
    uint64_t result_bytes = (uint64_t)n * sizeof(float);
    CHECK_MSG(peak[1] <= result_bytes + 4096 && peak[0] >= 2 * result_bytes,
              "peak above the inputs: eager %llu, fused %llu bytes (result %llu)",
              (unsigned long long)peak[0], (unsigned long long)peak[1],
              (unsigned long long)result_bytes);
    double error = max_error(results[1], results[0]);
    CHECK_MSG(error >= 0 && error < 1e-6, "error %g", error);
    porta_tensor *tensors[] = {x, two, one, results[0], results[1]};
    for (int i = 0; i < 5; i++) porta_tensor_release(tensors[i]);
    fusion_end();
}

/* A strided read by the host (a transposed view) waits for recorded ops
 * too, like a contiguous one. */
TEST(test_fusion_strided_read_flushes) {
    fusion_begin();
    porta_tensor *a = NULL, *two = scalar(2), *doubled = NULL, *transposed = NULL;
    const float values[2][3] = {{1, 2, 3}, {4, 5, 6}};
    CHECK_OK(porta_tensor_from_host(test_cpu(), PORTA_F32, 2, SHAPE(2, 3), values, &a));
    CHECK_OK(porta_set_fusion(true));
    CHECK_OK(porta_binary(PORTA_MUL, a, two, &doubled));
    CHECK_OK(porta_permute(doubled, (const int[]){1, 0}, &transposed));
    float host[6] = {0};
    CHECK_OK(porta_tensor_to_host(transposed, host, sizeof host));
    const float expected[6] = {2, 8, 4, 10, 6, 12};
    for (int i = 0; i < 6; i++) CHECK_MSG(host[i] == expected[i], "element %d: %g", i, host[i]);
    porta_tensor *tensors[] = {a, two, doubled, transposed};
    for (int i = 0; i < 4; i++) porta_tensor_release(tensors[i]);
    fusion_end();
}
