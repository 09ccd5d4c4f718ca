/* The graph builder of the sort primitive: a node holding the int64
 * permutation that sorts its input along an axis. */
#include <string.h>

#include "graph/graph.h"

porta_status *porta_graph_sort(porta_graph *graph, porta_node x, int axis,
                               porta_sort_order order, porta_node *out) {
    ir_prim prim;
    memset(&prim, 0, sizeof prim); /* padding too: prims are hashed bytewise */
    prim.kind = PRIM_SORT;
    prim.op = (int)order;
    prim.axis = axis;
    return graph_add_node(graph, &prim, &x, 1, out);
}
