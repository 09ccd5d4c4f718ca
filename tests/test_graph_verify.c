/* The verifier: graphs built through the API verify; graphs corrupted through
 * the internal layout are caught, each with a message that names the node
 * and what is wrong. */
#include <string.h>

#include "graph/graph.h"
#include "test.h"

#define SHAPE(...) ((const int64_t[]){__VA_ARGS__})

/* x [2, 3] f32 (node 0), y [3] f32 (1), x + y (2), exp (3), sum over axis 1
 * (4); node 4 is the output. */
static porta_graph *build_sample(void) {
    porta_graph *g = NULL;
    porta_node x, y, s, e, r;
    porta_status *status = porta_graph_create(&g);
    if (!status) status = porta_graph_input(g, PORTA_F32, 2, SHAPE(2, 3), &x);
    if (!status) status = porta_graph_input(g, PORTA_F32, 1, SHAPE(3), &y);
    if (!status) status = porta_graph_binary(g, PORTA_ADD, x, y, &s);
    if (!status) status = porta_graph_unary(g, PORTA_EXP, s, &e);
    if (!status)
        status = porta_graph_reduce(g, PORTA_REDUCE_SUM, e, (const int[]){1}, 1, false, &r);
    if (!status) status = porta_graph_output(g, r);
    if (status) {
        test_fail(__FILE__, __LINE__, "build_sample: %s", porta_status_message(status));
        porta_status_free(status);
        porta_graph_free(g);
        return NULL;
    }
    return g;
}

static void edge_forward(porta_graph *g) { g->nodes[3].inputs[0] = 4; }
static void edge_self(porta_graph *g) { g->nodes[3].inputs[0] = 3; }
static void edge_negative(porta_graph *g) { g->nodes[2].inputs[1] = -2; }
static void too_few_inputs(porta_graph *g) { g->nodes[2].input_count = 1; }
static void bad_kind(porta_graph *g) { g->nodes[3].prim.kind = (ir_prim_kind)99; }
static void wrong_dtype(porta_graph *g) { g->nodes[2].meta.dtype = PORTA_F64; }
static void wrong_shape(porta_graph *g) { g->nodes[4].meta.sizes[0] = 5; }
static void wrong_rank(porta_graph *g) { g->nodes[3].meta.rank = 1; }
static void rank_out_of_bounds(porta_graph *g) { g->nodes[0].meta.rank = 100; }
static void dtype_out_of_bounds(porta_graph *g) { g->nodes[3].meta.dtype = (porta_dtype)-5; }
static void op_changed(porta_graph *g) { g->nodes[2].prim.op = PORTA_LT; }
static void serial_reused(porta_graph *g) { g->nodes[1].prim.offset = 0; }
static void input_count_off(porta_graph *g) { g->input_count = 3; }
static void output_missing(porta_graph *g) { g->outputs[0] = 10; }
static void no_outputs(porta_graph *g) { g->output_count = 0; }
static void bad_axis(porta_graph *g) { g->nodes[4].prim.axes[0] = 7; }
/* A consistent input of another shape no longer broadcasts with x. */
static void input_reshaped(porta_graph *g) {
    g->nodes[1].prim.sizes[0] = 4;
    g->nodes[1].meta.sizes[0] = 4;
}

TEST(test_graph_verify_catches_corruption) {
    const struct {
        void (*corrupt)(porta_graph *);
        porta_code code;
        const char *message;
    } cases[] = {
        {edge_forward, PORTA_ERR_INVALID_ARGUMENT,
         "graph: node 3 (unary.exp) takes node 4 as input 0, but inputs must be nodes 0..2 "
         "that come before it"},
        {edge_self, PORTA_ERR_INVALID_ARGUMENT, "node 3 (unary.exp) takes node 3 as input 0"},
        {edge_negative, PORTA_ERR_INVALID_ARGUMENT,
         "node 2 (binary.add) takes node -2 as input 1"},
        {too_few_inputs, PORTA_ERR_INVALID_ARGUMENT,
         "graph: node 2 (binary.add) has 1 inputs, expected 2"},
        {bad_kind, PORTA_ERR_INVALID_ARGUMENT, "graph: node 3 has primitive kind 99, expected 0.."},
        {wrong_dtype, PORTA_ERR_DTYPE,
         "graph: node 2 (binary.add) is recorded as float64, but its inputs give float32"},
        {wrong_shape, PORTA_ERR_SHAPE,
         "graph: node 4 (reduce.sum) is recorded with shape [5], but its inputs give [2]"},
        {wrong_rank, PORTA_ERR_SHAPE, "node 3 (unary.exp) is recorded with shape [2]"},
        {rank_out_of_bounds, PORTA_ERR_INVALID_ARGUMENT,
         "graph: node 0 (input) is recorded with rank 100, expected 0..16"},
        {dtype_out_of_bounds, PORTA_ERR_INVALID_ARGUMENT,
         "graph: node 3 (unary.exp) is recorded with dtype -5, which is not a dtype"},
        {op_changed, PORTA_ERR_DTYPE,
         "node 2 (binary.lt) is recorded as float32, but its inputs give bool"},
        {serial_reused, PORTA_ERR_INVALID_ARGUMENT,
         "graph: input node 1 has serial 0, expected 1"},
        {input_count_off, PORTA_ERR_INVALID_ARGUMENT,
         "graph: 2 input nodes exist, but the graph records 3 inputs"},
        {output_missing, PORTA_ERR_INVALID_ARGUMENT,
         "graph: output 0 is node 10, which does not exist (graph has 5 nodes)"},
        {no_outputs, PORTA_ERR_INVALID_ARGUMENT, "graph: no outputs"},
        {bad_axis, PORTA_ERR_OUT_OF_RANGE, "graph: node 4: reduce.sum: axis 7 is out of range"},
        {input_reshaped, PORTA_ERR_SHAPE,
         "graph: node 2: binary.add: shapes [2, 3] and [4] cannot be broadcast"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        porta_graph *g = build_sample();
        if (!g) return;
        CHECK_OK(porta_graph_verify(g));
        cases[i].corrupt(g);
        CHECK_ERR(porta_graph_verify(g), cases[i].code, cases[i].message);
        porta_graph_free(g);
    }
}

TEST(test_graph_verify_conv_input_count) {
    porta_graph *g;
    CHECK_OK(porta_graph_create(&g));
    porta_node x, w, c;
    CHECK_OK(porta_graph_input(g, PORTA_F32, 3, SHAPE(1, 2, 5), &x));
    CHECK_OK(porta_graph_input(g, PORTA_F32, 3, SHAPE(4, 2, 3), &w));
    porta_conv_params params = {.stride = {1}, .dilation = {1}, .groups = 1};
    CHECK_OK(porta_graph_conv(g, x, w, -1, &params, &c));
    CHECK_OK(porta_graph_output(g, c));
    CHECK_OK(porta_graph_verify(g));
    g->nodes[c].input_count = 1;
    CHECK_ERR(porta_graph_verify(g), PORTA_ERR_INVALID_ARGUMENT,
              "graph: node 2 (conv) has 1 inputs, expected 2 or 3");
    porta_graph_free(g);
}

TEST(test_graph_verify_empty_graph) {
    porta_graph *g;
    CHECK_OK(porta_graph_create(&g));
    CHECK_ERR(porta_graph_verify(g), PORTA_ERR_INVALID_ARGUMENT, "graph: no outputs");
    porta_graph_free(g);
}

/* The executor refuses a graph whose structure is broken before running
 * anything, and stops at a node whose result disagrees with its recorded
 * type; either way nothing leaks. */
TEST(test_graph_verify_guards_run) {
    test_rng rng = test_rng_make(3);
    porta_tensor *x = test_random_tensor(&rng, PORTA_F32, 2, SHAPE(2, 3), -1, 1);
    porta_tensor *y = test_random_tensor(&rng, PORTA_F32, 1, SHAPE(3), -1, 1);
    porta_tensor *inputs[] = {x, y};
    const struct {
        void (*corrupt)(porta_graph *);
        porta_code code;
        const char *message;
    } cases[] = {
        {edge_forward, PORTA_ERR_INVALID_ARGUMENT, "takes node 4 as input 0"},
        {rank_out_of_bounds, PORTA_ERR_INVALID_ARGUMENT, "recorded with rank 100"},
        {wrong_dtype, PORTA_ERR_INTERNAL,
         "graph.run: node 2 (binary.add): produced float32 [2, 3], but the graph expects "
         "float64 [2, 3]"},
        {wrong_shape, PORTA_ERR_INTERNAL, "graph.run: node 4 (reduce.sum): produced float32 [2]"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        porta_graph *g = build_sample();
        if (!g) break;
        cases[i].corrupt(g);
        porta_tensor *out = NULL;
        CHECK_ERR(porta_graph_run(g, test_cpu(), inputs, 2, &out, 1), cases[i].code,
                  cases[i].message);
        CHECK(out == NULL);
        porta_graph_free(g);
    }
    porta_tensor_release(x);
    porta_tensor_release(y);
}
