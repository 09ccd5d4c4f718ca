/* The model program's storage: slots, freeing, and the names of builtins
 * and dtypes shared by the readers. */
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "model/program.h"

static const struct {
    const char *name;
    model_builtin builtin;
} builtin_names[] = {
    {"sym_size.int", BUILTIN_SYM_SIZE}, {"sym_numel", BUILTIN_SYM_NUMEL},
    {"sym.add", BUILTIN_ADD},           {"sym.sub", BUILTIN_SUB},
    {"sym.mul", BUILTIN_MUL},           {"sym.floordiv", BUILTIN_FLOORDIV},
    {"sym.mod", BUILTIN_MOD},           {"sym.neg", BUILTIN_NEG},
    {"sym.max", BUILTIN_MAX},           {"sym.min", BUILTIN_MIN},
};

model_builtin model_builtin_from_name(const char *name) {
    for (size_t i = 0; i < sizeof builtin_names / sizeof builtin_names[0]; i++)
        if (!strcmp(builtin_names[i].name, name)) return builtin_names[i].builtin;
    return BUILTIN_NONE;
}

bool model_dtype_from_name(const char *name, porta_dtype *out) {
    for (int d = 0; d < PORTA_DTYPE_COUNT; d++)
        if (!strcmp(porta_dtype_name((porta_dtype)d), name)) {
            *out = (porta_dtype)d;
            return true;
        }
    return false;
}

porta_status *model_program_add_slot(model_program *graph, const char *name,
                                     model_slot_kind kind, model_slot_source source, int index,
                                     int *out) {
    if (graph->slot_count >= MODEL_MAX_SLOTS)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "model graph: expected at most %d values, the graph names more",
                           MODEL_MAX_SLOTS);
    /* Grow by doubling; the capacity is the next power of two. */
    int n = graph->slot_count;
    if ((n & (n - 1)) == 0) {
        int capacity = n ? 2 * n : 16;
        model_slot *grown = realloc(graph->slots, (size_t)capacity * sizeof *grown);
        if (!grown) return porta_error(PORTA_ERR_OUT_OF_MEMORY, "model graph: out of memory");
        graph->slots = grown;
    }
    char *copy = strdup(name);
    if (!copy) return porta_error(PORTA_ERR_OUT_OF_MEMORY, "model graph: out of memory");
    graph->slots[n] = (model_slot){.name = copy, .kind = kind, .source = source,
                                   .index = index, .last_use = -1};
    graph->slot_count = n + 1;
    *out = n;
    return NULL;
}

int model_program_find_slot(const model_program *graph, const char *name) {
    for (int i = 0; i < graph->slot_count; i++)
        if (!strcmp(graph->slots[i].name, name)) return i;
    return -1;
}

static void free_arg(model_arg *arg) {
    switch (arg->kind) {
    case ARG_TENSORS: free(arg->tensors.slots); break;
    case ARG_INTS:
        free(arg->ints.values);
        free(arg->ints.syms);
        break;
    case ARG_STRING: free(arg->string); break;
    default: break;
    }
}

void model_program_free(model_program *graph) {
    if (!graph) return;
    for (int i = 0; i < graph->slot_count; i++) free(graph->slots[i].name);
    free(graph->slots);
    for (int i = 0; i < graph->input_count; i++) free(graph->inputs[i].name);
    free(graph->inputs);
    for (int i = 0; i < graph->weight_count; i++) free(graph->weights[i].name);
    free(graph->weights);
    for (int i = 0; i < graph->symbol_count; i++) free(graph->symbols[i].name);
    free(graph->symbols);
    for (int i = 0; i < graph->node_count; i++) {
        model_node *node = &graph->nodes[i];
        for (int a = 0; a < node->arg_count; a++) free_arg(&node->args[a]);
        free(node->args);
        free(node->outputs);
    }
    free(graph->nodes);
    free(graph->outputs);
    free(graph);
}
