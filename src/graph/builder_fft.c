/* The graph builder of the Fourier transform primitive (porta_fft's node). */
#include "graph/graph.h"
#include "ir/infer.h"

porta_status *porta_graph_fft(porta_graph *graph, porta_node x, const porta_fft_params *params,
                              porta_node *out) {
    ir_prim prim;
    PORTA_TRY(ir_fft_prim(params, &prim));
    return graph_add_node(graph, &prim, &x, 1, out);
}
