/* Reductions refuse bad input with a clear status and leak nothing, also
 * when memory runs out at any point. */
#include <string.h>

#include "test_reduce.h"

#define SHAPE(...) ((const int64_t[]){__VA_ARGS__})
#define AXES(...) ((const int[]){__VA_ARGS__})

TEST(test_reduce_errors_arguments) {
    test_rng rng = test_rng_make(3);
    porta_tensor *x = reduce_random_tensor(&rng, PORTA_F32, 2, SHAPE(2, 3), FILL_WIDE);
    porta_tensor *flags = reduce_random_tensor(&rng, PORTA_BOOL, 1, SHAPE(4), FILL_WIDE);
    porta_tensor *out = NULL;
    if (!x || !flags) goto done;
    CHECK_ERR(porta_reduce(PORTA_REDUCE_SUM, x, AXES(3), 1, false, &out), PORTA_ERR_OUT_OF_RANGE,
              "reduce.sum: axis 3 is out of range for a rank-2 tensor (expected -2..1)");
    CHECK_ERR(porta_reduce(PORTA_REDUCE_ALL, x, AXES(0, -3), 2, false, &out),
              PORTA_ERR_OUT_OF_RANGE, "axis -3 is out of range");
    CHECK_ERR(porta_reduce(PORTA_REDUCE_MAX, x, AXES(1, -1), 2, true, &out),
              PORTA_ERR_INVALID_ARGUMENT,
              "reduce.max: dim 1 appears multiple times in the list of dims");
    CHECK_ERR(porta_reduce(PORTA_REDUCE_ARGMAX, x, AXES(0, 1), 2, false, &out),
              PORTA_ERR_INVALID_ARGUMENT, "reduce.argmax: takes at most one axis, got 2");
    CHECK_ERR(porta_reduce(PORTA_REDUCE_ARGMIN, flags, NULL, 0, false, &out), PORTA_ERR_DTYPE,
              "reduce.argmin: expected a numeric input, got bool");
    CHECK_ERR(porta_reduce(PORTA_REDUCE_SUM, NULL, NULL, 0, false, &out),
              PORTA_ERR_INVALID_ARGUMENT, "'x'");
    CHECK_ERR(porta_reduce(PORTA_REDUCE_SUM, x, NULL, 0, false, NULL), PORTA_ERR_INVALID_ARGUMENT,
              "reduce.sum: out must not be NULL");
    CHECK_ERR(porta_reduce(PORTA_REDUCE_SUM, x, NULL, 1, false, &out),
              PORTA_ERR_INVALID_ARGUMENT, "axes is NULL but axis_count is 1");
    CHECK_ERR(porta_reduce(PORTA_REDUCE_PROD, x, AXES(0), -1, false, &out),
              PORTA_ERR_INVALID_ARGUMENT, "axis_count must be 0..16, got -1");
    int many[PORTA_MAX_RANK + 1] = {0};
    CHECK_ERR(porta_reduce(PORTA_REDUCE_PROD, x, many, PORTA_MAX_RANK + 1, false, &out),
              PORTA_ERR_INVALID_ARGUMENT, "got 17");
    CHECK_ERR(porta_reduce((porta_reduce_op)PORTA_REDUCE_OP_COUNT, x, NULL, 0, false, &out),
              PORTA_ERR_INVALID_ARGUMENT, "reduce: invalid op 8");
    CHECK_ERR(porta_reduce((porta_reduce_op)-1, x, NULL, 0, false, &out),
              PORTA_ERR_INVALID_ARGUMENT, "invalid op");
    CHECK(out == NULL); /* errors leave out untouched */
    CHECK(strcmp(porta_reduce_op_name(PORTA_REDUCE_ARGMIN), "argmin") == 0);
    CHECK(strcmp(porta_reduce_op_name((porta_reduce_op)99), "invalid reduce op") == 0);
done:
    porta_tensor_release(x);
    porta_tensor_release(flags);
}

TEST(test_reduce_errors_graph) {
    porta_graph *g = NULL;
    CHECK_OK(porta_graph_create(&g));
    porta_node x, flags, y;
    CHECK_OK(porta_graph_input(g, PORTA_I32, 2, SHAPE(0, 4), &x));
    CHECK_OK(porta_graph_input(g, PORTA_BOOL, 1, SHAPE(4), &flags));
    CHECK_ERR(porta_graph_reduce(g, PORTA_REDUCE_MAX, x, AXES(-2), 1, false, &y),
              PORTA_ERR_SHAPE, "reduce.max: expected reduction axis 0 to have non-zero size");
    CHECK_ERR(porta_graph_reduce(g, PORTA_REDUCE_ARGMAX, flags, NULL, 0, false, &y),
              PORTA_ERR_DTYPE, "got bool");
    CHECK_ERR(porta_graph_reduce(g, PORTA_REDUCE_SUM, x, AXES(0, 0), 2, false, &y),
              PORTA_ERR_INVALID_ARGUMENT, "dim 0 appears multiple times");
    CHECK_OK(porta_graph_reduce(g, PORTA_REDUCE_SUM, x, AXES(0), 1, false, &y));
    porta_graph_free(g);
}

/* Raises the memory limit step by step from what is in use: every run must
 * either succeed or fail with OUT_OF_MEMORY, and leave nothing behind. The
 * inputs are big enough that the int64 copy, the output, the out= cast and
 * the per-thread partial results each need memory. */
static void sweep_memory_limit(porta_reduce_op op, const porta_tensor *x, const int *axes,
                               int axis_count, porta_tensor *given_out, const char *what) {
    bool succeeded = false;
    for (uint64_t extra = 0; !succeeded && extra < (1ull << 30); extra = extra * 2 + 64) {
        uint64_t before = porta_memory_allocated();
        porta_set_memory_limit(before + extra);
        porta_tensor *out = given_out;
        porta_status *status = porta_reduce(op, x, axes, axis_count, false, &out);
        porta_set_memory_limit(0);
        if (status) {
            CHECK_MSG(porta_status_code(status) == PORTA_ERR_OUT_OF_MEMORY,
                      "%s with %llu bytes to spare: %s", what, (unsigned long long)extra,
                      porta_status_message(status));
            CHECK(out == given_out);
            porta_status_free(status);
        } else {
            succeeded = true;
            if (!given_out) porta_tensor_release(out);
        }
        CHECK_MSG(porta_memory_allocated() == before, "%s leaked with %llu bytes to spare", what,
                  (unsigned long long)extra);
    }
    CHECK_MSG(succeeded, "%s never succeeded", what);
}

TEST(test_reduce_errors_out_of_memory) {
    test_rng rng = test_rng_make(11);
    porta_tensor *ints = reduce_random_tensor(&rng, PORTA_I32, 2, SHAPE(4, 100000), FILL_WIDE);
    porta_tensor *floats = reduce_random_tensor(&rng, PORTA_F32, 1, SHAPE(200000), FILL_WIDE);
    porta_tensor *given = NULL;
    if (!ints || !floats) goto done;
    for (int op = 0; op < PORTA_REDUCE_OP_COUNT; op++) {
        char what[64];
        snprintf(what, sizeof what, "%s of rows", porta_reduce_op_name((porta_reduce_op)op));
        sweep_memory_limit((porta_reduce_op)op, ints, AXES(1), 1, NULL, what);
        snprintf(what, sizeof what, "%s of everything", porta_reduce_op_name((porta_reduce_op)op));
        sweep_memory_limit((porta_reduce_op)op, floats, NULL, 0, NULL, what);
    }
    CHECK_OK(porta_tensor_empty(test_cpu(), PORTA_F64, 0, NULL, &given));
    sweep_memory_limit(PORTA_REDUCE_SUM, floats, AXES(0), 1, given, "sum cast into out=");
done:
    porta_tensor_release(ints);
    porta_tensor_release(floats);
    porta_tensor_release(given);
}
