/* The internal layout of a graph of primitives: nodes in creation order (so a
 * node's inputs always precede it), a hash table that merges structurally
 * equal nodes, and the lists of graph inputs and outputs. The builder, the
 * verifier and porta_graph_run share it; tests reach into it to corrupt graphs. */
#ifndef PORTA_GRAPH_GRAPH_H
#define PORTA_GRAPH_GRAPH_H

#include "ir/infer.h"

/* The most inputs any primitive takes (TERNARY, SCATTER, CONV with bias). */
#define GRAPH_MAX_INPUTS 3

typedef struct graph_node {
    /* Zeroed before it is filled, so it compares and hashes bytewise.
     * PRIM_INPUT nodes carry their input serial in prim.offset, which keeps
     * distinct inputs from merging. */
    ir_prim prim;
    int input_count;
    porta_node inputs[GRAPH_MAX_INPUTS]; /* unused slots are 0 */
    ir_meta meta;                           /* what the node produces */
    uint64_t hash;                             /* of prim, input_count, inputs */
} graph_node;

struct porta_graph {
    graph_node *nodes;
    int node_count;
    int node_capacity;
    /* Open addressing with linear probing: slots hold node ids, -1 is empty.
     * The capacity is a power of two and at least twice node_count. */
    porta_node *table;
    size_t table_capacity;
    int input_count; /* PRIM_INPUT nodes; their serials are 0..input_count-1 */
    porta_node *outputs;
    int output_count;
    int output_capacity;
};

/* Validates the input ids, infers the node's type and interns it (the
 * builders' one path); `prim` may be normalized by inference before it is
 * hashed. */
porta_status *graph_add_node(porta_graph *graph, ir_prim *prim, const porta_node *inputs,
                             int input_count, porta_node *out);
/* ir_infer, extended to the kinds only graphs have (INPUT, CONSTANT). */
porta_status *graph_infer_node(ir_prim *prim, const ir_meta *inputs,
                                     int input_count, ir_meta *out);

/* Adds a node unless an identical one exists; *out is the id either way.
 * `prim` must have been zeroed before it was filled and passed ir_infer. */
porta_status *graph_intern(porta_graph *graph, const ir_prim *prim,
                                 const porta_node *inputs, int input_count,
                                 const ir_meta *meta, porta_node *out);

/* The part of porta_graph_verify that running a graph needs to stay in
 * bounds: kinds, input ids and counts, input serials, outputs. porta_graph_run
 * checks this on every run; types it checks as each node produces its
 * result, so it skips re-inferring every node up front. */
porta_status *graph_check_structure(const porta_graph *graph);

/* Checks that `node` names a node of graph; the error names `op`. */
porta_status *graph_check_node(const porta_graph *graph, const char *op,
                                     porta_node node);

#endif
