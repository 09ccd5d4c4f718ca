/* The ops torch.amp.GradScaler runs (aten/amp/): unscaling gradients while
 * flagging non-finite values, and the loss scale's update against a
 * reference of CUDA's rule; and histc on integer inputs, which CUDA counts
 * and PyTorch's CPU kernel refuses. */
#include <math.h>
#include <stdlib.h>

#include "test.h"

static porta_tensor *from_floats(int64_t n, const float *values) {
    porta_tensor *t = NULL;
    porta_status *status = porta_tensor_from_host(test_cpu(), PORTA_F32, 1, &n, values, &t);
    CHECK_MSG(!status, "from_host: %s", status ? porta_status_message(status) : "");
    porta_status_free(status);
    return t;
}

static porta_tensor *from_int32(int64_t n, const int32_t *values) {
    porta_tensor *t = NULL;
    porta_status *status = porta_tensor_from_host(test_cpu(), PORTA_I32, 1, &n, values, &t);
    CHECK_MSG(!status, "from_host: %s", status ? porta_status_message(status) : "");
    porta_status_free(status);
    return t;
}

static double first_value(const porta_tensor *t) {
    double *values = test_to_doubles(t);
    double first = values ? values[0] : NAN;
    free(values);
    return first;
}

static porta_status *unscale(porta_tensor *const *grads, int count, porta_tensor *found_inf,
                             porta_tensor *inv_scale) {
    porta_value args[3] = {{.kind = PORTA_VALUE_TENSORS, .tensors = {grads, count}},
                           {.kind = PORTA_VALUE_TENSOR, .tensor = found_inf},
                           {.kind = PORTA_VALUE_TENSOR, .tensor = inv_scale}};
    porta_value *results = NULL;
    int result_count = 0;
    porta_status *status = porta_aten_call(
        porta_aten_op_find("_amp_foreach_non_finite_check_and_unscale_"), args, 3, &results,
        &result_count);
    CHECK(status || result_count == 0); /* the schema returns () */
    porta_aten_results_free(results, result_count);
    return status;
}

TEST(test_aten_amp_unscale_scales_in_place_and_flags_non_finite) {
    porta_tensor *grads[2] = {from_floats(3, (float[]){2, -4, 8}), from_floats(2, (float[]){1, 6})};
    porta_tensor *found = from_floats(1, (float[]){0}), *inv = from_floats(1, (float[]){0.25f});
    CHECK_OK(unscale(grads, 2, found, inv));
    double *first = test_to_doubles(grads[0]), *second = test_to_doubles(grads[1]);
    CHECK(first[0] == 0.5 && first[1] == -1 && first[2] == 2);
    CHECK(second[0] == 0.25 && second[1] == 1.5);
    CHECK(first_value(found) == 0);
    free(first);
    free(second);

    /* A NaN in the second gradient sets found_inf; both are still scaled,
     * and found_inf stays set on a later clean call. */
    porta_tensor *bad = from_floats(2, (float[]){NAN, 4});
    porta_tensor *mixed[2] = {grads[0], bad};
    CHECK_OK(unscale(mixed, 2, found, inv));
    CHECK(first_value(found) == 1);
    CHECK(first_value(grads[0]) == 0.125);
    double *scaled = test_to_doubles(bad);
    CHECK(isnan(scaled[0]) && scaled[1] == 1);
    free(scaled);
    CHECK_OK(unscale(grads, 2, found, inv));
    CHECK(first_value(found) == 1);

    porta_tensor_release(grads[0]);
    porta_tensor_release(grads[1]);
    porta_tensor_release(bad);
    porta_tensor_release(found);
    porta_tensor_release(inv);
}

TEST(test_aten_amp_unscale_refuses_bad_arguments_before_writing) {
    porta_tensor *grad = from_floats(2, (float[]){2, 4});
    porta_tensor *ints = from_int32(2, (int32_t[]){1, 2});
    porta_tensor *found = from_floats(1, (float[]){0}), *inv = from_floats(1, (float[]){0.5f});
    porta_tensor *two = from_floats(2, (float[]){1, 1});
    porta_tensor *mixed[2] = {grad, ints};
    CHECK_ERR(unscale(mixed, 2, found, inv), PORTA_ERR_DTYPE, "gradient 1 must be a floating-point");
    CHECK(first_value(grad) == 2); /* nothing written */
    CHECK_ERR(unscale(&grad, 1, found, two), PORTA_ERR_INVALID_ARGUMENT,
              "inv_scale must be a 1-element tensor, but got 2");
    CHECK_ERR(unscale(&grad, 1, ints, inv), PORTA_ERR_INVALID_ARGUMENT, "found_inf must be a 1-element");
    porta_tensor *int_found = from_int32(1, (int32_t[]){0});
    CHECK_ERR(unscale(&grad, 1, int_found, inv), PORTA_ERR_INVALID_ARGUMENT,
              "found_inf must be a float32 tensor, but got int32");
    CHECK_OK(unscale(NULL, 0, found, inv)); /* no gradients: nothing to do */
    porta_tensor_release(grad);
    porta_tensor_release(ints);
    porta_tensor_release(found);
    porta_tensor_release(inv);
    porta_tensor_release(two);
    porta_tensor_release(int_found);
}

/* CUDA's _amp_update_scale_ kernel, in the same arithmetic. */
static void reference_update(float *scale, int32_t *tracker, float found, double growth,
                             double backoff, int64_t interval) {
    if (found != 0) {
        *scale = (float)(*scale * backoff);
        *tracker = 0;
        return;
    }
    int64_t successful = (int64_t)*tracker + 1;
    if (successful == interval) {
        float grown = (float)(*scale * growth);
        if (isfinite(grown)) *scale = grown;
        *tracker = 0;
    } else {
        *tracker = (int32_t)successful;
    }
}

TEST(test_aten_amp_update_scale_follows_cuda_rule) {
    static const struct {
        float scale, found;
        int32_t tracker;
        double growth, backoff;
        int64_t interval;
    } cases[] = {
        {65536, 0, 0, 2, 0.5, 2000},      {65536, 0, 1999, 2, 0.5, 2000},
        {65536, 1, 1999, 2, 0.5, 2000},   {65536, NAN, 5, 2, 0.5, 2000},
        {3e38f, 0, 0, 2, 0.5, 1},         {1, 0, 6, 1.1, 0.3, 7},
        {0.7f, 1, 3, 3, 0.1, 1},          {5, 0, 10, 2, 0.5, 3},
        {5, 0, 0, 2, 0.5, 0},             {5, 0, 2, 2, 0.5, -1},
    };
    int op = porta_aten_op_find("_amp_update_scale_");
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        porta_tensor *scale = from_floats(1, &cases[c].scale);
        porta_tensor *tracker = from_int32(1, &cases[c].tracker);
        porta_tensor *found = from_floats(1, &cases[c].found);
        porta_value args[6] = {{.kind = PORTA_VALUE_TENSOR, .tensor = scale},
                               {.kind = PORTA_VALUE_TENSOR, .tensor = tracker},
                               {.kind = PORTA_VALUE_TENSOR, .tensor = found},
                               {.kind = PORTA_VALUE_FLOAT, .f = cases[c].growth},
                               {.kind = PORTA_VALUE_FLOAT, .f = cases[c].backoff},
                               {.kind = PORTA_VALUE_INT, .i = cases[c].interval}};
        porta_value *results = NULL;
        int count = 0;
        CHECK_OK(porta_aten_call(op, args, 6, &results, &count));
        CHECK(count == 1 && results[0].tensor == scale); /* returns self */
        float want_scale = cases[c].scale;
        int32_t want_tracker = cases[c].tracker;
        reference_update(&want_scale, &want_tracker, cases[c].found, cases[c].growth,
                         cases[c].backoff, cases[c].interval);
        float got_scale;
        int32_t got_tracker;
        CHECK_OK(porta_tensor_to_host(scale, &got_scale, sizeof got_scale));
        CHECK_OK(porta_tensor_to_host(tracker, &got_tracker, sizeof got_tracker));
        CHECK_MSG(got_scale == want_scale && got_tracker == want_tracker,
                  "case %zu: scale %g tracker %d, want %g and %d", c, got_scale, got_tracker,
                  want_scale, want_tracker);
        porta_aten_results_free(results, count);
        porta_tensor_release(scale);
        porta_tensor_release(tracker);
        porta_tensor_release(found);
    }
}

TEST(test_aten_amp_update_scale_refuses_wrong_dtypes) {
    porta_tensor *scale = from_floats(1, (float[]){4});
    porta_tensor *float_tracker = from_floats(1, (float[]){0});
    porta_value args[6] = {{.kind = PORTA_VALUE_TENSOR, .tensor = scale},
                           {.kind = PORTA_VALUE_TENSOR, .tensor = float_tracker},
                           {.kind = PORTA_VALUE_TENSOR, .tensor = float_tracker},
                           {.kind = PORTA_VALUE_FLOAT, .f = 2},
                           {.kind = PORTA_VALUE_FLOAT, .f = 0.5},
                           {.kind = PORTA_VALUE_INT, .i = 1}};
    porta_value *results = NULL;
    int count = 0;
    CHECK_ERR(porta_aten_call(porta_aten_op_find("_amp_update_scale_"), args, 6, &results, &count),
              PORTA_ERR_INVALID_ARGUMENT, "growth_tracker must be an int32 tensor, but got float32");
    CHECK(first_value(scale) == 4);
    porta_tensor_release(scale);
    porta_tensor_release(float_tracker);
}

TEST(test_aten_amp_histc_counts_integers_like_cuda) {
    int32_t data[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, -3, 12};
    porta_tensor *x = from_int32(12, data);
    /* min 0.5 and max 9.9 truncate to 0 and 9; the bin is x * 4 / 9 rounded
     * down, 9 itself goes to the last bin, -3 and 12 are outside */
    porta_value args[4] = {{.kind = PORTA_VALUE_TENSOR, .tensor = x},
                           {.kind = PORTA_VALUE_INT, .i = 4},
                           {.kind = PORTA_VALUE_FLOAT, .f = 0.5},
                           {.kind = PORTA_VALUE_FLOAT, .f = 9.9}};
    porta_value *results = NULL;
    int count = 0;
    CHECK_OK(porta_aten_call(porta_aten_op_find("histc"), args, 4, &results, &count));
    CHECK(count == 1 && porta_tensor_dtype(results[0].tensor) == PORTA_I32);
    double *counts = test_to_doubles(results[0].tensor);
    /* bins: 0-2 -> 0, 3-4 -> 1, 5-6 -> 2, 7-9 -> 3 */
    CHECK_MSG(counts[0] == 3 && counts[1] == 2 && counts[2] == 2 && counts[3] == 3,
              "counts %g %g %g %g", counts[0], counts[1], counts[2], counts[3]);
    free(counts);
    porta_aten_results_free(results, count);
    porta_tensor_release(x);
}
