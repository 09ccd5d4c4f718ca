/* Graph building: hash-consing, each builder's inferred types, and the errors
 * builders report. */
#include <stdlib.h>
#include <string.h>

#include "test.h"

/* Checks a node's inferred dtype and shape. */
static void expect_type(const char *file, int line, const porta_graph *graph, porta_node node,
                        porta_dtype dtype, int rank, const int64_t *sizes) {
    porta_dtype got_dtype = PORTA_DTYPE_COUNT;
    int got_rank = -1;
    int64_t got_sizes[PORTA_MAX_RANK] = {0};
    porta_status *status = porta_graph_node_type(graph, node, &got_dtype, &got_rank, got_sizes);
    if (status) {
        test_fail(file, line, "node_type(%d): %s", (int)node, porta_status_message(status));
        porta_status_free(status);
        return;
    }
    if (got_dtype != dtype)
        test_fail(file, line, "node %d has dtype %s, expected %s", (int)node,
                  porta_dtype_name(got_dtype), porta_dtype_name(dtype));
    if (got_rank != rank || (rank && memcmp(got_sizes, sizes, (size_t)rank * sizeof *sizes)))
        test_fail(file, line, "node %d has rank %d [%lld, ...], expected rank %d [%lld, ...]",
                  (int)node, got_rank, (long long)got_sizes[0], rank,
                  (long long)(rank ? sizes[0] : 0));
}
#define SHAPE(...) ((const int64_t[]){__VA_ARGS__})
#define CHECK_TYPE(graph, node, dtype, rank, sizes) \
    expect_type(__FILE__, __LINE__, graph, node, dtype, rank, sizes)

TEST(test_graph_create_and_free) {
    porta_graph *graph = NULL;
    CHECK_OK(porta_graph_create(&graph));
    CHECK(porta_graph_node_count(graph) == 0);
    CHECK(porta_graph_node_count(NULL) == 0);
    porta_graph_free(graph);
    porta_graph_free(NULL);
    CHECK_ERR(porta_graph_create(NULL), PORTA_ERR_INVALID_ARGUMENT, "out is NULL");
}

TEST(test_graph_hash_consing_merges_equal_nodes) {
    porta_graph *g;
    CHECK_OK(porta_graph_create(&g));
    porta_node a, b, a2, sum1, sum2, sum_ba, diff_ab, diff_ba;
    CHECK_OK(porta_graph_input(g, PORTA_F32, 2, SHAPE(2, 3), &a));
    CHECK_OK(porta_graph_input(g, PORTA_F32, 2, SHAPE(2, 3), &b));
    CHECK_OK(porta_graph_input(g, PORTA_F32, 2, SHAPE(2, 3), &a2));
    CHECK(a != b && b != a2 && a != a2); /* inputs are never merged */
    CHECK_OK(porta_graph_binary(g, PORTA_ADD, a, b, &sum1));
    CHECK_OK(porta_graph_binary(g, PORTA_ADD, a, b, &sum2));
    CHECK(sum1 == sum2);
    /* add is commutative, so operand order is canonicalized; sub is not. */
    CHECK_OK(porta_graph_binary(g, PORTA_ADD, b, a, &sum_ba));
    CHECK(sum_ba == sum1);
    CHECK_OK(porta_graph_binary(g, PORTA_SUB, a, b, &diff_ab));
    CHECK_OK(porta_graph_binary(g, PORTA_SUB, b, a, &diff_ba));
    CHECK(diff_ab != diff_ba);
    /* Different ops on the same inputs stay apart. */
    porta_node prod, eq_ab, eq_ba, lt_ab, lt_ba;
    CHECK_OK(porta_graph_binary(g, PORTA_MUL, b, a, &prod));
    CHECK(prod != sum1);
    CHECK_OK(porta_graph_binary(g, PORTA_EQ, a, b, &eq_ab));
    CHECK_OK(porta_graph_binary(g, PORTA_EQ, b, a, &eq_ba));
    CHECK(eq_ab == eq_ba);
    CHECK_OK(porta_graph_binary(g, PORTA_LT, a, b, &lt_ab));
    CHECK_OK(porta_graph_binary(g, PORTA_LT, b, a, &lt_ba));
    CHECK(lt_ab != lt_ba);
    /* A whole expression built twice is one set of nodes. */
    int before = porta_graph_node_count(g);
    porta_node e1, e2, t;
    CHECK_OK(porta_graph_unary(g, PORTA_EXP, sum1, &t));
    CHECK_OK(porta_graph_binary(g, PORTA_MUL, t, diff_ab, &e1));
    int after_first = porta_graph_node_count(g);
    CHECK(after_first == before + 2);
    CHECK_OK(porta_graph_binary(g, PORTA_ADD, b, a, &t));
    CHECK_OK(porta_graph_unary(g, PORTA_EXP, t, &t));
    CHECK_OK(porta_graph_binary(g, PORTA_MUL, diff_ab, t, &e2));
    CHECK(e1 == e2);
    CHECK(porta_graph_node_count(g) == after_first);
    porta_graph_free(g);
}

TEST(test_graph_hash_consing_leaves) {
    porta_graph *g;
    CHECK_OK(porta_graph_create(&g));
    porta_node c1, c2, c3, c4, c5;
    CHECK_OK(porta_graph_constant(g, PORTA_F32, 2.5, &c1));
    CHECK_OK(porta_graph_constant(g, PORTA_F32, 2.5, &c2));
    CHECK_OK(porta_graph_constant(g, PORTA_F64, 2.5, &c3));
    CHECK_OK(porta_graph_constant(g, PORTA_F32, -2.5, &c4));
    CHECK_OK(porta_graph_constant(g, PORTA_F32, NAN, &c5));
    CHECK(c1 == c2 && c1 != c3 && c1 != c4 && c5 != c1);
    CHECK_TYPE(g, c1, PORTA_F32, 0, NULL);
    CHECK_TYPE(g, c3, PORTA_F64, 0, NULL);
    porta_node r1, r2, r3, r4, r5;
    CHECK_OK(porta_graph_random(g, PORTA_F32, 1, SHAPE(8), false, 7, 0, &r1));
    CHECK_OK(porta_graph_random(g, PORTA_F32, 1, SHAPE(8), false, 7, 0, &r2));
    CHECK_OK(porta_graph_random(g, PORTA_F32, 1, SHAPE(8), false, 8, 0, &r3));
    CHECK_OK(porta_graph_random(g, PORTA_F32, 1, SHAPE(8), false, 7, 8, &r4));
    CHECK_OK(porta_graph_random(g, PORTA_F32, 1, SHAPE(8), true, 7, 0, &r5));
    CHECK(r1 == r2 && r3 != r1 && r4 != r1 && r5 != r1);
    CHECK_TYPE(g, r5, PORTA_F32, 1, SHAPE(8));
    porta_graph_free(g);
}

/* Inference normalizes requests, so equal requests spelled differently
 * (negative axes, -1 sizes) become the same node. */
TEST(test_graph_hash_consing_after_normalization) {
    porta_graph *g;
    CHECK_OK(porta_graph_create(&g));
    porta_node x, s1, s2, r1, r2, p1, p2;
    CHECK_OK(porta_graph_input(g, PORTA_F32, 3, SHAPE(2, 3, 4), &x));
    CHECK_OK(porta_graph_reduce(g, PORTA_REDUCE_SUM, x, (const int[]){-1}, 1, false, &s1));
    CHECK_OK(porta_graph_reduce(g, PORTA_REDUCE_SUM, x, (const int[]){2}, 1, false, &s2));
    CHECK(s1 == s2);
    CHECK_OK(porta_graph_reshape(g, x, 2, SHAPE(6, -1), &r1));
    CHECK_OK(porta_graph_reshape(g, x, 2, SHAPE(6, 4), &r2));
    CHECK(r1 == r2);
    CHECK_OK(porta_graph_permute(g, x, (const int[]){-1, 0, 1}, &p1));
    CHECK_OK(porta_graph_permute(g, x, (const int[]){2, 0, 1}, &p2));
    CHECK(p1 == p2);
    CHECK_TYPE(g, p1, PORTA_F32, 3, SHAPE(4, 2, 3));
    porta_graph_free(g);
}

/* Enough nodes to grow the node array and the hash table several times;
 * rebuilding them afterwards must find every one. */
TEST(test_graph_hash_consing_many_nodes) {
    porta_graph *g;
    CHECK_OK(porta_graph_create(&g));
    enum { COUNT = 3000 };
    porta_node *ids = malloc(COUNT * sizeof *ids);
    porta_node x;
    CHECK_OK(porta_graph_input(g, PORTA_F64, 1, SHAPE(5), &x));
    for (int i = 0; i < COUNT; i++) {
        porta_node c;
        porta_status *status = porta_graph_constant(g, PORTA_F64, (double)(i / 2), &c);
        if (!status) status = porta_graph_binary(g, i % 2 ? PORTA_MUL : PORTA_ADD, x, c, &ids[i]);
        CHECK_MSG(!status, "node %d: %s", i, porta_status_message(status));
        porta_status_free(status);
    }
    CHECK(porta_graph_node_count(g) == 1 + COUNT / 2 + COUNT);
    for (int i = COUNT - 1; i >= 0; i--) {
        porta_node c, again = -1;
        porta_status *status = porta_graph_constant(g, PORTA_F64, (double)(i / 2), &c);
        if (!status) status = porta_graph_binary(g, i % 2 ? PORTA_MUL : PORTA_ADD, c, x, &again);
        CHECK_MSG(!status && again == ids[i], "node %d rebuilt as %d, first built as %d", i,
                  (int)again, (int)ids[i]);
        porta_status_free(status);
    }
    CHECK(porta_graph_node_count(g) == 1 + COUNT / 2 + COUNT);
    free(ids);
    porta_graph_free(g);
}

TEST(test_graph_builder_types_elementwise) {
    porta_graph *g;
    CHECK_OK(porta_graph_create(&g));
    porta_node x, row, i32, flag, c64, n;
    CHECK_OK(porta_graph_input(g, PORTA_F32, 2, SHAPE(2, 3), &x));
    CHECK_OK(porta_graph_input(g, PORTA_F32, 1, SHAPE(3), &row));
    CHECK_OK(porta_graph_input(g, PORTA_I32, 2, SHAPE(2, 1), &i32));
    CHECK_OK(porta_graph_input(g, PORTA_BOOL, 1, SHAPE(3), &flag));
    CHECK_OK(porta_graph_constant(g, PORTA_F64, 0.5, &c64));
    CHECK_TYPE(g, x, PORTA_F32, 2, SHAPE(2, 3));

    CHECK_OK(porta_graph_unary(g, PORTA_EXP, x, &n));
    CHECK_TYPE(g, n, PORTA_F32, 2, SHAPE(2, 3));
    CHECK_OK(porta_graph_unary(g, PORTA_EXP, i32, &n)); /* integers promote to float */
    CHECK_TYPE(g, n, PORTA_F32, 2, SHAPE(2, 1));
    CHECK_OK(porta_graph_unary(g, PORTA_NEG, i32, &n));
    CHECK_TYPE(g, n, PORTA_I32, 2, SHAPE(2, 1));
    CHECK_OK(porta_graph_unary(g, PORTA_ISNAN, x, &n));
    CHECK_TYPE(g, n, PORTA_BOOL, 2, SHAPE(2, 3));

    CHECK_OK(porta_graph_binary(g, PORTA_ADD, x, row, &n));
    CHECK_TYPE(g, n, PORTA_F32, 2, SHAPE(2, 3));
    CHECK_OK(porta_graph_binary(g, PORTA_MUL, i32, row, &n));
    CHECK_TYPE(g, n, PORTA_F32, 2, SHAPE(2, 3));
    CHECK_OK(porta_graph_binary(g, PORTA_DIV, i32, i32, &n));
    CHECK_TYPE(g, n, PORTA_F32, 2, SHAPE(2, 1));
    CHECK_OK(porta_graph_binary(g, PORTA_LT, x, i32, &n));
    CHECK_TYPE(g, n, PORTA_BOOL, 2, SHAPE(2, 3));
    /* A constant acts as a zero-dim tensor: it raises the category (int ->
     * float takes its dtype) but never widens a float tensor. */
    CHECK_OK(porta_graph_binary(g, PORTA_MUL, x, c64, &n));
    CHECK_TYPE(g, n, PORTA_F32, 2, SHAPE(2, 3));
    CHECK_OK(porta_graph_binary(g, PORTA_ADD, i32, c64, &n));
    CHECK_TYPE(g, n, PORTA_F64, 2, SHAPE(2, 1));
    CHECK_OK(porta_graph_binary(g, PORTA_ADD, c64, c64, &n));
    CHECK_TYPE(g, n, PORTA_F64, 0, NULL);

    CHECK_OK(porta_graph_ternary(g, PORTA_WHERE, flag, x, c64, &n));
    CHECK_TYPE(g, n, PORTA_F32, 2, SHAPE(2, 3));
    CHECK_OK(porta_graph_ternary(g, PORTA_FMA, x, row, i32, &n));
    CHECK_TYPE(g, n, PORTA_F32, 2, SHAPE(2, 3));
    CHECK_OK(porta_graph_cast(g, x, PORTA_BF16, &n));
    CHECK_TYPE(g, n, PORTA_BF16, 2, SHAPE(2, 3));
    porta_graph_free(g);
}

TEST(test_graph_builder_types_reduce_and_movement) {
    porta_graph *g;
    CHECK_OK(porta_graph_create(&g));
    porta_node x, i32, n;
    CHECK_OK(porta_graph_input(g, PORTA_F32, 3, SHAPE(2, 3, 4), &x));
    CHECK_OK(porta_graph_input(g, PORTA_I32, 2, SHAPE(5, 6), &i32));

    CHECK_OK(porta_graph_reduce(g, PORTA_REDUCE_SUM, x, (const int[]){1}, 1, true, &n));
    CHECK_TYPE(g, n, PORTA_F32, 3, SHAPE(2, 1, 4));
    CHECK_OK(porta_graph_reduce(g, PORTA_REDUCE_MAX, x, (const int[]){0, -1}, 2, false, &n));
    CHECK_TYPE(g, n, PORTA_F32, 1, SHAPE(3));
    CHECK_OK(porta_graph_reduce(g, PORTA_REDUCE_SUM, x, NULL, 0, false, &n));
    CHECK_TYPE(g, n, PORTA_F32, 0, NULL);
    CHECK_OK(porta_graph_reduce(g, PORTA_REDUCE_SUM, i32, (const int[]){0}, 1, false, &n));
    CHECK_TYPE(g, n, PORTA_I64, 1, SHAPE(6));
    CHECK_OK(porta_graph_reduce(g, PORTA_REDUCE_ARGMAX, x, (const int[]){2}, 1, false, &n));
    CHECK_TYPE(g, n, PORTA_I64, 2, SHAPE(2, 3));
    CHECK_OK(porta_graph_reduce(g, PORTA_REDUCE_ANY, i32, NULL, 0, true, &n));
    CHECK_TYPE(g, n, PORTA_BOOL, 2, SHAPE(1, 1));

    CHECK_OK(porta_graph_reshape(g, x, 2, SHAPE(-1, 12), &n));
    CHECK_TYPE(g, n, PORTA_F32, 2, SHAPE(2, 12));
    CHECK_OK(porta_graph_permute(g, x, (const int[]){2, 0, 1}, &n));
    CHECK_TYPE(g, n, PORTA_F32, 3, SHAPE(4, 2, 3));
    porta_node one;
    CHECK_OK(porta_graph_reshape(g, i32, 3, SHAPE(5, 1, 6), &one));
    CHECK_OK(porta_graph_expand(g, one, 4, SHAPE(2, 5, 7, -1), &n));
    CHECK_TYPE(g, n, PORTA_I32, 4, SHAPE(2, 5, 7, 6));
    CHECK_OK(porta_graph_slice(g, x, 2, 0, 4, 2, &n));
    CHECK_TYPE(g, n, PORTA_F32, 3, SHAPE(2, 3, 2));
    CHECK_OK(porta_graph_slice(g, x, -2, -1, -100, -1, &n)); /* x[:, ::-1] */
    CHECK_TYPE(g, n, PORTA_F32, 3, SHAPE(2, 3, 4));
    CHECK_OK(porta_graph_slice(g, x, 0, 5, 9, 1, &n)); /* clamped to empty */
    CHECK_TYPE(g, n, PORTA_F32, 3, SHAPE(0, 3, 4));
    CHECK_OK(porta_graph_flip(g, x, (const int[]){0, 2}, 2, &n));
    CHECK_TYPE(g, n, PORTA_F32, 3, SHAPE(2, 3, 4));
    CHECK_OK(porta_graph_pad(g, i32, SHAPE(1, 2, -1, 0), 0.0, &n));
    CHECK_TYPE(g, n, PORTA_I32, 2, SHAPE(8, 5));
    porta_graph_free(g);
}

TEST(test_graph_builder_types_index_linalg_random) {
    porta_graph *g;
    CHECK_OK(porta_graph_create(&g));
    porta_node x, index, rows, src, w, img, kernel, bias, n;
    CHECK_OK(porta_graph_input(g, PORTA_F32, 2, SHAPE(3, 4), &x));
    CHECK_OK(porta_graph_input(g, PORTA_I64, 2, SHAPE(3, 2), &index));
    CHECK_OK(porta_graph_input(g, PORTA_I64, 1, SHAPE(5), &rows));
    CHECK_OK(porta_graph_input(g, PORTA_F32, 2, SHAPE(3, 2), &src));
    CHECK_OK(porta_graph_input(g, PORTA_F32, 3, SHAPE(7, 4, 6), &w));
    CHECK_OK(porta_graph_input(g, PORTA_F64, 4, SHAPE(2, 3, 9, 8), &img));
    CHECK_OK(porta_graph_input(g, PORTA_F64, 4, SHAPE(5, 3, 3, 2), &kernel));
    CHECK_OK(porta_graph_input(g, PORTA_F64, 1, SHAPE(5), &bias));

    CHECK_OK(porta_graph_gather(g, x, 1, index, &n));
    CHECK_TYPE(g, n, PORTA_F32, 2, SHAPE(3, 2));
    CHECK_OK(porta_graph_scatter(g, x, 1, index, src, PORTA_SCATTER_ADD, &n));
    CHECK_TYPE(g, n, PORTA_F32, 2, SHAPE(3, 4));
    CHECK_OK(porta_graph_index_select(g, x, 0, rows, &n));
    CHECK_TYPE(g, n, PORTA_F32, 2, SHAPE(5, 4));

    CHECK_OK(porta_graph_matmul(g, x, w, &n)); /* batch axes broadcast */
    CHECK_TYPE(g, n, PORTA_F32, 3, SHAPE(7, 3, 6));
    porta_conv_params params = {.groups = 1};
    for (int i = 0; i < 2; i++) params.stride[i] = params.dilation[i] = 1;
    params.padding[1] = 1;
    porta_node with_bias, without_bias;
    CHECK_OK(porta_graph_conv(g, img, kernel, bias, &params, &with_bias));
    CHECK_TYPE(g, with_bias, PORTA_F64, 4, SHAPE(2, 5, 7, 9));
    CHECK_OK(porta_graph_conv(g, img, kernel, -1, &params, &without_bias));
    CHECK_TYPE(g, without_bias, PORTA_F64, 4, SHAPE(2, 5, 7, 9));
    CHECK(with_bias != without_bias);
    /* Parameter entries past the spatial axes are ignored. */
    porta_conv_params noisy = params;
    noisy.stride[5] = 99;
    CHECK_OK(porta_graph_conv(g, img, kernel, -1, &noisy, &n));
    CHECK(n == without_bias);

    CHECK_OK(porta_graph_random(g, PORTA_F16, 2, SHAPE(4, 0), true, 1, 2, &n));
    CHECK_TYPE(g, n, PORTA_F16, 2, SHAPE(4, 0));
    CHECK_OK(porta_graph_random(g, PORTA_F64, 0, NULL, false, 1, 2, &n));
    CHECK_TYPE(g, n, PORTA_F64, 0, NULL);
    porta_graph_free(g);
}
