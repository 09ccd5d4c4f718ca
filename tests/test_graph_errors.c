/* Graph building errors: bad node ids and arguments, shape and dtype errors
 * reported with the node's context, and allocation failure. A failed build
 * must leave the graph as it was. */
#include <string.h>

#include "test.h"

#define SHAPE(...) ((const int64_t[]){__VA_ARGS__})

TEST(test_graph_error_bad_node_ids) {
    porta_graph *g;
    CHECK_OK(porta_graph_create(&g));
    porta_node x, n = 77;
    CHECK_OK(porta_graph_input(g, PORTA_F32, 1, SHAPE(4), &x));
    for (int i = 0; i < 4; i++) CHECK_OK(porta_graph_unary(g, PORTA_NEG + i, x, &n));
    CHECK(porta_graph_node_count(g) == 5);
    n = 77;
    CHECK_ERR(porta_graph_unary(g, PORTA_EXP, 12, &n), PORTA_ERR_INVALID_ARGUMENT,
              "unary.exp: node 12 does not exist (graph has 5 nodes)");
    CHECK_ERR(porta_graph_binary(g, PORTA_ADD, x, -1, &n), PORTA_ERR_INVALID_ARGUMENT,
              "node -1 does not exist");
    CHECK_ERR(porta_graph_binary(g, PORTA_ADD, 5, x, &n), PORTA_ERR_INVALID_ARGUMENT,
              "node 5 does not exist (graph has 5 nodes)");
    CHECK_ERR(porta_graph_ternary(g, PORTA_WHERE, x, x, 9, &n), PORTA_ERR_INVALID_ARGUMENT,
              "node 9 does not exist");
    CHECK_ERR(porta_graph_permute(g, 6, (const int[]){0}, &n), PORTA_ERR_INVALID_ARGUMENT,
              "permute: node 6 does not exist");
    CHECK_ERR(porta_graph_pad(g, 6, SHAPE(0, 0), 0.0, &n), PORTA_ERR_INVALID_ARGUMENT,
              "pad: node 6 does not exist");
    CHECK_ERR(porta_graph_conv(g, x, x, 40, &(porta_conv_params){.groups = 1}, &n),
              PORTA_ERR_INVALID_ARGUMENT, "conv: node 40 does not exist");
    CHECK_ERR(porta_graph_output(g, 5), PORTA_ERR_INVALID_ARGUMENT,
              "graph.output: node 5 does not exist (graph has 5 nodes)");
    CHECK_ERR(porta_graph_node_type(g, -3, NULL, NULL, NULL), PORTA_ERR_INVALID_ARGUMENT,
              "node -3 does not exist");
    CHECK(n == 77);
    CHECK(porta_graph_node_count(g) == 5);
    porta_graph_free(g);
}

TEST(test_graph_error_null_arguments) {
    porta_graph *g;
    CHECK_OK(porta_graph_create(&g));
    porta_node x;
    CHECK_OK(porta_graph_input(g, PORTA_F32, 2, SHAPE(2, 2), &x));
    CHECK_ERR(porta_graph_unary(NULL, PORTA_EXP, 0, &x), PORTA_ERR_INVALID_ARGUMENT,
              "unary.exp: graph is NULL");
    CHECK_ERR(porta_graph_binary(g, PORTA_ADD, x, x, NULL), PORTA_ERR_INVALID_ARGUMENT,
              "binary.add: out is NULL");
    CHECK_ERR(porta_graph_input(g, PORTA_F32, 2, NULL, &x), PORTA_ERR_INVALID_ARGUMENT,
              "input: sizes is NULL, but rank is 2");
    CHECK_ERR(porta_graph_reduce(g, PORTA_REDUCE_SUM, x, NULL, 1, false, &x),
              PORTA_ERR_INVALID_ARGUMENT, "reduce.sum: axes is NULL, but axis_count is 1");
    CHECK_ERR(porta_graph_permute(g, x, NULL, &x), PORTA_ERR_INVALID_ARGUMENT,
              "permute: dims is NULL, but the rank of x is 2");
    CHECK_ERR(porta_graph_pad(g, x, NULL, 0.0, &x), PORTA_ERR_INVALID_ARGUMENT,
              "pad: pads is NULL, but the rank of x is 2");
    CHECK_ERR(porta_graph_conv(g, x, x, -1, NULL, &x), PORTA_ERR_INVALID_ARGUMENT,
              "conv: params is NULL");
    CHECK_ERR(porta_graph_output(NULL, 0), PORTA_ERR_INVALID_ARGUMENT, "graph is NULL");
    CHECK_ERR(porta_graph_node_type(NULL, 0, NULL, NULL, NULL), PORTA_ERR_INVALID_ARGUMENT,
              "graph is NULL");
    CHECK_ERR(porta_graph_verify(NULL), PORTA_ERR_INVALID_ARGUMENT, "graph is NULL");
    CHECK(x == 0);
    porta_graph_free(g);
}

TEST(test_graph_error_bad_leaves) {
    porta_graph *g;
    CHECK_OK(porta_graph_create(&g));
    porta_node n = 5;
    CHECK_ERR(porta_graph_input(g, (porta_dtype)42, 1, SHAPE(2), &n), PORTA_ERR_INVALID_ARGUMENT,
              "input: 42 is not a dtype");
    CHECK_ERR(porta_graph_input(g, PORTA_F32, PORTA_MAX_RANK + 1, SHAPE(1), &n),
              PORTA_ERR_INVALID_ARGUMENT, "input: rank must be 0..16, got 17");
    CHECK_ERR(porta_graph_input(g, PORTA_F32, -1, NULL, &n), PORTA_ERR_INVALID_ARGUMENT,
              "rank must be 0..16, got -1");
    CHECK_ERR(porta_graph_input(g, PORTA_F32, 2, SHAPE(3, -2), &n), PORTA_ERR_SHAPE,
              "size -2 of axis 1 in shape [3, -2] is negative");
    CHECK_ERR(porta_graph_input(g, PORTA_F32, 3, SHAPE(1LL << 40, 1LL << 40, 1LL << 40), &n),
              PORTA_ERR_SHAPE, "more elements than fit in int64");
    CHECK_ERR(porta_graph_constant(g, (porta_dtype)-1, 1.0, &n), PORTA_ERR_INVALID_ARGUMENT,
              "constant: -1 is not a dtype");
    CHECK_ERR(porta_graph_random(g, PORTA_I32, 1, SHAPE(3), false, 0, 0, &n), PORTA_ERR_DTYPE,
              "random.uniform");
    CHECK_ERR(porta_graph_random(g, PORTA_F32, 17, SHAPE(3), true, 0, 0, &n),
              PORTA_ERR_INVALID_ARGUMENT, "random.normal: rank must be 0..16");
    CHECK(n == 5);
    CHECK(porta_graph_node_count(g) == 0);
    porta_graph_free(g);
}

/* Inference errors keep their code and message, prefixed with the node being
 * built and its inputs. */
TEST(test_graph_error_inference_context) {
    porta_graph *g;
    CHECK_OK(porta_graph_create(&g));
    porta_node a, b, f, i, n = 9;
    CHECK_OK(porta_graph_input(g, PORTA_F32, 2, SHAPE(2, 3), &a));
    CHECK_OK(porta_graph_input(g, PORTA_F32, 2, SHAPE(4, 3), &b));
    CHECK_OK(porta_graph_input(g, PORTA_F64, 1, SHAPE(3), &f));
    CHECK_OK(porta_graph_input(g, PORTA_I32, 1, SHAPE(3), &i));
    CHECK_ERR(porta_graph_binary(g, PORTA_ADD, a, b, &n), PORTA_ERR_SHAPE,
              "graph: building node 4 from nodes 0, 1: binary.add: shapes [2, 3] and [4, 3] "
              "cannot be broadcast");
    CHECK_ERR(porta_graph_binary(g, PORTA_BITWISE_AND, f, i, &n), PORTA_ERR_DTYPE,
              "graph: building node 4 from nodes 2, 3: binary.bitwise_and");
    CHECK_ERR(porta_graph_reduce(g, PORTA_REDUCE_SUM, a, (const int[]){3}, 1, false, &n),
              PORTA_ERR_OUT_OF_RANGE,
              "graph: building node 4 from node 0: reduce.sum: axis 3 is out of range for a "
              "rank-2 tensor (expected -2..1)");
    CHECK_ERR(porta_graph_reduce(g, PORTA_REDUCE_SUM, a, (const int[]){0}, 17, false, &n),
              PORTA_ERR_INVALID_ARGUMENT, "reduce.sum: axis_count must be 0..16, got 17");
    CHECK_ERR(porta_graph_matmul(g, a, b, &n), PORTA_ERR_SHAPE, "from nodes 0, 1: matmul");
    CHECK_ERR(porta_graph_reshape(g, a, 2, SHAPE(5, -1), &n), PORTA_ERR_SHAPE,
              "from node 0: reshape:");
    CHECK_ERR(porta_graph_reshape(g, a, 20, SHAPE(5, -1), &n), PORTA_ERR_INVALID_ARGUMENT,
              "reshape: rank must be 0..16, got 20");
    CHECK_ERR(porta_graph_slice(g, a, 0, 0, 2, 0, &n), PORTA_ERR_INVALID_ARGUMENT, "slice");
    CHECK_ERR(porta_graph_gather(g, a, 1, f, &n), PORTA_ERR_DTYPE, "from nodes 0, 2: gather");
    CHECK_ERR(porta_graph_unary(g, (porta_unary_op)999, a, &n), PORTA_ERR_INVALID_ARGUMENT,
              "from node 0: unary: op 999 is out of range");
    CHECK(n == 9);
    CHECK(porta_graph_node_count(g) == 4);
    porta_graph_free(g);
}

TEST(test_graph_node_type_and_outputs) {
    porta_graph *g;
    CHECK_OK(porta_graph_create(&g));
    porta_node x, y;
    CHECK_OK(porta_graph_input(g, PORTA_I16, 3, SHAPE(1, 0, 5), &x));
    CHECK_OK(porta_graph_unary(g, PORTA_ABS, x, &y));
    int rank = 0;
    int64_t sizes[PORTA_MAX_RANK] = {0};
    CHECK_OK(porta_graph_node_type(g, y, NULL, &rank, sizes)); /* any out may be NULL */
    CHECK(rank == 3 && sizes[0] == 1 && sizes[1] == 0 && sizes[2] == 5);
    porta_dtype dtype;
    CHECK_OK(porta_graph_node_type(g, y, &dtype, NULL, NULL));
    CHECK(dtype == PORTA_I16);
    /* The same node may be an output several times; many outputs grow the list. */
    for (int i = 0; i < 20; i++) CHECK_OK(porta_graph_output(g, i % 2 ? x : y));
    CHECK(g != NULL && porta_graph_node_count(g) == 2);
    CHECK_OK(porta_graph_verify(g));
    porta_graph_free(g);
}

/* Growing the node array, the hash table or the output list fails cleanly
 * under the memory limit and leaves the graph usable. */
TEST(test_graph_error_out_of_memory) {
    porta_graph *g;
    porta_set_memory_limit(1);
    CHECK_ERR(porta_graph_create(&g), PORTA_ERR_OUT_OF_MEMORY, "graph");
    porta_set_memory_limit(0);
    CHECK_OK(porta_graph_create(&g));
    porta_node x, n;
    porta_set_memory_limit(porta_memory_allocated());
    CHECK_ERR(porta_graph_input(g, PORTA_F32, 1, SHAPE(4), &x), PORTA_ERR_OUT_OF_MEMORY,
              "graph nodes");
    porta_set_memory_limit(0);
    CHECK(porta_graph_node_count(g) == 0);
    CHECK_OK(porta_graph_input(g, PORTA_F32, 1, SHAPE(4), &x));
    int built = 1;
    porta_set_memory_limit(porta_memory_allocated());
    porta_status *status = NULL;
    while (!status && built < 10000) {
        status = porta_graph_constant(g, PORTA_F32, (double)built, &n);
        if (!status) built++;
    }
    CHECK_ERR(status, PORTA_ERR_OUT_OF_MEMORY, "graph");
    CHECK(porta_graph_node_count(g) == built);
    CHECK_ERR(porta_graph_output(g, x), PORTA_ERR_OUT_OF_MEMORY, "graph outputs");
    porta_set_memory_limit(0);
    /* Every node is still found, and building goes on. */
    porta_node again;
    CHECK_OK(porta_graph_constant(g, PORTA_F32, (double)(built - 1), &again));
    CHECK(again == built - 1);
    CHECK_OK(porta_graph_constant(g, PORTA_F32, (double)built, &again));
    CHECK(again == built);
    CHECK_OK(porta_graph_output(g, again));
    CHECK_OK(porta_graph_verify(g));
    porta_graph_free(g);
}
