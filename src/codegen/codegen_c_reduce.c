/* The passes of a kernel with reductions: per outer index (row), one pass
 * over the reduced dims per reduction level; a pass computes only the values
 * its reductions and stores need. Float sums and products fold into 16
 * lanes and every 1024 elements into a double, as the eager reductions do,
 * so accuracy does not decay with length; max/min keep the eager NaN rule
 * (a NaN wins). Rows of up to ROW_CACHE_ELEMS elements keep values a later
 * pass needs again in a scratch row when they are costly to recompute
 * (softmax's exp is computed once, not twice; layer norm's x - mean is
 * recomputed, cheaper than a store and a load); longer rows recompute all. */
#include <stdio.h>
#include <string.h>

#include "codegen/codegen_c_render.h"

#define LANES 16

/* Whether value v is a (live) reduction folded in `pass`. */
static bool folds_in(const render *r, const kir_value *v, int pass) {
    return v->kind == KIR_REDUCE && r->live[v - r->k->values] && r->level[v->args[0]] == pass;
}

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
        if (!folds_in(r, v, pass)) continue;
        fold_spelling f = fold_of(r, v);
        char acc[32], lane[32], other[32];
        /* the lanes fold in halves (constant trip counts: vectorized), as the
         * eager reductions' lane tree, and then into the total */
        for (int half = LANES / 2; half >= 1; half /= 2) {
            snprintf(lane, sizeof lane, "l%d[l]", id);
            snprintf(other, sizeof other, "l%d[l + %d]", id, half);
            P("        for (int l = 0; l < %d; l++) { ", half);
            emit_step(r, v, lane, other);
            P(" }\n");
        }
        snprintf(acc, sizeof acc, "t%d", id);
        /* a float max/min total keeps the lanes' type; sums and products widen */
        snprintf(lane, sizeof lane, "(%s)l%d[0]", f.total_type, id);
        P("        ");
        emit_step(r, v, acc, lane);
        P("\n        for (int l = 0; l < %d; l++) l%d[l] = %s;\n", LANES, id, f.init);
    }
}

/* Marks the array values pass `pass` computes; while caching, a value an
 * earlier pass computed (other than a load) is read back instead. */
/* Whether array value id costs more to compute again than to read back
 * from the row cache: a vector-math call, a libm call or a float16/bfloat16
 * rounding on its way from the loads (a few adds and multiplies are cheaper
 * than the store and load a cached value takes). */
static bool worth_caching(const render *r, int id) {
    if (r->scalar[id]) return false;
    const kir_value *v = &r->k->values[id];
    if (v->kind == KIR_LOAD) return false;
    if (is_half(v->dtype) || kir_c_array_function(v)) return true;
    bool cheap = false;
    switch (v->kind) {
    case KIR_UNARY:
        cheap = v->op == PORTA_NEG || v->op == PORTA_ABS || !is_float(v->dtype);
        break;
    case KIR_BINARY:
        cheap = v->op == PORTA_ADD || v->op == PORTA_SUB || v->op == PORTA_MUL ||
                v->op == PORTA_MAXIMUM || v->op == PORTA_MINIMUM || !is_float(v->dtype);
        break;
    case KIR_TERNARY: cheap = v->op == PORTA_WHERE; break;
    case KIR_CAST: cheap = true; break;
    default: break;
    }
    if (!cheap) return true;
    for (int a = 0; a < arg_count(v); a++)
        if (worth_caching(r, v->args[a])) return true;
    return false;
}

static void mark_needed(render *r, int pass, int id) {
    if (r->scalar[id] || r->needed[id] || r->from_cache[id]) return;
    const kir_value *v = &r->k->values[id];
    if (r->caching && r->first_pass[id] >= 0 && r->first_pass[id] < pass &&
        worth_caching(r, id)) {
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
        if (folds_in(r, v, pass)) {
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

typedef struct pass_block_ctx {
    int pass;
    const bool *used;
    bool any_reduce;
} pass_block_ctx;

/* One block of a pass: its arrays, lane folds and stores. */
static void pass_block(render *r, void *ctx_) {
    const pass_block_ctx *ctx = ctx_;
    const kir_kernel *k = r->k;
    int pass = ctx->pass, na = k->access_count;
    const bool *used = ctx->used;
    if (r->caching) P("        const int64_t pos = rr * inner + j;\n");
    for (int id = 0; id < k->value_count; id++)
        if (r->needed[id] || r->from_cache[id]) cg_emit_array(r, id);
    for (int id = 0; id < k->value_count; id++) {
        const kir_value *v = &k->values[id];
        if (!folds_in(r, v, pass)) continue;
        char lane[32], x[32], xt[32];
        snprintf(lane, sizeof lane, "l%d[l]", id);
        cg_ref(r, v->args[0], "i + l", x, sizeof x);
        cg_ref(r, v->args[0], "i", xt, sizeof xt);
        /* a float max/min step is a select: its lane loop stays a loop (not
         * unrolled first), so that the compiler vectorizes it; sums and
         * products vectorize either way */
        bool select = is_float(r->k->values[v->args[0]].dtype) &&
                      (v->op == PORTA_REDUCE_MAX || v->op == PORTA_REDUCE_MIN);
        P("        { int i = 0;\n"
          "          for (; i + %d <= m; i += %d) {\n"
          "%s"
          "            for (int l = 0; l < %d; l++) { ",
          LANES, LANES, select ? "_Pragma(\"GCC unroll 1\")\n" : "", LANES);
        emit_step(r, v, lane, x);
        /* the last elements (fewer than the lanes) fold into lane 0: spread
         * over the lanes, their variable index keeps the lanes in memory */
        P(" } }\n          for (; i < m; i++) { ");
        snprintf(lane, sizeof lane, "l%d[0]", id);
        emit_step(r, v, lane, xt);
        P(" } }\n");
    }
    for (int a = 0; a < na; a++)
        if (used[a] && k->accesses[a].store) cg_emit_array_store(r, a);
    if (ctx->any_reduce) {
        P("        if (++blocks == %d) {\n", r->block >= 1024 ? 1 : 1024 / r->block);
        emit_flush(r, pass);
        P("        blocks = 0;\n        }\n");
    }
}

static void render_pass(render *r, int pass, int reduce_passes) {
    const kir_kernel *k = r->k;
    int rank = k->rank, outer = k->outer_rank, na = k->access_count;
    bool used[KIR_MAX_ACCESSES];
    bool any_reduce = plan_pass(r, pass, reduce_passes, used);

    P("    /* pass %d */\n    {\n", pass);
    for (int id = 0; id < k->value_count; id++) {
        const kir_value *v = &k->values[id];
        if (!folds_in(r, v, pass)) continue;
        fold_spelling f = fold_of(r, v);
        P("    %s l%d[%d];\n    for (int l = 0; l < %d; l++) l%d[l] = %s;\n", f.lane_type, id,
          LANES, LANES, id, f.init);
        P("    %s t%d = %s;\n", f.total_type, id, f.init);
    }
    P("    int blocks = 0;\n    (void)blocks;\n");
    P("    const int64_t inner = args->sizes[%d];\n", rank - 1);
    if (outer == rank - 1) /* one reduced dim: one row of it */
        P("    { const int64_t rr = 0;\n    (void)rr;\n");
    else
        P("    int64_t reduced_rows = 1;\n"
          "    for (int d = %d; d < %d; d++) reduced_rows *= args->sizes[d];\n"
          "    for (int64_t rr = 0; rr < reduced_rows; rr++) {\n",
          outer, rank - 1);
    P("    int64_t b[%d];\n"
      "    for (int a = 0; a < %d; a++) b[a] = ob[a];\n",
      na, na);
    cg_emit_decompose(r, "rr", "b", outer, rank - 2);
    cg_emit_pointers(r, "b", used);
    pass_block_ctx ctx = {pass, used, any_reduce};
    cg_emit_blocks(r, "inner", "0", 0, pass_block, &ctx);
    P("    }\n"); /* reduced rows */
    emit_flush(r, pass);
    for (int id = 0; id < k->value_count; id++) {
        const kir_value *v = &k->values[id];
        if (!folds_in(r, v, pass)) continue;
        P("    o%d = (%s)t%d;\n", id, kir_c_compute_type(v->dtype), id);
        char target[32];
        snprintf(target, sizeof target, "&o%d", id);
        cg_round_half(r, v->dtype, target, "1");
    }
    P("    }\n");
    /* scalars that this pass's results make computable */
    for (int id = 0; id < k->value_count; id++)
        if (r->scalar[id] && r->live[id] && k->values[id].kind != KIR_REDUCE &&
            r->level[id] == pass + 1)
            cg_emit_scalar(r, id);
}

/* One row function: kir_row recomputes what later passes need again;
 * kir_row_cached keeps it in `scratch` (ROW_CACHE_ELEMS per value). */
static void render_row(render *r, int reduce_passes, bool store_after) {
    const kir_kernel *k = r->k;
    int na = k->access_count, outer = k->outer_rank;
    for (int id = 0; id < k->value_count; id++) r->first_pass[id] = -1;
    /* ob[a]: access a's offset at the row, kept by kir_main */
    if (r->caching)
        P("static void kir_row_cached(const kir_args *args, const kir_runtime *rt,\n"
          "                           const int64_t *ob, char *scratch) {\n");
    else
        P("static void kir_row(const kir_args *args, const kir_runtime *rt, const int64_t *ob) {\n");
    (void)outer;
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
    cg_declare_scalars(r);
    for (int id = 0; id < k->value_count; id++)
        if (r->scalar[id] && r->live[id] && k->values[id].kind != KIR_REDUCE &&
            r->level[id] == 0)
            cg_emit_scalar(r, id);
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

/* kir_main's walk over rows: the outer index of `begin` decomposed once
 * (idx, and ob, each access's offset there), then stepped row by row with
 * a carry, instead of divisions per row. */
static void emit_row_walk_open(render *r) {
    int na = r->k->access_count, outer = r->k->outer_rank;
    P("    int64_t ob[%d] = {0};\n", na);
    if (outer == 0) return;
    P("    int64_t idx[%d];\n"
      "    { int64_t rest = begin;\n"
      "      for (int d = %d; d > 0; d--) {\n"
      "        idx[d] = rest %% args->sizes[d];\n"
      "        rest /= args->sizes[d];\n"
      "      }\n"
      "      idx[0] = rest; }\n"
      "    for (int d = 0; d < %d; d++)\n"
      "        for (int a = 0; a < %d; a++) ob[a] += idx[d] * args->strides[a][d];\n",
      outer, outer - 1, outer, na);
}

static void emit_row_step(render *r) {
    int na = r->k->access_count, outer = r->k->outer_rank;
    if (outer == 0) return;
    if (outer == 1) {
        P("        for (int a = 0; a < %d; a++) ob[a] += args->strides[a][0];\n", na);
        return;
    }
    P("        for (int d = %d; d >= 0; d--) {\n"
      "            idx[d]++;\n"
      "            for (int a = 0; a < %d; a++) ob[a] += args->strides[a][d];\n"
      "            if (d == 0 || idx[d] < args->sizes[d]) break;\n"
      "            for (int a = 0; a < %d; a++) ob[a] -= idx[d] * args->strides[a][d];\n"
      "            idx[d] = 0;\n"
      "        }\n",
      outer - 1, na, na);
}

void cg_render_reduction(render *r) {
    const kir_kernel *k = r->k;
    int na = k->access_count;
    int reduce_passes = 0;
    bool store_after = false;
    for (int id = 0; id < k->value_count; id++)
        if (k->values[id].kind == KIR_REDUCE && r->live[id] && r->level[id] > reduce_passes)
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
    }
    P("void kir_main(const kir_args *args, const kir_runtime *rt, int64_t begin, int64_t end) {\n");
    emit_row_walk_open(r);
    if (cached) {
        P("    int64_t reduced = 1;\n"
          "    for (int d = %d; d < %d; d++) reduced *= args->sizes[d];\n"
          "    char *scratch = reduced <= %d ? malloc((size_t)%d * %d * 8) : NULL;\n"
          "    if (scratch) {\n"
          "        for (int64_t row = begin; row < end; row++) {\n"
          "            kir_row_cached(args, rt, ob, scratch);\n",
          k->outer_rank, k->rank, ROW_CACHE_ELEMS, cached, ROW_CACHE_ELEMS);
        emit_row_step(r);
        P("        }\n"
          "        free(scratch);\n"
          "        return;\n"
          "    }\n");
    }
    P("    for (int64_t row = begin; row < end; row++) {\n"
      "        kir_row(args, rt, ob);\n");
    emit_row_step(r);
    P("    }\n"
      "}\n");
}

