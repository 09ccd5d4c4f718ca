/* kir_render_stablehlo: the module's structure (codegen_stablehlo.h).
 *
 * Values are whole tensors: FULL values over the domain, OUTER values over
 * its outer dims, constants and parameters scalars, each broadcast
 * (broadcast_in_dim) where an op needs it over more dims; a reduction is
 * one stablehlo.reduce over the reduced dims, so the IR's passes are plain
 * dataflow here. Buffers are bytes: a load bitcasts them to elements, then
 * takes its view — a dense block (contiguous in some dim order) is the
 * whole buffer or a dynamic_slice at its run-time offset, reshaped and
 * transposed into the view's order; any other view is a gather at indices
 * built from iotas and strides; dims of stride 0 are loaded once and
 * broadcast.
 * A store replaces the buffer's elements when it covers them, else updates
 * them (dynamic_update_slice, or scatter at the same indices), and the
 * elements are bitcast back to bytes. */
#include "codegen/codegen_stablehlo.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen_c.h"
#include "codegen/codegen_stablehlo_internal.h"
#include "core/status.h"

/* What a value spans: nothing (a scalar), the outer dims, the domain. */
typedef enum span { SPAN_SCALAR = 0, SPAN_OUTER, SPAN_FULL } span;

typedef struct render {
    const kir_kernel *k;
    const shlo_layout *l;
    shlo_emit e;
    char dims[3][PORTA_MAX_RANK * 24];
    int rank[3];
    bool live[KIR_MAX_VALUES];
    int name[KIR_MAX_VALUES];
    int spread[KIR_MAX_VALUES][3]; /* the value broadcast to a wider span */
    int arg[KIR_MAX_ACCESSES];     /* each buffer's bytes as given (@main's arguments) */
    int read[KIR_MAX_ACCESSES];    /* the bytes loads read: as given, or a matmul's product */
    int bytes[KIR_MAX_ACCESSES];   /* each buffer's bytes after the stores so far */
    bool stored[KIR_MAX_ACCESSES];
    int elements[KIR_MAX_ACCESSES][PORTA_DTYPE_COUNT]; /* given bytes as elements */
    int scalars, slots;                                /* the scalar buffer, as int64 */
    porta_status *error;
} render;

static span span_of(const kir_value *v) {
    if (v->kind == KIR_CONST || v->kind == KIR_PARAM) return SPAN_SCALAR;
    return v->space == KIR_OUTER ? SPAN_OUTER : SPAN_FULL;
}

static span access_span(const kir_access *a) {
    return a->space == KIR_OUTER ? SPAN_OUTER : SPAN_FULL;
}

static shlo_type compute_type(const render *r, span s, porta_dtype d) {
    return shlo_tensor(r->dims[s], shlo_compute_elt(d));
}

static void fail(render *r, porta_status *status) {
    if (!r->error) r->error = status; else porta_status_free(status);
}

/* x (of type `in`) broadcast to `out` along result dims dims[0..n). */
static int broadcast(render *r, int x, shlo_type in, shlo_type out, const int64_t *dims, int n) {
    char attrs[256] = " {";
    shlo_attr_i64s(attrs + 2, sizeof attrs - 4, "broadcast_dimensions", dims, n);
    strcat(attrs, "}");
    return shlo_op(&r->e, "stablehlo.broadcast_in_dim", 1, &x, &in, attrs, out);
}

/* Value id over span s (its own span or a wider one). */
static int operand(render *r, int id, span s) {
    const kir_value *v = &r->k->values[id];
    span own = span_of(v);
    if (own == s) return r->name[id];
    if (r->spread[id][s]) return r->spread[id][s];
    int64_t dims[PORTA_MAX_RANK];
    for (int d = 0; d < r->rank[own]; d++) dims[d] = d; /* outer dims lead the domain */
    return r->spread[id][s] = broadcast(r, r->name[id], compute_type(r, own, v->dtype),
                                        compute_type(r, s, v->dtype), dims, r->rank[own]);
}

/* ---- the scalar buffer ---- */

static int slot(render *r, int index) {
    shlo_emit *e = &r->e;
    char bytes[32], rows[32], all[32];
    snprintf(bytes, sizeof bytes, "%dx", SHLO_SCALAR_BYTES);
    snprintf(rows, sizeof rows, "%dx8x", SHLO_SCALAR_SLOTS);
    snprintf(all, sizeof all, "%dx", SHLO_SCALAR_SLOTS);
    shlo_type slots_type = shlo_tensor(all, "i64");
    if (!r->slots) {
        int grouped = shlo_op1(e, "stablehlo.reshape", r->scalars, shlo_tensor(bytes, "ui8"),
                               shlo_tensor(rows, "ui8"));
        r->slots = shlo_op1(e, "stablehlo.bitcast_convert", grouped, shlo_tensor(rows, "ui8"),
                            slots_type);
    }
    char attrs[160];
    snprintf(attrs, sizeof attrs,
             " {start_indices = array<i64: %d>, limit_indices = array<i64: %d>, "
             "strides = array<i64: 1>}",
             index, index + 1);
    int one = shlo_op(e, "stablehlo.slice", 1, &r->slots, &slots_type, attrs,
                      shlo_tensor("1x", "i64"));
    return shlo_op1(e, "stablehlo.reshape", one, shlo_tensor("1x", "i64"), shlo_tensor("", "i64"));
}

/* ---- bytes and elements ---- */

static int64_t element_count(render *r, int b, porta_dtype dtype) {
    int64_t bytes = r->l->buffer_bytes[b], size = (int64_t)porta_dtype_size(dtype);
    if (bytes % size)
        fail(r, porta_error(PORTA_ERR_INVALID_ARGUMENT,
                            "StableHLO: buffer %d has %" PRId64 " bytes, which is not a "
                            "whole number of %s elements (%" PRId64 " bytes each)",
                            b, bytes, porta_dtype_name(dtype), size));
    return bytes / size;
}

static int to_elements(render *r, int bytes, int b, porta_dtype dtype) {
    int64_t n = element_count(r, b, dtype), size = (int64_t)porta_dtype_size(dtype);
    const char *elt = shlo_storage_elt(dtype);
    char nd[32], wide[48];
    snprintf(nd, sizeof nd, "%" PRId64 "x", n * size);
    if (size == 1)
        return strcmp(elt, "ui8") == 0 ? bytes
                                       : shlo_op1(&r->e, "stablehlo.bitcast_convert", bytes,
                                                  shlo_tensor(nd, "ui8"), shlo_tensor(nd, elt));
    snprintf(wide, sizeof wide, "%" PRId64 "x%" PRId64 "x", n, size);
    int rows = shlo_op1(&r->e, "stablehlo.reshape", bytes, shlo_tensor(nd, "ui8"),
                        shlo_tensor(wide, "ui8"));
    snprintf(nd, sizeof nd, "%" PRId64 "x", n);
    return shlo_op1(&r->e, "stablehlo.bitcast_convert", rows, shlo_tensor(wide, "ui8"),
                    shlo_tensor(nd, elt));
}

static int to_bytes(render *r, int elements, int b, porta_dtype dtype) {
    int64_t n = element_count(r, b, dtype), size = (int64_t)porta_dtype_size(dtype);
    const char *elt = shlo_storage_elt(dtype);
    char nd[32], wide[48], bd[32];
    snprintf(nd, sizeof nd, "%" PRId64 "x", n);
    snprintf(bd, sizeof bd, "%" PRId64 "x", n * size);
    if (size == 1)
        return strcmp(elt, "ui8") == 0 ? elements
                                       : shlo_op1(&r->e, "stablehlo.bitcast_convert", elements,
                                                  shlo_tensor(nd, elt), shlo_tensor(nd, "ui8"));
    snprintf(wide, sizeof wide, "%" PRId64 "x%" PRId64 "x", n, size);
    int rows = shlo_op1(&r->e, "stablehlo.bitcast_convert", elements, shlo_tensor(nd, elt),
                        shlo_tensor(wide, "ui8"));
    return shlo_op1(&r->e, "stablehlo.reshape", rows, shlo_tensor(wide, "ui8"),
                    shlo_tensor(bd, "ui8"));
}

/* ---- views ---- */

/* The dims of a view that walk memory: size > 1 and (loads) a stride
 * other than 0, which are broadcast instead. */
typedef struct view {
    int count;
    int64_t dim[PORTA_MAX_RANK], size[PORTA_MAX_RANK], stride[PORTA_MAX_RANK];
    int64_t numel;
    bool contiguous; /* row-major, no gaps */
    char dims[PORTA_MAX_RANK * 24];
} view;

static view view_of(const int64_t *sizes, const int64_t *strides, int rank, bool load) {
    view v = {.numel = 1, .contiguous = true};
    for (int d = 0; d < rank; d++) {
        v.numel *= sizes[d];
        if (sizes[d] == 1 || (load && strides[d] == 0)) continue;
        v.dim[v.count] = d;
        v.size[v.count] = sizes[d];
        v.stride[v.count++] = strides[d];
    }
    int64_t expected = 1;
    for (int i = v.count - 1; i >= 0; i--) {
        v.contiguous &= v.stride[i] == expected;
        expected *= v.size[i];
    }
    if (load) v.numel = expected;
    shlo_dims(v.dims, sizeof v.dims, v.size, v.count);
    return v;
}

/* int64 element indices of the view: offset + sum of coordinate * stride. */
static int indices(render *r, const view *v, int offset) {
    shlo_type I = shlo_tensor(v->dims, "i64");
    int64_t none[1] = {0};
    int sum = broadcast(r, offset, shlo_tensor("", "i64"), I, none, 0);
    for (int i = 0; i < v->count; i++) {
        char attrs[48], literal[32];
        snprintf(attrs, sizeof attrs, " {iota_dimension = %d : i64}", i);
        int walked = shlo_op(&r->e, "stablehlo.iota", 0, NULL, NULL, attrs, I);
        if (v->stride[i] != 1) {
            snprintf(literal, sizeof literal, "%" PRId64, v->stride[i]);
            walked = shlo_op2(&r->e, "stablehlo.multiply", walked,
                              shlo_constant(&r->e, I, literal), I, I);
        }
        sum = shlo_op2(&r->e, "stablehlo.add", sum, walked, I, I);
    }
    return sum;
}

/* Whether the view covers one dense block of memory in some order of its
 * dims (a transpose of a contiguous tensor): order[] lists its dims from
 * the largest stride to the smallest. */
static bool dense_block(const view *v, int *order) {
    for (int i = 0; i < v->count; i++) {
        int j = i;
        for (; j > 0 && v->stride[order[j - 1]] < v->stride[i]; j--) order[j] = order[j - 1];
        order[j] = i;
    }
    int64_t expected = 1;
    for (int i = v->count - 1; i >= 0; i--) {
        if (v->stride[order[i]] != expected) return false;
        expected *= v->size[order[i]];
    }
    return true;
}

/* The view's elements over v->dims from a buffer's n elements of `dtype`;
 * `a` names the view's offset slot. A dense block is sliced out (unless it
 * is the whole buffer, whose offset is 0), reshaped and transposed into the
 * view's order; any other view is gathered. */
static int take_view(render *r, int a, porta_dtype dtype, const view *v, int elements,
                     int64_t n) {
    const char *elt = shlo_storage_elt(dtype);
    char nd[32], numel[32];
    snprintf(nd, sizeof nd, "%" PRId64 "x", n);
    snprintf(numel, sizeof numel, "%" PRId64 "x", v->numel);
    shlo_type all = shlo_tensor(nd, elt), out = shlo_tensor(v->dims, elt);
    int order[PORTA_MAX_RANK];
    if (dense_block(v, order)) {
        int block = elements;
        if (v->numel != n) {
            char attrs[80];
            snprintf(attrs, sizeof attrs, " {slice_sizes = array<i64: %" PRId64 ">}", v->numel);
            int args[2] = {elements, slot(r, a)};
            shlo_type types[2] = {all, shlo_tensor("", "i64")};
            block = shlo_op(&r->e, "stablehlo.dynamic_slice", 2, args, types, attrs,
                            shlo_tensor(numel, elt));
        }
        int64_t sizes[PORTA_MAX_RANK], permutation[PORTA_MAX_RANK];
        bool identity = true;
        for (int i = 0; i < v->count; i++) {
            sizes[i] = v->size[order[i]];
            permutation[order[i]] = i;
            identity &= order[i] == i;
        }
        char dims[PORTA_MAX_RANK * 24];
        shlo_dims(dims, sizeof dims, sizes, v->count);
        shlo_type laid = shlo_tensor(dims, elt);
        int shaped = shlo_op1(&r->e, "stablehlo.reshape", block, shlo_tensor(numel, elt), laid);
        if (identity) return shaped;
        char attrs[256] = " {";
        shlo_attr_i64s(attrs + 2, sizeof attrs - 4, "permutation", permutation, v->count);
        strcat(attrs, "}");
        return shlo_op(&r->e, "stablehlo.transpose", 1, &shaped, &laid, attrs, out);
    }
    int at = indices(r, v, slot(r, a));
    char attrs[256];
    snprintf(attrs, sizeof attrs,
             " {dimension_numbers = #stablehlo.gather<collapsed_slice_dims = [0], "
             "start_index_map = [0], index_vector_dim = %d>, slice_sizes = array<i64: 1>, "
             "indices_are_sorted = false}",
             v->count);
    int args[2] = {elements, at};
    shlo_type types[2] = {all, shlo_tensor(v->dims, "i64")};
    return shlo_op(&r->e, "stablehlo.gather", 2, args, types, attrs, out);
}

/* Access a (buffer b, `dtype`) read as the tensor sizes[0..rank) (dims: their
 * text), in dtype's compute element. */
static int load_view(render *r, int a, int b, porta_dtype dtype, const int64_t *sizes,
                     const int64_t *strides, int rank, const char *dims) {
    for (int d = 0; d < rank; d++)
        if (sizes[d] == 0) /* nothing to read (a matmul's empty K): zeros */
            return shlo_constant(&r->e, shlo_tensor(dims, shlo_compute_elt(dtype)),
                                 shlo_zero(dtype));
    view v = view_of(sizes, strides, rank, true);
    int64_t n = element_count(r, b, dtype);
    const char *elt = shlo_storage_elt(dtype);
    int *elements = &r->elements[b][dtype];
    if (!*elements) *elements = to_elements(r, r->read[b], b, dtype);
    int taken = take_view(r, a, dtype, &v, *elements, n);
    shlo_type stored = shlo_tensor(dims, elt);
    if (v.count < rank)
        taken = broadcast(r, taken, shlo_tensor(v.dims, elt), stored, v.dim, v.count);
    if (dtype == PORTA_BOOL)
        return shlo_compare(&r->e, "NE", taken, shlo_constant(&r->e, stored, "0"), stored, dims);
    if (strcmp(elt, shlo_compute_elt(dtype)) != 0)
        return shlo_op1(&r->e, "stablehlo.convert", taken, stored,
                        shlo_tensor(dims, shlo_compute_elt(dtype)));
    return taken;
}

/* Writes value (over dims, dtype's compute element) through access a. */
static void store_view(render *r, int a, int b, porta_dtype dtype, int value,
                       const int64_t *sizes, const int64_t *strides, int rank,
                       const char *dims) {
    const char *elt = shlo_storage_elt(dtype);
    shlo_type stored = shlo_tensor(dims, elt);
    if (strcmp(elt, shlo_compute_elt(dtype)) != 0)
        value = shlo_op1(&r->e, "stablehlo.convert", value,
                         shlo_tensor(dims, shlo_compute_elt(dtype)), stored);
    view v = view_of(sizes, strides, rank, false);
    r->stored[b] = true;
    if (v.numel == 0) return; /* the buffer's bytes come back as they were */
    int64_t n = element_count(r, b, dtype);
    char nd[32], numel[32];
    snprintf(nd, sizeof nd, "%" PRId64 "x", n);
    snprintf(numel, sizeof numel, "%" PRId64 "x", v.numel);
    shlo_type all = shlo_tensor(nd, elt);
    int updated;
    if (v.contiguous && v.numel == n) {
        updated = shlo_op1(&r->e, "stablehlo.reshape", value, stored, all);
    } else {
        int elements = to_elements(r, r->bytes[b], b, dtype), offset = slot(r, a);
        if (v.contiguous) {
            int run = shlo_op1(&r->e, "stablehlo.reshape", value, stored, shlo_tensor(numel, elt));
            int args[3] = {elements, run, offset};
            shlo_type types[3] = {all, shlo_tensor(numel, elt), shlo_tensor("", "i64")};
            updated = shlo_op(&r->e, "stablehlo.dynamic_update_slice", 3, args, types, "", all);
        } else {
            shlo_type shaped = shlo_tensor(v.dims, elt), scalar = shlo_tensor("", elt);
            int update = shlo_op1(&r->e, "stablehlo.reshape", value, stored, shaped);
            int at = indices(r, &v, offset);
            updated = r->e.next++;
            int old = r->e.next++, new = r->e.next++;
            text_printf(r->e.t,
                        "    %%%d = \"stablehlo.scatter\"(%%%d, %%%d, %%%d) ({\n"
                        "    ^bb0(%%%d: %s, %%%d: %s):\n"
                        "      \"stablehlo.return\"(%%%d) : (%s) -> ()\n"
                        "    }) {scatter_dimension_numbers = #stablehlo.scatter<"
                        "inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], "
                        "index_vector_dim = %d>, indices_are_sorted = false, "
                        "unique_indices = false} : (%s, %s, %s) -> %s\n",
                        updated, elements, at, update, old, scalar.s, new, scalar.s, new,
                        scalar.s, v.count, all.s, shlo_tensor(v.dims, "i64").s, shaped.s,
                        all.s);
        }
    }
    r->bytes[b] = to_bytes(r, updated, b, dtype);
}

static int load(render *r, int a) {
    const kir_access *x = &r->k->accesses[a];
    span s = access_span(x);
    return load_view(r, a, r->l->buffer[a], x->dtype, r->l->sizes, r->l->strides[a], r->rank[s],
                     r->dims[s]);
}

static void store(render *r, int a) {
    const kir_access *x = &r->k->accesses[a];
    span s = access_span(x);
    store_view(r, a, r->l->buffer[a], x->dtype, operand(r, x->value, s), r->l->sizes,
               r->l->strides[a], r->rank[s], r->dims[s]);
}

/* ---- values ---- */

static int round_half(render *r, int x, span s, porta_dtype d) {
    shlo_type T = compute_type(r, s, d), H = shlo_tensor(r->dims[s], shlo_storage_elt(d));
    return shlo_op1(&r->e, "stablehlo.convert", shlo_op1(&r->e, "stablehlo.convert", x, T, H),
                    H, T);
}

static bool is_float(porta_dtype d) {
    return d == PORTA_F16 || d == PORTA_BF16 || d == PORTA_F32 || d == PORTA_F64;
}

/* A reduction as one stablehlo.reduce over the reduced dims, folding as
 * the C renderer does: float sums and products in float64, ANY/ALL of
 * values != 0, float max/min keeping the first NaN. */
static int reduce(render *r, const kir_value *v) {
    shlo_emit *e = &r->e;
    porta_dtype in = r->k->values[v->args[0]].dtype;
    int x = operand(r, v->args[0], SPAN_FULL);
    porta_dtype fold = in; /* what the fold computes in */
    bool sum = v->op == PORTA_REDUCE_SUM, prod = v->op == PORTA_REDUCE_PROD;
    bool any = v->op == PORTA_REDUCE_ANY, all = v->op == PORTA_REDUCE_ALL;
    if (any || all) {
        fold = PORTA_BOOL;
        if (in != PORTA_BOOL) {
            shlo_type T = compute_type(r, SPAN_FULL, in);
            x = shlo_compare(e, "NE", x, shlo_constant(e, T, shlo_zero(in)), T, r->dims[SPAN_FULL]);
        }
    } else if ((sum || prod) && is_float(in) && in != PORTA_F64) {
        fold = PORTA_F64; /* float sums and products accumulate in double */
        x = shlo_op1(e, "stablehlo.convert", x, compute_type(r, SPAN_FULL, in),
                     compute_type(r, SPAN_FULL, PORTA_F64));
    }
    shlo_type S = shlo_tensor("", shlo_compute_elt(fold));
    char init[40];
    bool max = v->op == PORTA_REDUCE_MAX;
    if (any || all) snprintf(init, sizeof init, "%s", all ? "true" : "false");
    else if (sum || prod) shlo_literal(init, sizeof init, fold, sum ? 0 : 1);
    else if (is_float(fold)) shlo_literal(init, sizeof init, fold, max ? -1.0 / 0.0 : 1.0 / 0.0);
    else {
        static const char *const lows[] = {[PORTA_U8] = "0", [PORTA_I8] = "-128",
                                           [PORTA_I16] = "-32768", [PORTA_I32] = "-2147483648",
                                           [PORTA_I64] = "-9223372036854775808"};
        static const char *const highs[] = {[PORTA_U8] = "255", [PORTA_I8] = "127",
                                            [PORTA_I16] = "32767", [PORTA_I32] = "2147483647",
                                            [PORTA_I64] = "9223372036854775807"};
        snprintf(init, sizeof init, "%s", max ? lows[fold] : highs[fold]);
    }
    int start = shlo_constant(e, S, init);
    int id = e->next++, acc = e->next++, elem = e->next++;
    text_printf(e->t, "    %%%d = \"stablehlo.reduce\"(%%%d, %%%d) ({\n    ^bb0(%%%d: %s, %%%d: %s):\n",
                id, x, start, acc, S.s, elem, S.s);
    int result;
    if (any || all)
        result = shlo_op2(e, any ? "stablehlo.or" : "stablehlo.and", acc, elem, S, S);
    else if (sum || prod)
        result = shlo_op2(e, sum ? "stablehlo.add" : "stablehlo.multiply", acc, elem, S, S);
    else if (!is_float(fold))
        result = shlo_op2(e, max ? "stablehlo.maximum" : "stablehlo.minimum", acc, elem, S, S);
    else { /* the eager fold: a NaN, once seen, stays */
        int better = max ? shlo_compare(e, "LT", acc, elem, S, "")
                         : shlo_compare(e, "LT", elem, acc, S, "");
        int chosen = shlo_select(e, better, elem, acc, "", S);
        result = shlo_select(e, shlo_compare(e, "NE", elem, elem, S, ""), elem, chosen, "", S);
    }
    int64_t reduced[PORTA_MAX_RANK];
    int count = 0;
    for (int d = r->k->outer_rank; d < r->k->rank; d++) reduced[count++] = d;
    char attrs[128];
    shlo_attr_i64s(attrs, sizeof attrs, "dimensions", reduced, count);
    text_printf(e->t, "      \"stablehlo.return\"(%%%d) : (%s) -> ()\n    }) {%s} : (%s, %s) -> %s\n",
                result, S.s, attrs, shlo_tensor(r->dims[SPAN_FULL], shlo_compute_elt(fold)).s,
                S.s, shlo_tensor(r->dims[SPAN_OUTER], shlo_compute_elt(fold)).s);
    if (fold == v->dtype || strcmp(shlo_compute_elt(fold), shlo_compute_elt(v->dtype)) == 0)
        return id;
    return shlo_op1(e, "stablehlo.convert", id, compute_type(r, SPAN_OUTER, fold),
                    compute_type(r, SPAN_OUTER, v->dtype));
}

static int value(render *r, int id) {
    const kir_value *v = &r->k->values[id];
    span s = span_of(v);
    switch (v->kind) {
    case KIR_LOAD: return load(r, v->access);
    case KIR_CONST: {
        char literal[40];
        shlo_literal(literal, sizeof literal, v->dtype, v->constant);
        return shlo_constant(&r->e, compute_type(r, s, v->dtype), literal);
    }
    case KIR_PARAM: {
        int bits = slot(r, KIR_MAX_ACCESSES + v->param);
        int f = shlo_op1(&r->e, "stablehlo.bitcast_convert", bits, shlo_tensor("", "i64"),
                         shlo_tensor("", "f64"));
        return shlo_from_double(&r->e, f, v->dtype, "");
    }
    case KIR_REDUCE: return reduce(r, v);
    default: break;
    }
    int x[3] = {0, 0, 0};
    int count = v->kind == KIR_BINARY ? 2 : v->kind == KIR_TERNARY ? 3 : 1;
    for (int a = 0; a < count; a++) x[a] = operand(r, v->args[a], s);
    int out = shlo_value_op(&r->e, v, r->k->values[v->args[0]].dtype, r->dims[s], x);
    if (!out)
        fail(r, porta_error(PORTA_ERR_UNSUPPORTED,
                            "StableHLO: kernel value %d (kind %d, op %d, dtype %s) has no "
                            "StableHLO spelling",
                            id, (int)v->kind, v->op, porta_dtype_name(v->dtype)));
    return out;
}

/* ---- the module ---- */

static void mark_live(render *r) {
    const kir_kernel *k = r->k;
    for (int a = 0; a < k->access_count; a++)
        if (k->accesses[a].store) r->live[k->accesses[a].value] = true;
    for (int id = k->value_count - 1; id >= 0; id--) {
        const kir_value *v = &k->values[id];
        if (!r->live[id] || v->kind == KIR_LOAD || v->kind == KIR_CONST || v->kind == KIR_PARAM)
            continue;
        int count = v->kind == KIR_BINARY ? 2 : v->kind == KIR_TERNARY ? 3 : 1;
        for (int a = 0; a < count; a++) r->live[v->args[a]] = true;
    }
}

static porta_status *check_layout(const kir_kernel *k, const shlo_layout *l) {
    if (l->buffer_count < 1 || l->buffer_count > KIR_MAX_ACCESSES)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "StableHLO: %d buffers; expected 1..%d", l->buffer_count,
                           KIR_MAX_ACCESSES);
    for (int a = 0; a < k->access_count; a++)
        if (l->buffer[a] < 0 || l->buffer[a] >= l->buffer_count)
            return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                               "StableHLO: access %d uses buffer %d; expected 0..%d", a,
                               l->buffer[a], l->buffer_count - 1);
    for (int d = 0; d < k->rank; d++)
        if (l->sizes[d] < 0)
            return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                               "StableHLO: domain size %" PRId64 " at dim %d; expected >= 0",
                               l->sizes[d], d);
    for (int b = 0; b < l->buffer_count; b++)
        if (l->buffer_bytes[b] < 0)
            return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                               "StableHLO: buffer %d has %" PRId64 " bytes; expected >= 0", b,
                               l->buffer_bytes[b]);
    return NULL;
}

bool shlo_buffer_stored(const kir_kernel *k, const shlo_layout *l, int b) {
    for (int a = 0; a < k->access_count; a++)
        if (k->accesses[a].store && l->buffer[a] == b) return true;
    return false;
}

void shlo_pack_scalars(const int64_t *offsets, int access_count, const double *params,
                       int64_t slots[SHLO_SCALAR_SLOTS]) {
    memset(slots, 0, SHLO_SCALAR_SLOTS * sizeof *slots);
    memcpy(slots, offsets, (size_t)access_count * sizeof *offsets);
    memcpy(slots + KIR_MAX_ACCESSES, params, KIR_MAX_PARAMS * sizeof *params);
}

static render *render_new(const shlo_layout *l, core_text *body) {
    render *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->l = l;
    r->e = (shlo_emit){.t = body, .next = 1};
    for (int b = 0; b < l->buffer_count; b++) r->arg[b] = r->read[b] = r->bytes[b] = r->e.next++;
    r->scalars = r->e.next++;
    return r;
}

static void result_types(core_text *t, const render *r) {
    int results = 0;
    for (int b = 0; b < r->l->buffer_count; b++)
        if (r->stored[b])
            text_printf(t, "%stensor<%" PRId64 "xui8>", results++ ? ", " : "",
                        r->l->buffer_bytes[b]);
}

/* The module around the statements in body; frees r and body. */
static porta_status *assemble(render *r, core_text *body, char **text, bool *takes_scalars) {
    const shlo_layout *l = r->l;
    core_text t = {0};
    text_puts(&t, "module @porta_kernel {\n  func.func public @main(");
    for (int b = 0; b < l->buffer_count; b++)
        text_printf(&t, "%s%%%d: tensor<%" PRId64 "xui8>", b ? ", " : "", r->arg[b],
                    l->buffer_bytes[b]);
    bool scalars = r->slots != 0; /* an offset or parameter is read */
    if (takes_scalars) *takes_scalars = scalars;
    if (scalars) text_printf(&t, ", %%%d: tensor<%dxui8>", r->scalars, SHLO_SCALAR_BYTES);
    text_puts(&t, ") -> (");
    result_types(&t, r);
    text_puts(&t, ") {\n");
    if (body->chars) text_append(&t, body->chars, body->length);
    text_puts(&t, "    \"func.return\"(");
    int results = 0;
    for (int b = 0; b < l->buffer_count; b++)
        if (r->stored[b]) text_printf(&t, "%s%%%d", results++ ? ", " : "", r->bytes[b]);
    text_puts(&t, ") : (");
    result_types(&t, r);
    text_puts(&t, ") -> ()\n  }\n}\n");
    porta_status *status = r->error ? r->error : text_failure(body, "a StableHLO module");
    text_free(body);
    free(r);
    if (status) {
        text_free(&t);
        return status;
    }
    return text_take(&t, "a StableHLO module", text);
}

static porta_status *check_kernel(const kir_kernel *k, const shlo_layout *l) {
    PORTA_TRY(kir_check(k));
    PORTA_TRY(check_layout(k, l));
    for (int id = 0; id < k->value_count; id++) {
        const kir_value *v = &k->values[id];
        bool ops = v->kind != KIR_LOAD && v->kind != KIR_CONST && v->kind != KIR_PARAM;
        if (ops && !shlo_supports(v, k->values[v->args[0]].dtype))
            return porta_error(PORTA_ERR_UNSUPPORTED,
                               "StableHLO: kernel value %d (kind %d, op %d, dtype %s) has no "
                               "StableHLO spelling",
                               id, (int)v->kind, v->op, porta_dtype_name(v->dtype));
    }
    return NULL;
}

/* The statements of kernel k over r->l (checked). */
static void render_kernel(render *r, const kir_kernel *k) {
    const shlo_layout *l = r->l;
    r->k = k;
    r->rank[SPAN_OUTER] = k->outer_rank;
    r->rank[SPAN_FULL] = k->rank;
    shlo_dims(r->dims[SPAN_OUTER], sizeof r->dims[0], l->sizes, k->outer_rank);
    shlo_dims(r->dims[SPAN_FULL], sizeof r->dims[0], l->sizes, k->rank);
    mark_live(r);
    for (int id = 0; id < k->value_count && !r->error; id++)
        if (r->live[id]) {
            const kir_value *v = &k->values[id];
            r->name[id] = value(r, id);
            /* halves: computed in float32, rounded once per value */
            bool half = v->dtype == PORTA_F16 || v->dtype == PORTA_BF16;
            if (half && v->kind != KIR_LOAD && v->kind != KIR_CONST && !r->error)
                r->name[id] = round_half(r, r->name[id], span_of(v), v->dtype);
        }
    for (int a = 0; a < k->access_count && !r->error; a++)
        if (k->accesses[a].store) store(r, a);
}

porta_status *kir_render_stablehlo(const kir_kernel *k, const shlo_layout *l, char **text,
                                   bool *takes_scalars) {
    PORTA_TRY(check_kernel(k, l));
    core_text body = {0};
    render *r = render_new(l, &body);
    if (!r) return porta_error(PORTA_ERR_OUT_OF_MEMORY, "StableHLO: renderer state");
    render_kernel(r, k);
    return assemble(r, &body, text, takes_scalars);
}

porta_status *shlo_render_matmul(const shlo_matmul *m, char **text, bool *takes_scalars) {
    int rank = m->rank, batch = rank - 2;
    if (rank < 2 || rank > PORTA_MAX_RANK || !is_float(m->dtype))
        return porta_error(PORTA_ERR_UNSUPPORTED,
                           "StableHLO: matmul of rank %d and dtype %s; expected rank 2..%d "
                           "and a float dtype",
                           rank, porta_dtype_name(m->dtype), PORTA_MAX_RANK);
    for (int i = 0; i < 3; i++)
        if (m->layout.buffer[i] < 0 || m->layout.buffer[i] >= m->layout.buffer_count)
            return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                               "StableHLO: matmul operand %d uses buffer %d; expected 0..%d", i,
                               m->layout.buffer[i], m->layout.buffer_count - 1);
    int base = 0; /* the operands' offset slots */
    if (m->epilogue) {
        PORTA_TRY(check_kernel(m->epilogue, &m->epilogue_layout));
        base = m->epilogue->access_count;
        if (base + 3 > KIR_MAX_ACCESSES)
            return porta_error(PORTA_ERR_UNSUPPORTED,
                               "StableHLO: a matmul epilogue of %d accesses; expected at most %d",
                               base, KIR_MAX_ACCESSES - 3);
    }
    core_text body = {0};
    render *r = render_new(m->epilogue ? &m->epilogue_layout : &m->layout, &body);
    if (!r) return porta_error(PORTA_ERR_OUT_OF_MEMORY, "StableHLO: renderer state");
    const int64_t *sizes[3] = {m->a_sizes, m->b_sizes, m->out_sizes};
    char dims[3][PORTA_MAX_RANK * 24];
    for (int i = 0; i < 3; i++) shlo_dims(dims[i], sizeof dims[i], sizes[i], rank);
    int x[2];
    for (int i = 0; i < 2; i++)
        x[i] = load_view(r, base + i, m->layout.buffer[i], m->dtype, sizes[i],
                         m->layout.strides[i], rank, dims[i]);
    char attrs[512], lists[1][96];
    size_t used = 0;
    for (int d = 0; d < batch; d++)
        used += (size_t)snprintf(lists[0] + used, sizeof lists[0] - used, "%s%d", d ? ", " : "", d);
    lists[0][used] = '\0';
    if (batch)
        snprintf(attrs, sizeof attrs,
                 " {dot_dimension_numbers = #stablehlo.dot<lhs_batching_dimensions = [%s], "
                 "rhs_batching_dimensions = [%s], lhs_contracting_dimensions = [%d], "
                 "rhs_contracting_dimensions = [%d]>}",
                 lists[0], lists[0], rank - 1, rank - 2);
    else
        snprintf(attrs, sizeof attrs,
                 " {dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [1], "
                 "rhs_contracting_dimensions = [0]>}");
    const char *elt = shlo_compute_elt(m->dtype);
    shlo_type types[2] = {shlo_tensor(dims[0], elt), shlo_tensor(dims[1], elt)};
    int product = shlo_op(&r->e, "stablehlo.dot_general", 2, x, types, attrs,
                          shlo_tensor(dims[2], elt));
    int out = m->layout.buffer[2];
    store_view(r, base + 2, out, m->dtype, product, m->out_sizes, m->layout.strides[2], rank,
               dims[2]);
    if (m->epilogue && !r->error) {
        /* the epilogue reads the product: out's bytes as the matmul left them */
        r->read[out] = r->bytes[out];
        memset(r->elements[out], 0, sizeof r->elements[out]);
        render_kernel(r, m->epilogue);
    }
    return assemble(r, &body, text, takes_scalars);
}

/* ---- whole primitives (codegen_stablehlo_prim.c) ---- */

shlo_render *shlo_render_begin(const shlo_layout *layout, core_text *body) {
    return render_new(layout, body);
}

shlo_emit *shlo_render_emitter(shlo_render *r) { return &r->e; }


int shlo_render_load(shlo_render *r, int a, porta_dtype dtype, const int64_t *sizes, int rank) {
    char dims[PORTA_MAX_RANK * 24];
    shlo_dims(dims, sizeof dims, sizes, rank);
    return load_view(r, a, r->l->buffer[a], dtype, sizes, r->l->strides[a], rank, dims);
}

void shlo_render_store(shlo_render *r, int a, porta_dtype dtype, int value, const int64_t *sizes,
                       int rank) {
    char dims[PORTA_MAX_RANK * 24];
    shlo_dims(dims, sizeof dims, sizes, rank);
    store_view(r, a, r->l->buffer[a], dtype, value, sizes, r->l->strides[a], rank, dims);
}

porta_status *shlo_render_end(shlo_render *r, core_text *body, char **text, bool *takes_scalars) {
    return assemble(r, body, text, takes_scalars);
}
