/* The factory and random aten ops through porta_aten_call: results, the
 * generator's determinism, errors, and no leaks on any path. */
#include <string.h>

#include "test.h"

/* Runs op `name`; on success *out is its one tensor result (a reference). */
static porta_status *call(const char *name, const porta_value *args, int count,
                          porta_tensor **out) {
    porta_value *results = NULL;
    int result_count = 0;
    porta_status *status =
        porta_aten_call(porta_aten_op_find(name), args, count, &results, &result_count);
    if (status) return status;
    *out = results[0].tensor;
    results[0].kind = PORTA_VALUE_NONE; /* the reference is the caller's now */
    porta_aten_results_free(results, result_count);
    return NULL;
}

static const porta_value none = {.kind = PORTA_VALUE_NONE};

TEST(test_aten_factory_full_keeps_int64_exact) {
    int64_t sizes[2] = {2, 3}, got[6];
    porta_value args[6] = {{.kind = PORTA_VALUE_INTS, .ints = {sizes, 2}},
                           {.kind = PORTA_VALUE_INT, .i = (INT64_C(1) << 62) + 1},
                           none, none, none, none};
    porta_tensor *t = NULL;
    CHECK_OK(call("full", args, 6, &t));
    CHECK(porta_tensor_dtype(t) == PORTA_I64 && porta_tensor_numel(t) == 6);
    CHECK_OK(porta_tensor_to_host(t, got, sizeof got));
    CHECK(got[5] == (INT64_C(1) << 62) + 1);
    porta_tensor_release(t);
    int64_t negative[2] = {2, -1};
    args[0].ints.items = negative;
    CHECK_ERR(call("full", args, 6, &t), PORTA_ERR_INVALID_ARGUMENT, "negative dimension -1");
}

TEST(test_aten_factory_arange_and_eye) {
    porta_value args[7] = {{.kind = PORTA_VALUE_INT, .i = 2}, {.kind = PORTA_VALUE_INT, .i = 11},
                           {.kind = PORTA_VALUE_INT, .i = 3}, none, none, none, none};
    porta_tensor *t = NULL;
    CHECK_OK(call("arange.start_step", args, 7, &t));
    int64_t values[3];
    CHECK(porta_tensor_numel(t) == 3);
    CHECK_OK(porta_tensor_to_host(t, values, sizeof values));
    CHECK(values[0] == 2 && values[1] == 5 && values[2] == 8);
    porta_tensor_release(t);
    args[2].i = 0;
    CHECK_ERR(call("arange.start_step", args, 7, &t), PORTA_ERR_INVALID_ARGUMENT, "nonzero");
    porta_value eye_args[6] = {{.kind = PORTA_VALUE_INT, .i = 2}, {.kind = PORTA_VALUE_INT, .i = 3},
                               none, none, none, none};
    CHECK_OK(call("eye.m", eye_args, 6, &t));
    float eye[6];
    CHECK_OK(porta_tensor_to_host(t, eye, sizeof eye));
    CHECK(eye[0] == 1 && eye[1] == 0 && eye[4] == 1 && eye[5] == 0);
    porta_tensor_release(t);
}

TEST(test_aten_random_ops_repeat_under_a_seed) {
    porta_value args[5] = {{.kind = PORTA_VALUE_INT, .i = 50}, none, none, none, none};
    porta_tensor *a = NULL, *b = NULL;
    CHECK_OK(porta_manual_seed(0, 42));
    CHECK_OK(call("randperm", args, 5, &a));
    CHECK_OK(porta_manual_seed(0, 42));
    CHECK_OK(call("randperm", args, 5, &b));
    int64_t pa[50], pb[50];
    bool seen[50] = {false};
    CHECK_OK(porta_tensor_to_host(a, pa, sizeof pa));
    CHECK_OK(porta_tensor_to_host(b, pb, sizeof pb));
    CHECK(memcmp(pa, pb, sizeof pa) == 0);
    for (int i = 0; i < 50; i++)
        if (pa[i] >= 0 && pa[i] < 50) seen[pa[i]] = true;
    for (int i = 0; i < 50; i++) CHECK(seen[i]);
    porta_value bern[3] = {{.kind = PORTA_VALUE_TENSOR, .tensor = a},
                           {.kind = PORTA_VALUE_FLOAT, .f = 1.5}, none};
    porta_tensor *c = NULL;
    CHECK_ERR(call("bernoulli_.float", bern, 3, &c), PORTA_ERR_INVALID_ARGUMENT, "p=1.5");
    porta_tensor_release(a);
    porta_tensor_release(b);
}
