/* The interpreter: checks the inputs against the model's declarations,
 * then runs the nodes in order, each aten node through porta_aten_call
 * with its arguments in schema order, releasing every value after its
 * last use so intermediates do not pile up. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/status.h"
#include "model/model.h"

enum { RUN_MAX_ARGS = 64 };

typedef struct run_state {
    const model_program *graph;
    porta_value *values; /* one per slot; NONE once released */
    int device_index;
    porta_device *device;
    double started, time_limit; /* seconds; time_limit 0: none */
} run_state;

static double now_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Checked between nodes: a node cannot be interrupted, a run can. The
 * device's queued or deferred work is waited for first, so the time
 * counted is the work's, not only the time taken to issue it. */
static porta_status *check_time(const run_state *s, int n) {
    if (!s->time_limit) return NULL;
    if (n) PORTA_TRY(porta_device_synchronize(s->device));
    double spent = now_seconds() - s->started;
    if (spent <= s->time_limit) return NULL;
    return porta_error(PORTA_ERR_UNAVAILABLE,
                       "model run stopped after %.3g s, before node %d (%s) of %d: over its "
                       "time limit of %g s",
                       spent, n, s->graph->nodes[n].op_name, s->graph->node_count,
                       s->time_limit);
}

static void release_value(porta_value *v) {
    if (v->kind == PORTA_VALUE_TENSOR) porta_tensor_release(v->tensor);
    v->kind = PORTA_VALUE_NONE;
}

/* Input `i` against its declaration; binds the sizes of symbolic dims. */
static porta_status *check_input(const model_program *g, int i, const porta_tensor *t,
                                 int64_t *symbol_values) {
    const model_tensor_decl *decl = &g->inputs[i];
    if (!t)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "model input %d (%s): expected a tensor, got NULL",
                           i, decl->name);
    if (porta_tensor_dtype(t) != decl->dtype)
        return porta_error(PORTA_ERR_DTYPE, "model input %d (%s): expected %s, got %s", i,
                           decl->name, porta_dtype_name(decl->dtype),
                           porta_dtype_name(porta_tensor_dtype(t)));
    int rank = porta_tensor_rank(t);
    const int64_t *sizes = porta_tensor_sizes(t);
    char given[CORE_SHAPE_STR_CAP];
    if (rank != decl->rank)
        return porta_error(PORTA_ERR_SHAPE, "model input %d (%s): expected %d dims, got shape %s",
                           i, decl->name, decl->rank,
                           core_format_shape(given, sizeof given, rank, sizes));
    for (int d = 0; d < rank; d++) {
        const model_dim *dim = &decl->dims[d];
        if (dim->size >= 0) {
            if (sizes[d] != dim->size)
                return porta_error(PORTA_ERR_SHAPE,
                                   "model input %d (%s): expected size %lld in dim %d, got shape %s",
                                   i, decl->name, (long long)dim->size, d,
                                   core_format_shape(given, sizeof given, rank, sizes));
            continue;
        }
        const model_symbol *s = &g->symbols[dim->symbol];
        int64_t *bound = &symbol_values[dim->symbol];
        if (*bound >= 0 && *bound != sizes[d])
            return porta_error(PORTA_ERR_SHAPE,
                               "model input %d (%s): dim %d is symbol %s, which is %lld elsewhere; "
                               "got shape %s",
                               i, decl->name, d, s->name, (long long)*bound,
                               core_format_shape(given, sizeof given, rank, sizes));
        if (sizes[d] < s->min || sizes[d] > s->max)
            return porta_error(PORTA_ERR_SHAPE,
                               "model input %d (%s): dim %d (symbol %s) must be in [%lld, %lld], "
                               "got shape %s",
                               i, decl->name, d, s->name, (long long)s->min, (long long)s->max,
                               core_format_shape(given, sizeof given, rank, sizes));
        *bound = sizes[d];
    }
    return NULL;
}

/* A new reference to the input on `device` (copied when elsewhere). */
static porta_status *input_on(porta_tensor *t, porta_device *device, porta_tensor **out) {
    if (porta_tensor_device(t) == device) {
        porta_tensor_retain(t);
        *out = t;
        return NULL;
    }
    porta_tensor *copy = NULL;
    PORTA_TRY(porta_tensor_empty(device, porta_tensor_dtype(t), porta_tensor_rank(t),
                                 porta_tensor_sizes(t), &copy));
    porta_status *status = porta_copy(t, copy);
    if (status) {
        porta_tensor_release(copy);
        return status;
    }
    *out = copy;
    return NULL;
}

static int64_t floor_div(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

static porta_status *run_builtin(run_state *s, const model_node *node, int64_t *out) {
    const porta_value *values = s->values;
    if (node->builtin == BUILTIN_SYM_SIZE || node->builtin == BUILTIN_SYM_NUMEL) {
        const porta_tensor *t = values[node->args[0].slot].tensor;
        if (node->builtin == BUILTIN_SYM_NUMEL) {
            *out = porta_tensor_numel(t);
            return NULL;
        }
        int64_t dim = node->args[1].kind == ARG_INT ? node->args[1].i
                                                    : values[node->args[1].slot].i;
        int rank = porta_tensor_rank(t);
        if (dim < -rank || dim >= rank)
            return porta_error(PORTA_ERR_OUT_OF_RANGE, "dim %lld is out of range for rank %d",
                               (long long)dim, rank);
        *out = porta_tensor_sizes(t)[dim < 0 ? dim + rank : dim];
        return NULL;
    }
    int64_t x[2] = {0, 0};
    for (int a = 0; a < node->arg_count; a++)
        x[a] = node->args[a].kind == ARG_INT ? node->args[a].i : values[node->args[a].slot].i;
    switch (node->builtin) {
    case BUILTIN_ADD: *out = (int64_t)((uint64_t)x[0] + (uint64_t)x[1]); break;
    case BUILTIN_SUB: *out = (int64_t)((uint64_t)x[0] - (uint64_t)x[1]); break;
    case BUILTIN_MUL: *out = (int64_t)((uint64_t)x[0] * (uint64_t)x[1]); break;
    case BUILTIN_NEG: *out = (int64_t)(0 - (uint64_t)x[0]); break;
    case BUILTIN_MAX: *out = x[0] > x[1] ? x[0] : x[1]; break;
    case BUILTIN_MIN: *out = x[0] < x[1] ? x[0] : x[1]; break;
    case BUILTIN_FLOORDIV:
    case BUILTIN_MOD:
        if (x[1] == 0) return porta_error(PORTA_ERR_INVALID_ARGUMENT, "integer division by zero");
        if (x[1] == -1) { /* INT64_MIN / -1 overflows; Python's answer wraps here */
            *out = node->builtin == BUILTIN_MOD ? 0 : (int64_t)(0 - (uint64_t)x[0]);
            break;
        }
        *out = node->builtin == BUILTIN_FLOORDIV ? floor_div(x[0], x[1])
                                                 : x[0] - floor_div(x[0], x[1]) * x[1];
        break;
    default: return porta_error(PORTA_ERR_INTERNAL, "unknown builtin %d", (int)node->builtin);
    }
    return NULL;
}

/* Arguments in schema order; lists point into `scratch`, freed by the
 * caller (one block per node call). */
static porta_status *box_args(run_state *s, const model_node *node, porta_value *args,
                              void **scratch) {
    const char *codes = porta_aten_op_args(node->op);
    size_t bytes = 0;
    for (int a = 0; a < node->arg_count; a++) {
        const model_arg *arg = &node->args[a];
        if (arg->kind == ARG_TENSORS) bytes += (size_t)arg->tensors.count * sizeof(porta_tensor *);
        if (arg->kind == ARG_INTS) bytes += (size_t)arg->ints.count * sizeof(int64_t);
    }
    char *block = NULL;
    if (bytes) {
        block = malloc(bytes);
        if (!block) return porta_error(PORTA_ERR_OUT_OF_MEMORY, "model run: out of memory");
    }
    *scratch = block;
    for (int a = 0; a < node->arg_count; a++) {
        const model_arg *arg = &node->args[a];
        porta_value *v = &args[a];
        *v = (porta_value){.kind = PORTA_VALUE_NONE};
        if (codes[a] == 'x') continue;
        if (codes[a] == 'D') { /* factories make their tensors on the run's device */
            *v = (porta_value){.kind = PORTA_VALUE_INT, .i = s->device_index};
            continue;
        }
        switch (arg->kind) {
        case ARG_NONE: break;
        case ARG_TENSOR: *v = s->values[arg->slot]; break;
        case ARG_SYM: *v = (porta_value){.kind = PORTA_VALUE_INT, .i = s->values[arg->slot].i}; break;
        case ARG_INT: *v = (porta_value){.kind = PORTA_VALUE_INT, .i = arg->i}; break;
        case ARG_FLOAT: *v = (porta_value){.kind = PORTA_VALUE_FLOAT, .f = arg->f}; break;
        case ARG_BOOL: *v = (porta_value){.kind = PORTA_VALUE_BOOL, .b = arg->b}; break;
        case ARG_DTYPE: *v = (porta_value){.kind = PORTA_VALUE_DTYPE, .dtype = arg->dtype}; break;
        case ARG_STRING: *v = (porta_value){.kind = PORTA_VALUE_STRING, .string = arg->string}; break;
        case ARG_TENSORS: {
            porta_tensor **items = (porta_tensor **)block;
            block += (size_t)arg->tensors.count * sizeof *items;
            for (int i = 0; i < arg->tensors.count; i++)
                items[i] = arg->tensors.slots[i] < 0 ? NULL
                                                     : s->values[arg->tensors.slots[i]].tensor;
            v->kind = PORTA_VALUE_TENSORS;
            v->tensors.items = items;
            v->tensors.count = arg->tensors.count;
            break;
        }
        case ARG_INTS: {
            int64_t *items = (int64_t *)block;
            block += (size_t)arg->ints.count * sizeof *items;
            for (int i = 0; i < arg->ints.count; i++)
                items[i] = arg->ints.syms[i] < 0 ? arg->ints.values[i]
                                                 : s->values[arg->ints.syms[i]].i;
            v->kind = PORTA_VALUE_INTS;
            v->ints.items = items;
            v->ints.count = arg->ints.count;
            break;
        }
        }
    }
    return NULL;
}

static porta_status *store_results(run_state *s, const model_node *node, porta_value *results,
                                   int count) {
    if (node->output_count > count)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "the op returned %d results, the graph names %d", count,
                           node->output_count);
    for (int o = 0; o < node->output_count; o++) {
        int slot = node->outputs[o];
        if (slot < 0) continue;
        if (results[o].kind != PORTA_VALUE_TENSOR)
            return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                               "result %d is not a tensor, but the graph uses it as one", o);
        s->values[slot] = results[o];
        results[o].kind = PORTA_VALUE_NONE; /* the slot owns it now */
    }
    return NULL;
}

static porta_status *run_node(run_state *s, const model_node *node) {
    if (node->builtin != BUILTIN_NONE) {
        int64_t value = 0;
        PORTA_TRY(run_builtin(s, node, &value));
        if (node->outputs[0] >= 0)
            s->values[node->outputs[0]] = (porta_value){.kind = PORTA_VALUE_INT, .i = value};
        return NULL;
    }
    porta_value args[RUN_MAX_ARGS];
    void *scratch = NULL;
    PORTA_TRY(box_args(s, node, args, &scratch));
    porta_value *results = NULL;
    int count = 0;
    porta_status *status = porta_aten_call(node->op, args, node->arg_count, &results, &count);
    free(scratch);
    if (!status) status = store_results(s, node, results, count);
    porta_aten_results_free(results, count);
    return status;
}

/* Releases what node n read for the last time, and results nobody reads. */
static void release_after(run_state *s, const model_node *node, int n) {
    const model_slot *slots = s->graph->slots;
    for (int a = 0; a < node->arg_count; a++) {
        const model_arg *arg = &node->args[a];
        if ((arg->kind == ARG_TENSOR || arg->kind == ARG_SYM) && slots[arg->slot].last_use == n)
            release_value(&s->values[arg->slot]);
        if (arg->kind == ARG_TENSORS)
            for (int i = 0; i < arg->tensors.count; i++) {
                int slot = arg->tensors.slots[i];
                if (slot >= 0 && slots[slot].last_use == n) release_value(&s->values[slot]);
            }
    }
    for (int o = 0; o < node->output_count; o++) {
        int slot = node->outputs[o];
        if (slot >= 0 && slots[slot].last_use < 0) release_value(&s->values[slot]);
    }
}

static porta_status *run_graph(run_state *s, porta_device *device, porta_tensor **weights,
                               porta_tensor *const *inputs, int64_t *symbol_values) {
    const model_program *g = s->graph;
    for (int i = 0; i < g->input_count; i++)
        PORTA_TRY(check_input(g, i, inputs[i], symbol_values));
    for (int i = 0; i < g->input_count; i++) {
        porta_tensor *t;
        PORTA_TRY(input_on(inputs[i], device, &t));
        s->values[g->inputs[i].slot] = (porta_value){.kind = PORTA_VALUE_TENSOR, .tensor = t};
    }
    for (int w = 0; w < g->weight_count; w++) {
        porta_tensor_retain(weights[w]);
        s->values[g->weights[w].slot] =
            (porta_value){.kind = PORTA_VALUE_TENSOR, .tensor = weights[w]};
    }
    for (int n = 0; n < g->node_count; n++) {
        const model_node *node = &g->nodes[n];
        PORTA_TRY(check_time(s, n));
        porta_status *status = run_node(s, node);
        if (status) return porta_error_context(status, "node %d (%s)", n, node->op_name);
        release_after(s, node, n);
    }
    return NULL;
}

porta_status *porta_model_set_time_limit(porta_model *model, double seconds) {
    if (!model || !isfinite(seconds) || seconds < 0)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "porta_model_set_time_limit: expected a model and seconds >= 0, got "
                           "%s and %g",
                           model ? "a model" : "NULL", seconds);
    model->time_limit = seconds;
    return NULL;
}

porta_status *porta_model_run(porta_model *model, porta_device *device,
                              porta_tensor *const *inputs, int input_count,
                              porta_tensor **outputs, int output_count) {
    if (!model || !device || (input_count && !inputs) || !outputs)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "porta_model_run: expected a model, a device, inputs and outputs");
    const model_program *g = model->graph;
    if (input_count != g->input_count || output_count != g->output_count)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "porta_model_run: the model takes %d inputs and gives %d outputs, got "
                           "%d inputs and room for %d outputs",
                           g->input_count, g->output_count, input_count, output_count);
    run_state s = {.graph = g, .device = device, .started = now_seconds(),
                   .time_limit = model->time_limit};
    porta_device_info info;
    PORTA_TRY(porta_device_info_get(device, &info));
    s.device_index = info.index;
    porta_tensor **weights;
    PORTA_TRY(model_weights_on(model, device, &weights));
    s.values = calloc((size_t)g->slot_count + 1, sizeof *s.values);
    int64_t *symbol_values = malloc(((size_t)g->symbol_count + 1) * sizeof *symbol_values);
    porta_status *status = NULL;
    if (!s.values || !symbol_values)
        status = porta_error(PORTA_ERR_OUT_OF_MEMORY, "porta_model_run: out of memory");
    for (int k = 0; !status && k < g->symbol_count; k++) symbol_values[k] = -1;
    if (!status) status = run_graph(&s, device, weights, inputs, symbol_values);
    if (!status)
        for (int o = 0; o < g->output_count; o++) {
            porta_value *v = &s.values[g->outputs[o]];
            porta_tensor_retain(v->tensor);
            outputs[o] = v->tensor;
        }
    for (int i = 0; s.values && i < g->slot_count; i++) release_value(&s.values[i]);
    free(s.values);
    free(symbol_values);
    return status;
}
