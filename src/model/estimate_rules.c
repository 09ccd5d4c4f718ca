/* The shapes and FLOPs of aten ops for the cost estimate. Conventions:
 * a multiply-add is 2 FLOPs (matrix products, convolutions); a pointwise op
 * 1 per output element; a reduction 1 per input element; softmax 5 and
 * layer or group norm 8 per element, batch norm (inference) 4; pooling 1
 * per window element; moving data (views, copies, cat, indexing,
 * factories) none. Ops outside these rules leave their results unknown. */
#include <math.h>
#include <string.h>

#include "model/estimate.h"

enum { MAX_LIST = 16 };

/* Sizes stay within what a declared shape may hold, and the arithmetic on
 * them saturates: a hostile graph gets an absurd estimate, never overflow. */
int64_t est_numel(const est_value *v) {
    int64_t n = 1;
    for (int d = 0; d < v->rank; d++)
        if (__builtin_mul_overflow(n, v->sizes[d], &n)) return INT64_MAX;
    return n;
}

static int64_t saturating_mul(int64_t a, int64_t b) {
    int64_t product;
    return __builtin_mul_overflow(a, b, &product) ? INT64_MAX : product;
}

static bool in_range(int64_t v) { return v >= -MODEL_MAX_DIM && v <= MODEL_MAX_DIM; }

static const est_value *tensor_arg(const est_node *e, int a) {
    if (a >= e->node->arg_count || e->node->args[a].kind != ARG_TENSOR) return NULL;
    const est_value *v = &e->values[e->node->args[a].slot];
    return v->known ? v : NULL;
}

static bool int_arg(const est_node *e, int a, int64_t *out) {
    if (a >= e->node->arg_count) return false;
    const model_arg *arg = &e->node->args[a];
    if (arg->kind == ARG_INT) *out = arg->i;
    else if (arg->kind == ARG_SYM && e->values[arg->slot].known) *out = e->values[arg->slot].i;
    else return false;
    return in_range(*out);
}

static bool number_arg(const est_node *e, int a, double *out) {
    int64_t i;
    if (a < e->node->arg_count && e->node->args[a].kind == ARG_FLOAT) {
        *out = e->node->args[a].f;
        return true;
    }
    if (!int_arg(e, a, &i)) return false;
    *out = (double)i;
    return true;
}

/* An int list; a NONE argument is an empty list when none_ok. */
static bool ints_arg(const est_node *e, int a, int64_t *out, int *count, bool none_ok) {
    if (a >= e->node->arg_count) return false;
    const model_arg *arg = &e->node->args[a];
    if (arg->kind == ARG_NONE && none_ok) {
        *count = 0;
        return true;
    }
    if (arg->kind != ARG_INTS || arg->ints.count > MAX_LIST) return false;
    for (int i = 0; i < arg->ints.count; i++) {
        int slot = arg->ints.syms ? arg->ints.syms[i] : -1;
        if (slot >= 0 && !e->values[slot].known) return false;
        out[i] = slot >= 0 ? e->values[slot].i : arg->ints.values[i];
        if (!in_range(out[i])) return false;
    }
    *count = arg->ints.count;
    return true;
}

static bool bool_arg(const est_node *e, int a) {
    return a < e->node->arg_count && e->node->args[a].kind == ARG_BOOL && e->node->args[a].b;
}

static int wrap_dim(int64_t dim, int rank) {
    int64_t span = rank ? rank : 1;
    if (dim < -span || dim >= span) return -1;
    return (int)(dim < 0 ? dim + span : dim);
}

static bool set_shape(est_value *out, porta_dtype dtype, int rank, const int64_t *sizes) {
    if (rank < 0 || rank > PORTA_MAX_RANK) return false;
    *out = (est_value){.known = true, .dtype = dtype, .rank = rank};
    for (int d = 0; d < rank; d++) {
        if (sizes[d] < 0 || sizes[d] > MODEL_MAX_DIM) return out->known = false;
        out->sizes[d] = sizes[d];
    }
    return true;
}

/* ---- pointwise ops, and what falls back to them ---- */

static bool is_comparison(const char *name) {
    static const char *const prefixes[] = {"eq", "ne", "lt", "le", "gt", "ge", "logical_",
                                           "isnan", "isinf", "isfinite", "isneginf", "isposinf",
                                           "signbit"};
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++) {
        size_t n = strlen(prefixes[i]);
        if (!strncmp(name, prefixes[i], n) &&
            (prefixes[i][n - 1] == '_' || name[n] == '\0' || name[n] == '.'))
            return true;
    }
    return false;
}

static bool moves_data_only(const char *name) {
    static const char *const names[] = {"copy", "clone", "_to_copy", "alias", "full_like",
                                        "zeros_like", "ones_like", "empty_like", "lift_fresh_copy",
                                        "detach", "scalar_tensor"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(name, names[i])) return true;
    return false;
}

/* Every tensor argument broadcast together; the result's dtype is a dtype
 * argument's, else bool for comparisons, else the first floating tensor's
 * (else the first tensor's). Every output gets that shape. */
static bool pointwise(est_node *e) {
    const model_node *node = e->node;
    est_value out = {.known = true, .dtype = PORTA_F32};
    bool any = false, floating = false;
    for (int a = 0; a < node->arg_count; a++) {
        if (node->args[a].kind != ARG_TENSOR) continue;
        const est_value *v = tensor_arg(e, a);
        if (!v) return false;
        if (!any || (!floating && porta_dtype_is_float(v->dtype))) out.dtype = v->dtype;
        floating = floating || porta_dtype_is_float(v->dtype);
        int rank = v->rank > out.rank ? v->rank : out.rank;
        int64_t sizes[PORTA_MAX_RANK];
        for (int d = 0; d < rank; d++) {
            int64_t x = d >= rank - out.rank ? out.sizes[d - (rank - out.rank)] : 1;
            int64_t y = d >= rank - v->rank ? v->sizes[d - (rank - v->rank)] : 1;
            if (x != y && x != 1 && y != 1) return false;
            sizes[d] = x == 1 ? y : x;
        }
        out.rank = rank;
        memcpy(out.sizes, sizes, sizeof sizes);
        any = true;
    }
    for (int a = 0; a < node->arg_count; a++)
        if (node->args[a].kind == ARG_DTYPE) out.dtype = node->args[a].dtype;
    if (is_comparison(node->op_name)) out.dtype = PORTA_BOOL;
    for (int o = 0; o < node->output_count; o++) e->outputs[o] = out;
    if (!moves_data_only(node->op_name)) e->flops += (double)est_numel(&out);
    return true;
}

/* ---- matrix products and convolution ---- */

static bool mm(est_node *e) {
    bool bias = !strcmp(e->node->op_name, "addmm") || !strcmp(e->node->op_name, "baddbmm");
    const est_value *a = tensor_arg(e, bias), *b = tensor_arg(e, bias + 1);
    if (!a || !b || a->rank != b->rank || a->rank < 2 || a->rank > 3) return false;
    int r = a->rank;
    if (a->sizes[r - 1] != b->sizes[r - 2] || (r == 3 && a->sizes[0] != b->sizes[0])) return false;
    int64_t sizes[3] = {a->sizes[0], a->sizes[r - 2], b->sizes[r - 1]}; /* [batch,] m, n */
    set_shape(&e->outputs[0], a->dtype, r, r == 3 ? sizes : sizes + 1);
    e->flops += 2.0 * (double)est_numel(&e->outputs[0]) * (double)a->sizes[r - 1];
    if (bias) e->flops += (double)est_numel(&e->outputs[0]);
    return true;
}

/* convolution(input, weight, bias, stride, padding, dilation, transposed,
 * output_padding, groups) */
static bool convolution(est_node *e) {
    const est_value *x = tensor_arg(e, 0), *w = tensor_arg(e, 1);
    int64_t stride[MAX_LIST], padding[MAX_LIST], dilation[MAX_LIST], extra[MAX_LIST], groups;
    int ns, np, nd, ne;
    if (!x || !w || x->rank != w->rank || x->rank < 3 || !ints_arg(e, 3, stride, &ns, false) ||
        !ints_arg(e, 4, padding, &np, false) || !ints_arg(e, 5, dilation, &nd, false) ||
        !ints_arg(e, 7, extra, &ne, false) || !int_arg(e, 8, &groups) || groups < 1)
        return false;
    bool transposed = bool_arg(e, 6);
    int spatial = x->rank - 2;
    int64_t sizes[PORTA_MAX_RANK] = {x->sizes[0], transposed ? w->sizes[1] * groups : w->sizes[0]};
    int64_t window = 1;
    for (int d = 0; d < spatial; d++) {
        int64_t s = stride[ns == 1 ? 0 : d], p = padding[np == 1 ? 0 : d];
        int64_t dil = dilation[nd == 1 ? 0 : d], k = w->sizes[2 + d], in = x->sizes[2 + d];
        if ((ns != 1 && ns <= d) || (np != 1 && np <= d) || (nd != 1 && nd <= d) || s < 1)
            return false;
        /* In doubles: exact whenever the result is a size at all. */
        double op = transposed && ne > d ? (double)extra[d] : 0;
        double span = (double)in + 2.0 * (double)p - (double)dil * (double)(k - 1) - 1;
        double size = transposed ? (double)(in - 1) * (double)s - 2.0 * (double)p +
                                       (double)dil * (double)(k - 1) + op + 1
                                 : span < 0 ? -1 : floor(span / (double)s) + 1;
        if (!(size >= 0 && size <= (double)MODEL_MAX_DIM)) return false;
        sizes[2 + d] = (int64_t)size;
        window = saturating_mul(window, k);
    }
    if (!set_shape(&e->outputs[0], x->dtype, x->rank, sizes)) return false;
    /* Each output element of a convolution (each input element of a
     * transposed one) meets a window of every channel in its group: dim 1
     * of the weight either way. */
    double points = (double)est_numel(transposed ? x : &e->outputs[0]);
    e->flops += 2.0 * points * (double)w->sizes[1] * (double)window;
    return true;
}

/* ---- views and data movement ---- */

static bool view(est_node *e) {
    const est_value *x = tensor_arg(e, 0);
    int64_t sizes[MAX_LIST];
    int n, unknown = -1;
    if (!x || !ints_arg(e, 1, sizes, &n, false) || n > PORTA_MAX_RANK) return false;
    int64_t known = 1;
    for (int d = 0; d < n; d++)
        if (sizes[d] == -1 && unknown < 0) unknown = d;
        else known = saturating_mul(known, sizes[d]);
    if (unknown >= 0) sizes[unknown] = known ? est_numel(x) / known : 0;
    if (!set_shape(&e->outputs[0], x->dtype, n, sizes) || est_numel(&e->outputs[0]) != est_numel(x))
        return false;
    e->outputs[0].view = true;
    return true;
}

static bool expand(est_node *e) {
    const est_value *x = tensor_arg(e, 0);
    int64_t sizes[MAX_LIST];
    int n;
    if (!x || !ints_arg(e, 1, sizes, &n, false) || n < x->rank) return false;
    for (int d = 0; d < n; d++)
        if (sizes[d] == -1 && d >= n - x->rank) sizes[d] = x->sizes[d - (n - x->rank)];
    if (!set_shape(&e->outputs[0], x->dtype, n, sizes)) return false;
    e->outputs[0].view = true;
    return true;
}

static bool permute(est_node *e) {
    const est_value *x = tensor_arg(e, 0);
    int64_t dims[MAX_LIST], sizes[PORTA_MAX_RANK];
    int n;
    if (!x || !ints_arg(e, 1, dims, &n, false) || n != x->rank) return false;
    for (int d = 0; d < n; d++) {
        int from = wrap_dim(dims[d], n);
        if (from < 0) return false;
        sizes[d] = x->sizes[from];
    }
    set_shape(&e->outputs[0], x->dtype, n, sizes);
    e->outputs[0].view = true;
    return true;
}

/* transpose.int(x, i, j) and t(x). */
static bool transpose(est_node *e) {
    const est_value *x = tensor_arg(e, 0);
    int64_t i = 0, j = 1;
    if (!x || (e->node->arg_count > 1 && (!int_arg(e, 1, &i) || !int_arg(e, 2, &j)))) return false;
    est_value out = *x;
    int a = wrap_dim(i, x->rank), b = wrap_dim(j, x->rank);
    if (x->rank < 2) a = b = 0;
    if (a < 0 || b < 0) return false;
    out.sizes[a] = x->sizes[b];
    out.sizes[b] = x->sizes[a];
    out.view = true;
    e->outputs[0] = out;
    return true;
}

static bool unsqueeze(est_node *e) {
    const est_value *x = tensor_arg(e, 0);
    int64_t dim;
    if (!x || !int_arg(e, 1, &dim) || x->rank == PORTA_MAX_RANK) return false;
    int at = wrap_dim(dim, x->rank + 1);
    if (at < 0) return false;
    int64_t sizes[PORTA_MAX_RANK];
    for (int d = 0, s = 0; d <= x->rank; d++) sizes[d] = d == at ? 1 : x->sizes[s++];
    set_shape(&e->outputs[0], x->dtype, x->rank + 1, sizes);
    e->outputs[0].view = true;
    return true;
}

/* squeeze(x), squeeze.dim(x, d), squeeze.dims(x, ds): size-1 dims go. */
static bool squeeze(est_node *e) {
    const est_value *x = tensor_arg(e, 0);
    int64_t dims[MAX_LIST];
    int n = 0;
    if (!x) return false;
    if (e->node->arg_count > 1 && !ints_arg(e, 1, dims, &n, false)) {
        if (!int_arg(e, 1, &dims[0])) return false;
        n = 1;
    }
    bool drop[PORTA_MAX_RANK] = {false};
    for (int d = 0; d < x->rank; d++) drop[d] = e->node->arg_count == 1 && x->sizes[d] == 1;
    for (int k = 0; k < n; k++) {
        int d = wrap_dim(dims[k], x->rank);
        if (d < 0) return false;
        if (d < x->rank) drop[d] = x->sizes[d] == 1;
    }
    int64_t sizes[PORTA_MAX_RANK];
    int rank = 0;
    for (int d = 0; d < x->rank; d++)
        if (!drop[d]) sizes[rank++] = x->sizes[d];
    set_shape(&e->outputs[0], x->dtype, rank, sizes);
    e->outputs[0].view = true;
    return true;
}

/* select.int(x, dim, index) and slice.Tensor(x, dim, start, end, step). */
static bool select_or_slice(est_node *e) {
    const est_value *x = tensor_arg(e, 0);
    int64_t dim;
    if (!x || !int_arg(e, 1, &dim)) return false;
    int d = wrap_dim(dim, x->rank);
    if (d < 0 || d >= x->rank) return false;
    est_value out = *x;
    out.view = true;
    if (!strcmp(e->node->op_name, "select.int")) {
        for (int k = d; k + 1 < x->rank; k++) out.sizes[k] = x->sizes[k + 1];
        out.rank--;
    } else {
        int64_t n = x->sizes[d], start = 0, end = n, step = 1;
        if (e->node->args[2].kind != ARG_NONE && !int_arg(e, 2, &start)) return false;
        if (e->node->args[3].kind != ARG_NONE && !int_arg(e, 3, &end)) return false;
        if (!int_arg(e, 4, &step) || step < 1) return false;
        if (start < 0) start += n;
        if (end < 0) end += n;
        start = start < 0 ? 0 : start > n ? n : start;
        end = end < start ? start : end > n ? n : end;
        out.sizes[d] = (end - start + step - 1) / step;
    }
    e->outputs[0] = out;
    return true;
}

static bool cat(est_node *e) {
    const model_arg *list = &e->node->args[0];
    int64_t dim;
    if (list->kind != ARG_TENSORS || !list->tensors.count || !int_arg(e, 1, &dim)) return false;
    est_value out = {.known = false};
    int64_t total = 0;
    int d = -1;
    for (int i = 0; i < list->tensors.count; i++) {
        const est_value *v = list->tensors.slots[i] >= 0 ? &e->values[list->tensors.slots[i]] : NULL;
        if (!v || !v->known) return false;
        if (v->rank == 1 && v->sizes[0] == 0) continue; /* PyTorch skips empty 1-D tensors */
        if (!out.known) {
            out = *v;
            d = wrap_dim(dim, v->rank);
            if (d < 0 || d >= v->rank) return false;
        }
        if (__builtin_add_overflow(total, v->sizes[d], &total)) return false;
    }
    if (!out.known) return false;
    out.sizes[d] = total;
    out.view = false;
    e->outputs[0] = out;
    return true;
}

/* split_with_sizes(x, sizes, dim): one view per size. */
static bool split_with_sizes(est_node *e) {
    const est_value *x = tensor_arg(e, 0);
    int64_t sizes[MAX_LIST], dim;
    int n;
    if (!x || !ints_arg(e, 1, sizes, &n, false) || !int_arg(e, 2, &dim)) return false;
    int d = wrap_dim(dim, x->rank);
    if (d < 0 || d >= x->rank || n < e->node->output_count) return false;
    for (int o = 0; o < e->node->output_count; o++) {
        e->outputs[o] = *x;
        e->outputs[o].sizes[d] = sizes[o];
        e->outputs[o].view = true;
    }
    return true;
}

/* constant_pad_nd(x, pad, value): pad holds (before, after) pairs from
 * the last dim backwards. */
static bool constant_pad_nd(est_node *e) {
    const est_value *x = tensor_arg(e, 0);
    int64_t pad[MAX_LIST];
    int n;
    if (!x || !ints_arg(e, 1, pad, &n, false) || n % 2 || n / 2 > x->rank) return false;
    est_value out = *x;
    for (int k = 0; k < n / 2; k++) out.sizes[x->rank - 1 - k] += pad[2 * k] + pad[2 * k + 1];
    out.view = false;
    e->outputs[0] = out;
    return true;
}

static bool repeat(est_node *e) {
    const est_value *x = tensor_arg(e, 0);
    int64_t times[MAX_LIST], sizes[PORTA_MAX_RANK];
    int n;
    if (!x || !ints_arg(e, 1, times, &n, false) || n < x->rank) return false;
    for (int d = 0; d < n; d++)
        sizes[d] = saturating_mul(times[d], d >= n - x->rank ? x->sizes[d - (n - x->rank)] : 1);
    return set_shape(&e->outputs[0], x->dtype, n, sizes);
}

/* embedding(weight, indices, ...): a row of weight per index. */
static bool embedding(est_node *e) {
    const est_value *w = tensor_arg(e, 0), *idx = tensor_arg(e, 1);
    if (!w || !idx || w->rank != 2 || idx->rank == PORTA_MAX_RANK) return false;
    est_value out = *idx;
    out.dtype = w->dtype;
    out.sizes[out.rank++] = w->sizes[1];
    out.view = false;
    e->outputs[0] = out;
    return true;
}

/* index_select(x, dim, index) and gather(x, dim, index, ...). */
static bool index_along(est_node *e) {
    const est_value *x = tensor_arg(e, 0), *idx = tensor_arg(e, 2);
    int64_t dim;
    if (!x || !idx || !int_arg(e, 1, &dim)) return false;
    int d = wrap_dim(dim, x->rank);
    if (d < 0) return false;
    est_value out = !strcmp(e->node->op_name, "gather") ? *idx : *x;
    if (strcmp(e->node->op_name, "gather")) {
        if (d >= x->rank) return false;
        out.sizes[d] = est_numel(idx);
    }
    out.dtype = x->dtype;
    out.view = false;
    e->outputs[0] = out;
    return true;
}

/* index.Tensor(x, indices): a run of index tensors after leading NONEs. */
static bool index_tensor(est_node *e) {
    const est_value *x = tensor_arg(e, 0);
    const model_arg *list = &e->node->args[1];
    if (!x || list->kind != ARG_TENSORS || list->tensors.count > x->rank) return false;
    int first = 0, count = list->tensors.count;
    while (first < count && list->tensors.slots[first] < 0) first++;
    est_value shape = {.known = true};
    for (int i = first; i < count; i++) {
        int slot = list->tensors.slots[i];
        if (slot < 0 || !e->values[slot].known) return false;
        const est_value *v = &e->values[slot];
        int rank = v->rank > shape.rank ? v->rank : shape.rank;
        int64_t sizes[PORTA_MAX_RANK];
        for (int d = 0; d < rank; d++) {
            int64_t a = d >= rank - shape.rank ? shape.sizes[d - (rank - shape.rank)] : 1;
            int64_t b = d >= rank - v->rank ? v->sizes[d - (rank - v->rank)] : 1;
            sizes[d] = a == 1 ? b : a;
        }
        shape.rank = rank;
        memcpy(shape.sizes, sizes, sizeof sizes);
    }
    int rank = first + shape.rank + (x->rank - count);
    if (rank > PORTA_MAX_RANK) return false;
    int64_t sizes[PORTA_MAX_RANK];
    int r = 0;
    for (int d = 0; d < first; d++) sizes[r++] = x->sizes[d];
    for (int d = 0; d < shape.rank; d++) sizes[r++] = shape.sizes[d];
    for (int d = count; d < x->rank; d++) sizes[r++] = x->sizes[d];
    return set_shape(&e->outputs[0], x->dtype, rank, sizes);
}

/* ---- reductions and normalisations ---- */

/* The result of reducing `x` over the dims marked. */
static void reduce_dims(const est_value *x, const bool *reduced, bool keepdim, porta_dtype dtype,
                        est_value *out) {
    int64_t sizes[PORTA_MAX_RANK];
    int rank = 0;
    for (int d = 0; d < x->rank; d++)
        if (!reduced[d]) sizes[rank++] = x->sizes[d];
        else if (keepdim) sizes[rank++] = 1;
    set_shape(out, dtype, rank, sizes);
}

static porta_dtype reduced_dtype(const est_node *e, const est_value *x) {
    const char *name = e->node->op_name;
    if (!strncmp(name, "arg", 3)) return PORTA_I64;
    if (!strncmp(name, "any", 3) || !strncmp(name, "all", 3)) return PORTA_BOOL;
    for (int a = 0; a < e->node->arg_count; a++)
        if (e->node->args[a].kind == ARG_DTYPE) return e->node->args[a].dtype;
    return x->dtype;
}

/* sum, mean, max, ... over every element, over one dim (an 'i' or 'j'
 * code: max.dim, argmax) or over a list of dims (an 'I' or 'J' code: NONE
 * or empty for every dim); keepdim is the first bool after the dims. The
 * second output of max.dim / min.dim holds the indices. */
static bool reduction(est_node *e) {
    const est_value *x = tensor_arg(e, 0);
    if (!x) return false;
    int64_t dims[MAX_LIST];
    int n = 0, at = 1;
    while (at < e->node->arg_count && !strchr("iIjJ", e->codes[at])) at++;
    if (at < e->node->arg_count && e->node->args[at].kind != ARG_NONE) {
        if (strchr("ij", e->codes[at])) {
            if (!int_arg(e, at, &dims[0])) return false;
            n = 1;
        } else if (!ints_arg(e, at, dims, &n, true)) {
            return false;
        }
    }
    bool reduced[PORTA_MAX_RANK] = {false}, keepdim = false;
    for (int k = 0; k < n; k++) {
        int d = wrap_dim(dims[k], x->rank);
        if (d < 0) return false;
        if (d < x->rank) reduced[d] = true;
    }
    for (int d = 0; !n && d < x->rank; d++) reduced[d] = true;
    for (int b = at + 1; n && b < e->node->arg_count; b++)
        if (e->codes[b] == 'b') {
            keepdim = bool_arg(e, b);
            break;
        }
    reduce_dims(x, reduced, keepdim, reduced_dtype(e, x), &e->outputs[0]);
    if (e->node->output_count > 1) {
        e->outputs[1] = e->outputs[0];
        e->outputs[1].dtype = PORTA_I64;
    }
    e->flops += (double)est_numel(x);
    return true;
}

/* Same shape as the input: _softmax, _log_softmax, cumsum, sort (values
 * and indices). */
static bool same_shape(est_node *e) {
    const est_value *x = tensor_arg(e, 0);
    if (!x) return false;
    const char *name = e->node->op_name;
    for (int o = 0; o < e->node->output_count; o++) {
        e->outputs[o] = *x;
        e->outputs[o].view = false;
        if (o) e->outputs[o].dtype = PORTA_I64;
    }
    double n = (double)est_numel(x);
    if (strstr(name, "softmax")) e->flops += 5.0 * n;
    else if (!strncmp(name, "sort", 4)) e->flops += n * log2(fmax(2.0, (double)x->sizes[x->rank ? x->rank - 1 : 0]));
    else e->flops += n;
    return true;
}

/* topk(x, k, dim, ...): values and indices with dim cut to k. */
static bool topk(est_node *e) {
    const est_value *x = tensor_arg(e, 0);
    int64_t k, dim;
    if (!x || !int_arg(e, 1, &k) || !int_arg(e, 2, &dim)) return false;
    int d = wrap_dim(dim, x->rank);
    if (d < 0 || d >= x->rank) return false;
    for (int o = 0; o < e->node->output_count; o++) {
        e->outputs[o] = *x;
        e->outputs[o].sizes[d] = k;
        if (o) e->outputs[o].dtype = PORTA_I64;
    }
    e->flops += (double)est_numel(x);
    return true;
}

/* native_layer_norm(x, normalized_shape, ...): out, mean, rstd;
 * native_group_norm(x, w, b, N, C, HxW, group, eps): out, mean, rstd;
 * _native_batch_norm_legit_no_training: out and two empty tensors. */
static bool normalization(est_node *e) {
    const est_value *x = tensor_arg(e, 0);
    if (!x) return false;
    const char *name = e->node->op_name;
    est_value stats = *x;
    double per_element = 8;
    if (!strcmp(name, "native_layer_norm")) {
        int64_t shape[MAX_LIST];
        int n;
        if (!ints_arg(e, 1, shape, &n, false) || n > x->rank) return false;
        for (int d = x->rank - n; d < x->rank; d++) stats.sizes[d] = 1;
    } else if (!strcmp(name, "native_group_norm")) {
        int64_t groups;
        if (!int_arg(e, 6, &groups)) return false;
        stats.rank = 2;
        stats.sizes[1] = groups;
    } else {
        stats.rank = 1;
        stats.sizes[0] = 0;
        per_element = 4;
    }
    stats.view = false;
    for (int o = 0; o < e->node->output_count; o++) e->outputs[o] = o ? stats : *x;
    e->outputs[0].view = false;
    e->flops += per_element * (double)est_numel(x);
    return true;
}

/* max_pool2d_with_indices(x, kernel, stride, padding, dilation, ceil),
 * avg_pool2d(x, kernel, stride, padding, ceil, ...),
 * _adaptive_avg_pool2d(x, output_size). */
static bool pool2d(est_node *e) {
    const est_value *x = tensor_arg(e, 0);
    if (!x || x->rank < 3) return false;
    est_value out = *x;
    out.view = false;
    int64_t k[MAX_LIST], s[MAX_LIST], p[MAX_LIST], dil[MAX_LIST] = {1, 1};
    int nk, ns, np, nd = 1;
    if (!strcmp(e->node->op_name, "_adaptive_avg_pool2d")) {
        if (!ints_arg(e, 1, k, &nk, false) || nk != 2) return false;
        out.sizes[x->rank - 2] = k[0];
        out.sizes[x->rank - 1] = k[1];
        e->outputs[0] = out;
        e->flops += (double)est_numel(x);
        return true;
    }
    bool max = !strcmp(e->node->op_name, "max_pool2d_with_indices");
    if (!ints_arg(e, 1, k, &nk, false) || !ints_arg(e, 2, s, &ns, false) ||
        !ints_arg(e, 3, p, &np, false) || (max && !ints_arg(e, 4, dil, &nd, false)) || nk < 1 ||
        np < 1 || nd < 1)
        return false;
    bool ceil_mode = bool_arg(e, max ? 5 : 4);
    for (int d = 0; d < 2; d++) {
        int64_t kd = k[nk == 1 ? 0 : d], sd = ns ? s[ns == 1 ? 0 : d] : kd;
        int64_t pd = p[np == 1 ? 0 : d], dd = dil[nd == 1 ? 0 : d];
        int64_t in = x->sizes[x->rank - 2 + d];
        double span = (double)in + 2.0 * (double)pd - (double)dd * (double)(kd - 1) - 1;
        if (sd < 1 || span < 0 || span > (double)MODEL_MAX_DIM) return false;
        double n = (ceil_mode ? ceil(span / (double)sd) : floor(span / (double)sd)) + 1;
        if (ceil_mode && (n - 1) * (double)sd >= (double)(in + pd)) n--;
        out.sizes[x->rank - 2 + d] = (int64_t)n;
    }
    for (int o = 0; o < e->node->output_count; o++) {
        e->outputs[o] = out;
        if (o) e->outputs[o].dtype = PORTA_I64;
    }
    e->flops += (double)est_numel(&out) * (double)k[0] * (double)k[nk == 1 ? 0 : 1];
    return true;
}

/* ---- factories ---- */

static porta_dtype dtype_arg(const est_node *e, porta_dtype otherwise) {
    for (int a = 0; a < e->node->arg_count; a++)
        if (e->node->args[a].kind == ARG_DTYPE) return e->node->args[a].dtype;
    return otherwise;
}

/* full(size, value, ...), empty.memory_format(size, ...). */
static bool factory(est_node *e) {
    int64_t sizes[MAX_LIST];
    int n;
    if (!ints_arg(e, 0, sizes, &n, false)) return false;
    porta_dtype otherwise = PORTA_F32;
    if (!strcmp(e->node->op_name, "full") && e->node->args[1].kind == ARG_INT) otherwise = PORTA_I64;
    if (!strcmp(e->node->op_name, "full") && e->node->args[1].kind == ARG_BOOL) otherwise = PORTA_BOOL;
    return set_shape(&e->outputs[0], dtype_arg(e, otherwise), n, sizes);
}

/* arange(end), arange.start(start, end), arange.start_step(start, end, step). */
static bool arange(est_node *e) {
    double start = 0, end, step = 1;
    const char *name = e->node->op_name;
    bool ranged = strcmp(name, "arange") != 0;
    if (!number_arg(e, ranged ? 1 : 0, &end) || (ranged && !number_arg(e, 0, &start)) ||
        (!strcmp(name, "arange.start_step") && !number_arg(e, 2, &step)) || step == 0)
        return false;
    bool floating = false;
    for (int a = 0; a < (ranged ? 3 : 1) && a < e->node->arg_count; a++)
        floating = floating || e->node->args[a].kind == ARG_FLOAT;
    int64_t n = (int64_t)fmax(0.0, ceil((end - start) / step));
    return set_shape(&e->outputs[0], dtype_arg(e, floating ? PORTA_F32 : PORTA_I64), 1, &n);
}

typedef struct est_rule {
    const char *name;
    bool (*fn)(est_node *e);
} est_rule;

static const est_rule rules[] = {
    {"mm", mm}, {"bmm", mm}, {"addmm", mm}, {"baddbmm", mm},
    {"convolution", convolution},
    {"view", view}, {"_unsafe_view", view},
    {"expand", expand}, {"permute", permute}, {"transpose.int", transpose}, {"t", transpose},
    {"unsqueeze", unsqueeze}, {"squeeze", squeeze}, {"squeeze.dim", squeeze},
    {"squeeze.dims", squeeze}, {"select.int", select_or_slice}, {"slice.Tensor", select_or_slice},
    {"cat", cat}, {"split_with_sizes", split_with_sizes}, {"constant_pad_nd", constant_pad_nd},
    {"repeat", repeat}, {"embedding", embedding}, {"index_select", index_along},
    {"gather", index_along}, {"index.Tensor", index_tensor},
    {"sum", reduction}, {"sum.dim_IntList", reduction}, {"mean", reduction},
    {"mean.dim", reduction}, {"amax", reduction}, {"amin", reduction}, {"max", reduction},
    {"min", reduction}, {"max.dim", reduction}, {"min.dim", reduction}, {"argmax", reduction},
    {"argmin", reduction}, {"any", reduction}, {"any.dim", reduction}, {"any.dims", reduction},
    {"all", reduction}, {"all.dim", reduction}, {"all.dims", reduction}, {"prod", reduction},
    {"prod.dim_int", reduction}, {"var.correction", reduction}, {"norm.Scalar", reduction},
    {"median", reduction}, {"nanmedian", reduction},
    {"_softmax", same_shape}, {"_log_softmax", same_shape}, {"cumsum", same_shape},
    {"sort", same_shape}, {"sort.stable", same_shape}, {"topk", topk},
    {"native_layer_norm", normalization}, {"native_group_norm", normalization},
    {"_native_batch_norm_legit_no_training", normalization},
    {"max_pool2d_with_indices", pool2d}, {"avg_pool2d", pool2d},
    {"_adaptive_avg_pool2d", pool2d},
    {"full", factory}, {"empty.memory_format", factory},
    {"arange", arange}, {"arange.start", arange}, {"arange.start_step", arange},
};

/* Ops whose arguments look pointwise (no dims, sizes or lists) but whose
 * results are not the broadcast of their tensors: sizes that depend on the
 * data, products, statistics of training, recurrent cells. By prefix. */
static bool not_pointwise(const char *name) {
    static const char *const prefixes[] = {
        "_unique", "nonzero", "masked_select", "equal", "take", "bucketize", "searchsorted",
        "isin", "native_batch_norm", "_native_batch_norm_legit", "_pdist", "_cdist", "_thnn_",
        "addbmm", "addmv", "mv", "dot", "vdot", "trace"};
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
        if (!strncmp(name, prefixes[i], strlen(prefixes[i]))) return true;
    return false;
}

/* Whether every result is a shape a graph could declare. */
static bool plausible(const est_node *e) {
    for (int o = 0; o < e->node->output_count; o++) {
        const est_value *v = &e->outputs[o];
        if (v->rank < 0 || v->rank > PORTA_MAX_RANK) return false;
        for (int d = 0; d < v->rank; d++)
            if (v->sizes[d] < 0 || v->sizes[d] > MODEL_MAX_DIM) return false;
    }
    return true;
}

bool est_aten_node(est_node *e) {
    const char *name = e->node->op_name;
    bool sized = false, ruled = false;
    for (size_t i = 0; i < sizeof rules / sizeof rules[0] && !ruled; i++)
        if (!strcmp(name, rules[i].name)) {
            sized = rules[i].fn(e);
            ruled = true;
        }
    /* Any other op without dims, sizes or lists among its arguments maps
     * elements to elements. */
    if (!ruled) sized = !strpbrk(e->codes, "IJLOij") && !not_pointwise(name) && pointwise(e);
    return sized && plausible(e);
}
