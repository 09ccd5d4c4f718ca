/* Graph storage: creation, destruction and node interning (hash-consing). */
#include "graph/graph.h"

#include <string.h>

#include "core/alloc.h"
#include "core/dtype.h"
#include "core/status.h"
#include "runtime/tensor.h"

#define INITIAL_NODE_CAPACITY 32
#define EMPTY_SLOT (-1)

porta_status *porta_graph_create(porta_graph **out) {
    if (!out) return porta_error(PORTA_ERR_INVALID_ARGUMENT, "graph.create: out is NULL");
    porta_graph *graph;
    PORTA_TRY(core_host_alloc(sizeof *graph, "a graph", (void **)&graph));
    memset(graph, 0, sizeof *graph);
    *out = graph;
    return NULL;
}

void porta_graph_free(porta_graph *graph) {
    if (!graph) return;
    core_host_free(graph->nodes);
    core_host_free(graph->table);
    core_host_free(graph->outputs);
    core_host_free(graph);
}

int porta_graph_node_count(const porta_graph *graph) { return graph ? graph->node_count : 0; }

porta_status *graph_check_node(const porta_graph *graph, const char *op,
                                     porta_node node) {
    if (node < 0 || node >= graph->node_count)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "%s: node %d does not exist (graph has %d nodes)", op, (int)node,
                           graph->node_count);
    return NULL;
}

/* Graph inputs and constants have no inputs to infer from: their type is
 * spelled out in the prim, and only has to be valid. */
static porta_status *infer_leaf(const ir_prim *prim, int input_count, ir_meta *out) {
    const char *op = ir_prim_name(prim);
    if (input_count != 0)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "%s: expected no inputs, got %d", op,
                           input_count);
    if (!core_dtype_is_valid((int)prim->dtype))
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "%s: %d is not a dtype", op,
                           (int)prim->dtype);
    int rank = prim->kind == PRIM_INPUT ? prim->rank : 0;
    if (rank < 0 || rank > PORTA_MAX_RANK)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "%s: rank must be 0..%d, got %d", op,
                           PORTA_MAX_RANK, rank);
    char buf[CORE_SHAPE_STR_CAP];
    for (int i = 0; i < rank; i++)
        if (prim->sizes[i] < 0)
            return porta_error(PORTA_ERR_SHAPE, "%s: size %lld of axis %d in shape %s is negative",
                               op, (long long)prim->sizes[i], i,
                               core_format_shape(buf, sizeof buf, rank, prim->sizes));
    if (core_shape_numel(rank, prim->sizes) < 0)
        return porta_error(PORTA_ERR_SHAPE, "%s: shape %s has more elements than fit in int64",
                           op, core_format_shape(buf, sizeof buf, rank, prim->sizes));
    memset(out, 0, sizeof *out);
    out->dtype = prim->dtype;
    out->rank = rank;
    if (rank) memcpy(out->sizes, prim->sizes, (size_t)rank * sizeof *out->sizes);
    return NULL;
}

porta_status *graph_infer_node(ir_prim *prim, const ir_meta *inputs,
                                     int input_count, ir_meta *out) {
    if (prim->kind == PRIM_INPUT || prim->kind == PRIM_CONSTANT)
        return infer_leaf(prim, input_count, out);
    return ir_infer(prim, inputs, input_count, out);
}

/* Word-at-a-time mixing; the final avalanche (MurmurHash3's fmix64) spreads
 * the bits so the low bits used for the table index are well distributed. */
static uint64_t mix_word(uint64_t hash, uint64_t word) {
    hash ^= word * 0x9e3779b97f4a7c15u;
    hash = (hash << 27 | hash >> 37) * 0xff51afd7ed558ccdu;
    return hash;
}

static uint64_t mix_bytes(uint64_t hash, const void *data, size_t bytes) {
    const unsigned char *p = data;
    for (; bytes >= 8; bytes -= 8, p += 8) {
        uint64_t word;
        memcpy(&word, p, 8);
        hash = mix_word(hash, word);
    }
    if (bytes) {
        uint64_t word = 0;
        memcpy(&word, p, bytes);
        hash = mix_word(hash, word);
    }
    return hash;
}

static uint64_t hash_node(const ir_prim *prim, const porta_node *inputs, int input_count) {
    uint64_t hash = mix_bytes(0, prim, sizeof *prim);
    hash = mix_word(hash, (uint64_t)input_count);
    hash = mix_bytes(hash, inputs, sizeof *inputs * (size_t)input_count);
    hash ^= hash >> 33;
    hash *= 0xff51afd7ed558ccdu;
    hash ^= hash >> 33;
    hash *= 0xc4ceb9fe1a85ec53u;
    hash ^= hash >> 33;
    return hash;
}

static bool node_matches(const graph_node *node, uint64_t hash, const ir_prim *prim,
                         const porta_node *inputs, int input_count) {
    return node->hash == hash && node->input_count == input_count &&
           memcmp(node->inputs, inputs, sizeof *inputs * (size_t)input_count) == 0 &&
           memcmp(&node->prim, prim, sizeof *prim) == 0;
}

/* The slot holding an equal node, or the empty slot where it belongs. */
static size_t probe(const porta_graph *graph, uint64_t hash, const ir_prim *prim,
                    const porta_node *inputs, int input_count) {
    size_t mask = graph->table_capacity - 1;
    size_t slot = (size_t)hash & mask;
    for (;;) {
        porta_node id = graph->table[slot];
        if (id == EMPTY_SLOT ||
            node_matches(&graph->nodes[id], hash, prim, inputs, input_count))
            return slot;
        slot = (slot + 1) & mask;
    }
}

static void insert_slot(porta_node *table, size_t capacity, uint64_t hash, porta_node id) {
    size_t slot = (size_t)hash & (capacity - 1);
    while (table[slot] != EMPTY_SLOT) slot = (slot + 1) & (capacity - 1);
    table[slot] = id;
}

/* Makes room for one more node. Allocates everything before replacing
 * anything, so on failure the graph is unchanged. */
static porta_status *reserve_node(porta_graph *graph) {
    if (graph->node_count == INT32_MAX)
        return porta_error(PORTA_ERR_OUT_OF_MEMORY, "graph: cannot hold more than %d nodes",
                           (int)INT32_MAX);
    size_t needed = (size_t)graph->node_count + 1;
    graph_node *nodes = NULL;
    size_t node_capacity = (size_t)graph->node_capacity;
    if (needed > node_capacity) {
        node_capacity = node_capacity ? node_capacity * 2 : INITIAL_NODE_CAPACITY;
        if (node_capacity > INT32_MAX) node_capacity = INT32_MAX;
        PORTA_TRY(core_host_alloc(node_capacity * sizeof *nodes, "graph nodes",
                                   (void **)&nodes));
    }
    porta_node *table = NULL;
    size_t table_capacity = graph->table_capacity;
    if (2 * needed > table_capacity) {
        table_capacity = table_capacity ? table_capacity * 2 : 2 * INITIAL_NODE_CAPACITY;
        porta_status *status = core_host_alloc(table_capacity * sizeof *table,
                                                "the graph's node table", (void **)&table);
        if (status) {
            core_host_free(nodes);
            return status;
        }
        memset(table, 0xff, table_capacity * sizeof *table); /* every slot EMPTY_SLOT */
        for (int i = 0; i < graph->node_count; i++)
            insert_slot(table, table_capacity, graph->nodes[i].hash, i);
    }
    if (nodes) {
        if (graph->node_count)
            memcpy(nodes, graph->nodes, (size_t)graph->node_count * sizeof *nodes);
        core_host_free(graph->nodes);
        graph->nodes = nodes;
        graph->node_capacity = (int)node_capacity;
    }
    if (table) {
        core_host_free(graph->table);
        graph->table = table;
        graph->table_capacity = table_capacity;
    }
    return NULL;
}

porta_status *graph_intern(porta_graph *graph, const ir_prim *prim,
                                 const porta_node *inputs, int input_count,
                                 const ir_meta *meta, porta_node *out) {
    uint64_t hash = hash_node(prim, inputs, input_count);
    if (graph->table_capacity) {
        porta_node existing = graph->table[probe(graph, hash, prim, inputs, input_count)];
        if (existing != EMPTY_SLOT) {
            *out = existing;
            return NULL;
        }
    }
    PORTA_TRY(reserve_node(graph));
    porta_node id = graph->node_count;
    graph_node *node = &graph->nodes[id];
    memset(node, 0, sizeof *node);
    memcpy(&node->prim, prim, sizeof *prim); /* bytewise, padding included */
    node->input_count = input_count;
    memcpy(node->inputs, inputs, sizeof *inputs * (size_t)input_count);
    node->meta = *meta;
    node->hash = hash;
    insert_slot(graph->table, graph->table_capacity, hash, id);
    graph->node_count++;
    if (prim->kind == PRIM_INPUT) graph->input_count++;
    *out = id;
    return NULL;
}
