/* shlo_render_prim: PAD, GATHER, INDEX_SELECT, SCATTER, SORT, POOL_MAX, FFT
 * (codegen_stablehlo_fft.c) and the convolutions as StableHLO modules (codegen_stablehlo.h), each with its CPU kernel's
 * semantics.
 *
 * Every operand is loaded as a whole tensor through its strided view and
 * out is stored through its own, as the kernel renderer does, so the
 * module depends on shapes, strides and buffer sizes only; offsets arrive
 * in the scalar buffer and the eager cache keeps one program per shape. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "codegen/codegen_stablehlo.h"
#include "codegen/codegen_stablehlo_conv.h"
#include "codegen/codegen_stablehlo_fft.h"
#include "codegen/codegen_stablehlo_internal.h"
#include "core/status.h"

static void dims_of(char *out, size_t cap, const shlo_prim *p, int i) {
    shlo_dims(out, cap, p->sizes[i], p->rank[i]);
}

static shlo_type type_of(const shlo_prim *p, int i, const char *elt) {
    char dims[PORTA_MAX_RANK * 24];
    dims_of(dims, sizeof dims, p, i);
    return shlo_tensor(dims, elt);
}

/* ---- PAD: stablehlo.pad, whose negative edges crop as the CPU's do ---- */

static int render_pad(shlo_render *r, const shlo_prim *p) {
    shlo_emit *e = shlo_render_emitter(r);
    porta_dtype d = p->dtype[0];
    int rank = p->rank[0];
    int x = shlo_render_load(r, 0, d, p->sizes[0], rank);
    char literal[48];
    shlo_literal(literal, sizeof literal, d, p->prim.value);
    int value = shlo_constant(e, shlo_tensor("", shlo_compute_elt(d)), literal);
    int64_t low[PORTA_MAX_RANK], high[PORTA_MAX_RANK], interior[PORTA_MAX_RANK] = {0};
    for (int k = 0; k < rank; k++) {
        low[k] = p->prim.pads[2 * k];
        high[k] = p->prim.pads[2 * k + 1];
    }
    char attrs[3][PORTA_MAX_RANK * 24 + 40], all[3 * (PORTA_MAX_RANK * 24 + 40) + 8];
    shlo_attr_i64s(attrs[0], sizeof attrs[0], "edge_padding_low", low, rank);
    shlo_attr_i64s(attrs[1], sizeof attrs[1], "edge_padding_high", high, rank);
    shlo_attr_i64s(attrs[2], sizeof attrs[2], "interior_padding", interior, rank);
    snprintf(all, sizeof all, " {%s, %s, %s}", attrs[0], attrs[1], attrs[2]);
    int args[2] = {x, value};
    shlo_type types[2] = {type_of(p, 0, shlo_compute_elt(d)),
                          shlo_tensor("", shlo_compute_elt(d))};
    return shlo_op(e, "stablehlo.pad", 2, args, types, all, type_of(p, 1, shlo_compute_elt(d)));
}

/* ---- GATHER and INDEX_SELECT: one gather of single elements ---- */

/* Each element's full coordinates over operand `over`'s shape, with dim
 * `axis` replaced by `at` (int64 over that shape): [sizes..., rank]. */
static int coordinates(shlo_render *r, const shlo_prim *p, int over, int at) {
    shlo_emit *e = shlo_render_emitter(r);
    int rank = p->rank[over], axis = p->prim.axis;
    char dims[PORTA_MAX_RANK * 24], column[PORTA_MAX_RANK * 24 + 8];
    char coords[PORTA_MAX_RANK * 24 + 24];
    dims_of(dims, sizeof dims, p, over);
    snprintf(column, sizeof column, "%s1x", dims);
    snprintf(coords, sizeof coords, "%s%dx", dims, rank);
    shlo_type I = shlo_tensor(dims, "i64"), C = shlo_tensor(column, "i64");
    int parts[PORTA_MAX_RANK];
    shlo_type part_types[PORTA_MAX_RANK];
    for (int k = 0; k < rank; k++) {
        int coordinate = at;
        if (k != axis) {
            char iota[48];
            snprintf(iota, sizeof iota, " {iota_dimension = %d : i64}", k);
            coordinate = shlo_op(e, "stablehlo.iota", 0, NULL, NULL, iota, I);
        }
        parts[k] = shlo_op1(e, "stablehlo.reshape", coordinate, I, C);
        part_types[k] = C;
    }
    if (rank == 1) return parts[0];
    char attrs[48];
    snprintf(attrs, sizeof attrs, " {dimension = %d : i64}", rank);
    return shlo_op(e, "stablehlo.concatenate", rank, parts, part_types, attrs,
                   shlo_tensor(coords, "i64"));
}

/* "0, 1, ..., rank-1" */
static void all_dims(char *out, size_t cap, int rank) {
    size_t used = 0;
    out[0] = '\0';
    for (int k = 0; k < rank && used < cap; k++)
        used += (size_t)snprintf(out + used, cap - used, "%s%d", k ? ", " : "", k);
}

/* x's elements at out's coordinates with dim `axis` replaced by `at` (int64
 * over out's shape): every dim a collapsed slice of size 1. */
static int gather_along(shlo_render *r, const shlo_prim *p, int x, int at) {
    shlo_emit *e = shlo_render_emitter(r);
    int out = p->count - 1, rank = p->rank[out];
    const char *elt = shlo_compute_elt(p->dtype[0]);
    int all = coordinates(r, p, out, at);
    char coords[PORTA_MAX_RANK * 24 + 24], list[PORTA_MAX_RANK * 8];
    dims_of(coords, sizeof coords, p, out);
    snprintf(coords + strlen(coords), sizeof coords - strlen(coords), "%dx", rank);
    all_dims(list, sizeof list, rank);
    int64_t ones[PORTA_MAX_RANK];
    for (int k = 0; k < rank; k++) ones[k] = 1;
    char slices[PORTA_MAX_RANK * 24 + 40], attrs[PORTA_MAX_RANK * 48 + 256];
    shlo_attr_i64s(slices, sizeof slices, "slice_sizes", ones, rank);
    snprintf(attrs, sizeof attrs,
             " {dimension_numbers = #stablehlo.gather<collapsed_slice_dims = [%s], "
             "start_index_map = [%s], index_vector_dim = %d>, %s, indices_are_sorted = false}",
             list, list, rank, slices);
    int args[2] = {x, all};
    shlo_type types[2] = {type_of(p, 0, elt), shlo_tensor(coords, "i64")};
    return shlo_op(e, "stablehlo.gather", 2, args, types, attrs, type_of(p, out, elt));
}

static int render_gather(shlo_render *r, const shlo_prim *p) {
    shlo_emit *e = shlo_render_emitter(r);
    int out = p->count - 1, rank = p->rank[out];
    int x = shlo_render_load(r, 0, p->dtype[0], p->sizes[0], p->rank[0]);
    if (rank == 0) return x; /* a scalar's only index is 0, checked by the caller */
    int at = shlo_render_load(r, 1, PORTA_I64, p->sizes[1], p->rank[1]);
    if (p->prim.kind == PRIM_INDEX_SELECT) {
        /* the 1-d (or scalar) index runs along axis, repeated over the rest */
        int64_t along[1] = {p->prim.axis};
        char attrs[96];
        shlo_attr_i64s(attrs, sizeof attrs, " {broadcast_dimensions", along, p->rank[1]);
        strcat(attrs, "}");
        at = shlo_op(e, "stablehlo.broadcast_in_dim", 1, &at, (shlo_type[]){type_of(p, 1, "i64")},
                     attrs, type_of(p, out, "i64"));
    }
    return gather_along(r, p, x, at);
}

/* ---- SORT: the stable permutation, NaN above every number ---- */

static int render_sort(shlo_render *r, const shlo_prim *p) {
    shlo_emit *e = shlo_render_emitter(r);
    porta_dtype d = p->dtype[0];
    int rank = p->rank[0], axis = p->prim.axis;
    int x = shlo_render_load(r, 0, d, p->sizes[0], rank);
    const char *elt = shlo_compute_elt(d);
    if (d == PORTA_BOOL) { /* compared as 0 and 1 */
        elt = "ui8";
        x = shlo_op1(e, "stablehlo.convert", x, type_of(p, 0, "i1"), type_of(p, 0, elt));
    }
    if (rank == 0) return shlo_constant(e, shlo_tensor("", "i64"), "0");
    char iota[48];
    snprintf(iota, sizeof iota, " {iota_dimension = %d : i64}", axis);
    shlo_type X = type_of(p, 0, elt), I = type_of(p, 0, "i64");
    int positions = shlo_op(e, "stablehlo.iota", 0, NULL, NULL, iota, I);
    shlo_type S = shlo_tensor("", elt), SI = shlo_tensor("", "i64");
    int id = e->next++, a = e->next++, b = e->next++, ia = e->next++, ib = e->next++;
    text_printf(e->t,
                "    %%%d:2 = \"stablehlo.sort\"(%%%d, %%%d) ({\n"
                "    ^bb0(%%%d: %s, %%%d: %s, %%%d: %s, %%%d: %s):\n",
                id, x, positions, a, S.s, b, S.s, ia, SI.s, ib, SI.s);
    bool descending = p->prim.op == PORTA_SORT_DESCENDING;
    int before = shlo_compare(e, descending ? "GT" : "LT", a, b, S, "");
    bool is_float = porta_dtype_is_float(d);
    if (is_float) { /* a NaN is the largest key: last ascending, first descending */
        int a_nan = shlo_compare(e, "NE", a, a, S, ""), b_nan = shlo_compare(e, "NE", b, b, S, "");
        shlo_type P = shlo_tensor("", "i1");
        int number = shlo_op1(e, "stablehlo.not", descending ? b_nan : a_nan, P, P);
        int nan_first = shlo_op2(e, "stablehlo.and", number, descending ? a_nan : b_nan, P, P);
        before = shlo_op2(e, "stablehlo.or", before, nan_first, P, P);
    }
    text_printf(e->t,
                "      \"stablehlo.return\"(%%%d) : (tensor<i1>) -> ()\n"
                "    }) {dimension = %d : i64, is_stable = true} : (%s, %s) -> (%s, %s)\n",
                before, axis, X.s, I.s, X.s, I.s);
    /* the second result: the positions in sorted order */
    char name[32];
    snprintf(name, sizeof name, "%%%d#1", id);
    int order = e->next++;
    text_printf(e->t, "    %%%d = \"stablehlo.reshape\"(%s) : (%s) -> %s\n", order, name, I.s,
                I.s);
    return order;
}

/* ---- convolutions (codegen_stablehlo_conv.c), CONV's bias added over Cout ---- */

static int render_conv(shlo_render *r, const shlo_prim *p) {
    shlo_emit *e = shlo_render_emitter(r);
    porta_dtype d = p->dtype[0];
    int out = p->count - 1;
    const char *elt = shlo_compute_elt(d);
    shlo_conv_operands c = {.prim = &p->prim, .out_sizes = p->sizes[out], .elt = elt};
    for (int i = 0; i < 2; i++) {
        c.x[i] = shlo_render_load(r, i, d, p->sizes[i], p->rank[i]);
        c.rank[i] = p->rank[i];
        c.sizes[i] = p->sizes[i];
    }
    int result = shlo_conv(e, &c);
    if (p->prim.kind != PRIM_CONV || p->count != 4) return result;
    int bias = shlo_render_load(r, 2, d, p->sizes[2], p->rank[2]);
    int64_t along[1] = {1};
    char attrs[96] = " {";
    shlo_attr_i64s(attrs + 2, sizeof attrs - 4, "broadcast_dimensions", along, 1);
    strcat(attrs, "}");
    shlo_type T = type_of(p, out, elt);
    int spread = shlo_op(e, "stablehlo.broadcast_in_dim", 1, &bias,
                         (shlo_type[]){type_of(p, 2, elt)}, attrs, T);
    return shlo_op2(e, "stablehlo.add", result, spread, T, T);
}

/* ---- SCATTER: x updated at the index's coordinates, in index order ---- */

/* The combiner of a scatter into `dtype`: the CPU's combine_int and
 * combine_float (NaN propagating through amax and amin, bools as or/and),
 * each result rounded to a half dtype as the CPU stores it. */
static int combine(shlo_emit *e, int reduce, porta_dtype dtype, int a, int b) {
    const char *elt = shlo_compute_elt(dtype);
    shlo_type S = shlo_tensor("", elt);
    bool logical = dtype == PORTA_BOOL;
    int result;
    switch (reduce) {
    case PORTA_SCATTER_ADD:
        result = shlo_op2(e, logical ? "stablehlo.or" : "stablehlo.add", a, b, S, S);
        break;
    case PORTA_SCATTER_MUL:
        result = shlo_op2(e, logical ? "stablehlo.and" : "stablehlo.multiply", a, b, S, S);
        break;
    default: {
        bool max = reduce == PORTA_SCATTER_AMAX;
        int better = max ? shlo_compare(e, "LT", a, b, S, "") : shlo_compare(e, "LT", b, a, S, "");
        bool is_float = porta_dtype_is_float(dtype);
        if (is_float) {
            shlo_type P = shlo_tensor("", "i1");
            better = shlo_op2(e, "stablehlo.or", shlo_compare(e, "NE", b, b, S, ""), better, P, P);
        }
        result = shlo_select(e, better, b, a, "", S);
    }
    }
    if (dtype != PORTA_F16 && dtype != PORTA_BF16) return result;
    shlo_type H = shlo_tensor("", shlo_storage_elt(dtype));
    return shlo_op1(e, "stablehlo.convert", shlo_op1(e, "stablehlo.convert", result, S, H), H, S);
}

static int render_scatter(shlo_render *r, const shlo_prim *p) {
    shlo_emit *e = shlo_render_emitter(r);
    porta_dtype d = p->dtype[0];
    int rank = p->rank[0];
    const char *elt = shlo_compute_elt(d);
    int x = shlo_render_load(r, 0, d, p->sizes[0], rank);
    int at = shlo_render_load(r, 1, PORTA_I64, p->sizes[1], rank);
    /* src's elements at the index's positions (src may be larger) */
    int src = shlo_render_load(r, 2, d, p->sizes[1], rank);
    int all = coordinates(r, p, 1, at);
    shlo_type S = shlo_tensor("", elt), X = type_of(p, 0, elt), U = type_of(p, 1, elt);
    char coords[PORTA_MAX_RANK * 24 + 24], list[PORTA_MAX_RANK * 8];
    dims_of(coords, sizeof coords, p, 1);
    snprintf(coords + strlen(coords), sizeof coords - strlen(coords), "%dx", rank);
    all_dims(list, sizeof list, rank);
    int id = e->next++, a = e->next++, b = e->next++;
    text_printf(e->t, "    %%%d = \"stablehlo.scatter\"(%%%d, %%%d, %%%d) ({\n"
                      "    ^bb0(%%%d: %s, %%%d: %s):\n",
                id, x, all, src, a, S.s, b, S.s);
    int result = p->prim.op == PORTA_SCATTER_NONE ? b : combine(e, p->prim.op, d, a, b);
    /* indices_are_sorted and unique_indices false: duplicates combine in
     * index order, as the CPU's loop does */
    text_printf(e->t,
                "      \"stablehlo.return\"(%%%d) : (%s) -> ()\n"
                "    }) {indices_are_sorted = false, scatter_dimension_numbers = "
                "#stablehlo.scatter<inserted_window_dims = [%s], scatter_dims_to_operand_dims = "
                "[%s], index_vector_dim = %d>, unique_indices = false} : (%s, %s, %s) -> %s\n",
                result, S.s, list, list, rank, X.s, shlo_tensor(coords, "i64").s, U.s, X.s);
    return id;
}

/* ---- POOL_MAX: PyTorch's CPU loop over each window's taps, unrolled ---- */

/* An int64 constant over `type`. */
static int splat(shlo_emit *e, shlo_type type, int64_t v) {
    char literal[32];
    snprintf(literal, sizeof literal, "%" PRId64, v);
    return shlo_constant(e, type, literal);
}

/* Each tap of every window is a strided slice of x padded (and of a mask
 * of what is inside x), folded in row-major tap order as the CPU does: the
 * first tap inside x starts, a later one replaces it when greater or NaN.
 * A window with no tap inside keeps the flat index of its first tap on or
 * after x's start, as PyTorch's loop does. */
static int render_pool(shlo_render *r, const shlo_prim *p) {
    shlo_emit *e = shlo_render_emitter(r);
    const ir_prim *prim = &p->prim;
    porta_dtype d = p->dtype[0];
    int rank = p->rank[0], n = prim->rank;
    const char *elt = shlo_compute_elt(d);
    const int64_t *in = p->sizes[0] + 2, *outs = p->sizes[1] + 2;
    int x = shlo_render_load(r, 0, d, p->sizes[0], rank);
    int64_t low[PORTA_MAX_RANK] = {0}, high[PORTA_MAX_RANK] = {0}, none[PORTA_MAX_RANK] = {0};
    int64_t padded[PORTA_MAX_RANK];
    memcpy(padded, p->sizes[0], (size_t)rank * sizeof *padded);
    for (int a = 0; a < n; a++) {
        const porta_conv_params *c = &prim->conv;
        int64_t reach = (prim->sizes[a] - 1) * c->dilation[a] + (outs[a] - 1) * c->stride[a] + 1;
        low[a + 2] = c->padding[a];
        high[a + 2] = reach - in[a] - c->padding[a] > 0 ? reach - in[a] - c->padding[a] : 0;
        padded[a + 2] += low[a + 2] + high[a + 2];
    }
    char attrs[3][PORTA_MAX_RANK * 24 + 40], all[3 * (PORTA_MAX_RANK * 24 + 40) + 8];
    shlo_attr_i64s(attrs[0], sizeof attrs[0], "edge_padding_low", low, rank);
    shlo_attr_i64s(attrs[1], sizeof attrs[1], "edge_padding_high", high, rank);
    shlo_attr_i64s(attrs[2], sizeof attrs[2], "interior_padding", none, rank);
    snprintf(all, sizeof all, " {%s, %s, %s}", attrs[0], attrs[1], attrs[2]);
    char pdims[PORTA_MAX_RANK * 24];
    shlo_dims(pdims, sizeof pdims, padded, rank);
    shlo_type X = type_of(p, 0, elt), XP = shlo_tensor(pdims, elt);
    shlo_type M = type_of(p, 0, "i1"), MP = shlo_tensor(pdims, "i1");
    shlo_type S = shlo_tensor("", elt), SB = shlo_tensor("", "i1");
    int args[2] = {x, shlo_constant(e, S, shlo_zero(d))};
    shlo_type types[2] = {X, S};
    int xp = shlo_op(e, "stablehlo.pad", 2, args, types, all, XP);
    args[0] = shlo_constant(e, M, "true");
    args[1] = shlo_constant(e, SB, "false");
    types[0] = M;
    types[1] = SB;
    int inside = shlo_op(e, "stablehlo.pad", 2, args, types, all, MP);
    /* per output position and axis: where its window starts in x */
    shlo_type V = type_of(p, 1, elt), B = type_of(p, 1, "i1"), I = type_of(p, 1, "i64");
    char odims[PORTA_MAX_RANK * 24];
    dims_of(odims, sizeof odims, p, 1);
    int start[PORTA_MAX_RANK], first_at = 0;
    for (int a = 0; a < n; a++) {
        const porta_conv_params *c = &prim->conv;
        char iota[48];
        snprintf(iota, sizeof iota, " {iota_dimension = %d : i64}", a + 2);
        int o = shlo_op(e, "stablehlo.iota", 0, NULL, NULL, iota, I);
        start[a] = shlo_op2(e, "stablehlo.subtract",
                            shlo_op2(e, "stablehlo.multiply", o, splat(e, I, c->stride[a]), I, I),
                            splat(e, I, c->padding[a]), I, I);
        /* the first tap at or after 0: start + ceil(max(-start, 0) / dilation) * dilation */
        int zero = splat(e, I, 0), step = splat(e, I, c->dilation[a]);
        int behind = shlo_op2(e, "stablehlo.maximum",
                              shlo_op2(e, "stablehlo.subtract", zero, start[a], I, I), zero, I, I);
        int steps = shlo_op2(e, "stablehlo.divide",
                             shlo_op2(e, "stablehlo.add", behind,
                                      splat(e, I, c->dilation[a] - 1), I, I),
                             step, I, I);
        int first = shlo_op2(e, "stablehlo.add", start[a],
                             shlo_op2(e, "stablehlo.multiply", steps, step, I, I), I, I);
        first_at = a ? shlo_op2(e, "stablehlo.add",
                                shlo_op2(e, "stablehlo.multiply", first_at, splat(e, I, in[a]),
                                         I, I),
                                first, I, I)
                     : first;
    }
    int best = shlo_constant(e, V, shlo_zero(d)), best_at = first_at;
    int have = shlo_constant(e, B, "false");
    int64_t tap[PORTA_MAX_RANK] = {0}, taps = 1;
    for (int a = 0; a < n; a++) taps *= prim->sizes[a];
    for (int64_t t = 0; t < taps; t++) {
        int64_t begin[PORTA_MAX_RANK] = {0}, limit[PORTA_MAX_RANK], stride[PORTA_MAX_RANK];
        for (int k = 0; k < rank; k++) {
            limit[k] = p->sizes[1][k];
            stride[k] = 1;
        }
        int at = 0;
        for (int a = 0; a < n; a++) {
            const porta_conv_params *c = &prim->conv;
            begin[a + 2] = tap[a] * c->dilation[a];
            limit[a + 2] = begin[a + 2] + (outs[a] - 1) * c->stride[a] + 1;
            stride[a + 2] = c->stride[a];
            int pos = shlo_op2(e, "stablehlo.add", start[a], splat(e, I, tap[a] * c->dilation[a]),
                               I, I);
            at = a ? shlo_op2(e, "stablehlo.add",
                              shlo_op2(e, "stablehlo.multiply", at, splat(e, I, in[a]), I, I),
                              pos, I, I)
                   : pos;
        }
        char slice[3][PORTA_MAX_RANK * 24 + 40], sattrs[3 * (PORTA_MAX_RANK * 24 + 40) + 8];
        shlo_attr_i64s(slice[0], sizeof slice[0], "start_indices", begin, rank);
        shlo_attr_i64s(slice[1], sizeof slice[1], "limit_indices", limit, rank);
        shlo_attr_i64s(slice[2], sizeof slice[2], "strides", stride, rank);
        snprintf(sattrs, sizeof sattrs, " {%s, %s, %s}", slice[0], slice[1], slice[2]);
        int v = shlo_op(e, "stablehlo.slice", 1, &xp, &XP, sattrs, V);
        int ok = shlo_op(e, "stablehlo.slice", 1, &inside, &MP, sattrs, B);
        int greater = shlo_compare(e, "GT", v, best, V, odims);
        int nan = shlo_compare(e, "NE", v, v, V, odims);
        int first = shlo_op1(e, "stablehlo.not", have, B, B);
        int wanted = shlo_op2(e, "stablehlo.or", first,
                              shlo_op2(e, "stablehlo.or", greater, nan, B, B), B, B);
        int take = shlo_op2(e, "stablehlo.and", ok, wanted, B, B);
        best = shlo_select(e, take, v, best, odims, V);
        best_at = shlo_select(e, take, at, best_at, odims, I);
        have = shlo_op2(e, "stablehlo.or", have, ok, B, B);
        for (int a = n - 1; a >= 0 && ++tap[a] == prim->sizes[a]; a--) tap[a] = 0;
    }
    return best_at;
}

bool shlo_prim_supported(const ir_prim *prim, const porta_dtype *dtypes, const int *ranks,
                         int input_count) {
    switch (prim->kind) {
    case PRIM_PAD: return input_count == 1;
    case PRIM_GATHER: case PRIM_INDEX_SELECT:
        return input_count == 2 && dtypes[1] == PORTA_I64;
    case PRIM_SORT: return input_count == 1;
    case PRIM_POOL_MAX:
        return input_count == 1 && dtypes[0] != PORTA_BOOL && prim->rank >= 1 &&
               prim->rank <= PORTA_MAX_RANK - 2;
    case PRIM_SCATTER: /* a scalar has no dim to index */
        return input_count == 3 && ranks[0] >= 1 && dtypes[1] == PORTA_I64 &&
               prim->op >= PORTA_SCATTER_NONE && prim->op <= PORTA_SCATTER_AMIN;
    case PRIM_CONV: case PRIM_CONV_INPUT_GRAD: case PRIM_CONV_WEIGHT_GRAD: {
        bool is_float = porta_dtype_is_float(dtypes[0]);
        int most = prim->kind == PRIM_CONV ? 3 : 2;
        return is_float && input_count >= 2 && input_count <= most && prim->conv.groups >= 1;
    }
    case PRIM_FFT:
        return input_count == 1 && (dtypes[0] == PORTA_F32 || dtypes[0] == PORTA_F64) &&
               prim->axis_count >= 1 && prim->axis_count <= SHLO_FFT_MAX_AXES;
    default: return false;
    }
}

porta_status *shlo_render_prim(const shlo_prim *p, char **text, bool *takes_scalars) {
    porta_dtype inputs[SHLO_PRIM_MAX_OPERANDS];
    for (int i = 0; i + 1 < p->count; i++) inputs[i] = p->dtype[i];
    if (p->count < 2 || p->count > SHLO_PRIM_MAX_OPERANDS ||
        !shlo_prim_supported(&p->prim, inputs, p->rank, p->count - 1))
        return porta_error(PORTA_ERR_UNSUPPORTED,
                           "StableHLO: %s with %d operands has no StableHLO spelling; expected "
                           "pad, gather, index_select, scatter, sort, pool_max, fft or a convolution",
                           ir_prim_name(&p->prim), p->count);
    for (int i = 0; i < p->count; i++)
        if (p->layout.buffer[i] < 0 || p->layout.buffer[i] >= p->layout.buffer_count)
            return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                               "StableHLO: %s operand %d uses buffer %d; expected 0..%d",
                               ir_prim_name(&p->prim), i, p->layout.buffer[i],
                               p->layout.buffer_count - 1);
    core_text body = {0};
    shlo_render *r = shlo_render_begin(&p->layout, &body);
    if (!r) return porta_error(PORTA_ERR_OUT_OF_MEMORY, "StableHLO: renderer state");
    int result = 0;
    switch (p->prim.kind) {
    case PRIM_PAD: result = render_pad(r, p); break;
    case PRIM_SORT: result = render_sort(r, p); break;
    case PRIM_SCATTER: result = render_scatter(r, p); break;
    case PRIM_POOL_MAX: result = render_pool(r, p); break;
    case PRIM_FFT:
        result = shlo_fft(r, p, shlo_render_load(r, 0, p->dtype[0], p->sizes[0], p->rank[0]));
        break;
    case PRIM_CONV: case PRIM_CONV_INPUT_GRAD: case PRIM_CONV_WEIGHT_GRAD:
        result = render_conv(r, p);
        break;
    default: result = render_gather(r, p); break;
    }
    int out = p->count - 1;
    shlo_render_store(r, out, p->dtype[out], result, p->sizes[out], p->rank[out]);
    return shlo_render_end(r, &body, text, takes_scalars);
}
