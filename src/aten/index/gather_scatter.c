/* Index aten ops along one dim: index_select, gather, the scatter family
 * and index_add. Each maps onto libporta's gather/scatter/index_select
 * primitives; PyTorch raises RuntimeError for gather's, scatter's and
 * index_add's out-of-range indices, IndexError for index_select's. */
#include <string.h>

#include "aten/index/common.h"
#include "core/status.h"
#include "runtime/tensor.h"

static porta_status *gather_like_error(porta_status *status) {
    return index_recode(status, PORTA_ERR_OUT_OF_RANGE, PORTA_ERR_INVALID_ARGUMENT);
}

/* The operands of an op along one dim: (self, dim, index[, src]). A number
 * (a CPU zero-dim tensor on the Python side) can't stand for any of them. */
typedef struct dim_operands {
    porta_tensor *self, *index, *src;
    int dim;
} dim_operands;

static porta_status *operands_of(const porta_value *args, bool with_src, const char *op,
                                 dim_operands *out) {
    for (int i = 0; i < (with_src ? 4 : 3); i++)
        if (i != 1 && args[i].kind != PORTA_VALUE_TENSOR)
            return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                               "%s: expected a porta tensor as argument %d, got a number", op, i);
    *out = (dim_operands){args[0].tensor, args[2].tensor, with_src ? args[3].tensor : NULL,
                          (int)args[1].i};
    return NULL;
}

static porta_status *index_select(const porta_value *args, aten_results *r) {
    dim_operands o;
    porta_tensor *out = NULL;
    PORTA_TRY(operands_of(args, false, "index_select", &o));
    PORTA_TRY(porta_index_select(o.self, o.dim, o.index, &out));
    return aten_push_tensor(r, out);
}

/* t itself, or a 0-d t viewed as [1]: PyTorch's gather reads a 0-d self
 * or index as 1-d (and returns the index's shape). */
static porta_status *at_least_1d(porta_tensor *t, porta_tensor **out) {
    if (porta_tensor_rank(t) > 0) {
        porta_tensor_retain(t);
        *out = t;
        return NULL;
    }
    int64_t one = 1;
    return porta_reshape(t, 1, &one, out);
}

static porta_status *gather(const porta_value *args, aten_results *r) {
    dim_operands o;
    porta_tensor *out = NULL, *self = NULL, *index = NULL, *gathered = NULL;
    PORTA_TRY(operands_of(args, false, "gather", &o));
    /* PyTorch checks neither an empty index's dtype nor its shape */
    if (porta_tensor_numel(o.index) == 0) {
        PORTA_TRY(porta_tensor_empty(porta_tensor_device(o.self), porta_tensor_dtype(o.self),
                                     porta_tensor_rank(o.index), porta_tensor_sizes(o.index),
                                     &out));
        return aten_push_tensor(r, out);
    }
    porta_status *status;
    CORE_TRY_GOTO(status, at_least_1d(o.self, &self), done);
    CORE_TRY_GOTO(status, at_least_1d(o.index, &index), done);
    CORE_TRY_GOTO(status, gather_like_error(porta_gather(self, o.dim, index, &gathered)), done);
    CORE_TRY_GOTO(status, porta_reshape(gathered, porta_tensor_rank(o.index),
                                         porta_tensor_sizes(o.index), &out), done);
    status = aten_push_tensor(r, out);
done:
    porta_tensor_release(self);
    porta_tensor_release(index);
    porta_tensor_release(gathered);
    return status;
}

/* ---- scatter ---- */

/* `value` as a tensor of `like`'s dtype shaped like index (a stride-0 view). */
static porta_status *value_like_index(const porta_value *value, const porta_tensor *like,
                                      const porta_tensor *index, porta_tensor **out) {
    porta_tensor *scalar = NULL;
    PORTA_TRY(index_scalar(porta_tensor_device(like), porta_tensor_dtype(like),
                           aten_number(value), &scalar));
    porta_status *status =
        porta_expand(scalar, porta_tensor_rank(index), porta_tensor_sizes(index), out);
    porta_tensor_release(scalar);
    return status;
}

/* x scattered along dim into *target: a new tensor when *target is NULL,
 * else x's result is written into it (x may be *target itself). */
static porta_status *scatter_step(const porta_tensor *x, int dim, const porta_tensor *index,
                                  const porta_tensor *src, porta_scatter_reduce reduce,
                                  porta_tensor **target) {
    return gather_like_error(porta_scatter(x, dim, index, src, reduce, target));
}

/* self.scatter(dim, index, src, reduce) or its in-place form. As for
 * gather, PyTorch checks neither an empty index's dtype nor its shape (there
 * is nothing to scatter), and reads 0-d operands as 1-d. */
static porta_status *scatter_into(const dim_operands *o, porta_scatter_reduce reduce,
                                  bool in_place, aten_results *r) {
    porta_tensor *out = in_place ? o->self : NULL;
    if (porta_tensor_numel(o->index) == 0) {
        if (in_place) porta_tensor_retain(out);
        else PORTA_TRY(porta_cast(o->self, porta_tensor_dtype(o->self), &out)); /* a copy */
        return aten_push_tensor(r, out);
    }
    porta_tensor *self = NULL, *index = NULL, *src = NULL, *scattered = NULL;
    porta_status *status;
    CORE_TRY_GOTO(status, at_least_1d(o->self, &self), done);
    CORE_TRY_GOTO(status, at_least_1d(o->index, &index), done);
    CORE_TRY_GOTO(status, at_least_1d(o->src, &src), done);
    porta_tensor *target = in_place ? self : NULL; /* in place: through self's view */
    CORE_TRY_GOTO(status, scatter_step(self, o->dim, index, src, reduce, &target), done);
    if (in_place) {
        porta_tensor_retain(out);
    } else {
        scattered = target;
        CORE_TRY_GOTO(status, porta_reshape(scattered, porta_tensor_rank(o->self),
                                             porta_tensor_sizes(o->self), &out), done);
    }
    status = aten_push_tensor(r, out);
done:
    porta_tensor_release(self);
    porta_tensor_release(index);
    porta_tensor_release(src);
    porta_tensor_release(scattered);
    return status;
}

static porta_status *scatter_src(const porta_value *args, porta_scatter_reduce reduce,
                                 bool in_place, aten_results *r) {
    dim_operands o;
    PORTA_TRY(operands_of(args, true, "scatter", &o));
    return scatter_into(&o, reduce, in_place, r);
}

static porta_status *scatter_value(const porta_value *args, porta_scatter_reduce reduce,
                                   bool in_place, aten_results *r) {
    dim_operands o;
    PORTA_TRY(operands_of(args, false, "scatter", &o));
    PORTA_TRY(value_like_index(&args[3], o.self, o.index, &o.src));
    porta_status *status = scatter_into(&o, reduce, in_place, r);
    porta_tensor_release(o.src);
    return status;
}

/* scatter's deprecated reduce= strings. */
static porta_status *legacy_reduce(const porta_value *v, porta_scatter_reduce *out) {
    if (!strcmp(v->string, "add")) *out = PORTA_SCATTER_ADD;
    else if (!strcmp(v->string, "multiply")) *out = PORTA_SCATTER_MUL;
    else
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "reduce argument must be either add or multiply, got %s", v->string);
    return NULL;
}

static porta_status *scatter(const porta_value *args, aten_results *r) {
    return scatter_src(args, PORTA_SCATTER_NONE, false, r);
}
static porta_status *scatter_(const porta_value *args, aten_results *r) {
    return scatter_src(args, PORTA_SCATTER_NONE, true, r);
}
static porta_status *scatter_fill(const porta_value *args, aten_results *r) {
    return scatter_value(args, PORTA_SCATTER_NONE, false, r);
}
static porta_status *scatter_fill_(const porta_value *args, aten_results *r) {
    return scatter_value(args, PORTA_SCATTER_NONE, true, r);
}
static porta_status *scatter_legacy(const porta_value *args, aten_results *r) {
    porta_scatter_reduce reduce;
    PORTA_TRY(legacy_reduce(&args[4], &reduce));
    return scatter_src(args, reduce, false, r);
}
static porta_status *scatter_legacy_(const porta_value *args, aten_results *r) {
    porta_scatter_reduce reduce;
    PORTA_TRY(legacy_reduce(&args[4], &reduce));
    return scatter_src(args, reduce, true, r);
}
static porta_status *scatter_fill_legacy(const porta_value *args, aten_results *r) {
    porta_scatter_reduce reduce;
    PORTA_TRY(legacy_reduce(&args[4], &reduce));
    return scatter_value(args, reduce, false, r);
}
static porta_status *scatter_fill_legacy_(const porta_value *args, aten_results *r) {
    porta_scatter_reduce reduce;
    PORTA_TRY(legacy_reduce(&args[4], &reduce));
    return scatter_value(args, reduce, true, r);
}
static porta_status *scatter_add(const porta_value *args, aten_results *r) {
    return scatter_src(args, PORTA_SCATTER_ADD, false, r);
}
static porta_status *scatter_add_(const porta_value *args, aten_results *r) {
    return scatter_src(args, PORTA_SCATTER_ADD, true, r);
}

/* ---- scatter_reduce ---- */

typedef enum { REDUCE_SUM, REDUCE_PROD, REDUCE_MEAN, REDUCE_AMAX, REDUCE_AMIN } reduction;

static porta_status *reduction_of(const char *name, reduction *out) {
    static const char *const names[] = {"sum", "prod", "mean", "amax", "amin"};
    for (int k = 0; k < 5; k++)
        if (!strcmp(name, names[k])) {
            *out = (reduction)k;
            return NULL;
        }
    return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                       "reduce argument must be either sum, prod, mean, amax or amin, got %s",
                       name);
}

/* mean = the sum over what reached each element / how many did (the
 * element itself counting once with include_self); PyTorch floors for
 * integers. Elements nothing reached keep their value (count clamped to 1). */
static porta_status *divide_by_counts(const porta_tensor *self, int dim, const porta_tensor *index,
                                      bool include_self, porta_tensor *sums) {
    porta_device *device = porta_tensor_device(self);
    porta_dtype dtype = porta_tensor_dtype(self);
    porta_tensor *start = NULL, *one = NULL, *ones = NULL, *counts = NULL;
    porta_status *status;
    CORE_TRY_GOTO(status,
                   porta_tensor_full(device, dtype, porta_tensor_rank(self),
                                     porta_tensor_sizes(self), include_self ? 1 : 0, &start),
                   done);
    CORE_TRY_GOTO(status, index_scalar(device, dtype, 1, &one), done);
    CORE_TRY_GOTO(status,
                   porta_expand(one, porta_tensor_rank(index), porta_tensor_sizes(index), &ones),
                   done);
    CORE_TRY_GOTO(status, scatter_step(start, dim, index, ones, PORTA_SCATTER_ADD, &start), done);
    CORE_TRY_GOTO(status, porta_binary(PORTA_MAXIMUM, start, one, &counts), done);
    status = porta_binary(porta_dtype_is_float(dtype) ? PORTA_DIV : PORTA_FLOOR_DIVIDE, sums,
                          counts, &sums);
done:
    porta_tensor_release(start);
    porta_tensor_release(one);
    porta_tensor_release(ones);
    porta_tensor_release(counts);
    return status;
}

static porta_status *scatter_reduce_two(const porta_value *args, bool in_place,
                                        aten_results *r) {
    static const porta_scatter_reduce prims[] = {PORTA_SCATTER_ADD, PORTA_SCATTER_MUL,
                                                 PORTA_SCATTER_ADD, PORTA_SCATTER_AMAX,
                                                 PORTA_SCATTER_AMIN};
    dim_operands o;
    PORTA_TRY(operands_of(args, true, "scatter_reduce", &o));
    porta_tensor *self = o.self, *index = o.index, *src = o.src, *init = NULL;
    int dim = o.dim;
    bool include_self = args[5].b;
    reduction how = REDUCE_SUM;
    PORTA_TRY(reduction_of(args[4].string, &how));
    porta_tensor *out = in_place ? self : NULL;
    const porta_tensor *base = self;
    porta_status *status = NULL;
    if (!include_self) {
        /* Reached elements start from the reduction's identity; for amax and
         * amin one of the values itself serves, whatever the dtype. */
        if (how == REDUCE_AMAX || how == REDUCE_AMIN) {
            PORTA_TRY(scatter_step(self, dim, index, src, PORTA_SCATTER_NONE, &out));
        } else {
            porta_value identity = {.kind = PORTA_VALUE_INT, .i = how == REDUCE_PROD};
            PORTA_TRY(value_like_index(&identity, self, index, &init));
            CORE_TRY_GOTO(status, scatter_step(self, dim, index, init, PORTA_SCATTER_NONE, &out),
                           failed);
        }
        base = out;
    }
    CORE_TRY_GOTO(status, scatter_step(base, dim, index, src, prims[how], &out), failed);
    if (how == REDUCE_MEAN)
        CORE_TRY_GOTO(status, divide_by_counts(self, dim, index, include_self, out), failed);
    porta_tensor_release(init);
    if (in_place) porta_tensor_retain(self);
    return aten_push_tensor(r, out);
failed:
    porta_tensor_release(init);
    if (!in_place) porta_tensor_release(out);
    return status;
}

static porta_status *scatter_reduce(const porta_value *args, aten_results *r) {
    return scatter_reduce_two(args, false, r);
}
static porta_status *scatter_reduce_(const porta_value *args, aten_results *r) {
    return scatter_reduce_two(args, true, r);
}

/* ---- index_add ---- */

/* self.index_add(dim, index, source, alpha): a scatter-add of whole slices,
 * the 1-D index laid along dim over source's shape. */
static porta_status *index_add_into(const porta_value *args, bool in_place, aten_results *r) {
    dim_operands o;
    PORTA_TRY(operands_of(args, true, "index_add", &o));
    porta_tensor *self = o.self, *index = o.index, *source = o.src;
    int rank = porta_tensor_rank(self), dim;
    PORTA_TRY(core_normalize_axis("index_add", o.dim, rank ? rank : 1, &dim));
    int64_t count = porta_tensor_numel(index);
    if (porta_tensor_rank(index) > 1)
        return porta_error(PORTA_ERR_OUT_OF_RANGE,
                           "index_add_(): Index is supposed to be a vector, got rank %d",
                           porta_tensor_rank(index));
    const int64_t *ss = porta_tensor_sizes(self), *rs = porta_tensor_sizes(source);
    bool same = porta_tensor_rank(source) == rank;
    for (int d = 0; same && d < rank; d++) same = d == dim ? rs[d] == count : rs[d] == ss[d];
    if (!same || (!rank && count != 1)) {
        char bs[CORE_SHAPE_STR_CAP], br[CORE_SHAPE_STR_CAP];
        return porta_error(PORTA_ERR_SHAPE,
                           "index_add_(): source %s must have self's shape %s apart from "
                           "dimension %d, where it must have the index's %lld elements",
                           core_format_shape(br, sizeof br, porta_tensor_rank(source), rs),
                           core_format_shape(bs, sizeof bs, rank, ss), dim, (long long)count);
    }
    /* A 0-dim self is a one-element vector here, so work on 1-D views of
     * self (or of its copy) and source. */
    int64_t one = 1;
    int view_rank = rank ? rank : 1;
    porta_tensor *scaled = NULL, *alpha = NULL, *spread = NULL, *out = NULL, *target = NULL,
                 *flat_source = NULL;
    porta_status *status;
    if (aten_number(&args[4]) != 1.0) {
        CORE_TRY_GOTO(status,
                       index_scalar(porta_tensor_device(self), porta_tensor_dtype(source),
                                    aten_number(&args[4]), &alpha),
                       done);
        CORE_TRY_GOTO(status, porta_binary(PORTA_MUL, source, alpha, &scaled), done);
        source = scaled;
    }
    if (in_place) {
        out = self;
        porta_tensor_retain(out);
    } else {
        CORE_TRY_GOTO(status, index_clone(self, &out), done);
    }
    CORE_TRY_GOTO(status, porta_reshape(out, view_rank, rank ? ss : &one, &target), done);
    CORE_TRY_GOTO(status, porta_reshape(source, view_rank, rank ? rs : &one, &flat_source), done);
    CORE_TRY_GOTO(status, index_along(index, dim, view_rank, rank ? rs : &one, &spread), done);
    status = scatter_step(target, dim, spread, flat_source, PORTA_SCATTER_ADD, &target);
done:
    porta_tensor_release(scaled);
    porta_tensor_release(alpha);
    porta_tensor_release(spread);
    porta_tensor_release(target);
    porta_tensor_release(flat_source);
    if (status) {
        porta_tensor_release(out);
        return status;
    }
    return aten_push_tensor(r, out);
}

static porta_status *index_add(const porta_value *args, aten_results *r) {
    return index_add_into(args, false, r);
}
static porta_status *index_add_(const porta_value *args, aten_results *r) {
    return index_add_into(args, true, r);
}

const aten_op aten_index_gather_scatter_ops[] = {
    {"index_select", "TiT", index_select},
    {"gather", "TiTb", gather},
    {"scatter.src", "TiTT", scatter},
    {"scatter_.src", "TiTT", scatter_},
    {"scatter.value", "TiTs", scatter_fill},
    {"scatter_.value", "TiTs", scatter_fill_},
    {"scatter.reduce", "TiTTr", scatter_legacy},
    {"scatter_.reduce", "TiTTr", scatter_legacy_},
    {"scatter.value_reduce", "TiTsr", scatter_fill_legacy},
    {"scatter_.value_reduce", "TiTsr", scatter_fill_legacy_},
    {"scatter_add", "TiTT", scatter_add},
    {"scatter_add_", "TiTT", scatter_add_},
    {"scatter_reduce.two", "TiTTrb", scatter_reduce},
    {"scatter_reduce_.two", "TiTTrb", scatter_reduce_},
    {"index_add", "TiTTs", index_add},
    {"index_add_", "TiTTs", index_add_},
    {NULL, NULL, NULL},
};
