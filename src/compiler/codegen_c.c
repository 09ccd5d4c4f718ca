/* kir_render_c: the layout of a generated kernel. Values live in small
 * stack arrays of one block of the innermost dim (KIR_B elements), one loop
 * per value, so the C compiler vectorizes each op and transcendental ops
 * hand whole blocks to libporta's vector math through the runtime table.
 * Values the same for a whole span or row (constants, reduction results
 * and what is computed from them) are scalars.
 *
 * Without reductions, kir_main walks a flat range of elements as spans of
 * rows of the last dim (kir_span). With them, kir_row runs per outer index
 * one pass over the reduced dims per reduction level; a pass computes only
 * the values its reductions and stores need. Rows of up to ROW_CACHE_ELEMS
 * elements keep values a later pass needs again in a scratch row (softmax's
 * exp is computed once, not twice); longer rows recompute them. Float sums and products fold
 * into 16 lanes and every 1024 elements into a double, as the eager
 * reductions do, so accuracy does not decay with length; max/min keep the
 * eager NaN rule (a NaN wins). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/codegen_c_internal.h"
#include "core/status.h"

#define LANES 16

typedef struct render {
    const kir_kernel *k;
    kir_text *t;
    int block; /* KIR_B */
    bool scalar[KIR_MAX_VALUES];  /* one value per span (no reductions) or row */
    int level[KIR_MAX_VALUES];    /* reductions needed before the value exists */
    /* The pass being rendered: the array values it computes, and (caching)
     * those it reads back from the row cache instead. */
    bool needed[KIR_MAX_VALUES], from_cache[KIR_MAX_VALUES];
    /* Caching rows: array values a later pass needs again are kept for the
     * whole row in a scratch buffer (cache[]) when the row is short,
     * instead of being recomputed; first_pass[] is where each is computed. */
    bool caching;
    bool cache[KIR_MAX_VALUES];
    int first_pass[KIR_MAX_VALUES];
} render;

/* Rows of at most this many reduced elements keep values needed by later
 * passes (an exp in softmax) instead of recomputing them; 8 bytes each. */
#define ROW_CACHE_ELEMS 16384

#define P(...) kir_text_printf(r->t, __VA_ARGS__)

static bool is_half(porta_dtype d) { return d == PORTA_F16 || d == PORTA_BF16; }
static const char *half_name(porta_dtype d) { return d == PORTA_F16 ? "f16" : "bf16"; }
static bool is_float(porta_dtype d) { return is_half(d) || d == PORTA_F32 || d == PORTA_F64; }

static int arg_count(const kir_value *v) {
    switch (v->kind) {
    case KIR_UNARY: case KIR_CAST: case KIR_REDUCE: return 1;
    case KIR_BINARY: return 2;
    case KIR_TERNARY: return 3;
    default: return 0;
    }
}

static void analyse(render *r) {
    const kir_kernel *k = r->k;
    int arrays = 0;
    for (int id = 0; id < k->value_count; id++) {
        const kir_value *v = &k->values[id];
        int level = 0;
        bool all_scalar = true;
        for (int a = 0; a < arg_count(v); a++) {
            int arg = v->args[a];
            if (r->level[arg] > level) level = r->level[arg];
            all_scalar &= r->scalar[arg];
        }
        switch (v->kind) {
        case KIR_LOAD: r->scalar[id] = v->space == KIR_OUTER; break;
        case KIR_CONST: case KIR_PARAM: r->scalar[id] = true; break;
        case KIR_REDUCE: r->scalar[id] = true; level++; break;
        default: r->scalar[id] = v->space == KIR_OUTER || all_scalar; break;
        }
        r->level[id] = level;
        arrays += !r->scalar[id];
    }
    r->block = arrays <= 48 ? 128 : arrays <= 96 ? 64 : 32;
}

/* The operand expression of value id at element index `index`. */
static const char *ref(const render *r, int id, const char *index, char *buf, size_t cap) {
    if (r->scalar[id])
        snprintf(buf, cap, "o%d", id);
    else
        snprintf(buf, cap, "v%d[%s]", id, index);
    return buf;
}

/* ---- scalars ---- */

static void declare_scalars(render *r) {
    for (int id = 0; id < r->k->value_count; id++)
        if (r->scalar[id]) P("    %s o%d = 0;\n", kir_c_compute_type(r->k->values[id].dtype), id);
}

static void round_half(render *r, porta_dtype d, const char *target, const char *count) {
    if (is_half(d)) P("    rt->round_%s(%s, %s);\n", half_name(d), target, count);
}

/* Computes scalar value id (not a reduction: those are finished by their pass). */
static void emit_scalar(render *r, int id) {
    const kir_value *v = &r->k->values[id];
    porta_dtype d = v->dtype;
    if (v->kind == KIR_CONST) {
        P("    o%d = ", id);
        kir_c_constant(r->t, v);
        P(";\n");
        return;
    }
    if (v->kind == KIR_PARAM) { /* converted as an eager fill converts its value */
        P("    o%d = ", id);
        kir_c_param(r->t, v);
        P(";\n");
        char target[32];
        snprintf(target, sizeof target, "&o%d", id);
        round_half(r, d, target, "1");
        return;
    }
    if (v->kind == KIR_LOAD) { /* an OUTER load: q<access> points at the row's element */
        if (is_half(d))
            P("    rt->%s_to_f32(q%d, &o%d, 1);\n", half_name(d), v->access, id);
        else if (d == PORTA_BOOL)
            P("    o%d = (uint8_t)(q%d[0] != 0);\n", id, v->access);
        else
            P("    o%d = q%d[0];\n", id, v->access);
        return;
    }
    const char *fn = kir_c_array_function(v);
    if (fn) {
        P("    rt->%s(&o%d, &o%d, 1);\n", fn, v->args[0], id);
    } else {
        char b0[32], b1[32], b2[32];
        const char *x[3] = {"", "", ""};
        char *bufs[3] = {b0, b1, b2};
        for (int a = 0; a < arg_count(v); a++) x[a] = ref(r, v->args[a], "i", bufs[a], 32);
        P("    o%d = ", id);
        kir_c_expression(r->t, v, r->k->values[v->args[0]].dtype, x);
        P(";\n");
    }
    char target[32];
    snprintf(target, sizeof target, "&o%d", id);
    if (!(v->kind == KIR_TERNARY && v->op == PORTA_WHERE)) round_half(r, d, target, "1");
}

/* ---- arrays: one block ---- */

static void index_of(const render *r, int access, char *buf, size_t cap) {
    switch (r->k->accesses[access].last) {
    case KIR_LAST_UNIT: snprintf(buf, cap, "col + i"); break;
    case KIR_LAST_ZERO: snprintf(buf, cap, "0"); break;
    default: snprintf(buf, cap, "(col + i) * s%d", access); break;
    }
}

static void emit_array_load(render *r, int id) {
    const kir_value *v = &r->k->values[id];
    int a = v->access;
    char idx[48];
    index_of(r, a, idx, sizeof idx);
    if (!is_half(v->dtype)) {
        if (v->dtype == PORTA_BOOL)
            P("        for (int i = 0; i < m; i++) v%d[i] = (uint8_t)(p%d[%s] != 0);\n", id, a, idx);
        else
            P("        for (int i = 0; i < m; i++) v%d[i] = p%d[%s];\n", id, a, idx);
        return;
    }
    const char *h = half_name(v->dtype);
    switch (r->k->accesses[a].last) {
    case KIR_LAST_UNIT: P("        rt->%s_to_f32(p%d + col, v%d, m);\n", h, a, id); break;
    case KIR_LAST_ZERO:
        P("        { float s; rt->%s_to_f32(p%d, &s, 1);\n"
          "          for (int i = 0; i < m; i++) v%d[i] = s; }\n", h, a, id);
        break;
    default:
        P("        { uint16_t h[KIR_B];\n"
          "          for (int i = 0; i < m; i++) h[i] = p%d[%s];\n"
          "          rt->%s_to_f32(h, v%d, m); }\n", a, idx, h, id);
    }
}

static void emit_array(render *r, int id) {
    const kir_value *v = &r->k->values[id];
    porta_dtype d = v->dtype;
    const char *T = kir_c_compute_type(d);
    if (r->caching && r->from_cache[id]) {
        P("        const %s *v%d = c%d + pos;\n", T, id, id);
        return;
    }
    /* A contiguous load of a type computed as stored is read in place: the
     * block's stores all come after its last read. */
    if (v->kind == KIR_LOAD && r->k->accesses[v->access].last == KIR_LAST_UNIT && !is_half(d) &&
        d != PORTA_BOOL) {
        P("        const %s *v%d = p%d + col;\n", T, id, v->access);
        return;
    }
    if (r->caching && r->cache[id])
        P("        %s *v%d = c%d + pos;\n", T, id, id);
    else
        P("        %s v%d[KIR_B];\n", T, id);
    if (v->kind == KIR_LOAD) {
        emit_array_load(r, id);
        return;
    }
    const char *fn = kir_c_array_function(v);
    if (fn) {
        int arg = v->args[0];
        if (r->scalar[arg]) {
            P("        for (int i = 0; i < m; i++) v%d[i] = o%d;\n", id, arg);
            P("        rt->%s(v%d, v%d, m);\n", fn, id, id);
        } else {
            P("        rt->%s(v%d, v%d, m);\n", fn, arg, id);
        }
    } else {
        char b0[32], b1[32], b2[32];
        const char *x[3] = {"", "", ""};
        char *bufs[3] = {b0, b1, b2};
        for (int a = 0; a < arg_count(v); a++) x[a] = ref(r, v->args[a], "i", bufs[a], 32);
        P("        for (int i = 0; i < m; i++) v%d[i] = ", id);
        kir_c_expression(r->t, v, r->k->values[v->args[0]].dtype, x);
        P(";\n");
    }
    char target[32];
    snprintf(target, sizeof target, "v%d", id);
    if (!(v->kind == KIR_TERNARY && v->op == PORTA_WHERE) && is_half(d))
        P("        rt->round_%s(%s, m);\n", half_name(d), target);
}

static void emit_array_store(render *r, int a) {
    const kir_access *acc = &r->k->accesses[a];
    int id = acc->value;
    char idx[48];
    index_of(r, a, idx, sizeof idx);
    if (!is_half(acc->dtype)) {
        if (r->scalar[id])
            P("        for (int i = 0; i < m; i++) p%d[%s] = o%d;\n", a, idx, id);
        else
            P("        for (int i = 0; i < m; i++) p%d[%s] = v%d[i];\n", a, idx, id);
        return;
    }
    const char *h = half_name(acc->dtype);
    P("        {\n");
    char src[32];
    if (r->scalar[id]) {
        P("          float f[KIR_B];\n          for (int i = 0; i < m; i++) f[i] = o%d;\n", id);
        snprintf(src, sizeof src, "f");
    } else {
        snprintf(src, sizeof src, "v%d", id);
    }
    if (acc->last == KIR_LAST_UNIT) {
        P("          rt->f32_to_%s(%s, p%d + col, m);\n", h, src, a);
    } else {
        P("          uint16_t h[KIR_B];\n          rt->f32_to_%s(%s, h, m);\n", h, src);
        P("          for (int i = 0; i < m; i++) p%d[%s] = h[i];\n", a, idx);
    }
    P("        }\n");
}

/* Typed pointers (and innermost strides) of FULL accesses at offsets base[]. */
static void emit_pointers(render *r, const char *base, const bool *used) {
    const kir_kernel *k = r->k;
    for (int a = 0; a < k->access_count; a++) {
        const kir_access *acc = &k->accesses[a];
        if (acc->space != KIR_FULL || (used && !used[a])) continue;
        const char *T = kir_c_storage_type(acc->dtype);
        const char *c = acc->store ? "" : "const ";
        P("    %s%s *p%d = (%s%s *)args->data[%d] + %s[%d];\n", c, T, a, c, T, a, base, a);
        if (acc->last == KIR_LAST_ANY)
            P("    const int64_t s%d = args->strides[%d][%d];\n", a, a, k->rank - 1);
    }
}

/* base[a] += the offset of `index` decomposed over dims [first, last]. */
static void emit_decompose(render *r, const char *index, const char *base, int first, int last) {
    if (last < first) return;
    P("    { int64_t rest = %s;\n"
      "      for (int d = %d; d >= %d; d--) {\n"
      "        int64_t at = rest %% args->sizes[d];\n"
      "        rest /= args->sizes[d];\n"
      "        for (int a = 0; a < %d; a++) %s[a] += at * args->strides[a][d];\n"
      "      } }\n",
      index, last, first, r->k->access_count, base);
}

static void emit_block_loop_open(render *r, const char *count, const char *start) {
    P("    for (int64_t j = 0; j < %s; j += KIR_B) {\n"
      "        const int m = %s - j < KIR_B ? (int)(%s - j) : KIR_B;\n"
      "        const int64_t col = %s + j;\n"
      "        (void)col;\n",
      count, count, count, start);
}

/* ---- kernels without reductions ---- */

static void render_elementwise(render *r) {
    const kir_kernel *k = r->k;
    int na = k->access_count, rank = k->rank;
    P("static void kir_span(const kir_args *args, const kir_runtime *rt, const int64_t *base,\n"
      "                     int64_t col0, int64_t n) {\n");
    emit_pointers(r, "base", NULL);
    declare_scalars(r);
    for (int id = 0; id < k->value_count; id++)
        if (r->scalar[id]) emit_scalar(r, id);
    emit_block_loop_open(r, "n", "col0");
    for (int id = 0; id < k->value_count; id++)
        if (!r->scalar[id]) emit_array(r, id);
    for (int a = 0; a < na; a++)
        if (k->accesses[a].store) emit_array_store(r, a);
    P("    }\n}\n\n");

    P("void kir_main(const kir_args *args, const kir_runtime *rt, int64_t begin, int64_t end) {\n"
      "    const int64_t inner = args->sizes[%d];\n"
      "    for (int64_t at = begin; at < end;) {\n"
      "        int64_t row = at / inner, col = at %% inner, n = inner - col;\n"
      "        if (n > end - at) n = end - at;\n"
      "        int64_t base[%d] = {0};\n",
      rank - 1, na);
    emit_decompose(r, "row", "base", 0, rank - 2);
    P("        kir_span(args, rt, base, col, n);\n"
      "        at += n;\n"
      "    }\n}\n");
    if (rank == 2)
        P("\nvoid kir_tile(const kir_args *args, const kir_runtime *rt, int64_t row0, int64_t rows,\n"
          "              int64_t col0, int64_t cols) {\n"
          "    for (int64_t row = row0; row < row0 + rows; row++) {\n"
          "        int64_t base[%d];\n"
          "        for (int a = 0; a < %d; a++) base[a] = row * args->strides[a][0];\n"
          "        kir_span(args, rt, base, col0, cols);\n"
          "    }\n}\n",
          na, na);
}

/* ---- kernels with reductions ---- */

typedef struct fold_spelling {
    const char *lane_type, *total_type, *init;
    bool float_fold;
} fold_spelling;

static const char *int_extreme(porta_dtype d, bool max) {
    switch (d) {
    case PORTA_U8: return max ? "255" : "0";
    case PORTA_I8: return max ? "127" : "(-128)";
    case PORTA_I16: return max ? "32767" : "(-32768)";
    case PORTA_I32: return max ? "INT32_MAX" : "INT32_MIN";
    default: return max ? "INT64_MAX" : "INT64_MIN";
    }
}

static fold_spelling fold_of(const render *r, const kir_value *v) {
    porta_dtype in = r->k->values[v->args[0]].dtype;
    const char *ct = kir_c_compute_type(in);
    fold_spelling f = {ct, ct, "0", is_float(in)};
    switch (v->op) {
    case PORTA_REDUCE_ANY: f.lane_type = f.total_type = "uint8_t"; f.init = "0"; break;
    case PORTA_REDUCE_ALL: f.lane_type = f.total_type = "uint8_t"; f.init = "1"; break;
    case PORTA_REDUCE_SUM: case PORTA_REDUCE_PROD:
        f.init = v->op == PORTA_REDUCE_SUM ? "0" : "1";
        f.lane_type = f.float_fold ? ct : "uint64_t";
        f.total_type = f.float_fold ? "double" : "uint64_t";
        break;
    case PORTA_REDUCE_MAX:
        f.init = f.float_fold ? "-INFINITY" : int_extreme(in, false);
        break;
    default: /* MIN */
        f.init = f.float_fold ? "INFINITY" : int_extreme(in, true);
        break;
    }
    return f;
}

/* acc = acc OP x, as the fold's step. */
static void emit_step(render *r, const kir_value *v, const char *acc, const char *x) {
    porta_dtype in = r->k->values[v->args[0]].dtype;
    const char *ct = kir_c_compute_type(in);
    bool fl = is_float(in);
    switch (v->op) {
    case PORTA_REDUCE_ANY: P("%s |= (uint8_t)(%s != 0);", acc, x); break;
    case PORTA_REDUCE_ALL: P("%s &= (uint8_t)(%s != 0);", acc, x); break;
    case PORTA_REDUCE_SUM:
        P(fl ? "%s += %s;" : "%s += (uint64_t)%s;", acc, x);
        break;
    case PORTA_REDUCE_PROD:
        P(fl ? "%s *= %s;" : "%s *= (uint64_t)%s;", acc, x);
        break;
    case PORTA_REDUCE_MAX:
        if (fl)
            P("%s = kir_fold_max_%s(%s, %s);", acc, ct, acc, x);
        else
            P("%s = %s > %s ? %s : %s;", acc, x, acc, x, acc);
        break;
    default:
        if (fl)
            P("%s = kir_fold_min_%s(%s, %s);", acc, ct, acc, x);
        else
            P("%s = %s < %s ? %s : %s;", acc, x, acc, x, acc);
        break;
    }
}

static void emit_flush(render *r, int pass) {
    const kir_kernel *k = r->k;
    for (int id = 0; id < k->value_count; id++) {
        const kir_value *v = &k->values[id];
        if (v->kind != KIR_REDUCE || r->level[v->args[0]] != pass) continue;
        fold_spelling f = fold_of(r, v);
        char acc[32];
        snprintf(acc, sizeof acc, "t%d", id);
        P("        for (int l = 0; l < %d; l++) { ", LANES);
        char lane[32];
        snprintf(lane, sizeof lane, "(%s)l%d[l]", f.total_type, id);
        /* a float max/min total keeps the lanes' type; sums and products widen */
        emit_step(r, v, acc, lane);
        P(" l%d[l] = %s; }\n", id, f.init);
    }
}

/* Marks the array values pass `pass` computes; while caching, a value an
 * earlier pass computed (other than a load) is read back instead. */
static void mark_needed(render *r, int pass, int id) {
    if (r->scalar[id] || r->needed[id] || r->from_cache[id]) return;
    const kir_value *v = &r->k->values[id];
    if (r->caching && r->first_pass[id] >= 0 && r->first_pass[id] < pass &&
        v->kind != KIR_LOAD) {
        r->from_cache[id] = r->cache[id] = true;
        return;
    }
    r->needed[id] = true;
    for (int a = 0; a < arg_count(v); a++) mark_needed(r, pass, v->args[a]);
}

static int store_pass(const render *r, int access, int reduce_passes) {
    int level = r->level[r->k->accesses[access].value];
    return level < reduce_passes ? level : reduce_passes;
}

/* Fills needed/from_cache for `pass` (and, while caching, cache[] and
 * first_pass[]); `used` gets the FULL accesses the pass touches. Returns
 * whether the pass folds any reduction. */
static bool plan_pass(render *r, int pass, int reduce_passes, bool *used) {
    const kir_kernel *k = r->k;
    memset(r->needed, 0, sizeof r->needed);
    memset(r->from_cache, 0, sizeof r->from_cache);
    bool any_reduce = false;
    for (int id = 0; id < k->value_count; id++) {
        const kir_value *v = &k->values[id];
        if (v->kind == KIR_REDUCE && r->level[v->args[0]] == pass) {
            mark_needed(r, pass, v->args[0]);
            any_reduce = true;
        }
    }
    for (int a = 0; a < k->access_count; a++) {
        const kir_access *acc = &k->accesses[a];
        used[a] = acc->store && acc->space == KIR_FULL && store_pass(r, a, reduce_passes) == pass;
        if (used[a]) mark_needed(r, pass, acc->value);
    }
    for (int id = 0; id < k->value_count; id++) {
        if (!r->needed[id]) continue;
        if (k->values[id].kind == KIR_LOAD) used[k->values[id].access] = true;
        if (r->first_pass[id] < 0) r->first_pass[id] = pass;
    }
    return any_reduce;
}

static void render_pass(render *r, int pass, int reduce_passes) {
    const kir_kernel *k = r->k;
    int rank = k->rank, outer = k->outer_rank, na = k->access_count;
    bool used[KIR_MAX_ACCESSES];
    bool any_reduce = plan_pass(r, pass, reduce_passes, used);

    P("    /* pass %d */\n    {\n", pass);
    for (int id = 0; id < k->value_count; id++) {
        const kir_value *v = &k->values[id];
        if (v->kind != KIR_REDUCE || r->level[v->args[0]] != pass) continue;
        fold_spelling f = fold_of(r, v);
        P("    %s l%d[%d];\n    for (int l = 0; l < %d; l++) l%d[l] = %s;\n", f.lane_type, id,
          LANES, LANES, id, f.init);
        P("    %s t%d = %s;\n", f.total_type, id, f.init);
    }
    P("    int blocks = 0;\n    (void)blocks;\n");
    P("    int64_t reduced_rows = 1;\n"
      "    for (int d = %d; d < %d; d++) reduced_rows *= args->sizes[d];\n"
      "    const int64_t inner = args->sizes[%d];\n"
      "    for (int64_t rr = 0; rr < reduced_rows; rr++) {\n"
      "    int64_t b[%d];\n"
      "    for (int a = 0; a < %d; a++) b[a] = ob[a];\n",
      outer, rank - 1, rank - 1, na, na);
    emit_decompose(r, "rr", "b", outer, rank - 2);
    emit_pointers(r, "b", used);
    emit_block_loop_open(r, "inner", "0");
    if (r->caching) P("        const int64_t pos = rr * inner + j;\n");
    for (int id = 0; id < k->value_count; id++)
        if (r->needed[id] || r->from_cache[id]) emit_array(r, id);
    for (int id = 0; id < k->value_count; id++) {
        const kir_value *v = &k->values[id];
        if (v->kind != KIR_REDUCE || r->level[v->args[0]] != pass) continue;
        char lane[32], x[32], xt[32];
        snprintf(lane, sizeof lane, "l%d[l]", id);
        ref(r, v->args[0], "i + l", x, sizeof x);
        ref(r, v->args[0], "i", xt, sizeof xt);
        P("        { int i = 0;\n"
          "          for (; i + %d <= m; i += %d) for (int l = 0; l < %d; l++) { ",
          LANES, LANES, LANES);
        emit_step(r, v, lane, x);
        P(" }\n          for (; i < m; i++) { ");
        snprintf(lane, sizeof lane, "l%d[0]", id);
        emit_step(r, v, lane, xt);
        P(" } }\n");
    }
    for (int a = 0; a < na; a++)
        if (used[a] && k->accesses[a].store) emit_array_store(r, a);
    if (any_reduce) {
        P("        if (++blocks == %d) {\n", r->block >= 1024 ? 1 : 1024 / r->block);
        emit_flush(r, pass);
        P("        blocks = 0;\n        }\n");
    }
    P("    }\n    }\n"); /* block loop, reduced rows */
    emit_flush(r, pass);
    for (int id = 0; id < k->value_count; id++) {
        const kir_value *v = &k->values[id];
        if (v->kind != KIR_REDUCE || r->level[v->args[0]] != pass) continue;
        P("    o%d = (%s)t%d;\n", id, kir_c_compute_type(v->dtype), id);
        char target[32];
        snprintf(target, sizeof target, "&o%d", id);
        round_half(r, v->dtype, target, "1");
    }
    P("    }\n");
    /* scalars that this pass's results make computable */
    for (int id = 0; id < k->value_count; id++)
        if (r->scalar[id] && k->values[id].kind != KIR_REDUCE && r->level[id] == pass + 1)
            emit_scalar(r, id);
}

/* One row function: kir_row recomputes what later passes need again;
 * kir_row_cached keeps it in `scratch` (ROW_CACHE_ELEMS per value). */
static void render_row(render *r, int reduce_passes, bool store_after) {
    const kir_kernel *k = r->k;
    int na = k->access_count, outer = k->outer_rank;
    for (int id = 0; id < k->value_count; id++) r->first_pass[id] = -1;
    if (r->caching)
        P("static void kir_row_cached(const kir_args *args, const kir_runtime *rt, int64_t row,\n"
          "                           char *scratch) {\n");
    else
        P("static void kir_row(const kir_args *args, const kir_runtime *rt, int64_t row) {\n");
    P("    int64_t ob[%d] = {0};\n", na);
    emit_decompose(r, "row", "ob", 0, outer - 1);
    int slot = 0;
    for (int id = 0; id < k->value_count && r->caching; id++) {
        if (!r->cache[id]) continue;
        const char *T = kir_c_compute_type(k->values[id].dtype);
        P("    %s *c%d = (%s *)(void *)(scratch + %d * (int64_t)%d * 8);\n", T, id, T, slot++,
          ROW_CACHE_ELEMS);
    }
    for (int a = 0; a < na; a++) {
        const kir_access *acc = &k->accesses[a];
        if (acc->space != KIR_OUTER) continue;
        const char *T = kir_c_storage_type(acc->dtype);
        const char *c = acc->store ? "" : "const ";
        P("    %s%s *q%d = (%s%s *)args->data[%d] + ob[%d];\n", c, T, a, c, T, a, a);
    }
    declare_scalars(r);
    for (int id = 0; id < k->value_count; id++)
        if (r->scalar[id] && k->values[id].kind != KIR_REDUCE && r->level[id] == 0)
            emit_scalar(r, id);
    for (int pass = 0; pass < reduce_passes + store_after; pass++)
        render_pass(r, pass, reduce_passes);
    for (int a = 0; a < na; a++) {
        const kir_access *acc = &k->accesses[a];
        if (!acc->store || acc->space != KIR_OUTER) continue;
        if (is_half(acc->dtype))
            P("    rt->f32_to_%s(&o%d, q%d, 1);\n", half_name(acc->dtype), acc->value, a);
        else
            P("    q%d[0] = o%d;\n", a, acc->value);
    }
    P("}\n\n");
}

static void render_reduction(render *r) {
    const kir_kernel *k = r->k;
    int na = k->access_count;
    int reduce_passes = 0;
    bool store_after = false;
    for (int id = 0; id < k->value_count; id++)
        if (k->values[id].kind == KIR_REDUCE && r->level[id] > reduce_passes)
            reduce_passes = r->level[id];
    for (int a = 0; a < na; a++)
        if (k->accesses[a].store && k->accesses[a].space == KIR_FULL &&
            store_pass(r, a, reduce_passes) == reduce_passes)
            store_after = true;
    int passes = reduce_passes + store_after;

    /* What caching would keep: plan every pass once. */
    r->caching = true;
    bool used[KIR_MAX_ACCESSES];
    for (int id = 0; id < k->value_count; id++) r->first_pass[id] = -1;
    for (int pass = 0; pass < passes; pass++) plan_pass(r, pass, reduce_passes, used);
    int cached = 0;
    for (int id = 0; id < k->value_count; id++) cached += r->cache[id];

    r->caching = false;
    render_row(r, reduce_passes, store_after);
    if (cached) {
        r->caching = true;
        render_row(r, reduce_passes, store_after);
        r->caching = false;
        P("void kir_main(const kir_args *args, const kir_runtime *rt, int64_t begin, int64_t end) {\n"
          "    int64_t reduced = 1;\n"
          "    for (int d = %d; d < %d; d++) reduced *= args->sizes[d];\n"
          "    if (reduced <= %d) {\n"
          "        char *scratch = malloc((size_t)%d * %d * 8);\n"
          "        if (scratch) {\n"
          "            for (int64_t row = begin; row < end; row++)\n"
          "                kir_row_cached(args, rt, row, scratch);\n"
          "            free(scratch);\n"
          "            return;\n"
          "        }\n"
          "    }\n"
          "    for (int64_t row = begin; row < end; row++) kir_row(args, rt, row);\n"
          "}\n",
          k->outer_rank, k->rank, ROW_CACHE_ELEMS, cached, ROW_CACHE_ELEMS);
    } else {
        P("void kir_main(const kir_args *args, const kir_runtime *rt, int64_t begin, int64_t end) {\n"
          "    for (int64_t row = begin; row < end; row++) kir_row(args, rt, row);\n"
          "}\n");
    }
}

porta_status *kir_render_c(const kir_kernel *kernel, char **source) {
    if (!source) return porta_error(PORTA_ERR_INVALID_ARGUMENT, "source is NULL");
    PORTA_TRY(kir_check(kernel));
    kir_text text = {0};
    render *r = calloc(1, sizeof *r);
    if (!r) return porta_error(PORTA_ERR_OUT_OF_MEMORY, "out of memory rendering a kernel");
    r->k = kernel;
    r->t = &text;
    analyse(r);
    P("/* generated by porta from a fused kernel */\n"
      "#define _GNU_SOURCE\n#include <math.h>\n#include <stdint.h>\n#include <stdlib.h>\n\n%s\n%s\n"
      "#define KIR_B %d\n\n"
      "const uint64_t kir_key = 0x%016llxull;\n\n",
      KIR_ABI_SOURCE, kir_c_helpers, r->block, (unsigned long long)kir_hash(kernel));
    if (kernel->outer_rank < kernel->rank)
        render_reduction(r);
    else
        render_elementwise(r);
    free(r);
    if (text.failed) {
        free(text.data);
        return porta_error(PORTA_ERR_OUT_OF_MEMORY, "out of memory rendering a kernel");
    }
    *source = text.data;
    return NULL;
}
