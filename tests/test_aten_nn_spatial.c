/* The spatial nn aten ops through porta_aten_call: padding, 3-D pooling and
 * bilinear upsampling on small inputs with known answers, their errors,
 * and no leaks on any path. */
#include "test.h"

/* Runs op `name`; on success out[0..want) are its first tensor results
 * (references). */
static porta_status *call(const char *name, const porta_value *args, int count,
                          porta_tensor **out, int want) {
    porta_value *results = NULL;
    int result_count = 0;
    porta_status *status =
        porta_aten_call(porta_aten_op_find(name), args, count, &results, &result_count);
    if (status) return status;
    for (int i = 0; i < want && i < result_count; i++) {
        out[i] = results[i].tensor;
        results[i].kind = PORTA_VALUE_NONE; /* the reference is the caller's now */
    }
    porta_aten_results_free(results, result_count);
    return NULL;
}

static porta_value tensor_arg(porta_tensor *t) {
    return (porta_value){.kind = PORTA_VALUE_TENSOR, .tensor = t};
}

static porta_value ints_arg(const int64_t *items, int count) {
    return (porta_value){.kind = PORTA_VALUE_INTS, .ints = {items, count}};
}

/* 0, 1, ..., as float64 of the given shape. */
static porta_tensor *counting(int rank, const int64_t *sizes) {
    porta_tensor *t = NULL;
    double values[64];
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= sizes[i];
    for (int64_t i = 0; i < n && i < 64; i++) values[i] = (double)i;
    porta_status *status = porta_tensor_from_host(test_cpu(), PORTA_F64, rank, sizes, values, &t);
    if (status) {
        test_fail(__FILE__, __LINE__, "from_host: %s", porta_status_message(status));
        porta_status_free(status);
    }
    return t;
}

TEST(test_aten_reflection_pad_values_and_gradient) {
    int64_t sizes[3] = {1, 1, 3}, padding[2] = {2, 1};
    porta_tensor *x = counting(3, sizes), *y = NULL, *gx = NULL;
    if (!x) return;
    porta_value args[2] = {tensor_arg(x), ints_arg(padding, 2)};
    CHECK_OK(call("reflection_pad1d", args, 2, &y, 1));
    double got[6] = {0}, want[6] = {2, 1, 0, 1, 2, 1};
    CHECK_OK(porta_tensor_to_host(y, got, sizeof got));
    for (int i = 0; i < 6; i++) CHECK(got[i] == want[i]);
    /* ones back: each input element counts how often it was read */
    CHECK_OK(porta_fill(y, 1));
    porta_value back[3] = {tensor_arg(y), tensor_arg(x), ints_arg(padding, 2)};
    CHECK_OK(call("reflection_pad1d_backward", back, 3, &gx, 1));
    double counts[3] = {0};
    CHECK_OK(porta_tensor_to_host(gx, counts, sizeof counts));
    CHECK(counts[0] == 1 && counts[1] == 3 && counts[2] == 2);
    int64_t too_far[2] = {3, 0};
    args[1] = ints_arg(too_far, 2);
    porta_tensor *none = NULL;
    CHECK_ERR(call("reflection_pad1d", args, 2, &none, 1), PORTA_ERR_INVALID_ARGUMENT,
              "padding (3, 0) at dimension 2 of input [1, 1, 3]");
    back[0] = tensor_arg(x);
    CHECK_ERR(call("replication_pad1d_backward", back, 3, &none, 1), PORTA_ERR_SHAPE,
              "Expected: [1, 1, 6], Got: [1, 1, 3]");
    porta_tensor_release(gx);
    porta_tensor_release(y);
    porta_tensor_release(x);
}

TEST(test_aten_max_pool3d_indices_and_errors) {
    int64_t sizes[5] = {1, 1, 2, 2, 2}, kernel[1] = {2}, empty[1] = {0}, zero[1] = {0},
            one[1] = {1};
    porta_tensor *x = counting(5, sizes), *out[2] = {NULL, NULL};
    if (!x) return;
    porta_value args[6] = {tensor_arg(x), ints_arg(kernel, 1), ints_arg(empty, 0),
                           ints_arg(zero, 1), ints_arg(one, 1),
                           {.kind = PORTA_VALUE_BOOL, .b = false}};
    CHECK_OK(call("max_pool3d_with_indices", args, 6, out, 2));
    double value = 0;
    int64_t index = 0;
    CHECK_OK(porta_tensor_to_host(out[0], &value, sizeof value));
    CHECK_OK(porta_tensor_to_host(out[1], &index, sizeof index));
    CHECK(value == 7 && index == 7);
    porta_tensor_release(out[0]);
    porta_tensor_release(out[1]);
    int64_t big[1] = {3};
    args[1] = ints_arg(big, 1);
    porta_tensor *none[2] = {NULL, NULL};
    CHECK_ERR(call("max_pool3d_with_indices", args, 6, none, 2), PORTA_ERR_SHAPE,
              "given input size (1x2x2x2), calculated output size (1x0x0x0) is too small");
    int64_t flat[3] = {1, 2, 4};
    porta_tensor *plane = counting(3, flat);
    args[0] = tensor_arg(plane);
    CHECK_ERR(call("max_pool3d_with_indices", args, 6, none, 2), PORTA_ERR_SHAPE,
              "expected a 4D or 5D input, got [1, 2, 4]");
    porta_tensor_release(plane);
    porta_tensor_release(x);
}

TEST(test_aten_adaptive_avg_pool3d_means_and_errors) {
    int64_t sizes[4] = {1, 2, 2, 2}, size[3] = {1, 1, 2};
    porta_tensor *x = counting(4, sizes), *y = NULL;
    if (!x) return;
    porta_value args[2] = {tensor_arg(x), ints_arg(size, 3)};
    CHECK_OK(call("_adaptive_avg_pool3d", args, 2, &y, 1));
    double got[2] = {0};
    CHECK_OK(porta_tensor_to_host(y, got, sizeof got));
    CHECK(got[0] == 3 && got[1] == 4); /* means of 0, 2, 4, 6 and 1, 3, 5, 7 */
    porta_tensor_release(y);
    args[1] = ints_arg(size, 2);
    porta_tensor *none = NULL;
    CHECK_ERR(call("_adaptive_avg_pool3d", args, 2, &none, 1), PORTA_ERR_INVALID_ARGUMENT,
              "output_size must be 3 ints, got 2");
    porta_tensor_release(x);
}

TEST(test_aten_upsample_bilinear2d_align_corners) {
    int64_t sizes[4] = {1, 1, 2, 2}, size[2] = {3, 3};
    porta_tensor *x = counting(4, sizes), *y = NULL;
    if (!x) return;
    porta_value none_value = {.kind = PORTA_VALUE_NONE};
    porta_value args[5] = {tensor_arg(x), ints_arg(size, 2), {.kind = PORTA_VALUE_BOOL, .b = true},
                           none_value, none_value};
    CHECK_OK(call("upsample_bilinear2d", args, 5, &y, 1));
    double got[9] = {0}, want[9] = {0, 0.5, 1, 1, 1.5, 2, 2, 2.5, 3};
    CHECK_OK(porta_tensor_to_host(y, got, sizeof got));
    for (int i = 0; i < 9; i++) CHECK_MSG(fabs(got[i] - want[i]) < 1e-12, "at %d: %g", i, got[i]);
    porta_tensor_release(y);
    porta_tensor *ints = NULL;
    CHECK_OK(porta_cast(x, PORTA_I64, &ints));
    args[0] = tensor_arg(ints);
    porta_tensor *none = NULL;
    CHECK_ERR(call("upsample_bilinear2d", args, 5, &none, 1), PORTA_ERR_DTYPE,
              "not implemented for");
    porta_tensor_release(ints);
    porta_tensor_release(x);
}
