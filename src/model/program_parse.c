/* A .porta graph's JSON text (docs/porta-format.md) into a model_program.
 * Every field is type-checked as it is read, names are resolved to slots
 * as they appear (so a value used before its definition is an error here),
 * and program_validate.c then checks each node against its op. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "io/json.h"
#include "io/utf8.h"
#include "model/program.h"

/* Argument lists nest inside node objects inside the node array. */
enum { GRAPH_MAX_DEPTH = 8 };

/* Names to slots: open addressing over a power-of-two table. */
typedef struct name_map {
    int *entries; /* slot + 1; 0 empty */
    size_t capacity;
    const model_program *graph;
} name_map;

static uint64_t hash_name(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static int map_find(const name_map *map, const char *name) {
    if (!map->capacity) return -1;
    for (size_t i = hash_name(name) & (map->capacity - 1);; i = (i + 1) & (map->capacity - 1)) {
        int e = map->entries[i];
        if (!e) return -1;
        if (!strcmp(map->graph->slots[e - 1].name, name)) return e - 1;
    }
}

static porta_status *map_insert(name_map *map, int slot) {
    if (2 * ((size_t)slot + 1) >= map->capacity) {
        size_t capacity = map->capacity ? 2 * map->capacity : 64;
        int *entries = calloc(capacity, sizeof *entries);
        if (!entries) return porta_error(PORTA_ERR_OUT_OF_MEMORY, "model graph: out of memory");
        for (size_t i = 0; i < map->capacity; i++) {
            int e = map->entries[i];
            if (!e) continue;
            size_t k = hash_name(map->graph->slots[e - 1].name) & (capacity - 1);
            while (entries[k]) k = (k + 1) & (capacity - 1);
            entries[k] = e;
        }
        free(map->entries);
        map->entries = entries;
        map->capacity = capacity;
    }
    size_t k = hash_name(map->graph->slots[slot].name) & (map->capacity - 1);
    while (map->entries[k]) k = (k + 1) & (map->capacity - 1);
    map->entries[k] = slot + 1;
    return NULL;
}

typedef struct parser {
    model_program *graph;
    name_map names;
} parser;

static const char *excerpt(const json_value *string, char *buf) {
    return utf8_excerpt(string->as.string.chars, string->as.string.length, buf, UTF8_EXCERPT_CAP);
}

static porta_status *bad(const char *where, const char *expected, const json_value *given) {
    return porta_error(PORTA_ERR_INVALID_ARGUMENT, "model graph: %s: expected %s, got %s", where,
                       expected, given ? json_type_name(given->type) : "nothing");
}

/* A member that must be there and be of `type`. */
static porta_status *member(const json_value *object, const char *key, json_type type,
                            const char *where, const json_value **out) {
    const json_value *v = json_object_get(object, key);
    if (!v || v->type != type) {
        char what[96];
        snprintf(what, sizeof what, "\"%s\" to be %s", key, json_type_name(type));
        return bad(where, what, v);
    }
    *out = v;
    return NULL;
}

/* A name: a non-empty string without NUL bytes. */
static porta_status *read_name(const json_value *v, const char *where, const char **out) {
    if (!v || v->type != JSON_STRING || !v->as.string.length ||
        strlen(v->as.string.chars) != v->as.string.length)
        return bad(where, "a non-empty name (a string without NUL)", v);
    *out = v->as.string.chars;
    return NULL;
}

static porta_status *read_int(const json_value *v, const char *where, int64_t *out) {
    if (!v || v->type != JSON_NUMBER || !v->as.number.is_integer)
        return bad(where, "an integer within int64", v);
    *out = v->as.number.integer;
    return NULL;
}

static porta_status *define(parser *p, const char *name, model_slot_kind kind,
                            model_slot_source source, int index, int *out) {
    if (map_find(&p->names, name) >= 0) {
        char quoted[UTF8_EXCERPT_CAP];
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "model graph: value %s is defined twice; expected each name once",
                           utf8_excerpt(name, strlen(name), quoted, sizeof quoted));
    }
    PORTA_TRY(model_program_add_slot(p->graph, name, kind, source, index, out));
    return map_insert(&p->names, *out);
}

/* A reference to a value defined earlier, of `kind`. */
static porta_status *reference(parser *p, const json_value *v, model_slot_kind kind,
                               const char *where, int *out) {
    const char *name = NULL;
    PORTA_TRY(read_name(v, where, &name));
    int slot = map_find(&p->names, name);
    char quoted[UTF8_EXCERPT_CAP];
    if (slot < 0)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "model graph: %s: value %s is not defined before this use", where,
                           excerpt(v, quoted));
    if (p->graph->slots[slot].kind != kind)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "model graph: %s: expected %s to be %s, it is %s", where,
                           excerpt(v, quoted), kind == SLOT_TENSOR ? "a tensor" : "an integer",
                           kind == SLOT_TENSOR ? "an integer" : "a tensor");
    *out = slot;
    return NULL;
}

static porta_status *read_dtype(const json_value *v, const char *where, porta_dtype *out) {
    if (!v || v->type != JSON_STRING) return bad(where, "a dtype name such as \"float32\"", v);
    if (model_dtype_from_name(v->as.string.chars, out)) return NULL;
    char quoted[UTF8_EXCERPT_CAP];
    return porta_error(PORTA_ERR_DTYPE,
                       "model graph: %s: expected a dtype among bool uint8 int8 int16 int32 int64 "
                       "float16 bfloat16 float32 float64 complex64 complex128, got %s",
                       where, excerpt(v, quoted));
}

/* {"name", "dtype", "shape": [n | "symbol", ...]} */
static porta_status *read_decl(parser *p, const json_value *v, const char *where,
                               bool symbols_allowed, model_tensor_decl *decl) {
    if (v->type != JSON_OBJECT) return bad(where, "an object", v);
    const char *name = NULL;
    const json_value *shape;
    PORTA_TRY(read_name(json_object_get(v, "name"), where, &name));
    PORTA_TRY(read_dtype(json_object_get(v, "dtype"), where, &decl->dtype));
    PORTA_TRY(member(v, "shape", JSON_ARRAY, where, &shape));
    if (shape->as.array.count > PORTA_MAX_RANK)
        return porta_error(PORTA_ERR_SHAPE, "model graph: %s: expected at most %d dims, got %zu",
                           where, PORTA_MAX_RANK, shape->as.array.count);
    decl->rank = (int)shape->as.array.count;
    for (int d = 0; d < decl->rank; d++) {
        const json_value *dim = shape->as.array.items[d];
        decl->dims[d] = (model_dim){.size = 0, .symbol = -1};
        if (dim->type == JSON_STRING && symbols_allowed) {
            const model_program *g = p->graph;
            int found = -1;
            for (int s = 0; s < g->symbol_count && found < 0; s++)
                if (!strcmp(g->symbols[s].name, dim->as.string.chars)) found = s;
            char quoted[UTF8_EXCERPT_CAP];
            if (found < 0)
                return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                                   "model graph: %s: dim %d names symbol %s, which \"symbols\" "
                                   "does not declare",
                                   where, d, excerpt(dim, quoted));
            decl->dims[d] = (model_dim){.size = -1, .symbol = found};
            continue;
        }
        int64_t size;
        PORTA_TRY(read_int(dim, where, &size));
        if (size < 0 || size > MODEL_MAX_DIM)
            return porta_error(PORTA_ERR_SHAPE,
                               "model graph: %s: dim %d is %lld, expected 0..%lld", where, d,
                               (long long)size, (long long)MODEL_MAX_DIM);
        decl->dims[d].size = size;
    }
    decl->name = strdup(name);
    if (!decl->name) return porta_error(PORTA_ERR_OUT_OF_MEMORY, "model graph: out of memory");
    return NULL;
}

static porta_status *read_symbols(parser *p, const json_value *root) {
    const json_value *list = json_object_get(root, "symbols");
    if (!list) return NULL;
    if (list->type != JSON_ARRAY) return bad("\"symbols\"", "an array", list);
    if (list->as.array.count > MODEL_MAX_LIST)
        return bad("\"symbols\"", "at most 100000 symbols", list);
    model_program *g = p->graph;
    g->symbols = calloc(list->as.array.count + 1, sizeof *g->symbols);
    if (!g->symbols) return porta_error(PORTA_ERR_OUT_OF_MEMORY, "model graph: out of memory");
    for (size_t i = 0; i < list->as.array.count; i++) {
        const json_value *v = list->as.array.items[i];
        if (v->type != JSON_OBJECT) return bad("symbol", "an object", v);
        const char *name = NULL;
        model_symbol *s = &g->symbols[i];
        PORTA_TRY(read_name(json_object_get(v, "name"), "symbol", &name));
        for (int k = 0; k < g->symbol_count; k++)
            if (!strcmp(g->symbols[k].name, name))
                return bad("symbol", "each symbol declared once", v);
        s->min = 0;
        s->max = MODEL_MAX_DIM;
        const json_value *min = json_object_get(v, "min"), *max = json_object_get(v, "max");
        if (min && min->type != JSON_NULL) PORTA_TRY(read_int(min, "symbol \"min\"", &s->min));
        if (max && max->type != JSON_NULL) PORTA_TRY(read_int(max, "symbol \"max\"", &s->max));
        if (s->min < 0 || s->max < s->min || s->max > MODEL_MAX_DIM)
            return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                               "model graph: symbol %s: expected 0 <= min <= max <= %lld, got "
                               "[%lld, %lld]",
                               name, (long long)MODEL_MAX_DIM, (long long)s->min,
                               (long long)s->max);
        s->name = strdup(name);
        if (!s->name) return porta_error(PORTA_ERR_OUT_OF_MEMORY, "model graph: out of memory");
        g->symbol_count++;
    }
    return NULL;
}

static porta_status *read_decls(parser *p, const json_value *root, const char *key,
                                model_slot_source source) {
    const json_value *list;
    PORTA_TRY(member(root, key, JSON_ARRAY, "the graph", &list));
    if (list->as.array.count > MODEL_MAX_LIST)
        return bad(key, "at most 100000 entries", list);
    model_program *g = p->graph;
    model_tensor_decl *decls = calloc(list->as.array.count + 1, sizeof *decls);
    if (!decls) return porta_error(PORTA_ERR_OUT_OF_MEMORY, "model graph: out of memory");
    int *count = source == FROM_INPUT ? &g->input_count : &g->weight_count;
    if (source == FROM_INPUT) g->inputs = decls;
    else g->weights = decls;
    for (size_t i = 0; i < list->as.array.count; i++) {
        char where[64];
        snprintf(where, sizeof where, "%s %zu", source == FROM_INPUT ? "input" : "weight", i);
        PORTA_TRY(read_decl(p, list->as.array.items[i], where, source == FROM_INPUT, &decls[i]));
        (*count)++;
        PORTA_TRY(define(p, decls[i].name, SLOT_TENSOR, source, (int)i, &decls[i].slot));
    }
    return NULL;
}

static porta_status *read_float(const json_value *v, const char *where, double *out) {
    if (v->type == JSON_NUMBER) {
        *out = v->as.number.value;
        return NULL;
    }
    if (v->type == JSON_STRING) {
        const char *s = v->as.string.chars;
        if (!strcmp(s, "inf")) *out = __builtin_inf();
        else if (!strcmp(s, "-inf")) *out = -__builtin_inf();
        else if (!strcmp(s, "nan")) *out = __builtin_nan("");
        else return bad(where, "a number, \"inf\", \"-inf\" or \"nan\"", v);
        return NULL;
    }
    return bad(where, "a number, \"inf\", \"-inf\" or \"nan\"", v);
}

static porta_status *read_list_length(const json_value *v, const char *where, int *out) {
    if (v->type != JSON_ARRAY) return bad(where, "an array", v);
    if (v->as.array.count > MODEL_MAX_LIST) return bad(where, "at most 100000 items", v);
    *out = (int)v->as.array.count;
    return NULL;
}

/* null, or an object of one member naming the kind (docs/porta-format.md). */
static porta_status *read_arg(parser *p, const json_value *v, const char *where, model_arg *arg) {
    arg->kind = ARG_NONE;
    if (v->type == JSON_NULL) return NULL;
    if (v->type != JSON_OBJECT || v->as.object.count != 1)
        return bad(where, "null or an object of one member", v);
    const char *key = v->as.object.members[0].key;
    const json_value *x = v->as.object.members[0].value;
    if (!strcmp(key, "tensor")) {
        PORTA_TRY(reference(p, x, SLOT_TENSOR, where, &arg->slot));
        arg->kind = ARG_TENSOR;
    } else if (!strcmp(key, "sym")) {
        PORTA_TRY(reference(p, x, SLOT_INT, where, &arg->slot));
        arg->kind = ARG_SYM;
    } else if (!strcmp(key, "int")) {
        PORTA_TRY(read_int(x, where, &arg->i));
        arg->kind = ARG_INT;
    } else if (!strcmp(key, "float")) {
        PORTA_TRY(read_float(x, where, &arg->f));
        arg->kind = ARG_FLOAT;
    } else if (!strcmp(key, "bool")) {
        if (x->type != JSON_TRUE && x->type != JSON_FALSE) return bad(where, "true or false", x);
        arg->b = x->type == JSON_TRUE;
        arg->kind = ARG_BOOL;
    } else if (!strcmp(key, "dtype")) {
        PORTA_TRY(read_dtype(x, where, &arg->dtype));
        arg->kind = ARG_DTYPE;
    } else if (!strcmp(key, "string")) {
        if (x->type != JSON_STRING || strlen(x->as.string.chars) != x->as.string.length)
            return bad(where, "a string without NUL", x);
        arg->string = strdup(x->as.string.chars);
        if (!arg->string) return porta_error(PORTA_ERR_OUT_OF_MEMORY, "model graph: out of memory");
        arg->kind = ARG_STRING;
    } else if (!strcmp(key, "tensors")) {
        int n;
        PORTA_TRY(read_list_length(x, where, &n));
        arg->tensors.slots = malloc(((size_t)n + 1) * sizeof(int));
        if (!arg->tensors.slots)
            return porta_error(PORTA_ERR_OUT_OF_MEMORY, "model graph: out of memory");
        arg->kind = ARG_TENSORS;
        arg->tensors.count = n;
        for (int i = 0; i < n; i++) {
            const json_value *item = x->as.array.items[i];
            arg->tensors.slots[i] = -1;
            if (item->type != JSON_NULL)
                PORTA_TRY(reference(p, item, SLOT_TENSOR, where, &arg->tensors.slots[i]));
        }
    } else if (!strcmp(key, "ints")) {
        int n;
        PORTA_TRY(read_list_length(x, where, &n));
        arg->ints.values = calloc((size_t)n + 1, sizeof(int64_t));
        arg->ints.syms = malloc(((size_t)n + 1) * sizeof(int));
        arg->kind = ARG_INTS;
        if (!arg->ints.values || !arg->ints.syms)
            return porta_error(PORTA_ERR_OUT_OF_MEMORY, "model graph: out of memory");
        arg->ints.count = n;
        for (int i = 0; i < n; i++) {
            const json_value *item = x->as.array.items[i];
            arg->ints.syms[i] = -1;
            if (item->type == JSON_STRING)
                PORTA_TRY(reference(p, item, SLOT_INT, where, &arg->ints.syms[i]));
            else
                PORTA_TRY(read_int(item, where, &arg->ints.values[i]));
        }
    } else {
        char quoted[UTF8_EXCERPT_CAP];
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "model graph: %s: expected an argument kind among tensor tensors int "
                           "sym float bool ints dtype string, got %s",
                           where, utf8_excerpt(key, strlen(key), quoted, sizeof quoted));
    }
    return NULL;
}

static porta_status *read_node(parser *p, const json_value *v, int index) {
    char where[96];
    snprintf(where, sizeof where, "node %d", index);
    if (v->type != JSON_OBJECT) return bad(where, "an object", v);
    model_node *node = &p->graph->nodes[index];
    const json_value *op, *args, *outputs;
    PORTA_TRY(member(v, "op", JSON_STRING, where, &op));
    const char *name = NULL;
    PORTA_TRY(read_name(op, where, &name));
    node->builtin = model_builtin_from_name(name);
    node->op = node->builtin == BUILTIN_NONE ? porta_aten_op_find(name) : -1;
    if (node->builtin == BUILTIN_NONE && node->op < 0) {
        char quoted[UTF8_EXCERPT_CAP];
        return porta_error(PORTA_ERR_UNSUPPORTED,
                           "model graph: node %d calls op %s, which Porta's aten layer does not "
                           "have",
                           index, excerpt(op, quoted));
    }
    snprintf(where, sizeof where, "node %d (%s)", index, name);
    PORTA_TRY(member(v, "args", JSON_ARRAY, where, &args));
    PORTA_TRY(member(v, "outputs", JSON_ARRAY, where, &outputs));
    if (args->as.array.count > 64) return bad(where, "at most 64 arguments", args);
    if (outputs->as.array.count > 64) return bad(where, "at most 64 outputs", outputs);
    node->args = calloc(args->as.array.count + 1, sizeof *node->args);
    node->outputs = malloc((outputs->as.array.count + 1) * sizeof(int));
    if (!node->args || !node->outputs)
        return porta_error(PORTA_ERR_OUT_OF_MEMORY, "model graph: out of memory");
    for (size_t a = 0; a < args->as.array.count; a++) {
        char arg_where[128];
        snprintf(arg_where, sizeof arg_where, "%s argument %zu", where, a);
        porta_status *status = read_arg(p, args->as.array.items[a], arg_where, &node->args[a]);
        node->arg_count = (int)a + 1; /* so the argument is freed even on error */
        if (status) return status;
    }
    model_slot_kind kind = node->builtin == BUILTIN_NONE ? SLOT_TENSOR : SLOT_INT;
    for (size_t o = 0; o < outputs->as.array.count; o++) {
        const json_value *out = outputs->as.array.items[o];
        node->outputs[o] = -1;
        node->output_count = (int)o + 1;
        if (out->type == JSON_NULL) continue;
        const char *out_name = NULL;
        PORTA_TRY(read_name(out, where, &out_name));
        PORTA_TRY(define(p, out_name, kind, FROM_NODE, index, &node->outputs[o]));
    }
    p->graph->node_count = index + 1;
    return NULL;
}

static porta_status *read_version(model_program *g, const json_value *root) {
    const json_value *version;
    PORTA_TRY(member(root, "version", JSON_ARRAY, "the graph", &version));
    int64_t major, minor;
    if (version->as.array.count != 2)
        return bad("\"version\"", "[major, minor]", version);
    PORTA_TRY(read_int(version->as.array.items[0], "\"version\"", &major));
    PORTA_TRY(read_int(version->as.array.items[1], "\"version\"", &minor));
    if (major != MODEL_FORMAT_MAJOR || minor < 0)
        return porta_error(PORTA_ERR_UNSUPPORTED,
                           "model graph: format version %lld.%lld is not supported; this build "
                           "reads version %d.x",
                           (long long)major, (long long)minor, MODEL_FORMAT_MAJOR);
    g->version_major = (int)major;
    g->version_minor = minor > 1000000 ? 1000000 : (int)minor;
    return NULL;
}

static porta_status *read_graph(parser *p, const json_value *root) {
    if (root->type != JSON_OBJECT) return bad("the graph", "an object", root);
    model_program *g = p->graph;
    PORTA_TRY(read_version(g, root));
    PORTA_TRY(read_symbols(p, root));
    PORTA_TRY(read_decls(p, root, "inputs", FROM_INPUT));
    PORTA_TRY(read_decls(p, root, "weights", FROM_WEIGHT));
    const json_value *nodes, *outputs;
    PORTA_TRY(member(root, "nodes", JSON_ARRAY, "the graph", &nodes));
    PORTA_TRY(member(root, "outputs", JSON_ARRAY, "the graph", &outputs));
    if (nodes->as.array.count > MODEL_MAX_NODES)
        return bad("\"nodes\"", "at most 1000000 nodes", nodes);
    g->nodes = calloc(nodes->as.array.count + 1, sizeof *g->nodes);
    if (!g->nodes) return porta_error(PORTA_ERR_OUT_OF_MEMORY, "model graph: out of memory");
    for (size_t i = 0; i < nodes->as.array.count; i++) {
        porta_status *status = read_node(p, nodes->as.array.items[i], (int)i);
        g->node_count = (int)i + 1; /* the node's parts are freed even on error */
        if (status) return status;
    }
    int n;
    PORTA_TRY(read_list_length(outputs, "\"outputs\"", &n));
    if (n == 0) return bad("\"outputs\"", "at least one output", outputs);
    g->outputs = malloc((size_t)n * sizeof(int));
    if (!g->outputs) return porta_error(PORTA_ERR_OUT_OF_MEMORY, "model graph: out of memory");
    for (int i = 0; i < n; i++) {
        PORTA_TRY(reference(p, outputs->as.array.items[i], SLOT_TENSOR, "graph output",
                            &g->outputs[i]));
        g->output_count = i + 1;
    }
    return NULL;
}

porta_status *model_program_parse(const char *json, size_t length, model_program **out) {
    if (!json || !out)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "model_program_parse: expected text and an output pointer");
    json_document *document = NULL;
    PORTA_TRY(json_parse(json, length, GRAPH_MAX_DEPTH, &document));
    parser p = {.graph = calloc(1, sizeof(model_program))};
    porta_status *status = NULL;
    if (!p.graph) status = porta_error(PORTA_ERR_OUT_OF_MEMORY, "model graph: out of memory");
    p.names.graph = p.graph;
    if (!status) status = read_graph(&p, json_document_root(document));
    if (!status) status = model_program_validate(p.graph);
    free(p.names.entries);
    json_document_free(document);
    if (status) {
        model_program_free(p.graph);
        return status;
    }
    *out = p.graph;
    return NULL;
}
