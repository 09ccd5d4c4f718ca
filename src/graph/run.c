/* porta_graph_run, a front end of the compiler's trace: it issues the nodes
 * an output depends on, in creation order, through the path the public ops
 * take (ops_prim_run) with fusion on, then flushes. So a graph runs as
 * fused kernels, scheduled, cached and profiled like every other trace, and
 * Porta has one deferred-execution mechanism instead of a second executor
 * that ran nodes one at a time. Each intermediate's handle is released as
 * soon as its last consumer is issued; the trace holds its buffer until it
 * has run, and a buffer fused away never gets memory. */
#include "graph/graph.h"

#include <stdio.h>
#include <string.h>

#include "compiler/trace.h"
#include "core/alloc.h"
#include "core/status.h"
#include "ops/run.h"
#include "runtime/device.h"
#include "runtime/tensor.h"

/* Per-run state: one value and one pending-use count per node. */
typedef struct run_state {
    porta_tensor **values; /* NULL until issued and after release */
    int *uses;             /* consumers yet to issue, plus one per output mark */
} run_state;

static porta_status *check_input(porta_device *device, porta_tensor *const *inputs,
                                 const graph_node *node) {
    int serial = (int)node->prim.offset;
    const porta_tensor *t = inputs[serial];
    if (!t)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "graph.run: input %d is NULL", serial);
    if (t->buffer->device != device)
        return porta_error(PORTA_ERR_DEVICE,
                           "graph.run: input %d is on porta:%d (%s), but the graph runs on "
                           "porta:%d (%s)",
                           serial, t->buffer->device->info.index, t->buffer->device->info.backend,
                           device->info.index, device->info.backend);
    const ir_meta *meta = &node->meta;
    if (t->dtype != meta->dtype)
        return porta_error(PORTA_ERR_DTYPE, "graph.run: input %d has dtype %s, expected %s",
                           serial, porta_dtype_name(t->dtype), porta_dtype_name(meta->dtype));
    if (t->rank != meta->rank ||
        (t->rank && memcmp(t->sizes, meta->sizes, (size_t)t->rank * sizeof *t->sizes))) {
        char got[CORE_SHAPE_STR_CAP], want[CORE_SHAPE_STR_CAP];
        return porta_error(PORTA_ERR_SHAPE, "graph.run: input %d has shape %s, expected %s",
                           serial, core_format_shape(got, sizeof got, t->rank, t->sizes),
                           core_format_shape(want, sizeof want, meta->rank, meta->sizes));
    }
    return NULL;
}

static porta_status *check_call(const porta_graph *graph, porta_device *device,
                                porta_tensor *const *inputs, int input_count,
                                porta_tensor **outputs, int output_count) {
    if (!graph || !device)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "graph.run: %s is NULL",
                           graph ? "device" : "graph");
    PORTA_TRY(graph_check_structure(graph));
    if (input_count != graph->input_count)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "graph.run: the graph has %d inputs, but %d tensors were given",
                           graph->input_count, input_count);
    if (input_count > 0 && !inputs)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "graph.run: inputs is NULL");
    if (output_count != graph->output_count)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "graph.run: the graph has %d outputs, but room for %d was given",
                           graph->output_count, output_count);
    if (!outputs) return porta_error(PORTA_ERR_INVALID_ARGUMENT, "graph.run: outputs is NULL");
    for (int i = 0; i < graph->node_count; i++)
        if (graph->nodes[i].prim.kind == PRIM_INPUT)
            PORTA_TRY(check_input(device, inputs, &graph->nodes[i]));
    return NULL;
}

/* Counts the pending uses of every node: a node is live when an output
 * depends on it, and only live consumers count, so dead nodes stay at 0. */
static void count_uses(const porta_graph *graph, int *uses) {
    memset(uses, 0, (size_t)graph->node_count * sizeof *uses);
    for (int i = 0; i < graph->output_count; i++) uses[graph->outputs[i]]++;
    for (int id = graph->node_count - 1; id >= 0; id--) {
        if (!uses[id]) continue;
        const graph_node *node = &graph->nodes[id];
        for (int i = 0; i < node->input_count; i++) uses[node->inputs[i]]++;
    }
}

/* Nodes without inputs have no tensor to take a device from, so their
 * output is allocated here (without memory until the trace runs) and
 * filled in place. */
static porta_status *issue_leaf(const graph_node *node, porta_device *device,
                              porta_tensor **out) {
    porta_tensor *t;
    PORTA_TRY(ops_alloc_meta(device, &node->meta, &t));
    porta_status *status = node->prim.kind == PRIM_CONSTANT
                               ? porta_fill(t, node->prim.value)
                               : ops_prim_run(&node->prim, NULL, 0, &t);
    if (status) {
        porta_tensor_release(t);
        return status;
    }
    *out = t;
    return NULL;
}

/* Issuing re-infers each node; a disagreement with the type recorded in
 * the graph is a bug in one of the two, caught here rather than
 * downstream. */
static porta_status *check_result(const graph_node *node, const porta_tensor *t) {
    const ir_meta *meta = &node->meta;
    if (t->dtype == meta->dtype && t->rank == meta->rank &&
        (!t->rank || !memcmp(t->sizes, meta->sizes, (size_t)t->rank * sizeof *t->sizes)))
        return NULL;
    char got[CORE_SHAPE_STR_CAP], want[CORE_SHAPE_STR_CAP];
    return porta_error(PORTA_ERR_INTERNAL, "produced %s %s, but the graph expects %s %s",
                       porta_dtype_name(t->dtype),
                       core_format_shape(got, sizeof got, t->rank, t->sizes),
                       porta_dtype_name(meta->dtype),
                       core_format_shape(want, sizeof want, meta->rank, meta->sizes));
}

static porta_status *issue_node(const porta_graph *graph, porta_node id, porta_device *device,
                                porta_tensor *const *inputs, run_state *state) {
    const graph_node *node = &graph->nodes[id];
    porta_tensor *result = NULL;
    porta_status *status;
    /* A failure at the flush names the node through its site, as a failure
     * while issuing names it through the context below. */
    char site[TRACE_SITE_CAP];
    snprintf(site, sizeof site, "graph.run: node %d (%s)", (int)id, ir_prim_name(&node->prim));
    porta_trace_set_site(site);
    if (node->prim.kind == PRIM_INPUT) {
        result = inputs[node->prim.offset];
        porta_tensor_retain(result);
        status = NULL;
    } else if (node->input_count == 0) {
        status = issue_leaf(node, device, &result);
    } else {
        const porta_tensor *args[GRAPH_MAX_INPUTS];
        for (int i = 0; i < node->input_count; i++) args[i] = state->values[node->inputs[i]];
        status = ops_prim_run(&node->prim, args, node->input_count, &result);
    }
    if (!status) status = check_result(node, result);
    if (status) {
        porta_tensor_release(result);
        return porta_error_context(status, "graph.run: node %d (%s)", (int)id,
                                   ir_prim_name(&node->prim));
    }
    state->values[id] = result;
    for (int i = 0; i < node->input_count; i++) {
        porta_node input = node->inputs[i];
        if (--state->uses[input] == 0) {
            porta_tensor_release(state->values[input]);
            state->values[input] = NULL;
        }
    }
    return NULL;
}

/* Issues every live node into the trace; the caller has turned fusion on. */
static porta_status *issue_graph(const porta_graph *graph, porta_device *device,
                                 porta_tensor *const *inputs, run_state *state) {
    porta_status *status = NULL;
    for (porta_node id = 0; id < graph->node_count && !status; id++)
        if (state->uses[id]) status = issue_node(graph, id, device, inputs, state);
    porta_trace_set_site(NULL);
    return status;
}

/* Fusion is process-wide: a graph run turns it on for its nodes and back
 * off after (a caller that had it on keeps it on), and like fused eager
 * work it is not meant to race with other threads' ops on the same
 * tensors. The flush at the end runs the caller's pending records too, and
 * the thread's trace site (porta_trace_set_site) is cleared after. */
porta_status *porta_graph_run(const porta_graph *graph, porta_device *device,
                              porta_tensor *const *inputs, int input_count,
                              porta_tensor **outputs, int output_count) {
    PORTA_TRY(check_call(graph, device, inputs, input_count, outputs, output_count));
    size_t n = (size_t)graph->node_count;
    run_state state;
    /* One block for both arrays; pointers first keeps the ints aligned. */
    PORTA_TRY(core_host_alloc(n * (sizeof *state.values + sizeof *state.uses),
                               "graph execution state", (void **)&state.values));
    memset(state.values, 0, n * sizeof *state.values);
    state.uses = (int *)(state.values + n);
    count_uses(graph, state.uses);

    bool fusion_was_on = porta_get_fusion();
    porta_status *status = porta_set_fusion(true);
    if (!status) status = issue_graph(graph, device, inputs, &state);
    /* Runs what was issued even after an issuing error: the trace must not
     * keep records of a failed run. */
    porta_status *flushed = fusion_was_on ? porta_flush() : porta_set_fusion(false);
    if (status)
        porta_status_free(flushed);
    else
        status = flushed;
    if (!status) {
        /* Output marks keep their nodes' uses above zero, so every output is
         * still held here. */
        for (int i = 0; i < output_count; i++) {
            outputs[i] = state.values[graph->outputs[i]];
            porta_tensor_retain(outputs[i]);
        }
    }
    for (size_t i = 0; i < n; i++) porta_tensor_release(state.values[i]);
    core_host_free(state.values);
    return status;
}
