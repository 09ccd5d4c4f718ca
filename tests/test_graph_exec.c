/* The executor's behaviour beyond results: intermediates released after
 * their last use, dead nodes never run, argument errors, and allocation
 * failure at every point of a run. */
#include <stdlib.h>
#include <string.h>

#include "test.h"

#define SHAPE(...) ((const int64_t[]){__VA_ARGS__})

enum { CHAIN = 16, CHAIN_ELEMENTS = 1 << 16 };

/* A chain of CHAIN negations: each intermediate is needed only by the next. */
TEST(test_graph_exec_releases_intermediates) {
    porta_graph *g;
    CHECK_OK(porta_graph_create(&g));
    porta_node x, n;
    CHECK_OK(porta_graph_input(g, PORTA_F32, 1, SHAPE(CHAIN_ELEMENTS), &x));
    n = x;
    for (int i = 0; i < CHAIN; i++) CHECK_OK(porta_graph_unary(g, PORTA_NEG, n, &n));
    CHECK_OK(porta_graph_output(g, n));
    test_rng rng = test_rng_make(21);
    porta_tensor *input = test_random_tensor(&rng, PORTA_F32, 1, SHAPE(CHAIN_ELEMENTS), -1, 1);
    porta_tensor *out = NULL;
    uint64_t before = porta_memory_allocated();
    porta_memory_reset_peak();
    CHECK_OK(porta_graph_run(g, test_cpu(), &input, 1, &out, 1));
    uint64_t tensor_bytes = CHAIN_ELEMENTS * sizeof(float);
    uint64_t growth = porta_memory_peak() - before;
    /* At most the node being computed, its input and some bookkeeping are
     * held at once, far below the CHAIN intermediates. */
    CHECK_MSG(growth < 3 * tensor_bytes, "peak grew by %llu bytes; one tensor is %llu",
              (unsigned long long)growth, (unsigned long long)tensor_bytes);
    CHECK(porta_memory_allocated() - before == tensor_bytes); /* just the output */
    double *got = test_to_doubles(out), *want = test_to_doubles(input);
    test_close("16 negations", got, want, CHAIN_ELEMENTS, 0, 0);
    free(got);
    free(want);
    porta_tensor_release(out);
    porta_tensor_release(input);
    porta_graph_free(g);
}

/* A large branch no output depends on would exceed the memory limit if it
 * ran, so the run succeeding shows it was skipped. */
TEST(test_graph_exec_skips_dead_nodes) {
    porta_graph *g;
    CHECK_OK(porta_graph_create(&g));
    porta_node x, big, dead, live;
    CHECK_OK(porta_graph_input(g, PORTA_F32, 1, SHAPE(4), &x));
    CHECK_OK(porta_graph_random(g, PORTA_F32, 2, SHAPE(1 << 22, 4), false, 1, 0, &big));
    CHECK_OK(porta_graph_binary(g, PORTA_ADD, big, x, &dead));
    CHECK_OK(porta_graph_unary(g, PORTA_EXP, dead, &dead));
    CHECK_OK(porta_graph_unary(g, PORTA_NEG, x, &live));
    CHECK_OK(porta_graph_output(g, live));
    const float values[] = {1, -2, 3, -4};
    porta_tensor *input;
    CHECK_OK(porta_tensor_from_host(test_cpu(), PORTA_F32, 1, SHAPE(4), values, &input));
    porta_tensor *out = NULL;
    porta_set_memory_limit(porta_memory_allocated() + (1 << 20));
    porta_status *status = porta_graph_run(g, test_cpu(), &input, 1, &out, 1);
    porta_set_memory_limit(0);
    CHECK_OK(status);
    float got[4];
    CHECK_OK(porta_tensor_to_host(out, got, sizeof got));
    CHECK(got[0] == -1 && got[1] == 2 && got[2] == -3 && got[3] == 4);
    porta_tensor_release(out);
    /* With the branch as an output too, the same limit is exceeded. */
    CHECK_OK(porta_graph_output(g, dead));
    porta_tensor *outs[2] = {NULL, NULL};
    porta_set_memory_limit(porta_memory_allocated() + (1 << 20));
    CHECK_ERR(porta_graph_run(g, test_cpu(), &input, 1, outs, 2), PORTA_ERR_OUT_OF_MEMORY,
              "graph.run: node 1 (random.uniform)");
    porta_set_memory_limit(0);
    CHECK(outs[0] == NULL && outs[1] == NULL);
    porta_tensor_release(input);
    porta_graph_free(g);
}

TEST(test_graph_exec_argument_errors) {
    porta_graph *g;
    CHECK_OK(porta_graph_create(&g));
    porta_node a, b, s;
    CHECK_OK(porta_graph_input(g, PORTA_F32, 2, SHAPE(2, 3), &a));
    CHECK_OK(porta_graph_input(g, PORTA_I64, 1, SHAPE(3), &b));
    CHECK_OK(porta_graph_binary(g, PORTA_ADD, a, b, &s));
    test_rng rng = test_rng_make(22);
    porta_tensor *at = test_random_tensor(&rng, PORTA_F32, 2, SHAPE(2, 3), -1, 1);
    porta_tensor *bt = test_random_tensor(&rng, PORTA_I64, 1, SHAPE(3), -1, 1);
    porta_tensor *wrong_dtype = test_random_tensor(&rng, PORTA_F64, 1, SHAPE(3), -1, 1);
    porta_tensor *wrong_shape = test_random_tensor(&rng, PORTA_F32, 2, SHAPE(3, 2), -1, 1);
    porta_tensor *out[2] = {NULL, NULL};
    porta_device *cpu = test_cpu();

    CHECK_ERR(porta_graph_run(g, cpu, (porta_tensor *[]){at, bt}, 2, out, 0),
              PORTA_ERR_INVALID_ARGUMENT, "graph: no outputs");
    CHECK_OK(porta_graph_output(g, s));
    CHECK_ERR(porta_graph_run(g, cpu, (porta_tensor *[]){at}, 1, out, 1),
              PORTA_ERR_INVALID_ARGUMENT,
              "graph.run: the graph has 2 inputs, but 1 tensors were given");
    CHECK_ERR(porta_graph_run(g, cpu, NULL, 2, out, 1), PORTA_ERR_INVALID_ARGUMENT,
              "graph.run: inputs is NULL");
    CHECK_ERR(porta_graph_run(g, cpu, (porta_tensor *[]){at, bt}, 2, out, 2),
              PORTA_ERR_INVALID_ARGUMENT,
              "graph.run: the graph has 1 outputs, but room for 2 was given");
    CHECK_ERR(porta_graph_run(g, cpu, (porta_tensor *[]){at, bt}, 2, NULL, 1),
              PORTA_ERR_INVALID_ARGUMENT, "graph.run: outputs is NULL");
    CHECK_ERR(porta_graph_run(g, cpu, (porta_tensor *[]){at, NULL}, 2, out, 1),
              PORTA_ERR_INVALID_ARGUMENT, "graph.run: input 1 is NULL");
    CHECK_ERR(porta_graph_run(g, cpu, (porta_tensor *[]){at, wrong_dtype}, 2, out, 1),
              PORTA_ERR_DTYPE, "graph.run: input 1 has dtype float64, expected int64");
    CHECK_ERR(porta_graph_run(g, cpu, (porta_tensor *[]){wrong_shape, bt}, 2, out, 1),
              PORTA_ERR_SHAPE, "graph.run: input 0 has shape [3, 2], expected [2, 3]");
    CHECK_ERR(porta_graph_run(NULL, cpu, (porta_tensor *[]){at, bt}, 2, out, 1),
              PORTA_ERR_INVALID_ARGUMENT, "graph.run: graph is NULL");
    CHECK_ERR(porta_graph_run(g, NULL, (porta_tensor *[]){at, bt}, 2, out, 1),
              PORTA_ERR_INVALID_ARGUMENT, "graph.run: device is NULL");
    CHECK(out[0] == NULL && out[1] == NULL);
    CHECK_OK(porta_graph_run(g, cpu, (porta_tensor *[]){at, bt}, 2, out, 1));
    CHECK(porta_tensor_dtype(out[0]) == PORTA_F32);
    porta_tensor_release(out[0]);
    porta_tensor *held[] = {at, bt, wrong_dtype, wrong_shape};
    for (int i = 0; i < 4; i++) porta_tensor_release(held[i]);
    porta_graph_free(g);
}

/* Runs a graph under every memory limit from "nothing more" up to enough:
 * each run either succeeds or fails with out-of-memory, leaving nothing
 * allocated and the outputs untouched. */
TEST(test_graph_exec_out_of_memory_anywhere) {
    porta_graph *g;
    CHECK_OK(porta_graph_create(&g));
    porta_node x, w, m, d, e, s, y, h, r;
    CHECK_OK(porta_graph_input(g, PORTA_F32, 2, SHAPE(32, 48), &x));
    CHECK_OK(porta_graph_input(g, PORTA_F32, 2, SHAPE(48, 16), &w));
    CHECK_OK(porta_graph_reduce(g, PORTA_REDUCE_MAX, x, (const int[]){1}, 1, true, &m));
    CHECK_OK(porta_graph_binary(g, PORTA_SUB, x, m, &d));
    CHECK_OK(porta_graph_unary(g, PORTA_EXP, d, &e));
    CHECK_OK(porta_graph_reduce(g, PORTA_REDUCE_SUM, e, (const int[]){1}, 1, true, &s));
    CHECK_OK(porta_graph_binary(g, PORTA_DIV, e, s, &y));
    CHECK_OK(porta_graph_matmul(g, y, w, &h));
    CHECK_OK(porta_graph_cast(g, h, PORTA_F64, &r));
    CHECK_OK(porta_graph_output(g, r));
    CHECK_OK(porta_graph_output(g, y));
    test_rng rng = test_rng_make(23);
    porta_tensor *inputs[2] = {test_random_tensor(&rng, PORTA_F32, 2, SHAPE(32, 48), -1, 1),
                               test_random_tensor(&rng, PORTA_F32, 2, SHAPE(48, 16), -1, 1)};
    uint64_t base = porta_memory_allocated();
    int failures = 0;
    bool succeeded = false;
    for (uint64_t extra = 0; !succeeded && extra < (1u << 22); extra += 1024) {
        porta_tensor *sentinel = (porta_tensor *)&failures;
        porta_tensor *out[2] = {sentinel, sentinel};
        porta_set_memory_limit(base + extra);
        porta_status *status = porta_graph_run(g, test_cpu(), inputs, 2, out, 2);
        porta_set_memory_limit(0);
        if (!status) {
            succeeded = true;
            porta_tensor_release(out[0]);
            porta_tensor_release(out[1]);
            break;
        }
        failures++;
        CHECK_MSG(porta_status_code(status) == PORTA_ERR_OUT_OF_MEMORY,
                  "limit +%llu: %s", (unsigned long long)extra, porta_status_message(status));
        porta_status_free(status);
        CHECK(out[0] == sentinel && out[1] == sentinel);
        CHECK_MSG(porta_memory_allocated() == base, "limit +%llu leaked %lld bytes",
                  (unsigned long long)extra, (long long)(porta_memory_allocated() - base));
    }
    CHECK(succeeded);
    CHECK_MSG(failures > 5, "only %d limits failed; the sweep missed most nodes", failures);
    porta_tensor_release(inputs[0]);
    porta_tensor_release(inputs[1]);
    porta_graph_free(g);
}
