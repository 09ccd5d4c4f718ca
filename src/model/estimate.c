/* porta_model_estimate: the shapes of every value from the program alone
 * (estimate_rules.c), then FLOPs summed over the nodes and memory
 * simulated as the interpreter (run.c) frees values: weights and inputs
 * alive throughout, each result from its node to its last use, a view
 * keeping the value it views alive, the model's outputs to the end. */
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "model/estimate.h"
#include "model/model.h"

/* Each symbol's size: the one given, else its smallest allowed above 0. */
static porta_status *symbol_sizes(const model_program *g, const char *const *symbols,
                                  const int64_t *values, int count, int64_t *sizes) {
    for (int k = 0; k < g->symbol_count; k++)
        sizes[k] = g->symbols[k].min > 1 ? g->symbols[k].min : 1;
    for (int i = 0; i < count; i++) {
        int k = 0;
        while (k < g->symbol_count && strcmp(g->symbols[k].name, symbols[i])) k++;
        if (k == g->symbol_count)
            return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                               "porta_model_estimate: the model has no symbol named '%s'",
                               symbols[i]);
        if (values[i] < g->symbols[k].min || values[i] > g->symbols[k].max)
            return porta_error(PORTA_ERR_OUT_OF_RANGE,
                               "porta_model_estimate: symbol %s must be in [%lld, %lld], got %lld",
                               symbols[i], (long long)g->symbols[k].min,
                               (long long)g->symbols[k].max, (long long)values[i]);
        sizes[k] = values[i];
    }
    return NULL;
}

static void declare(est_value *v, const model_tensor_decl *decl, const int64_t *symbols) {
    *v = (est_value){.known = true, .dtype = decl->dtype, .rank = decl->rank};
    for (int d = 0; d < decl->rank; d++)
        v->sizes[d] = decl->dims[d].size >= 0 ? decl->dims[d].size : symbols[decl->dims[d].symbol];
}

static bool arg_int(const est_value *values, const model_arg *arg, int64_t *out) {
    if (arg->kind == ARG_INT) *out = arg->i;
    else if (arg->kind == ARG_SYM && values[arg->slot].known) *out = values[arg->slot].i;
    else return false;
    return true;
}

/* The integer arithmetic of sizes, as the interpreter does it. */
static bool builtin_value(const est_value *values, const model_node *node, int64_t *out) {
    if (node->builtin == BUILTIN_SYM_SIZE || node->builtin == BUILTIN_SYM_NUMEL) {
        const est_value *t = &values[node->args[0].slot];
        int64_t dim;
        if (!t->known) return false;
        if (node->builtin == BUILTIN_SYM_NUMEL) {
            *out = est_numel(t);
            return true;
        }
        if (!arg_int(values, &node->args[1], &dim) || dim < -t->rank || dim >= t->rank)
            return false;
        *out = t->sizes[dim < 0 ? dim + t->rank : dim];
        return true;
    }
    int64_t x[2] = {0, 0};
    for (int a = 0; a < node->arg_count && a < 2; a++)
        if (!arg_int(values, &node->args[a], &x[a])) return false;
    /* Wrapping, as the interpreter's. */
    switch (node->builtin) {
    case BUILTIN_ADD: *out = (int64_t)((uint64_t)x[0] + (uint64_t)x[1]); return true;
    case BUILTIN_SUB: *out = (int64_t)((uint64_t)x[0] - (uint64_t)x[1]); return true;
    case BUILTIN_MUL: *out = (int64_t)((uint64_t)x[0] * (uint64_t)x[1]); return true;
    case BUILTIN_NEG: *out = (int64_t)(0 - (uint64_t)x[0]); return true;
    case BUILTIN_MAX: *out = x[0] > x[1] ? x[0] : x[1]; return true;
    case BUILTIN_MIN: *out = x[0] < x[1] ? x[0] : x[1]; return true;
    case BUILTIN_FLOORDIV:
    case BUILTIN_MOD: {
        if (x[1] == 0 || x[1] == -1) return false; /* -1: INT64_MIN / -1 overflows */
        int64_t q = x[0] / x[1];
        if (x[0] % x[1] != 0 && ((x[0] < 0) != (x[1] < 0))) q--;
        *out = node->builtin == BUILTIN_FLOORDIV ? q : x[0] - q * x[1];
        return true;
    }
    default: return false;
    }
}

static uint64_t saturating_add(uint64_t a, uint64_t b) { return a + b < a ? UINT64_MAX : a + b; }

static uint64_t bytes_of(const est_value *v) {
    uint64_t bytes;
    if (!v->known || v->view) return 0;
    return __builtin_mul_overflow((uint64_t)est_numel(v), porta_dtype_size(v->dtype), &bytes)
               ? UINT64_MAX
               : bytes;
}

typedef struct walk {
    const model_program *g;
    est_value *values; /* by slot */
    int *root;         /* by slot: the slot whose memory it uses */
    porta_model_cost *out;
} walk;

/* Shapes and FLOPs node by node. */
static porta_status *infer(walk *w) {
    const model_program *g = w->g;
    est_value *outputs = NULL;
    int capacity = 0;
    for (int n = 0; n < g->node_count; n++) {
        const model_node *node = &g->nodes[n];
        bool sized;
        if (node->builtin != BUILTIN_NONE) {
            int64_t value;
            sized = builtin_value(w->values, node, &value);
            if (sized && node->outputs[0] >= 0)
                w->values[node->outputs[0]] = (est_value){.known = true, .i = value};
        } else {
            if (node->output_count > capacity) {
                est_value *grown = realloc(outputs, (size_t)node->output_count * sizeof *grown);
                if (!grown) {
                    free(outputs);
                    return porta_error(PORTA_ERR_OUT_OF_MEMORY, "porta_model_estimate: no memory");
                }
                outputs = grown;
                capacity = node->output_count;
            }
            memset(outputs, 0, (size_t)node->output_count * sizeof *outputs);
            est_node e = {.node = node, .codes = porta_aten_op_args(node->op),
                          .values = w->values, .outputs = outputs};
            sized = est_aten_node(&e);
            int base = node->arg_count && node->args[0].kind == ARG_TENSOR ? node->args[0].slot : -1;
            for (int o = 0; sized && o < node->output_count; o++) {
                int slot = node->outputs[o];
                if (slot < 0) continue;
                w->values[slot] = outputs[o];
                if (outputs[o].view && base >= 0) w->root[slot] = w->root[base];
                else w->values[slot].view = false;
            }
            if (sized) w->out->flops += e.flops;
        }
        if (sized) w->out->nodes_sized++;
        else if (!w->out->unsized_op) w->out->unsized_op = node->op_name;
    }
    free(outputs);
    return NULL;
}

/* The most bytes alive at once. */
static porta_status *simulate_memory(walk *w) {
    const model_program *g = w->g;
    int *keep = malloc(((size_t)g->slot_count + 1) * sizeof *keep);
    uint64_t *made = calloc((size_t)g->node_count + 1, sizeof *made);
    uint64_t *freed = calloc((size_t)g->node_count + 1, sizeof *freed);
    if (!keep || !made || !freed) {
        free(keep);
        free(made);
        free(freed);
        return porta_error(PORTA_ERR_OUT_OF_MEMORY, "porta_model_estimate: no memory");
    }
    /* A value lives to its last use, or past its node when unused; what a
     * view uses lives as long as the view. Slots are numbered in order of
     * definition, so a view comes after the value it views. */
    for (int s = 0; s < g->slot_count; s++) {
        const model_slot *slot = &g->slots[s];
        keep[s] = slot->last_use >= 0 ? slot->last_use
                                      : slot->source == FROM_NODE ? slot->index : g->node_count;
    }
    for (int s = g->slot_count - 1; s >= 0; s--)
        if (w->root[s] != s && keep[w->root[s]] < keep[s]) keep[w->root[s]] = keep[s];
    uint64_t live = 0;
    for (int s = 0; s < g->slot_count; s++) {
        const model_slot *slot = &g->slots[s];
        uint64_t bytes = slot->kind == SLOT_TENSOR ? bytes_of(&w->values[s]) : 0;
        if (slot->source != FROM_NODE) {
            /* weights and inputs: held by the model and the caller */
            live = saturating_add(live, bytes);
            if (slot->source == FROM_WEIGHT)
                w->out->weight_bytes = saturating_add(w->out->weight_bytes, bytes);
            continue;
        }
        made[slot->index] = saturating_add(made[slot->index], bytes);
        freed[keep[s]] = saturating_add(freed[keep[s]], bytes);
    }
    w->out->peak_bytes = live;
    for (int n = 0; n < g->node_count; n++) {
        live = saturating_add(live, made[n]);
        if (live > w->out->peak_bytes) w->out->peak_bytes = live;
        live = live == UINT64_MAX ? live : live - freed[n]; /* saturated: stays absurd */
    }
    free(keep);
    free(made);
    free(freed);
    return NULL;
}

porta_status *model_estimate(const model_program *g, const char *const *symbols,
                             const int64_t *values, int count, porta_model_cost *out) {
    *out = (porta_model_cost){0};
    walk w = {.g = g, .out = out};
    int64_t *sizes = malloc(((size_t)g->symbol_count + 1) * sizeof *sizes);
    w.values = calloc((size_t)g->slot_count + 1, sizeof *w.values);
    w.root = malloc(((size_t)g->slot_count + 1) * sizeof *w.root);
    porta_status *status = NULL;
    if (!sizes || !w.values || !w.root)
        status = porta_error(PORTA_ERR_OUT_OF_MEMORY, "porta_model_estimate: no memory");
    if (!status) status = symbol_sizes(g, symbols, values, count, sizes);
    if (!status) {
        for (int s = 0; s < g->slot_count; s++) w.root[s] = s;
        for (int i = 0; i < g->input_count; i++)
            declare(&w.values[g->inputs[i].slot], &g->inputs[i], sizes);
        for (int i = 0; i < g->weight_count; i++)
            declare(&w.values[g->weights[i].slot], &g->weights[i], sizes);
        status = infer(&w);
    }
    if (!status) status = simulate_memory(&w);
    free(sizes);
    free(w.values);
    free(w.root);
    return status;
}

porta_status *porta_model_estimate(const porta_model *model, const char *const *symbols,
                                   const int64_t *values, int count, porta_model_cost *out) {
    if (!model || !out || count < 0 || (count && (!symbols || !values)))
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "porta_model_estimate: expected a model, %d symbol names and values "
                           "and an output, got NULL",
                           count);
    for (int i = 0; i < count; i++)
        if (!symbols[i])
            return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                               "porta_model_estimate: expected a name for symbol %d, got NULL", i);
    return model_estimate(model->graph, symbols, values, count, out);
}
