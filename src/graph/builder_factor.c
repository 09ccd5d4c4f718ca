/* The graph builder of the factorisation primitive (porta_factor's node). */
#include <string.h>

#include "core/status.h"
#include "graph/graph.h"

porta_status *porta_graph_factor(porta_graph *graph, porta_factor_op op, int flags,
                                 porta_node a, porta_node b, porta_node *out) {
    ir_prim prim;
    memset(&prim, 0, sizeof prim); /* padding too: prims are hashed bytewise */
    prim.kind = PRIM_FACTOR;
    prim.op = (int)op;
    prim.axis = flags;
    const char *name = ir_prim_name(&prim);
    if (!graph || !out)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "%s: %s is NULL", name,
                           graph ? "out" : "graph");
    porta_node nodes[2] = {a, b};
    int count = ir_prim_input_count(&prim);
    if (count < 1) count = 1; /* an invalid op: inference names it */
    ir_meta metas[2];
    for (int i = 0; i < count; i++) {
        PORTA_TRY(graph_check_node(graph, name, nodes[i]));
        metas[i] = graph->nodes[nodes[i]].meta;
    }
    ir_meta meta;
    porta_status *status = graph_infer_node(&prim, metas, count, &meta);
    if (status)
        return porta_error_context(status, "graph: building node %d from node %d",
                                   graph->node_count, (int)a);
    return graph_intern(graph, &prim, nodes, count, &meta, out);
}
