/* Checks a parsed graph against the ops it calls, before anything runs:
 * each aten node gets exactly its op's argument count and, in each place,
 * a kind the op takes there (the letters of src/aten/aten.h); builtins get
 * integers. References were resolved in order while parsing, so a value is
 * always defined before use; here each slot learns its last use, which
 * lets the interpreter free intermediates early. */
#include <stdio.h>
#include <string.h>

#include "core/status.h"
#include "model/program.h"

static const char *arg_kind_name(model_arg_kind kind) {
    static const char *const names[] = {"none", "tensor", "tensor list", "int",   "sym int",
                                        "float", "bool",  "int list",   "dtype", "string"};
    return names[kind];
}

/* Whether an op takes an argument of `kind` where its schema has `code`. */
static bool accepts(char code, const model_arg *arg) {
    model_arg_kind kind = arg->kind;
    bool none = kind == ARG_NONE, tensor = kind == ARG_TENSOR;
    bool integer = kind == ARG_INT || kind == ARG_SYM;
    bool number = integer || kind == ARG_FLOAT || kind == ARG_BOOL;
    switch (code) {
    case 'T': case 'N': return tensor || number;
    case 't': case 'n': return tensor || number || none;
    case 'L':
        if (kind != ARG_TENSORS) return false;
        for (int i = 0; i < arg->tensors.count; i++)
            if (arg->tensors.slots[i] < 0) return false;
        return true;
    case 'O': return kind == ARG_TENSORS;
    case 'i': return integer;
    case 'j': return integer || none;
    case 'I': return kind == ARG_INTS;
    case 'J': return kind == ARG_INTS || none;
    case 'f': return kind == ARG_FLOAT || integer;
    case 'g': return kind == ARG_FLOAT || integer || none;
    case 'b': return kind == ARG_BOOL;
    case 'c': return kind == ARG_BOOL || none;
    case 's': return number;
    case 'S': return number || none;
    case 'd': return kind == ARG_DTYPE || none;
    case 'D': return none || kind == ARG_INT; /* the run's device replaces it */
    case 'r': return kind == ARG_STRING || none;
    case 'm': return none || (kind == ARG_INT && arg->i >= PORTA_MEMORY_CONTIGUOUS &&
                              arg->i <= PORTA_MEMORY_CHANNELS_LAST_3D);
    case 'x': return true;
    default: return false;
    }
}

static porta_status *check_aten_node(const model_node *node, int index) {
    const char *name = porta_aten_op_name(node->op);
    const char *codes = porta_aten_op_args(node->op);
    int expected = (int)strlen(codes);
    if (node->arg_count != expected)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "model graph: node %d (%s): expected %d arguments (schema order, every "
                           "one present), got %d",
                           index, name, expected, node->arg_count);
    for (int a = 0; a < expected; a++)
        if (!accepts(codes[a], &node->args[a]))
            return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                               "model graph: node %d (%s): argument %d is a %s, which the op "
                               "does not take there (kind '%c')",
                               index, name, a, arg_kind_name(node->args[a].kind), codes[a]);
    return NULL;
}

static porta_status *check_builtin_node(const model_node *node, int index) {
    int expected = node->builtin == BUILTIN_SYM_SIZE                                   ? 2
                   : node->builtin == BUILTIN_SYM_NUMEL || node->builtin == BUILTIN_NEG ? 1
                                                                                      : 2;
    if (node->arg_count != expected)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "model graph: node %d (%s): expected %d arguments, got %d", index,
                           node->op_name, expected, node->arg_count);
    for (int a = 0; a < expected; a++) {
        bool tensor_place = a == 0 && (node->builtin == BUILTIN_SYM_SIZE ||
                                       node->builtin == BUILTIN_SYM_NUMEL);
        model_arg_kind kind = node->args[a].kind;
        bool ok = tensor_place ? kind == ARG_TENSOR : kind == ARG_INT || kind == ARG_SYM;
        if (!ok)
            return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                               "model graph: node %d (%s): argument %d is a %s, expected %s",
                               index, node->op_name, a, arg_kind_name(kind),
                               tensor_place ? "a tensor" : "an integer");
    }
    if (node->output_count != 1)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "model graph: node %d (%s): expected 1 output, got %d", index,
                           node->op_name, node->output_count);
    return NULL;
}

/* Records that `node` reads `slot`, which must be defined by then. */
static porta_status *mark_use(model_program *graph, int slot, int node) {
    if (slot < 0) return NULL;
    model_slot *s = &graph->slots[slot];
    if (s->source == FROM_NODE && s->index >= node)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "model graph: node %d reads %s, which node %d defines later", node,
                           s->name, s->index);
    if (s->last_use < node) s->last_use = node;
    return NULL;
}

porta_status *model_program_validate(model_program *graph) {
    for (int n = 0; n < graph->node_count; n++) {
        model_node *node = &graph->nodes[n];
        node->op_name = node->builtin == BUILTIN_NONE ? porta_aten_op_name(node->op) : NULL;
        if (node->builtin != BUILTIN_NONE) {
            static const char *const names[] = {
                "", "sym_size.int", "sym_numel", "sym.add", "sym.sub", "sym.mul",
                "sym.floordiv", "sym.mod", "sym.neg", "sym.max", "sym.min"};
            node->op_name = names[node->builtin];
            PORTA_TRY(check_builtin_node(node, n));
        } else {
            if (node->op < 0 || node->op >= porta_aten_op_count())
                return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                                   "model graph: node %d: op id %d is not an aten op", n, node->op);
            PORTA_TRY(check_aten_node(node, n));
        }
        for (int a = 0; a < node->arg_count; a++) {
            const model_arg *arg = &node->args[a];
            if (arg->kind == ARG_TENSOR || arg->kind == ARG_SYM)
                PORTA_TRY(mark_use(graph, arg->slot, n));
            if (arg->kind == ARG_TENSORS)
                for (int i = 0; i < arg->tensors.count; i++)
                    PORTA_TRY(mark_use(graph, arg->tensors.slots[i], n));
            if (arg->kind == ARG_INTS)
                for (int i = 0; i < arg->ints.count; i++)
                    PORTA_TRY(mark_use(graph, arg->ints.syms[i], n));
        }
    }
    for (int o = 0; o < graph->output_count; o++)
        PORTA_TRY(mark_use(graph, graph->outputs[o], graph->node_count));
    for (int i = 0; i < graph->input_count; i++)
        for (int d = 0; d < graph->inputs[i].rank; d++) {
            const model_dim *dim = &graph->inputs[i].dims[d];
            if (dim->size < 0 && (dim->symbol < 0 || dim->symbol >= graph->symbol_count))
                return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                                   "model graph: input %d dim %d: symbol %d is not declared", i, d,
                                   dim->symbol);
        }
    return NULL;
}
