/* The graph verifier: re-derives everything the builder guarantees, for
 * graphs that were assembled or loaded by other means. */
#include "graph/graph.h"

#include <string.h>

#include "core/dtype.h"
#include "core/status.h"

static bool same_shape(const ir_meta *a, const ir_meta *b) {
    return a->rank == b->rank &&
           (a->rank == 0 || memcmp(a->sizes, b->sizes, (size_t)a->rank * sizeof *a->sizes) == 0);
}

static porta_status *check_input_ids(const porta_graph *graph, porta_node id) {
    const graph_node *node = &graph->nodes[id];
    const char *op = ir_prim_name(&node->prim);
    int expected = ir_prim_input_count(&node->prim);
    bool count_ok = node->prim.kind == PRIM_CONV
                        ? node->input_count == 2 || node->input_count == 3
                        : node->input_count == expected;
    if (!count_ok) {
        if (node->prim.kind == PRIM_CONV)
            return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                               "graph: node %d (%s) has %d inputs, expected 2 or 3", (int)id, op,
                               node->input_count);
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "graph: node %d (%s) has %d inputs, expected %d", (int)id, op,
                           node->input_count, expected);
    }
    for (int i = 0; i < node->input_count; i++) {
        porta_node input = node->inputs[i];
        if (input < 0 || input >= id)
            return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                               "graph: node %d (%s) takes node %d as input %d, but inputs must "
                               "be nodes 0..%d that come before it",
                               (int)id, op, (int)input, i, (int)id - 1);
    }
    return NULL;
}

/* A recorded type that is not even a type: porta_graph_run would index sizes
 * or name the dtype with it before any inference could object. */
static porta_status *check_meta_bounds(const porta_graph *graph, porta_node id) {
    const graph_node *node = &graph->nodes[id];
    if (!core_dtype_is_valid((int)node->meta.dtype))
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "graph: node %d (%s) is recorded with dtype %d, which is not a dtype",
                           (int)id, ir_prim_name(&node->prim), (int)node->meta.dtype);
    if (node->meta.rank < 0 || node->meta.rank > PORTA_MAX_RANK)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "graph: node %d (%s) is recorded with rank %d, expected 0..%d",
                           (int)id, ir_prim_name(&node->prim), node->meta.rank,
                           PORTA_MAX_RANK);
    return NULL;
}

/* Infers the node's type again from its inputs' recorded types and compares
 * it with the type recorded for the node. */
static porta_status *check_type(const porta_graph *graph, porta_node id) {
    const graph_node *node = &graph->nodes[id];
    const char *op = ir_prim_name(&node->prim);
    ir_meta inputs[GRAPH_MAX_INPUTS];
    for (int i = 0; i < node->input_count; i++) inputs[i] = graph->nodes[node->inputs[i]].meta;
    ir_prim prim;
    memcpy(&prim, &node->prim, sizeof prim); /* inference may normalize it */
    ir_meta inferred;
    porta_status *status = graph_infer_node(&prim, inputs, node->input_count, &inferred);
    if (status) return porta_error_context(status, "graph: node %d", (int)id);
    const ir_meta *recorded = &node->meta;
    if (recorded->dtype != inferred.dtype)
        return porta_error(PORTA_ERR_DTYPE,
                           "graph: node %d (%s) is recorded as %s, but its inputs give %s",
                           (int)id, op, porta_dtype_name(recorded->dtype),
                           porta_dtype_name(inferred.dtype));
    if (!same_shape(recorded, &inferred)) {
        char want[CORE_SHAPE_STR_CAP], got[CORE_SHAPE_STR_CAP];
        return porta_error(
            PORTA_ERR_SHAPE, "graph: node %d (%s) is recorded with shape %s, but its inputs give %s",
            (int)id, op, core_format_shape(want, sizeof want, recorded->rank, recorded->sizes),
            core_format_shape(got, sizeof got, inferred.rank, inferred.sizes));
    }
    return NULL;
}

porta_status *graph_check_structure(const porta_graph *graph) {
    int inputs_seen = 0;
    for (porta_node id = 0; id < graph->node_count; id++) {
        const ir_prim *prim = &graph->nodes[id].prim;
        if ((unsigned)prim->kind >= PRIM_KIND_COUNT)
            return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                               "graph: node %d has primitive kind %d, expected 0..%d", (int)id,
                               (int)prim->kind, PRIM_KIND_COUNT - 1);
        PORTA_TRY(check_input_ids(graph, id));
        PORTA_TRY(check_meta_bounds(graph, id));
        if (prim->kind != PRIM_INPUT) continue;
        /* porta_graph_run binds input tensors by serial, in creation order. */
        if (prim->offset != (uint64_t)inputs_seen)
            return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                               "graph: input node %d has serial %llu, expected %d", (int)id,
                               (unsigned long long)prim->offset, inputs_seen);
        inputs_seen++;
    }
    if (inputs_seen != graph->input_count)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "graph: %d input nodes exist, but the graph records %d inputs",
                           inputs_seen, graph->input_count);
    if (graph->output_count < 1)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "graph: no outputs (mark at least one node with porta_graph_output)");
    for (int i = 0; i < graph->output_count; i++)
        if (graph->outputs[i] < 0 || graph->outputs[i] >= graph->node_count)
            return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                               "graph: output %d is node %d, which does not exist (graph has "
                               "%d nodes)",
                               i, (int)graph->outputs[i], graph->node_count);
    return NULL;
}

porta_status *porta_graph_verify(const porta_graph *graph) {
    if (!graph) return porta_error(PORTA_ERR_INVALID_ARGUMENT, "graph.verify: graph is NULL");
    PORTA_TRY(graph_check_structure(graph));
    for (porta_node id = 0; id < graph->node_count; id++) PORTA_TRY(check_type(graph, id));
    return NULL;
}
