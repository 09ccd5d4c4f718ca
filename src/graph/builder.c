/* The public graph builders: each fills a zeroed primitive, infers the node's
 * type from its inputs' types, and interns the node. */
#include "graph/graph.h"

#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "core/status.h"

/* Binary ops whose operands can be swapped without changing the result,
 * its dtype or its shape; their inputs are ordered by id so that a+b and b+a
 * become one node. */
static bool is_commutative(const ir_prim *prim) {
    if (prim->kind != PRIM_BINARY) return false;
    switch ((porta_binary_op)prim->op) {
    case PORTA_ADD:
    case PORTA_MUL:
    case PORTA_BITWISE_AND:
    case PORTA_BITWISE_OR:
    case PORTA_BITWISE_XOR:
    case PORTA_LOGICAL_AND:
    case PORTA_LOGICAL_OR:
    case PORTA_LOGICAL_XOR:
    case PORTA_EQ:
    case PORTA_NE:
        return true;
    default:
        return false;
    }
}

static porta_status *check_graph(const porta_graph *graph, const ir_prim *prim,
                                 const porta_node *out) {
    if (!graph)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "%s: graph is NULL",
                           ir_prim_name(prim));
    if (!out)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "%s: out is NULL",
                           ir_prim_name(prim));
    return NULL;
}

/* Arrays passed with a count or rank are copied into fixed-size prim fields,
 * so their length is checked before anything is copied. */
static porta_status *check_array(const ir_prim *prim, const char *count_name,
                                 const char *array_name, const void *array, int count) {
    if (count < 0 || count > PORTA_MAX_RANK)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "%s: %s must be 0..%d, got %d",
                           ir_prim_name(prim), count_name, PORTA_MAX_RANK, count);
    if (count > 0 && !array)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "%s: %s is NULL, but %s is %d",
                           ir_prim_name(prim), array_name, count_name, count);
    return NULL;
}

/* Writes " from nodes 1, 3" (or nothing for a node without inputs). */
static const char *describe_inputs(char *buf, size_t cap, const porta_node *inputs,
                                   int input_count) {
    buf[0] = '\0';
    size_t used = 0;
    for (int i = 0; i < input_count && used < cap; i++) {
        const char *lead = i ? ", " : input_count > 1 ? " from nodes " : " from node ";
        used += (size_t)snprintf(buf + used, cap - used, "%s%d", lead, (int)inputs[i]);
    }
    return buf;
}

porta_status *graph_add_node(porta_graph *graph, ir_prim *prim, const porta_node *inputs,
                             int input_count, porta_node *out) {
    PORTA_TRY(check_graph(graph, prim, out));
    ir_meta metas[GRAPH_MAX_INPUTS] = {0}; /* leaves read none, but gcc cannot tell */
    for (int i = 0; i < input_count; i++) {
        PORTA_TRY(graph_check_node(graph, ir_prim_name(prim), inputs[i]));
        metas[i] = graph->nodes[inputs[i]].meta;
    }
    ir_meta meta;
    porta_status *status = graph_infer_node(prim, metas, input_count, &meta);
    if (status) {
        char from[64];
        return porta_error_context(status, "graph: building node %d%s", graph->node_count,
                                   describe_inputs(from, sizeof from, inputs, input_count));
    }
    porta_node ordered[GRAPH_MAX_INPUTS] = {0}; /* never NULL, even without inputs */
    for (int i = 0; i < input_count; i++) ordered[i] = inputs[i];
    if (is_commutative(prim) && ordered[0] > ordered[1]) {
        ordered[0] = inputs[1];
        ordered[1] = inputs[0];
    }
    return graph_intern(graph, prim, ordered, input_count, &meta, out);
}

static void init_prim(ir_prim *prim, ir_prim_kind kind, int op) {
    memset(prim, 0, sizeof *prim); /* padding too: prims are hashed bytewise */
    prim->kind = kind;
    prim->op = op;
}

/* The type of an existing node, for builders whose arguments depend on it. */
static porta_status *node_meta(const porta_graph *graph, const ir_prim *prim,
                               porta_node node, const porta_node *out,
                               const ir_meta **meta) {
    PORTA_TRY(check_graph(graph, prim, out));
    PORTA_TRY(graph_check_node(graph, ir_prim_name(prim), node));
    *meta = &graph->nodes[node].meta;
    return NULL;
}

porta_status *porta_graph_input(porta_graph *graph, porta_dtype dtype, int rank,
                                const int64_t *sizes, porta_node *out) {
    ir_prim prim;
    init_prim(&prim, PRIM_INPUT, 0);
    PORTA_TRY(check_graph(graph, &prim, out));
    PORTA_TRY(check_array(&prim, "rank", "sizes", sizes, rank));
    prim.dtype = dtype;
    prim.rank = rank;
    if (rank) memcpy(prim.sizes, sizes, (size_t)rank * sizeof *sizes);
    prim.offset = (uint64_t)graph->input_count; /* the serial keeps inputs distinct */
    return graph_add_node(graph, &prim, NULL, 0, out);
}

porta_status *porta_graph_constant(porta_graph *graph, porta_dtype dtype, double value,
                                   porta_node *out) {
    ir_prim prim;
    init_prim(&prim, PRIM_CONSTANT, 0);
    prim.dtype = dtype;
    prim.value = value;
    return graph_add_node(graph, &prim, NULL, 0, out);
}

porta_status *porta_graph_unary(porta_graph *graph, porta_unary_op op, porta_node x,
                                porta_node *out) {
    ir_prim prim;
    init_prim(&prim, PRIM_UNARY, (int)op);
    return graph_add_node(graph, &prim, &x, 1, out);
}

porta_status *porta_graph_binary(porta_graph *graph, porta_binary_op op, porta_node a,
                                 porta_node b, porta_node *out) {
    ir_prim prim;
    init_prim(&prim, PRIM_BINARY, (int)op);
    porta_node inputs[] = {a, b};
    return graph_add_node(graph, &prim, inputs, 2, out);
}

porta_status *porta_graph_ternary(porta_graph *graph, porta_ternary_op op, porta_node a,
                                  porta_node b, porta_node c, porta_node *out) {
    ir_prim prim;
    init_prim(&prim, PRIM_TERNARY, (int)op);
    porta_node inputs[] = {a, b, c};
    return graph_add_node(graph, &prim, inputs, 3, out);
}

porta_status *porta_graph_cast(porta_graph *graph, porta_node x, porta_dtype dtype,
                               porta_node *out) {
    ir_prim prim;
    init_prim(&prim, PRIM_CAST, 0);
    prim.dtype = dtype;
    return graph_add_node(graph, &prim, &x, 1, out);
}

porta_status *porta_graph_reduce(porta_graph *graph, porta_reduce_op op, porta_node x,
                                 const int *axes, int axis_count, bool keepdim,
                                 porta_node *out) {
    ir_prim prim;
    init_prim(&prim, PRIM_REDUCE, (int)op);
    PORTA_TRY(check_array(&prim, "axis_count", "axes", axes, axis_count));
    if (axis_count) memcpy(prim.axes, axes, (size_t)axis_count * sizeof *axes);
    prim.axis_count = axis_count;
    prim.keepdim = keepdim;
    return graph_add_node(graph, &prim, &x, 1, out);
}

/* Reshape and expand: x and the shape it becomes. */
static porta_status *add_shape_node(porta_graph *graph, ir_prim_kind kind, porta_node x,
                                    int rank, const int64_t *sizes, porta_node *out) {
    ir_prim prim;
    init_prim(&prim, kind, 0);
    PORTA_TRY(check_array(&prim, "rank", "sizes", sizes, rank));
    prim.rank = rank;
    if (rank) memcpy(prim.sizes, sizes, (size_t)rank * sizeof *sizes);
    return graph_add_node(graph, &prim, &x, 1, out);
}

porta_status *porta_graph_reshape(porta_graph *graph, porta_node x, int rank,
                                  const int64_t *sizes, porta_node *out) {
    return add_shape_node(graph, PRIM_RESHAPE, x, rank, sizes, out);
}

porta_status *porta_graph_permute(porta_graph *graph, porta_node x, const int *dims,
                                  porta_node *out) {
    ir_prim prim;
    init_prim(&prim, PRIM_PERMUTE, 0);
    const ir_meta *meta;
    PORTA_TRY(node_meta(graph, &prim, x, out, &meta));
    PORTA_TRY(check_array(&prim, "the rank of x", "dims", dims, meta->rank));
    prim.axis_count = meta->rank;
    if (meta->rank) memcpy(prim.axes, dims, (size_t)meta->rank * sizeof *dims);
    return graph_add_node(graph, &prim, &x, 1, out);
}

porta_status *porta_graph_expand(porta_graph *graph, porta_node x, int rank,
                                 const int64_t *sizes, porta_node *out) {
    return add_shape_node(graph, PRIM_EXPAND, x, rank, sizes, out);
}

porta_status *porta_graph_slice(porta_graph *graph, porta_node x, int axis, int64_t start,
                                int64_t stop, int64_t step, porta_node *out) {
    ir_prim prim;
    init_prim(&prim, PRIM_SLICE, 0);
    prim.axis = axis;
    prim.start = start;
    prim.stop = stop;
    prim.step = step;
    return graph_add_node(graph, &prim, &x, 1, out);
}

porta_status *porta_graph_flip(porta_graph *graph, porta_node x, const int *axes,
                               int axis_count, porta_node *out) {
    ir_prim prim;
    init_prim(&prim, PRIM_FLIP, 0);
    PORTA_TRY(check_array(&prim, "axis_count", "axes", axes, axis_count));
    if (axis_count) memcpy(prim.axes, axes, (size_t)axis_count * sizeof *axes);
    prim.axis_count = axis_count;
    return graph_add_node(graph, &prim, &x, 1, out);
}

porta_status *porta_graph_pad(porta_graph *graph, porta_node x, const int64_t *pads,
                              double value, porta_node *out) {
    ir_prim prim;
    init_prim(&prim, PRIM_PAD, 0);
    const ir_meta *meta;
    PORTA_TRY(node_meta(graph, &prim, x, out, &meta));
    PORTA_TRY(check_array(&prim, "the rank of x", "pads", pads, meta->rank));
    if (meta->rank) memcpy(prim.pads, pads, 2 * (size_t)meta->rank * sizeof *pads);
    prim.value = value;
    return graph_add_node(graph, &prim, &x, 1, out);
}

porta_status *porta_graph_gather(porta_graph *graph, porta_node x, int axis, porta_node index,
                                 porta_node *out) {
    ir_prim prim;
    init_prim(&prim, PRIM_GATHER, 0);
    prim.axis = axis;
    porta_node inputs[] = {x, index};
    return graph_add_node(graph, &prim, inputs, 2, out);
}

porta_status *porta_graph_scatter(porta_graph *graph, porta_node x, int axis, porta_node index,
                                  porta_node src, porta_scatter_reduce reduce,
                                  porta_node *out) {
    ir_prim prim;
    init_prim(&prim, PRIM_SCATTER, (int)reduce);
    prim.axis = axis;
    porta_node inputs[] = {x, index, src};
    return graph_add_node(graph, &prim, inputs, 3, out);
}

porta_status *porta_graph_index_select(porta_graph *graph, porta_node x, int axis,
                                       porta_node index, porta_node *out) {
    ir_prim prim;
    init_prim(&prim, PRIM_INDEX_SELECT, 0);
    prim.axis = axis;
    porta_node inputs[] = {x, index};
    return graph_add_node(graph, &prim, inputs, 2, out);
}

porta_status *porta_graph_matmul(porta_graph *graph, porta_node a, porta_node b,
                                 porta_node *out) {
    ir_prim prim;
    init_prim(&prim, PRIM_MATMUL, 0);
    porta_node inputs[] = {a, b};
    return graph_add_node(graph, &prim, inputs, 2, out);
}

porta_status *porta_graph_conv(porta_graph *graph, porta_node x, porta_node w, porta_node bias,
                               const porta_conv_params *params, porta_node *out) {
    ir_prim prim;
    init_prim(&prim, PRIM_CONV, 0);
    if (!params) return porta_error(PORTA_ERR_INVALID_ARGUMENT, "conv: params is NULL");
    prim.conv = *params; /* inference zeroes the entries past the spatial axes */
    porta_node inputs[] = {x, w, bias};
    return graph_add_node(graph, &prim, inputs, bias == -1 ? 2 : 3, out);
}

porta_status *porta_graph_random(porta_graph *graph, porta_dtype dtype, int rank,
                                 const int64_t *sizes, bool normal, uint64_t seed,
                                 uint64_t offset, porta_node *out) {
    ir_prim prim;
    init_prim(&prim, PRIM_RANDOM, 0);
    prim.normal = normal;
    PORTA_TRY(check_array(&prim, "rank", "sizes", sizes, rank));
    prim.dtype = dtype;
    prim.rank = rank;
    if (rank) memcpy(prim.sizes, sizes, (size_t)rank * sizeof *sizes);
    prim.seed = seed;
    prim.offset = offset;
    prim.value = 0.0; /* uniform [0, 1) or normal (0, 1), as torch.rand/randn */
    prim.value2 = 1.0;
    return graph_add_node(graph, &prim, NULL, 0, out);
}

porta_status *porta_graph_node_type(const porta_graph *graph, porta_node node,
                                    porta_dtype *dtype, int *rank, int64_t *sizes) {
    if (!graph) return porta_error(PORTA_ERR_INVALID_ARGUMENT, "graph.node_type: graph is NULL");
    PORTA_TRY(graph_check_node(graph, "graph.node_type", node));
    const ir_meta *meta = &graph->nodes[node].meta;
    if (dtype) *dtype = meta->dtype;
    if (rank) *rank = meta->rank;
    if (sizes && meta->rank) memcpy(sizes, meta->sizes, (size_t)meta->rank * sizeof *sizes);
    return NULL;
}

porta_status *porta_graph_output(porta_graph *graph, porta_node node) {
    if (!graph) return porta_error(PORTA_ERR_INVALID_ARGUMENT, "graph.output: graph is NULL");
    PORTA_TRY(graph_check_node(graph, "graph.output", node));
    if (graph->output_count == graph->output_capacity) {
        if (graph->output_capacity > INT32_MAX / 2)
            return porta_error(PORTA_ERR_OUT_OF_MEMORY, "graph.output: too many outputs");
        int capacity = graph->output_capacity ? 2 * graph->output_capacity : 8;
        porta_node *outputs;
        PORTA_TRY(core_host_alloc((size_t)capacity * sizeof *outputs, "graph outputs",
                                   (void **)&outputs));
        if (graph->output_count)
            memcpy(outputs, graph->outputs, (size_t)graph->output_count * sizeof *outputs);
        core_host_free(graph->outputs);
        graph->outputs = outputs;
        graph->output_capacity = capacity;
    }
    graph->outputs[graph->output_count++] = node;
    return NULL;
}
