/* torch.export's serialized program (the JSON of a .pt2 archive, schema in
 * torch/_export/serde/schema.py) written as a .porta graph (docs/
 * porta-format.md), which model_program_parse then reads and checks like any
 * other. Arguments the archive leaves out take their schema defaults from
 * pt2_schemas.c. Every member read from the program is type-checked:
 * the archive may be hostile. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "io/utf8.h"
#include "model/pt2_graph.h"
#include "model/pt2_schemas.h"

static porta_status *bad(const char *where, const char *expected, const json_value *given) {
    return porta_error(PORTA_ERR_INVALID_ARGUMENT, ".pt2 program: %s: expected %s, got %s", where,
                       expected, given ? json_type_name(given->type) : "nothing");
}

static porta_status *get(const json_value *object, const char *key, json_type type,
                         const char *where, const json_value **out) {
    const json_value *v = object && object->type == JSON_OBJECT ? json_object_get(object, key)
                                                                : NULL;
    if (!v || v->type != type) {
        char what[96];
        snprintf(what, sizeof what, "\"%s\" to be %s", key, json_type_name(type));
        return bad(where, what, v);
    }
    *out = v;
    return NULL;
}

/* The only member of a one-member object (a union of schema.py). */
static porta_status *union_member(const json_value *v, const char *where, const char **key,
                                  const json_value **value) {
    if (!v || v->type != JSON_OBJECT || v->as.object.count != 1)
        return bad(where, "an object of one member", v);
    *key = v->as.object.members[0].key;
    *value = v->as.object.members[0].value;
    return NULL;
}

static porta_status *name_of(const json_value *v, const char *where, const char **out) {
    const json_value *name = NULL;
    PORTA_TRY(get(v, "name", JSON_STRING, where, &name));
    *out = name->as.string.chars;
    return NULL;
}

static void put_string(core_text *t, const char *s) { text_json_string(t, s, strlen(s)); }

/* A JSON value as text (the schema table's defaults). */
static void put_json(core_text *t, const json_value *v) {
    switch (v->type) {
    case JSON_NULL: text_puts(t, "null"); break;
    case JSON_TRUE: text_puts(t, "true"); break;
    case JSON_FALSE: text_puts(t, "false"); break;
    case JSON_NUMBER:
        if (v->as.number.is_integer) text_printf(t, "%lld", (long long)v->as.number.integer);
        else text_printf(t, "%.17g", v->as.number.value);
        break;
    case JSON_STRING: text_json_string(t, v->as.string.chars, v->as.string.length); break;
    case JSON_ARRAY:
        text_puts(t, "[");
        for (size_t i = 0; i < v->as.array.count; i++) {
            if (i) text_puts(t, ",");
            put_json(t, v->as.array.items[i]);
        }
        text_puts(t, "]");
        break;
    case JSON_OBJECT:
        text_puts(t, "{");
        for (size_t i = 0; i < v->as.object.count; i++) {
            if (i) text_puts(t, ",");
            text_json_string(t, v->as.object.members[i].key, v->as.object.members[i].key_length);
            text_puts(t, ":");
            put_json(t, v->as.object.members[i].value);
        }
        text_puts(t, "}");
        break;
    }
}

/* schema.py's ScalarType to a dtype name. */
static const char *dtype_name(const json_value *v) {
    if (!v || v->type != JSON_NUMBER || !v->as.number.is_integer) return NULL;
    switch (v->as.number.integer) {
    case 1: return "uint8";
    case 2: return "int8";
    case 3: return "int16";
    case 4: return "int32";
    case 5: return "int64";
    case 6: return "float16";
    case 7: return "float32";
    case 8: return "float64";
    case 12: return "bool";
    case 13: return "bfloat16";
    default: return NULL;
    }
}

static porta_status *put_int(core_text *t, const json_value *v, const char *where) {
    if (v->type != JSON_NUMBER || !v->as.number.is_integer)
        return bad(where, "an integer within int64", v);
    text_printf(t, "%lld", (long long)v->as.number.integer);
    return NULL;
}

/* SymInt: {"as_name": n} or {"as_int": i}, as a .porta "ints" item or arg. */
static porta_status *put_sym_int(core_text *t, const json_value *v, const char *where, bool wrapped) {
    const char *key = NULL;
    const json_value *value = NULL;
    PORTA_TRY(union_member(v, where, &key, &value));
    if (!strcmp(key, "as_int")) {
        if (wrapped) text_puts(t, "{\"int\":");
        PORTA_TRY(put_int(t, value, where));
    } else if (!strcmp(key, "as_name") && value->type == JSON_STRING) {
        if (wrapped) text_puts(t, "{\"sym\":");
        text_json_string(t, value->as.string.chars, value->as.string.length);
    } else {
        return bad(where, "a symbolic int (as_int or as_name)", value);
    }
    if (wrapped) text_puts(t, "}");
    return NULL;
}

static porta_status *put_list(core_text *t, const json_value *list, const char *kind,
                              const char *where) {
    if (list->type != JSON_ARRAY) return bad(where, "an array", list);
    text_printf(t, "{\"%s\":[", kind);
    for (size_t i = 0; i < list->as.array.count; i++) {
        const json_value *item = list->as.array.items[i];
        if (i) text_puts(t, ",");
        if (!strcmp(kind, "ints")) {
            PORTA_TRY(put_int(t, item, where));
            continue;
        }
        const char *name = NULL;
        PORTA_TRY(name_of(item, where, &name));
        put_string(t, name);
    }
    text_puts(t, "]}");
    return NULL;
}

/* One Argument of schema.py as a .porta argument. */
static porta_status *put_argument(core_text *t, const json_value *arg, const char *where) {
    const char *key = NULL;
    const json_value *v = NULL;
    PORTA_TRY(union_member(arg, where, &key, &v));
    if (!strcmp(key, "as_none") || !strcmp(key, "as_layout") || !strcmp(key, "as_device")) {
        text_puts(t, "null");
    } else if (!strcmp(key, "as_tensor")) {
        const char *name = NULL;
        PORTA_TRY(name_of(v, where, &name));
        text_puts(t, "{\"tensor\":");
        put_string(t, name);
        text_puts(t, "}");
    } else if (!strcmp(key, "as_tensors")) {
        PORTA_TRY(put_list(t, v, "tensors", where));
    } else if (!strcmp(key, "as_optional_tensors")) {
        if (v->type != JSON_ARRAY) return bad(where, "an array", v);
        text_puts(t, "{\"tensors\":[");
        for (size_t i = 0; i < v->as.array.count; i++) {
            const char *item_key = NULL;
            const json_value *item = NULL;
            PORTA_TRY(union_member(v->as.array.items[i], where, &item_key, &item));
            if (i) text_puts(t, ",");
            if (!strcmp(item_key, "as_none")) {
                text_puts(t, "null");
                continue;
            }
            const char *name = NULL;
            if (strcmp(item_key, "as_tensor")) return bad(where, "as_tensor or as_none", item);
            PORTA_TRY(name_of(item, where, &name));
            put_string(t, name);
        }
        text_puts(t, "]}");
    } else if (!strcmp(key, "as_int")) {
        text_puts(t, "{\"int\":");
        PORTA_TRY(put_int(t, v, where));
        text_puts(t, "}");
    } else if (!strcmp(key, "as_ints")) {
        PORTA_TRY(put_list(t, v, "ints", where));
    } else if (!strcmp(key, "as_sym_int")) {
        PORTA_TRY(put_sym_int(t, v, where, true));
    } else if (!strcmp(key, "as_sym_ints")) {
        if (v->type != JSON_ARRAY) return bad(where, "an array", v);
        text_puts(t, "{\"ints\":[");
        for (size_t i = 0; i < v->as.array.count; i++) {
            if (i) text_puts(t, ",");
            PORTA_TRY(put_sym_int(t, v->as.array.items[i], where, false));
        }
        text_puts(t, "]}");
    } else if (!strcmp(key, "as_float")) {
        text_puts(t, "{\"float\":");
        if (v->type == JSON_NUMBER) text_printf(t, "%.17g", v->as.number.value);
        else if (v->type == JSON_STRING && !strcmp(v->as.string.chars, "Infinity"))
            text_puts(t, "\"inf\"");
        else if (v->type == JSON_STRING && !strcmp(v->as.string.chars, "-Infinity"))
            text_puts(t, "\"-inf\"");
        else if (v->type == JSON_STRING && !strcmp(v->as.string.chars, "NaN"))
            text_puts(t, "\"nan\"");
        else return bad(where, "a number, \"Infinity\", \"-Infinity\" or \"NaN\"", v);
        text_puts(t, "}");
    } else if (!strcmp(key, "as_bool")) {
        if (v->type != JSON_TRUE && v->type != JSON_FALSE) return bad(where, "a boolean", v);
        text_puts(t, v->type == JSON_TRUE ? "{\"bool\":true}" : "{\"bool\":false}");
    } else if (!strcmp(key, "as_string")) {
        if (v->type != JSON_STRING) return bad(where, "a string", v);
        text_puts(t, "{\"string\":");
        text_json_string(t, v->as.string.chars, v->as.string.length);
        text_puts(t, "}");
    } else if (!strcmp(key, "as_scalar_type")) {
        const char *name = dtype_name(v);
        if (!name) return bad(where, "a scalar type porta has", v);
        text_printf(t, "{\"dtype\":\"%s\"}", name);
    } else if (!strcmp(key, "as_memory_format")) {
        /* schema.py: 1 contiguous, 2 channels_last, 3 channels_last_3d, 4 preserve. */
        static const int codes[5] = {-1, 0, 2, 3, 1};
        if (v->type != JSON_NUMBER || !v->as.number.is_integer || v->as.number.integer < 1 ||
            v->as.number.integer > 4)
            return bad(where, "a memory format 1..4", v);
        text_printf(t, "{\"int\":%d}", codes[v->as.number.integer]);
    } else {
        char quoted[UTF8_EXCERPT_CAP];
        return porta_error(PORTA_ERR_UNSUPPORTED,
                           ".pt2 program: %s: arguments of kind %s are not supported", where,
                           utf8_excerpt(key, strlen(key), quoted, sizeof quoted));
    }
    return NULL;
}

static int compare_schema(const void *key, const void *entry) {
    return strcmp(key, ((const pt2_schema *)entry)->op);
}

static const pt2_schema *find_schema(const char *op) {
    size_t count = 0;
    while (pt2_schemas[count].op) count++;
    return bsearch(op, pt2_schemas, count, sizeof *pt2_schemas, compare_schema);
}

/* The node's argument called `name`, or NULL. */
static const json_value *named_input(const json_value *inputs, const char *name) {
    for (size_t i = 0; i < inputs->as.array.count; i++) {
        const json_value *n = json_object_get(inputs->as.array.items[i], "name");
        if (n && n->type == JSON_STRING && !strcmp(n->as.string.chars, name))
            return json_object_get(inputs->as.array.items[i], "arg");
    }
    return NULL;
}

/* Every argument of op in schema order: the node's, else the default. */
static porta_status *put_aten_args(core_text *t, const char *op, const json_value *inputs,
                                   const char *where) {
    const pt2_schema *schema = find_schema(op);
    if (!schema)
        return porta_error(PORTA_ERR_UNSUPPORTED,
                           ".pt2 program: %s calls op %s, which Porta's aten layer does not have",
                           where, op);
    json_document *doc = NULL;
    PORTA_TRY(json_parse(schema->args, strlen(schema->args), 4, &doc));
    const json_value *args = json_document_root(doc);
    porta_status *status = NULL;
    size_t used = 0;
    text_puts(t, "[");
    for (size_t i = 0; !status && i < args->as.array.count; i++) {
        const json_value *entry = args->as.array.items[i];
        const char *name = entry->as.array.items[0]->as.string.chars;
        const json_value *given = named_input(inputs, name);
        if (i) text_puts(t, ",");
        if (given) {
            used++;
            status = put_argument(t, given, where);
        } else if (entry->as.array.count == 2) {
            put_json(t, entry->as.array.items[1]);
        } else {
            status = porta_error(PORTA_ERR_INVALID_ARGUMENT,
                                 ".pt2 program: %s: argument %s of %s is missing and has no "
                                 "default",
                                 where, name, op);
        }
    }
    if (!status && used != inputs->as.array.count)
        status = porta_error(PORTA_ERR_INVALID_ARGUMENT,
                             ".pt2 program: %s: %zu arguments, of which %zu are in the schema of "
                             "%s",
                             where, inputs->as.array.count, used, op);
    text_puts(t, "]");
    json_document_free(doc);
    return status;
}

static const struct {
    const char *target, *builtin;
} builtins[] = {
    {"torch.ops.aten.sym_size.int", "sym_size.int"},
    {"torch.ops.aten.sym_numel.default", "sym_numel"},
    {"_operator.add", "sym.add"},
    {"_operator.sub", "sym.sub"},
    {"_operator.mul", "sym.mul"},
    {"_operator.floordiv", "sym.floordiv"},
    {"_operator.mod", "sym.mod"},
    {"_operator.neg", "sym.neg"},
    {"torch.sym_max", "sym.max"},
    {"torch.sym_min", "sym.min"},
};

/* Checks torch.export leaves in the graph; inputs are checked against the
 * declared symbols instead. */
static bool skipped(const char *target) {
    static const char *const names[] = {
        "torch.ops.aten._assert_scalar.default",
        "torch.ops.aten.sym_constrain_range_for_size.default",
        "torch.ops.aten.sym_constrain_range.default",
        "torch.ops.aten._assert_tensor_metadata.default",
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(target, names[i])) return true;
    return false;
}

static porta_status *put_outputs(core_text *t, const json_value *outputs, const char *where) {
    text_puts(t, "[");
    bool first = true;
    for (size_t i = 0; i < outputs->as.array.count; i++) {
        const char *key = NULL;
        const json_value *v = NULL;
        PORTA_TRY(union_member(outputs->as.array.items[i], where, &key, &v));
        if (!strcmp(key, "as_tensors")) {
            if (v->type != JSON_ARRAY) return bad(where, "an array", v);
            for (size_t k = 0; k < v->as.array.count; k++) {
                const char *name = NULL;
                PORTA_TRY(name_of(v->as.array.items[k], where, &name));
                text_puts(t, first ? "" : ",");
                first = false;
                put_string(t, name);
            }
            continue;
        }
        text_puts(t, first ? "" : ",");
        first = false;
        if (!strcmp(key, "as_tensor")) {
            const char *name = NULL;
            PORTA_TRY(name_of(v, where, &name));
            put_string(t, name);
        } else if (!strcmp(key, "as_sym_int")) {
            const json_value *name = NULL;
            PORTA_TRY(get(v, "as_name", JSON_STRING, where, &name));
            put_string(t, name->as.string.chars);
        } else {
            text_puts(t, "null");
        }
    }
    text_puts(t, "]");
    return NULL;
}

static porta_status *put_node(core_text *t, const json_value *node, size_t index, bool *first) {
    char where[320];
    snprintf(where, sizeof where, "node %zu", index);
    const json_value *target = NULL, *inputs = NULL, *outputs = NULL;
    PORTA_TRY(get(node, "target", JSON_STRING, where, &target));
    PORTA_TRY(get(node, "inputs", JSON_ARRAY, where, &inputs));
    PORTA_TRY(get(node, "outputs", JSON_ARRAY, where, &outputs));
    const char *name = target->as.string.chars;
    if (skipped(name)) return NULL;
    text_puts(t, *first ? "\n{\"op\":" : ",\n{\"op\":");
    *first = false;
    const char *builtin = NULL;
    for (size_t i = 0; i < sizeof builtins / sizeof builtins[0]; i++)
        if (!strcmp(name, builtins[i].target)) builtin = builtins[i].builtin;
    if (builtin) {
        put_string(t, builtin);
        text_puts(t, ",\"args\":[");
        for (size_t i = 0; i < inputs->as.array.count; i++) {
            const json_value *arg = NULL;
            PORTA_TRY(get(inputs->as.array.items[i], "arg", JSON_OBJECT, where, &arg));
            if (i) text_puts(t, ",");
            PORTA_TRY(put_argument(t, arg, where));
        }
        text_puts(t, "]");
    } else {
        static const char prefix[] = "torch.ops.aten.";
        if (strncmp(name, prefix, sizeof prefix - 1)) {
            char quoted[UTF8_EXCERPT_CAP];
            return porta_error(PORTA_ERR_UNSUPPORTED,
                               ".pt2 program: node %zu calls %s, which is not an aten op", index,
                               utf8_excerpt(name, strlen(name), quoted, sizeof quoted));
        }
        char op[256];
        snprintf(op, sizeof op, "%s", name + sizeof prefix - 1);
        size_t length = strlen(op);
        if (length > 8 && !strcmp(op + length - 8, ".default")) op[length - 8] = '\0';
        put_string(t, op);
        text_puts(t, ",\"args\":");
        snprintf(where, sizeof where, "node %zu (%s)", index, op);
        PORTA_TRY(put_aten_args(t, op, inputs, where));
    }
    text_puts(t, ",\"outputs\":");
    PORTA_TRY(put_outputs(t, outputs, where));
    text_puts(t, "}");
    return NULL;
}

/* "s77", or the name inside "Symbol('s77', positive=True, integer=True)". */
static bool symbol_name(const char *expr, char *out, size_t cap) {
    const char *start = expr, *end;
    if (!strncmp(expr, "Symbol('", 8)) {
        start = expr + 8;
        end = strchr(start, '\'');
        if (!end) return false;
    } else {
        end = expr + strlen(expr);
    }
    if (end == start || (size_t)(end - start) >= cap) return false;
    for (const char *c = start; c < end; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
              *c == '_'))
            return false;
    memcpy(out, start, (size_t)(end - start));
    out[end - start] = '\0';
    return true;
}

static porta_status *put_symbols(core_text *t, const json_value *program) {
    const json_value *ranges = json_object_get(program, "range_constraints");
    text_puts(t, "\"symbols\":[");
    if (ranges && ranges->type == JSON_OBJECT) {
        bool first = true;
        for (size_t i = 0; i < ranges->as.object.count; i++) {
            char name[128];
            const json_value *range = ranges->as.object.members[i].value;
            if (!symbol_name(ranges->as.object.members[i].key, name, sizeof name)) continue;
            const json_value *min = json_object_get(range, "min_val");
            const json_value *max = json_object_get(range, "max_val");
            text_printf(t, "%s{\"name\":\"%s\"", first ? "" : ",", name);
            first = false;
            /* Unbounded ends are absent, null, or numbers past int64. */
            if (min && min->type == JSON_NUMBER && min->as.number.is_integer)
                text_printf(t, ",\"min\":%lld",
                            (long long)(min->as.number.integer < 0 ? 0 : min->as.number.integer));
            if (max && max->type == JSON_NUMBER && max->as.number.is_integer &&
                max->as.number.integer <= ((int64_t)1 << 48))
                text_printf(t, ",\"max\":%lld", (long long)max->as.number.integer);
            text_puts(t, "}");
        }
    }
    text_puts(t, "],\n");
    return NULL;
}

/* A user input's declaration from graph.tensor_values. */
static porta_status *put_input(core_text *t, const json_value *graph, const char *name) {
    const json_value *values = NULL, *meta = NULL, *sizes = NULL;
    PORTA_TRY(get(graph, "tensor_values", JSON_OBJECT, "the graph", &values));
    PORTA_TRY(get(values, name, JSON_OBJECT, "tensor_values", &meta));
    PORTA_TRY(get(meta, "sizes", JSON_ARRAY, name, &sizes));
    const char *dtype = dtype_name(json_object_get(meta, "dtype"));
    if (!dtype) return bad(name, "a dtype porta has", json_object_get(meta, "dtype"));
    text_puts(t, "{\"name\":");
    put_string(t, name);
    text_printf(t, ",\"dtype\":\"%s\",\"shape\":[", dtype);
    for (size_t d = 0; d < sizes->as.array.count; d++) {
        const char *key = NULL;
        const json_value *v = NULL;
        PORTA_TRY(union_member(sizes->as.array.items[d], name, &key, &v));
        if (d) text_puts(t, ",");
        if (!strcmp(key, "as_int")) {
            PORTA_TRY(put_int(t, v, name));
            continue;
        }
        const json_value *expr = NULL;
        char symbol[128];
        if (strcmp(key, "as_expr")) return bad(name, "sizes as_int or as_expr", v);
        PORTA_TRY(get(v, "expr_str", JSON_STRING, name, &expr));
        if (!symbol_name(expr->as.string.chars, symbol, sizeof symbol)) {
            char quoted[UTF8_EXCERPT_CAP];
            return porta_error(PORTA_ERR_UNSUPPORTED,
                               ".pt2 program: input %s: dim %zu is %s; only one symbol per "
                               "dynamic dim is supported",
                               name, d,
                               utf8_excerpt(expr->as.string.chars, expr->as.string.length,
                                            quoted, sizeof quoted));
        }
        text_printf(t, "\"%s\"", symbol);
    }
    text_puts(t, "]}");
    return NULL;
}

static porta_status *add_weight(pt2_weight_names *w, const char *placeholder, const char *fqn) {
    char **names = realloc(w->placeholders, ((size_t)w->count + 1) * sizeof *names);
    if (!names) return porta_error(PORTA_ERR_OUT_OF_MEMORY, ".pt2 program: out of memory");
    w->placeholders = names;
    char **fqns = realloc(w->fqns, ((size_t)w->count + 1) * sizeof *fqns);
    if (!fqns) return porta_error(PORTA_ERR_OUT_OF_MEMORY, ".pt2 program: out of memory");
    w->fqns = fqns;
    char *a = strdup(placeholder), *b = strdup(fqn);
    if (!a || !b) {
        free(a);
        free(b);
        return porta_error(PORTA_ERR_OUT_OF_MEMORY, ".pt2 program: out of memory");
    }
    w->placeholders[w->count] = a;
    w->fqns[w->count++] = b;
    return NULL;
}

/* Inputs and weights from the signature's input specs, in graph order. */
static porta_status *put_inputs(core_text *t, const pt2_archive *archive, const json_value *graph,
                                const json_value *signature, pt2_weight_names *w) {
    const json_value *specs = NULL;
    PORTA_TRY(get(signature, "input_specs", JSON_ARRAY, "the signature", &specs));
    core_text *weights = &(core_text){0};
    porta_status *status = NULL;
    text_puts(t, "\"inputs\":[");
    text_puts(weights, "\"weights\":[");
    int inputs = 0;
    for (size_t i = 0; !status && i < specs->as.array.count; i++) {
        const char *kind = NULL, *placeholder = NULL;
        const json_value *spec, *arg, *fqn = NULL;
        status = union_member(specs->as.array.items[i], "input spec", &kind, &spec);
        if (status) break;
        if (!strcmp(kind, "user_input")) {
            const json_value *tensor = NULL;
            status = get(spec, "arg", JSON_OBJECT, "user input", &arg);
            if (!status) status = get(arg, "as_tensor", JSON_OBJECT, "user input", &tensor);
            if (!status) status = name_of(tensor, "user input", &placeholder);
            if (!status) text_puts(t, inputs++ ? "," : "");
            if (!status) status = put_input(t, graph, placeholder);
            continue;
        }
        const char *key = !strcmp(kind, "parameter")         ? "parameter_name"
                          : !strcmp(kind, "buffer")          ? "buffer_name"
                          : !strcmp(kind, "tensor_constant") ? "tensor_constant_name"
                                                             : NULL;
        if (!key) {
            char quoted[UTF8_EXCERPT_CAP];
            status = porta_error(PORTA_ERR_UNSUPPORTED,
                                 ".pt2 program: input %zu is a %s, which Porta cannot run", i,
                                 utf8_excerpt(kind, strlen(kind), quoted, sizeof quoted));
            break;
        }
        status = get(spec, "arg", JSON_OBJECT, kind, &arg);
        if (!status) status = name_of(arg, kind, &placeholder);
        if (!status) status = get(spec, key, JSON_STRING, kind, &fqn);
        if (status) break;
        const pt2_tensor_info *info = pt2_tensor_find(archive, fqn->as.string.chars);
        if (!info || info->pickled) {
            status = porta_error(PORTA_ERR_INVALID_ARGUMENT,
                                 ".pt2 program: %s %s is %s in the archive", kind,
                                 fqn->as.string.chars, info ? "only pickled" : "not");
            break;
        }
        text_puts(weights, w->count ? ",{\"name\":" : "{\"name\":");
        put_string(weights, placeholder);
        text_printf(weights, ",\"dtype\":\"%s\",\"shape\":[", porta_dtype_name(info->dtype));
        for (int d = 0; d < info->rank; d++)
            text_printf(weights, "%s%lld", d ? "," : "", (long long)info->sizes[d]);
        text_puts(weights, "]}");
        status = add_weight(w, placeholder, fqn->as.string.chars);
    }
    text_puts(t, "],\n");
    text_puts(weights, "],\n");
    if (!status) status = text_failure(weights, "graph");
    if (!status) text_append(t, weights->chars, weights->length);
    text_free(weights);
    return status;
}

static porta_status *put_graph_outputs(core_text *t, const json_value *signature) {
    const json_value *specs = NULL;
    PORTA_TRY(get(signature, "output_specs", JSON_ARRAY, "the signature", &specs));
    text_puts(t, "\"outputs\":[");
    for (size_t i = 0; i < specs->as.array.count; i++) {
        const char *kind = NULL, *name = NULL;
        const json_value *spec = NULL, *arg = NULL, *tensor = NULL;
        PORTA_TRY(union_member(specs->as.array.items[i], "output spec", &kind, &spec));
        if (strcmp(kind, "user_output")) {
            char quoted[UTF8_EXCERPT_CAP];
            return porta_error(PORTA_ERR_UNSUPPORTED,
                               ".pt2 program: output %zu is a %s (a model that mutates its "
                               "buffers or inputs); Porta runs models without side effects",
                               i, utf8_excerpt(kind, strlen(kind), quoted, sizeof quoted));
        }
        PORTA_TRY(get(spec, "arg", JSON_OBJECT, "user output", &arg));
        PORTA_TRY(get(arg, "as_tensor", JSON_OBJECT, "user output (only tensors)", &tensor));
        PORTA_TRY(name_of(tensor, "user output", &name));
        text_puts(t, i ? "," : "");
        put_string(t, name);
    }
    text_puts(t, "]}\n");
    return NULL;
}

porta_status *pt2_graph_to_porta(const pt2_archive *archive, core_text *out, pt2_weight_names *weights) {
    const json_value *program = pt2_program(archive), *module, *graph, *signature, *nodes;
    PORTA_TRY(get(program, "graph_module", JSON_OBJECT, "the program", &module));
    PORTA_TRY(get(module, "graph", JSON_OBJECT, "graph_module", &graph));
    PORTA_TRY(get(module, "signature", JSON_OBJECT, "graph_module", &signature));
    PORTA_TRY(get(graph, "nodes", JSON_ARRAY, "the graph", &nodes));
    text_printf(out, "{\"version\":[%d,%d],\n", MODEL_FORMAT_MAJOR, MODEL_FORMAT_MINOR);
    PORTA_TRY(put_symbols(out, program));
    PORTA_TRY(put_inputs(out, archive, graph, signature, weights));
    text_puts(out, "\"nodes\":[");
    bool first = true;
    for (size_t i = 0; i < nodes->as.array.count; i++)
        PORTA_TRY(put_node(out, nodes->as.array.items[i], i, &first));
    text_puts(out, "],\n");
    PORTA_TRY(put_graph_outputs(out, signature));
    return text_failure(out, "graph");
}

void pt2_weight_names_free(pt2_weight_names *w) {
    for (int i = 0; i < w->count; i++) {
        free(w->placeholders[i]);
        free(w->fqns[i]);
    }
    free(w->placeholders);
    free(w->fqns);
    *w = (pt2_weight_names){0};
}
