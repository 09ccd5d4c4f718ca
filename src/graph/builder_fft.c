/* The graph builder of the Fourier transform primitive (porta_fft's node). */
#include "core/status.h"
#include "graph/graph.h"
#include "ir/infer.h"

porta_status *porta_graph_fft(porta_graph *graph, porta_node x, const porta_fft_params *params,
                              porta_node *out) {
    ir_prim prim;
    PORTA_TRY(ir_fft_prim(params, &prim));
    const char *name = ir_prim_name(&prim);
    if (!graph || !out)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "%s: %s is NULL", name,
                           graph ? "out" : "graph");
    PORTA_TRY(graph_check_node(graph, name, x));
    ir_meta meta;
    porta_status *status = graph_infer_node(&prim, &graph->nodes[x].meta, 1, &meta);
    if (status)
        return porta_error_context(status, "graph: building node %d from node %d",
                                   graph->node_count, (int)x);
    return graph_intern(graph, &prim, &x, 1, &meta, out);
}
