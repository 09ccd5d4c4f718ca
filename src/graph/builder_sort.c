/* The graph builder of the sort primitive: a node holding the int64
 * permutation that sorts its input along an axis. */
#include <string.h>

#include "core/status.h"
#include "graph/graph.h"

porta_status *porta_graph_sort(porta_graph *graph, porta_node x, int axis,
                               porta_sort_order order, porta_node *out) {
    ir_prim prim;
    memset(&prim, 0, sizeof prim); /* padding too: prims are hashed bytewise */
    prim.kind = PRIM_SORT;
    prim.op = (int)order;
    prim.axis = axis;
    const char *op = ir_prim_name(&prim);
    if (!graph || !out)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "%s: %s is NULL", op,
                           graph ? "out" : "graph");
    PORTA_TRY(graph_check_node(graph, op, x));
    ir_meta meta;
    porta_status *status = graph_infer_node(&prim, &graph->nodes[x].meta, 1, &meta);
    if (status)
        return porta_error_context(status, "graph: building node %d from node %d",
                                   graph->node_count, (int)x);
    return graph_intern(graph, &prim, &x, 1, &meta, out);
}
