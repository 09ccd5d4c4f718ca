/* softmax and log_softmax (aten _softmax / _log_softmax) against a double
 * reference of the same formula, on tensors large enough that the rows are
 * normalized a block at a time, along inner and outer dims, with rows of
 * infinities (NaN results, as in PyTorch). */
#include <stdlib.h>
#include <stdio.h>

#include "test.h"

static const int64_t shapes[][3] = {{3, 700, 300}, {1, 2000, 200}, {600, 500, 2}, {2, 3, 5}};

/* The reference, on values laid out row-major in `sizes`, normalizing
 * along `axis`. */
static void reference(const double *x, const int64_t *sizes, int axis, bool logarithm,
                      double *y) {
    int64_t outer = 1, inner = 1, n = sizes[axis];
    for (int d = 0; d < axis; d++) outer *= sizes[d];
    for (int d = axis + 1; d < 3; d++) inner *= sizes[d];
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t i = 0; i < inner; i++) {
            const double *row = x + o * n * inner + i;
            double *out = y + o * n * inner + i;
            double max = -INFINITY, sum = 0;
            for (int64_t k = 0; k < n; k++) max = fmax(max, row[k * inner]);
            for (int64_t k = 0; k < n; k++) sum += exp(row[k * inner] - max);
            for (int64_t k = 0; k < n; k++)
                out[k * inner] = logarithm ? (row[k * inner] - max) - log(sum)
                                           : exp(row[k * inner] - max) / sum;
        }
    }
}

static void check_case(const int64_t *sizes, int axis, bool logarithm, test_rng *rng) {
    int64_t numel = sizes[0] * sizes[1] * sizes[2], stride = 1;
    for (int d = axis + 1; d < 3; d++) stride *= sizes[d];
    float *data = malloc((size_t)numel * sizeof *data);
    double *values = malloc((size_t)numel * sizeof *values);
    for (int64_t i = 0; i < numel; i++) data[i] = (float)test_uniform(rng, -30, 30);
    /* A row of -inf only and an element +inf: their rows become NaN. */
    if (numel > 64) {
        for (int64_t k = 0; k < sizes[axis]; k++) data[k * stride] = -INFINITY;
        data[numel - 1] = INFINITY;
    }
    for (int64_t i = 0; i < numel; i++) values[i] = data[i];
    porta_tensor *x = NULL;
    porta_status *made = porta_tensor_from_host(test_cpu(), PORTA_F32, 3, sizes, data, &x);
    free(data);
    if (made) {
        test_fail(__FILE__, __LINE__, "from_host: %s", porta_status_message(made));
        porta_status_free(made);
        free(values);
        return;
    }
    double *want = malloc((size_t)numel * sizeof *want);
    reference(values, sizes, axis, logarithm, want);
    porta_value args[3] = {{.kind = PORTA_VALUE_TENSOR, .tensor = x},
                           {.kind = PORTA_VALUE_INT, .i = axis},
                           {.kind = PORTA_VALUE_BOOL, .b = false}};
    porta_value *results = NULL;
    int count = 0;
    const char *op = logarithm ? "_log_softmax" : "_softmax";
    porta_status *status = porta_aten_call(porta_aten_op_find(op), args, 3, &results, &count);
    CHECK_MSG(!status, "%s failed: %s", op, status ? porta_status_message(status) : "");
    porta_status_free(status);
    if (!status && count == 1) {
        double *got = test_to_doubles(results[0].tensor);
        char what[96];
        snprintf(what, sizeof what, "%s [%lld, %lld, %lld] dim %d", op, (long long)sizes[0],
                 (long long)sizes[1], (long long)sizes[2], axis);
        test_close(what, got, want, numel, 2e-5, 1e-6);
        free(got);
    }
    porta_aten_results_free(results, count);
    free(want);
    free(values);
    porta_tensor_release(x);
}

TEST(test_aten_softmax_blocks_match_reference) {
    test_rng rng = test_rng_make(11);
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
        for (int axis = 0; axis < 3; axis++)
            for (int logarithm = 0; logarithm < 2; logarithm++)
                check_case(shapes[s], axis, logarithm, &rng);
}

/* A row longer than the CPU kernel keeps in cache takes the online maximum
 * and sum; its maximum sits in the last chunk, so the sum is rescaled. */
TEST(test_aten_softmax_long_rows_match_reference) {
    test_rng rng = test_rng_make(12);
    static const int64_t sizes[3] = {1, 2, 50000};
    for (int logarithm = 0; logarithm < 2; logarithm++) check_case(sizes, 2, logarithm, &rng);
}

TEST(test_softmax_primitive_refuses_bad_input) {
    static const int64_t sizes[2] = {2, 3};
    static const float values[6] = {1, 2, 3, 4, 5, 6};
    static const int32_t integers[6] = {1, 2, 3, 4, 5, 6};
    porta_tensor *x = NULL, *other = NULL, *ints = NULL, *view = NULL, *out = NULL;
    int dims[2] = {1, 0};
    porta_status *status = porta_tensor_from_host(test_cpu(), PORTA_F32, 2, sizes, values, &x);
    if (!status) status = porta_tensor_from_host(test_cpu(), PORTA_F32, 1, sizes + 1, values, &other);
    if (!status) status = porta_tensor_from_host(test_cpu(), PORTA_I32, 2, sizes, integers, &ints);
    if (!status) status = porta_permute(x, dims, &view);
    CHECK_MSG(!status, "setup: %s", status ? porta_status_message(status) : "");
    porta_status_free(status);
    if (!status) {
        CHECK_ERR(porta_softmax(PORTA_SOFTMAX, ints, NULL, &out), PORTA_ERR_DTYPE,
                  "softmax: expected float32 input 0, got int32");
        CHECK_ERR(porta_softmax(PORTA_LOG_SOFTMAX, view, NULL, &out), PORTA_ERR_INVALID_ARGUMENT,
                  "softmax.log: expected contiguous input 0");
        CHECK_ERR(porta_softmax(PORTA_SOFTMAX_BACKWARD, x, other, &out), PORTA_ERR_SHAPE,
                  "expected the gradient and the result of one shape, got [2, 3] and [3]");
        CHECK_ERR(porta_softmax(PORTA_SOFTMAX_BACKWARD, x, NULL, &out),
                  PORTA_ERR_INVALID_ARGUMENT, "'b'");
        CHECK_ERR(porta_softmax((porta_softmax_op)PORTA_SOFTMAX_OP_COUNT, x, NULL, &out),
                  PORTA_ERR_INVALID_ARGUMENT, "softmax: expected an op from 0 to 3, got 4");
        CHECK_MSG(porta_softmax_runs(PORTA_SOFTMAX, x, NULL), "float32 rows run on the CPU");
        CHECK_MSG(!porta_softmax_runs(PORTA_SOFTMAX, view, NULL), "a strided view is composed");
        CHECK_MSG(!porta_softmax_runs(PORTA_SOFTMAX, ints, NULL), "int32 is composed");
    }
    porta_tensor_release(x);
    porta_tensor_release(other);
    porta_tensor_release(ints);
    porta_tensor_release(view);
}
