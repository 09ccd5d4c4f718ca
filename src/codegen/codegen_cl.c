/* kir_render_cl: kernel IR -> OpenCL C. One work item per element (no
 * reductions) or per row (with them): the device runs thousands at once, so
 * a row's passes are plain loops. Each op is spelled by the C renderer's
 * expressions (codegen_c_ops.c); the program's prelude maps their C names
 * (uint8_t, sqrtf, nearbyintf, ...) onto OpenCL's.
 *
 * The kernel, `kir_main`, takes: the work count; the domain's sizes; per
 * access its buffer, the element offset of the view and its strides (every
 * dim for FULL accesses, the outer ones for OUTER); then the parameters
 * (double, which is float on devices without fp64). Reductions use the
 * same levels as the C renderer: a reduction folds in the pass of its
 * argument's level, OUTER values appear between passes, FULL stores happen
 * in the last pass. Float sums and products accumulate in double. */
#include "codegen/codegen_cl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen_c_render.h"
#include "core/status.h"

typedef struct cl_render {
    const kir_kernel *k;
    core_text *t;
    int level[KIR_MAX_VALUES];
    bool live[KIR_MAX_VALUES];
} cl_render;

#define W(...) text_printf(r->t, __VA_ARGS__)

static void analyse(cl_render *r) {
    const kir_kernel *k = r->k;
    for (int id = 0; id < k->value_count; id++) {
        const kir_value *v = &k->values[id];
        int level = 0;
        for (int a = 0; a < arg_count(v); a++)
            if (r->level[v->args[a]] > level) level = r->level[v->args[a]];
        r->level[id] = level + (v->kind == KIR_REDUCE);
    }
    for (int a = 0; a < k->access_count; a++)
        if (k->accesses[a].store) r->live[k->accesses[a].value] = true;
    for (int id = k->value_count - 1; id >= 0; id--)
        if (r->live[id])
            for (int a = 0; a < arg_count(&k->values[id]); a++)
                r->live[k->values[id].args[a]] = true;
}

static int access_rank(const cl_render *r, int a) {
    return r->k->accesses[a].space == KIR_OUTER ? r->k->outer_rank : r->k->rank;
}

static void signature(cl_render *r, int params) {
    const kir_kernel *k = r->k;
    W("__kernel void kir_main(long work");
    for (int d = 0; d < k->rank; d++) W(", long n%d", d);
    for (int a = 0; a < k->access_count; a++) {
        const kir_access *x = &k->accesses[a];
        W(", __global %s%s *b%d, long o%d", x->store ? "" : "const ",
          kir_c_storage_type(x->dtype), a, a);
        for (int d = 0; d < access_rank(r, a); d++) W(", long s%d_%d", a, d);
    }
    for (int p = 0; p < params; p++) W(", double p%d", p);
    W(") {\n");
    /* kir_c_param spells a parameter args->params[i] */
    if (params) {
        W("    struct { double params[%d]; } args_ = {{", params);
        for (int p = 0; p < params; p++) W("%sp%d", p ? ", " : "", p);
        W("}}, *args = &args_;\n");
    }
}

/* c<d> = the coordinates of `index` over dims [first, last]. */
static void decompose(cl_render *r, const char *index, int first, int last) {
    W("        long rest = %s;\n", index);
    for (int d = last; d >= first; d--) {
        if (d > first)
            W("        long c%d = rest %% n%d; rest /= n%d;\n", d, d, d);
        else
            W("        long c%d = rest;\n", d);
    }
}

/* e<a> = offset of access a: its base plus dims [first, last]. */
static void offset(cl_render *r, int a, const char *base, int first, int last) {
    W("        long e%d = %s", a, base);
    for (int d = first; d <= last; d++) {
        bool innermost = d == r->k->rank - 1;
        if (innermost && r->k->accesses[a].last == KIR_LAST_UNIT)
            W(" + c%d", d);
        else if (!(innermost && r->k->accesses[a].last == KIR_LAST_ZERO))
            W(" + c%d * s%d_%d", d, a, d);
    }
    W(";\n");
}

static void load_expression(cl_render *r, int a, char *buf, size_t cap) {
    porta_dtype d = r->k->accesses[a].dtype;
    if (is_half(d))
        snprintf(buf, cap, "kir_%s_to_f32(b%d[e%d])", half_name(d), a, a);
    else
        snprintf(buf, cap, "b%d[e%d]", a, a);
}

/* The OpenCL C function of a special-function value (kir_c_calls_runtime). */
static const char *special_function(const kir_value *v) {
    return kir_cl_special_function(v->kind == KIR_UNARY, v->op);
}

/* Declares and computes value id (not a reduction). */
static void emit_value(cl_render *r, int id, const char *indent) {
    const kir_value *v = &r->k->values[id];
    const char *T = kir_c_compute_type(v->dtype);
    W("%s%s v%d = ", indent, T, id);
    char operands[3][16];
    const char *x[3] = {operands[0], operands[1], operands[2]};
    for (int a = 0; a < arg_count(v); a++)
        snprintf(operands[a], sizeof operands[a], "v%d", v->args[a]);
    switch (v->kind) {
    case KIR_LOAD: {
        char load[64];
        load_expression(r, v->access, load, sizeof load);
        W("%s", load);
        break;
    }
    case KIR_CONST: kir_c_constant(r->t, v); break;
    case KIR_PARAM: kir_c_param(r->t, v); break;
    default: {
        porta_dtype arg = r->k->values[v->args[0]].dtype; /* kir_check vetted the op */
        if (kir_c_calls_runtime(v)) {
            if (v->kind == KIR_UNARY)
                W("(%s)%s((double)v%d)", T, special_function(v), v->args[0]);
            else
                W("(%s)%s((double)v%d, (double)v%d)", T, special_function(v), v->args[0],
                  v->args[1]);
        } else if (v->kind == KIR_UNARY && kir_c_array_function(v))
            W("kir_%s(v%d)", kir_c_array_function(v), v->args[0]);
        else
            kir_c_expression(r->t, v, arg, x);
    }
    }
    W(";\n");
    if (is_half(v->dtype) && v->kind != KIR_LOAD)
        W("%sv%d = kir_round_%s(v%d);\n", indent, id, half_name(v->dtype), id);
}

static void store(cl_render *r, int a, const char *indent) {
    const kir_access *x = &r->k->accesses[a];
    if (is_half(x->dtype))
        W("%sb%d[e%d] = kir_f32_to_%s(v%d);\n", indent, a, a, half_name(x->dtype), x->value);
    else
        W("%sb%d[e%d] = v%d;\n", indent, a, a, x->value);
}

/* ---- kernels without reductions ---- */

static void render_elementwise(cl_render *r) {
    const kir_kernel *k = r->k;
    W("    long gid = get_global_id(0);\n    if (gid >= work) return;\n    {\n");
    decompose(r, "gid", 0, k->rank - 1);
    for (int a = 0; a < k->access_count; a++) {
        char base[16];
        snprintf(base, sizeof base, "o%d", a);
        offset(r, a, base, 0, k->rank - 1);
    }
    for (int id = 0; id < k->value_count; id++)
        if (r->live[id]) emit_value(r, id, "        ");
    for (int a = 0; a < k->access_count; a++)
        if (k->accesses[a].store) store(r, a, "        ");
    W("    }\n}\n");
}

/* ---- kernels with reductions ---- */

/* Marks in `need` the FULL values pass `pass` computes: the arguments of
 * reductions folded in it, and in the last pass what FULL stores write. */
static void pass_needs(cl_render *r, int pass, bool last, bool *need) {
    const kir_kernel *k = r->k;
    memset(need, 0, KIR_MAX_VALUES * sizeof *need);
    for (int id = 0; id < k->value_count; id++) {
        const kir_value *v = &k->values[id];
        if (v->kind == KIR_REDUCE && r->live[id] && r->level[v->args[0]] == pass)
            need[v->args[0]] = true;
    }
    if (last)
        for (int a = 0; a < k->access_count; a++)
            if (k->accesses[a].store && k->accesses[a].space == KIR_FULL)
                need[k->accesses[a].value] = true;
    for (int id = k->value_count - 1; id >= 0; id--) {
        const kir_value *v = &k->values[id];
        if (!need[id] || v->space != KIR_FULL) {
            need[id] = false;
            continue;
        }
        for (int a = 0; a < arg_count(v); a++) need[v->args[a]] = true;
    }
}

typedef struct fold {
    const char *type, *init;
} fold;

static fold fold_of(const cl_render *r, const kir_value *v) {
    porta_dtype in = r->k->values[v->args[0]].dtype;
    bool fl = is_float(in);
    switch (v->op) {
    case PORTA_REDUCE_ANY: return (fold){"uint8_t", "0"};
    case PORTA_REDUCE_ALL: return (fold){"uint8_t", "1"};
    case PORTA_REDUCE_SUM: return (fold){fl ? "double" : "uint64_t", "0"};
    case PORTA_REDUCE_PROD: return (fold){fl ? "double" : "uint64_t", "1"};
    default: break;
    }
    bool max = v->op == PORTA_REDUCE_MAX;
    const char *T = kir_c_compute_type(in);
    if (fl) return (fold){T, max ? "-INFINITY" : "INFINITY"};
    switch (in) {
    case PORTA_U8: return (fold){T, max ? "0" : "255"};
    case PORTA_I8: return (fold){T, max ? "(-128)" : "127"};
    case PORTA_I16: return (fold){T, max ? "(-32768)" : "32767"};
    case PORTA_I32: return (fold){T, max ? "INT_MIN" : "INT_MAX"};
    default: return (fold){T, max ? "LONG_MIN" : "LONG_MAX"};
    }
}

static void fold_step(cl_render *r, const kir_value *v, int id) {
    porta_dtype in = r->k->values[v->args[0]].dtype;
    const char *T = kir_c_compute_type(in);
    int x = v->args[0];
    switch (v->op) {
    case PORTA_REDUCE_ANY: W("            t%d |= (uint8_t)(v%d != 0);\n", id, x); break;
    case PORTA_REDUCE_ALL: W("            t%d &= (uint8_t)(v%d != 0);\n", id, x); break;
    case PORTA_REDUCE_SUM:
        W(is_float(in) ? "            t%d += v%d;\n" : "            t%d += (uint64_t)v%d;\n", id, x);
        break;
    case PORTA_REDUCE_PROD:
        W(is_float(in) ? "            t%d *= v%d;\n" : "            t%d *= (uint64_t)v%d;\n", id, x);
        break;
    case PORTA_REDUCE_MAX:
        if (is_float(in))
            W("            t%d = kir_fold_max_%s(t%d, v%d);\n", id, T, id, x);
        else
            W("            t%d = v%d > t%d ? v%d : t%d;\n", id, x, id, x, id);
        break;
    default:
        if (is_float(in))
            W("            t%d = kir_fold_min_%s(t%d, v%d);\n", id, T, id, x);
        else
            W("            t%d = v%d < t%d ? v%d : t%d;\n", id, x, id, x, id);
    }
}

/* Constants and parameters: the same for every element and row. */
static bool is_uniform(const kir_value *v) { return v->kind == KIR_CONST || v->kind == KIR_PARAM; }

/* OUTER values of `level` (reductions finish here, the rest computed). */
static void outer_values(cl_render *r, int level) {
    const kir_kernel *k = r->k;
    for (int id = 0; id < k->value_count; id++) {
        const kir_value *v = &k->values[id];
        if (v->space != KIR_OUTER || !r->live[id] || r->level[id] != level || is_uniform(v))
            continue;
        if (v->kind == KIR_REDUCE) {
            W("    %s v%d = (%s)t%d;\n", kir_c_compute_type(v->dtype), id,
              kir_c_compute_type(v->dtype), id);
            if (is_half(v->dtype)) W("    v%d = kir_round_%s(v%d);\n", id, half_name(v->dtype), id);
        } else {
            if (v->kind == KIR_LOAD) W("    long e%d = ob%d;\n", v->access, v->access);
            emit_value(r, id, "    ");
        }
    }
}

static void render_reduction(cl_render *r) {
    const kir_kernel *k = r->k;
    int outer = k->outer_rank, passes = 0;
    for (int id = 0; id < k->value_count; id++)
        if (k->values[id].kind == KIR_REDUCE && r->live[id] && r->level[id] > passes)
            passes = r->level[id];
    for (int a = 0; a < k->access_count; a++)
        if (k->accesses[a].store && k->accesses[a].space == KIR_FULL &&
            r->level[k->accesses[a].value] + 1 > passes)
            passes = r->level[k->accesses[a].value] + 1;
    W("    long gid = get_global_id(0);\n    if (gid >= work) return;\n    long reduced = 1");
    for (int d = outer; d < k->rank; d++) W(" * n%d", d);
    W(";\n");
    /* ob<a>: every access's offset at this row */
    W("    long ob[%d];\n    {\n", k->access_count);
    if (outer) decompose(r, "gid", 0, outer - 1);
    for (int a = 0; a < k->access_count; a++) {
        W("        ob[%d] = o%d", a, a);
        for (int d = 0; d < outer; d++) W(" + c%d * s%d_%d", d, a, d);
        W(";\n");
    }
    W("    }\n");
    for (int a = 0; a < k->access_count; a++) W("    long ob%d = ob[%d];\n", a, a);
    /* constants and parameters once, visible to every pass and OUTER value */
    for (int id = 0; id < k->value_count; id++)
        if (r->live[id] && is_uniform(&k->values[id])) emit_value(r, id, "    ");
    for (int pass = 0; pass <= passes; pass++) {
        outer_values(r, pass);
        if (pass == passes) break;
        bool need[KIR_MAX_VALUES];
        pass_needs(r, pass, pass == passes - 1, need);
        for (int id = 0; id < k->value_count; id++) {
            const kir_value *v = &k->values[id];
            if (v->kind == KIR_REDUCE && r->live[id] && r->level[v->args[0]] == pass) {
                fold f = fold_of(r, v);
                W("    %s t%d = %s;\n", f.type, id, f.init);
            }
        }
        W("    for (long j = 0; j < reduced; j++) {\n");
        decompose(r, "j", outer, k->rank - 1);
        for (int a = 0; a < k->access_count; a++) {
            const kir_access *x = &k->accesses[a];
            bool used = x->space == KIR_FULL &&
                        ((!x->store && need[x->value]) ||
                         (x->store && pass == passes - 1));
            for (int id = 0; id < k->value_count && !used && !x->store; id++)
                used = need[id] && k->values[id].kind == KIR_LOAD && k->values[id].access == a;
            if (!used) continue;
            char base[16];
            snprintf(base, sizeof base, "ob%d", a);
            offset(r, a, base, outer, k->rank - 1);
        }
        for (int id = 0; id < k->value_count; id++)
            if (need[id] && !is_uniform(&k->values[id])) emit_value(r, id, "            ");
        for (int id = 0; id < k->value_count; id++) {
            const kir_value *v = &k->values[id];
            if (v->kind == KIR_REDUCE && r->live[id] && r->level[v->args[0]] == pass)
                fold_step(r, v, id);
        }
        if (pass == passes - 1)
            for (int a = 0; a < k->access_count; a++)
                if (k->accesses[a].store && k->accesses[a].space == KIR_FULL)
                    store(r, a, "            ");
        W("    }\n");
    }
    for (int a = 0; a < k->access_count; a++)
        if (k->accesses[a].store && k->accesses[a].space == KIR_OUTER) {
            W("    {\n        long e%d = ob%d;\n", a, a);
            store(r, a, "        ");
            W("    }\n");
        }
    W("}\n");
}

porta_status *kir_render_cl(const kir_kernel *kernel, char **source) {
    if (!kernel || !source) return porta_error(PORTA_ERR_INVALID_ARGUMENT, "render_cl: NULL");
    PORTA_TRY(kir_check(kernel));
    bool special = false;
    for (int id = 0; id < kernel->value_count; id++) {
        const kir_value *v = &kernel->values[id];
        if (!kir_c_calls_runtime(v)) continue;
        if (!special_function(v))
            return porta_error(PORTA_ERR_UNSUPPORTED,
                               "render_cl: kernel value %d: %s has no OpenCL kernel (it runs "
                               "on the CPU)",
                               id, v->kind == KIR_UNARY ? porta_unary_op_name(v->op)
                                                        : porta_binary_op_name(v->op));
        special = true;
    }
    cl_render r = {.k = kernel};
    core_text text = {0};
    r.t = &text;
    /* the special functions' definitions only where used: they are long */
    if (special) text_printf(&text, "%s", kir_cl_special_source());
    analyse(&r);
    int params = 0;
    for (int id = 0; id < kernel->value_count; id++)
        if (kernel->values[id].kind == KIR_PARAM && kernel->values[id].param + 1 > params)
            params = kernel->values[id].param + 1;
    signature(&r, params);
    if (kernel->outer_rank == kernel->rank)
        render_elementwise(&r);
    else
        render_reduction(&r);
    if (text.failed) {
        text_free(&text);
        return porta_error(PORTA_ERR_OUT_OF_MEMORY, "render_cl: no memory for the source");
    }
    *source = text.chars;
    return NULL;
}
