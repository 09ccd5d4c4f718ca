/* The aten layer's registry: lookup by name, argument checking, results. */
#include <stdlib.h>
#include <string.h>

#include "test.h"

TEST(test_aten_op_table_lookup) {
    int count = porta_aten_op_count();
    CHECK(count > 0);
    for (int id = 1; id < count; id++)
        CHECK_MSG(strcmp(porta_aten_op_name(id - 1), porta_aten_op_name(id)) < 0,
                  "ops not sorted: %s, %s", porta_aten_op_name(id - 1), porta_aten_op_name(id));
    int add = porta_aten_op_find("add.Tensor");
    CHECK(add >= 0 && strcmp(porta_aten_op_name(add), "add.Tensor") == 0);
    CHECK(strcmp(porta_aten_op_args(add), "NNs") == 0);
    CHECK(porta_aten_op_find("no_such_op.default") == -1);
    CHECK(porta_aten_op_find(NULL) == -1);
    CHECK(porta_aten_op_name(count) == NULL && porta_aten_op_args(-1) == NULL);
}

TEST(test_aten_op_table_call_promotes_numbers_like_python_scalars) {
    int32_t data[3] = {1, 2, 3};
    porta_tensor *x;
    CHECK_OK(porta_tensor_from_host(test_cpu(), PORTA_I32, 1, (int64_t[]){3}, data, &x));
    porta_value args[3] = {{.kind = PORTA_VALUE_TENSOR, .tensor = x},
                           {.kind = PORTA_VALUE_FLOAT, .f = 0.5},
                           {.kind = PORTA_VALUE_INT, .i = 2}};
    porta_value *results = NULL;
    int count = 0;
    CHECK_OK(porta_aten_call(porta_aten_op_find("add.Tensor"), args, 3, &results, &count));
    CHECK(count == 1 && results[0].kind == PORTA_VALUE_TENSOR);
    porta_tensor *sum = results[0].tensor;
    CHECK(porta_tensor_dtype(sum) == PORTA_F32); /* int32 tensor + python float */
    double *values = test_to_doubles(sum);
    CHECK(values[0] == 2.0 && values[2] == 4.0); /* x + 2 * 0.5 */
    free(values);
    porta_aten_results_free(results, count);
    porta_tensor_release(x);
}

TEST(test_aten_op_table_rejects_bad_calls) {
    int add = porta_aten_op_find("add.Tensor");
    porta_value *results = NULL;
    int count = 0;
    porta_value two[2] = {{.kind = PORTA_VALUE_INT, .i = 1}, {.kind = PORTA_VALUE_INT, .i = 2}};
    CHECK_ERR(porta_aten_call(add, two, 2, &results, &count), PORTA_ERR_INVALID_ARGUMENT,
              "expected 3 arguments, got 2");
    porta_value wrong[3] = {{.kind = PORTA_VALUE_INTS}, two[0], two[1]};
    CHECK_ERR(porta_aten_call(add, wrong, 3, &results, &count), PORTA_ERR_INVALID_ARGUMENT,
              "argument 0 has kind int[]");
    porta_value null_tensor[3] = {{.kind = PORTA_VALUE_TENSOR, .tensor = NULL}, two[0], two[1]};
    CHECK_ERR(porta_aten_call(add, null_tensor, 3, &results, &count), PORTA_ERR_INVALID_ARGUMENT,
              "NULL tensor");
    CHECK_ERR(porta_aten_call(-5, two, 2, &results, &count), PORTA_ERR_INVALID_ARGUMENT, "op id -5");
    CHECK(results == NULL);
    porta_aten_results_free(NULL, 0);
}

/* A number where an op takes only tensors arrives as a rank-0 tensor. */
TEST(test_aten_op_table_numbers_become_tensors_in_tensor_slots) {
    porta_tensor *x = NULL;
    CHECK_OK(porta_tensor_full(test_cpu(), PORTA_F32, 1, (int64_t[]){4}, 0.0, &x));
    int fill = porta_aten_op_find("fill_.Tensor");
    CHECK(fill >= 0 && porta_aten_op_args(fill)[1] == 'T');
    porta_value args[2] = {{.kind = PORTA_VALUE_TENSOR, .tensor = x},
                           {.kind = PORTA_VALUE_FLOAT, .f = 2.5}};
    porta_value *results = NULL;
    int count = 0;
    CHECK_OK(porta_aten_call(fill, args, 2, &results, &count));
    porta_aten_results_free(results, count);
    double *values = test_to_doubles(x);
    CHECK(values[0] == 2.5 && values[3] == 2.5);
    free(values);
    int mm = porta_aten_op_find("mm");
    porta_value numbers[2] = {{.kind = PORTA_VALUE_INT, .i = 1}, {.kind = PORTA_VALUE_INT, .i = 2}};
    CHECK_ERR(porta_aten_call(mm, numbers, 2, &results, &count), PORTA_ERR_SHAPE, NULL);
    porta_tensor_release(x);
}

/* A float[] argument (histogram's range) arrives as a float list; an int
 * list in its place is refused by kind. */
TEST(test_aten_op_table_float_lists) {
    float data[4] = {0.5f, 1.5f, 2.5f, 9.0f};
    porta_tensor *x;
    CHECK_OK(porta_tensor_from_host(test_cpu(), PORTA_F32, 1, (int64_t[]){4}, data, &x));
    double range[2] = {0.0, 3.0};
    porta_value args[5] = {{.kind = PORTA_VALUE_TENSOR, .tensor = x},
                           {.kind = PORTA_VALUE_INT, .i = 3},
                           {.kind = PORTA_VALUE_FLOATS, .floats = {range, 2}},
                           {.kind = PORTA_VALUE_NONE},
                           {.kind = PORTA_VALUE_BOOL, .b = false}};
    int histogram = porta_aten_op_find("histogram.bin_ct");
    porta_value *results = NULL;
    int count = 0;
    CHECK_OK(porta_aten_call(histogram, args, 5, &results, &count));
    CHECK(count == 2);
    double *hist = test_to_doubles(results[0].tensor), *edges = test_to_doubles(results[1].tensor);
    CHECK(hist[0] == 1 && hist[1] == 1 && hist[2] == 1); /* 9 lies outside the range */
    CHECK(edges[0] == 0 && edges[3] == 3);
    free(hist);
    free(edges);
    porta_aten_results_free(results, count);
    int64_t ints[2] = {0, 3};
    args[2] = (porta_value){.kind = PORTA_VALUE_INTS, .ints = {ints, 2}};
    results = NULL;
    CHECK_ERR(porta_aten_call(histogram, args, 5, &results, &count), PORTA_ERR_INVALID_ARGUMENT,
              "argument 2 has kind int[]");
    porta_tensor_release(x);
}
