/* kir_render_c: the layout of a generated kernel. Values live in small
 * stack arrays of one block of the innermost dim (KIR_B elements), one loop
 * per value, so the C compiler vectorizes each op and transcendental ops
 * hand whole blocks to libporta's vector math through the runtime table.
 * Values the same for a whole span or row (constants, parameters, reduction
 * results and what is computed from them) are scalars.
 *
 * A block's code is written once per shape: full blocks (a constant length,
 * so loops vectorize with no tail), 16-element pieces of what is left
 * (kernels without reductions) and the last, shorter piece.
 *
 * Without reductions, kir_span walks rows of the last dim (several at once
 * when they are whole rows of one index of the dim before), kir_main
 * splits its flat range of elements into such spans, and kir_tile hands a
 * rank-2 block to one span. Kernels with reductions are laid out by
 * codegen_c_reduce.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen_c_render.h"
#include "core/status.h"

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
    }
    /* Only what a store needs is computed. */
    for (int a = 0; a < k->access_count; a++)
        if (k->accesses[a].store) r->live[k->accesses[a].value] = true;
    for (int id = k->value_count - 1; id >= 0; id--) {
        if (!r->live[id]) continue;
        for (int a = 0; a < arg_count(&k->values[id]); a++) r->live[k->values[id].args[a]] = true;
        arrays += !r->scalar[id];
    }
    /* at most ~32 KB of blocks on the stack, whichever thread runs it */
    r->block = arrays <= 32 ? 128 : arrays <= 64 ? 64 : arrays <= 128 ? 32 : 16;
}

/* The operand expression of value id at element index `index`. */
const char *cg_ref(const render *r, int id, const char *index, char *buf, size_t cap) {
    if (r->scalar[id])
        snprintf(buf, cap, "o%d", id);
    else
        snprintf(buf, cap, "v%d[%s]", id, index);
    return buf;
}

/* Finishes the statement the caller began: op value v's C expression over
 * its operands at element i (a scalar operand by its name). */
static void emit_expression(render *r, const kir_value *v) {
    char b0[32], b1[32], b2[32];
    const char *x[3] = {"", "", ""};
    char *bufs[3] = {b0, b1, b2};
    for (int a = 0; a < arg_count(v); a++) x[a] = cg_ref(r, v->args[a], "i", bufs[a], 32);
    kir_c_expression(r->t, v, r->k->values[v->args[0]].dtype, x);
    P(";\n");
}

/* ---- scalars ---- */

void cg_declare_scalars(render *r) {
    for (int id = 0; id < r->k->value_count; id++)
        if (r->scalar[id]) P("    %s o%d = 0;\n", kir_c_compute_type(r->k->values[id].dtype), id);
}

void cg_round_half(render *r, porta_dtype d, const char *target, const char *count) {
    if (is_half(d)) P("    rt->round_%s(%s, %s);\n", half_name(d), target, count);
}

/* Computes scalar value id (not a reduction: those are finished by their pass). */
void cg_emit_scalar(render *r, int id) {
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
        cg_round_half(r, d, target, "1");
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
        P("    o%d = ", id);
        emit_expression(r, v);
    }
    char target[32];
    snprintf(target, sizeof target, "&o%d", id);
    if (!(v->kind == KIR_TERNARY && v->op == PORTA_WHERE)) cg_round_half(r, d, target, "1");
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

void cg_emit_array(render *r, int id) {
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
        P("        for (int i = 0; i < m; i++) v%d[i] = ", id);
        emit_expression(r, v);
    }
    char target[32];
    snprintf(target, sizeof target, "v%d", id);
    if (!(v->kind == KIR_TERNARY && v->op == PORTA_WHERE) && is_half(d))
        P("        rt->round_%s(%s, m);\n", half_name(d), target);
}

void cg_emit_array_store(render *r, int a) {
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
void cg_emit_pointers(render *r, const char *base, const bool *used) {
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
void cg_emit_decompose(render *r, const char *index, const char *base, int first, int last) {
    if (last < first) return;
    /* the outermost dim takes what is left: no division for it */
    P("    { int64_t rest = %s;\n"
      "      for (int d = %d; d > %d; d--) {\n"
      "        int64_t at = rest %% args->sizes[d];\n"
      "        rest /= args->sizes[d];\n"
      "        for (int a = 0; a < %d; a++) %s[a] += at * args->strides[a][d];\n"
      "      }\n"
      "      for (int a = 0; a < %d; a++) %s[a] += rest * args->strides[a][%d]; }\n",
      index, last, first, r->k->access_count, base, r->k->access_count, base, first);
}

void cg_emit_blocks(render *r, const char *count, const char *start, int chunk,
                    void (*body)(render *r, void *ctx), void *ctx) {
    P("    { int64_t j = 0;\n"
      "    for (; j + KIR_B <= %s; j += KIR_B) {\n"
      "        const int m = KIR_B;\n"
      "        const int64_t col = %s + j;\n"
      "        (void)col;\n",
      count, start);
    body(r, ctx);
    P("    }\n");
    if (chunk)
        P("    for (; j + %d <= %s; j += %d) {\n"
          "        const int m = %d;\n"
          "        const int64_t col = %s + j;\n"
          "        (void)col;\n",
          chunk, count, chunk, chunk, start);
    if (chunk) body(r, ctx);
    if (chunk) P("    }\n");
    P("    if (j < %s) {\n"
      "        const int m = (int)(%s - j);\n"
      "        const int64_t col = %s + j;\n"
      "        (void)col;\n",
      count, count, start);
    body(r, ctx);
    P("    } }\n");
}

/* ---- kernels without reductions ---- */

static void elementwise_block(render *r, void *ctx) {
    (void)ctx;
    const kir_kernel *k = r->k;
    for (int id = 0; id < k->value_count; id++)
        if (!r->scalar[id] && r->live[id]) cg_emit_array(r, id);
    for (int a = 0; a < k->access_count; a++)
        if (k->accesses[a].store) cg_emit_array_store(r, a);
}

/* kir_span walks `rows` rows of n elements from column col0, each row
 * `strides[rank - 2]` after the previous one: scalars and pointers are set
 * up once for all of them, which matters for narrow tiles (a GEMM hands its
 * epilogue strips a few vectors wide) and short rows. */
static void render_elementwise(render *r) {
    const kir_kernel *k = r->k;
    int na = k->access_count, rank = k->rank;
    P("static void kir_span(const kir_args *args, const kir_runtime *rt, const int64_t *base,\n"
      "                     int64_t rows, int64_t col0, int64_t n) {\n");
    cg_emit_pointers(r, "base", NULL);
    if (rank >= 2)
        for (int a = 0; a < na; a++)
            P("    const int64_t r%d = args->strides[%d][%d];\n", a, a, rank - 2);
    cg_declare_scalars(r);
    for (int id = 0; id < k->value_count; id++)
        if (r->scalar[id] && r->live[id]) cg_emit_scalar(r, id);
    P("    for (int64_t row = 0; row < rows; row++) {\n");
    cg_emit_blocks(r, "n", "col0", r->block > NARROW ? NARROW : 0, elementwise_block, NULL);
    for (int a = 0; a < na && rank >= 2; a++) P("    p%d += r%d;\n", a, a);
    P("    }\n}\n\n");

    /* Whole rows within one index of dim rank - 2 go to kir_span at once. */
    P("void kir_main(const kir_args *args, const kir_runtime *rt, int64_t begin, int64_t end) {\n"
      "    const int64_t inner = args->sizes[%d];\n"
      "    for (int64_t at = begin; at < end;) {\n"
      "        int64_t row = at / inner, col = at %% inner, n = inner - col, rows = 1;\n"
      "        if (n > end - at) n = end - at;\n",
      rank - 1);
    if (rank >= 2)
        P("        else if (col == 0) {\n"
          "            const int64_t left = args->sizes[%d] - row %% args->sizes[%d];\n"
          "            rows = (end - at) / inner;\n"
          "            if (rows > left) rows = left;\n"
          "        }\n",
          rank - 2, rank - 2);
    P("        int64_t base[%d] = {0};\n", na);
    cg_emit_decompose(r, "row", "base", 0, rank - 2);
    P("        kir_span(args, rt, base, rows, col, n);\n"
      "        at += rows * n;\n"
      "    }\n}\n");
    if (rank == 2)
        P("\nvoid kir_tile(const kir_args *args, const kir_runtime *rt, int64_t row0, int64_t rows,\n"
          "              int64_t col0, int64_t cols) {\n"
          "    int64_t base[%d];\n"
          "    for (int a = 0; a < %d; a++) base[a] = row0 * args->strides[a][0];\n"
          "    kir_span(args, rt, base, rows, col0, cols);\n"
          "}\n",
          na, na);
}

porta_status *kir_render_c(const kir_kernel *kernel, char **source) {
    if (!source) return porta_error(PORTA_ERR_INVALID_ARGUMENT, "source is NULL");
    PORTA_TRY(kir_check(kernel));
    core_text text = {0};
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
        cg_render_reduction(r);
    else
        render_elementwise(r);
    free(r);
    if (text.failed) {
        text_free(&text);
        return porta_error(PORTA_ERR_OUT_OF_MEMORY, "out of memory rendering a kernel");
    }
    *source = text.chars;
    return NULL;
}
