/* Advanced indexing: index.Tensor (x[i, :, j]) and index_put (x[i, j] = v).
 *
 * Both start from a plan: which dims of self are indexed, and one int64
 * index per such dim, wrapped and broadcast to a common shape B (bool masks
 * become the coordinates of their true elements). The indexed dims are then
 * brought together (a permutation puts them first unless they are adjacent
 * already) and merged into one dim of their product's size, so the indices
 * combine into one linear index and a single index_select (or scatter)
 * along that dim does the work. The result has B where the indexed dims
 * were when they were adjacent, else B first, as in PyTorch. */
#include <string.h>

#include "aten/index/common.h"
#include "core/status.h"
#include "runtime/tensor.h"

typedef struct index_plan {
    int count;                           /* indexed dims of self */
    int dims[PORTA_MAX_RANK];            /* which ones, ascending */
    porta_tensor *index[PORTA_MAX_RANK]; /* int64, one per indexed dim */
    int rank;                            /* B, the indices' broadcast shape */
    int64_t sizes[PORTA_MAX_RANK];
} index_plan;

static void plan_free(index_plan *plan) {
    for (int j = 0; j < plan->count; j++) porta_tensor_release(plan->index[j]);
    plan->count = 0;
}

static porta_status *too_many(int rank) {
    return porta_error(PORTA_ERR_OUT_OF_RANGE, "too many indices for tensor of dimension %d", rank);
}

/* Takes the reference to index. */
static porta_status *plan_add(index_plan *plan, int dim, porta_tensor *index) {
    plan->dims[plan->count] = dim;
    plan->index[plan->count++] = index;
    return NULL;
}

/* A mask covering self's dims [dim, dim + rank(mask)) adds one index per
 * dim: the coordinates of its true elements. */
static porta_status *plan_add_mask(index_plan *plan, const porta_tensor *self, int dim,
                                   const porta_tensor *mask) {
    int mask_rank = porta_tensor_rank(mask);
    const int64_t *ms = porta_tensor_sizes(mask), *ss = porta_tensor_sizes(self);
    if (mask_rank == 0)
        return porta_error(PORTA_ERR_UNSUPPORTED, "index: a 0-dim bool index is not supported");
    if (dim + mask_rank > porta_tensor_rank(self)) return too_many(porta_tensor_rank(self));
    for (int j = 0; j < mask_rank; j++) {
        if (ms[j] == ss[dim + j]) continue;
        char bm[CORE_SHAPE_STR_CAP], bs[CORE_SHAPE_STR_CAP];
        return porta_error(PORTA_ERR_OUT_OF_RANGE,
                           "The shape of the mask %s at index %d does not match the shape of the "
                           "indexed tensor %s at index %d",
                           core_format_shape(bm, sizeof bm, mask_rank, ms), j,
                           core_format_shape(bs, sizeof bs, porta_tensor_rank(self), ss),
                           dim + j);
    }
    porta_tensor *coords = NULL;
    PORTA_TRY(index_nonzero(mask, &coords));
    porta_status *status = NULL;
    int64_t n = porta_tensor_sizes(coords)[0];
    for (int j = 0; !status && j < mask_rank; j++) {
        porta_tensor *column = NULL, *flat = NULL;
        status = porta_slice(coords, 1, j, j + 1, 1, &column);
        if (!status) status = porta_reshape(column, 1, &n, &flat);
        if (!status) plan_add(plan, dim + j, flat);
        porta_tensor_release(column);
    }
    porta_tensor_release(coords);
    return status;
}

/* B: the indices' shapes broadcast together. */
static porta_status *plan_broadcast(index_plan *plan) {
    plan->rank = 0;
    for (int j = 0; j < plan->count; j++) {
        int rank = porta_tensor_rank(plan->index[j]);
        const int64_t *sizes = porta_tensor_sizes(plan->index[j]);
        int out_rank = rank > plan->rank ? rank : plan->rank;
        int64_t merged[PORTA_MAX_RANK];
        for (int d = 0; d < out_rank; d++) {
            int a = d - (out_rank - plan->rank), b = d - (out_rank - rank);
            int64_t sa = a >= 0 ? plan->sizes[a] : 1, sb = b >= 0 ? sizes[b] : 1;
            if (sa != sb && sa != 1 && sb != 1) {
                char shapes[4 * CORE_SHAPE_STR_CAP] = "", one[CORE_SHAPE_STR_CAP];
                for (int k = 0; k < plan->count; k++) {
                    core_format_shape(one, sizeof one, porta_tensor_rank(plan->index[k]),
                                       porta_tensor_sizes(plan->index[k]));
                    if (k) strncat(shapes, ", ", sizeof shapes - strlen(shapes) - 1);
                    strncat(shapes, one, sizeof shapes - strlen(shapes) - 1);
                }
                return porta_error(PORTA_ERR_OUT_OF_RANGE,
                                   "shape mismatch: indexing tensors could not be broadcast "
                                   "together with shapes %s",
                                   shapes);
            }
            merged[d] = sa == 1 ? sb : sa;
        }
        plan->rank = out_rank;
        memcpy(plan->sizes, merged, (size_t)out_rank * sizeof *merged);
    }
    return NULL;
}

static porta_status *plan_build(const porta_tensor *self, const porta_value *list,
                                index_plan *plan) {
    memset(plan, 0, sizeof *plan);
    int rank = porta_tensor_rank(self), dim = 0;
    for (int k = 0; k < list->tensors.count; k++) {
        porta_tensor *t = list->tensors.items[k];
        porta_dtype dtype = t ? porta_tensor_dtype(t) : PORTA_I64;
        if (!t) {
            dim++; /* None: the dim is taken whole */
        } else if (dtype == PORTA_BOOL || dtype == PORTA_U8) {
            PORTA_TRY(plan_add_mask(plan, self, dim, t));
            dim += porta_tensor_rank(t);
        } else if (dtype == PORTA_I64 || dtype == PORTA_I32) {
            if (dim >= rank) return too_many(rank);
            porta_tensor_retain(t);
            plan_add(plan, dim++, t);
        } else {
            return porta_error(PORTA_ERR_OUT_OF_RANGE,
                               "tensors used as indices must be long, int, byte or bool tensors, "
                               "got %s",
                               porta_dtype_name(dtype));
        }
        if (dim > rank) return too_many(rank);
    }
    PORTA_TRY(plan_broadcast(plan));
    if (plan->rank + rank - plan->count > PORTA_MAX_RANK)
        return porta_error(PORTA_ERR_UNSUPPORTED, "index: the result would have rank %d, over %d",
                           plan->rank + rank - plan->count, PORTA_MAX_RANK);
    const int64_t *ss = porta_tensor_sizes(self);
    for (int j = 0; j < plan->count; j++) {
        porta_tensor *wrapped = NULL, *spread = NULL;
        PORTA_TRY(index_wrap(plan->index[j], ss[plan->dims[j]], j, &wrapped));
        porta_status *status = porta_expand(wrapped, plan->rank, plan->sizes, &spread);
        porta_tensor_release(wrapped);
        if (status) return status;
        porta_tensor_release(plan->index[j]);
        plan->index[j] = spread;
    }
    return NULL;
}

/* Self with the indexed dims merged into dim `first` (a view when self's
 * strides allow, else a copy), and the linear index into that dim,
 * flattened. `shape` gets the indexing result's shape [pre, *B, post]. */
typedef struct merged_view {
    porta_tensor *permuted; /* self, the indexed dims together at `first` */
    porta_tensor *merged;
    porta_tensor *linear;   /* [N] */
    int first;
    int rank;               /* of merged */
    int64_t sizes[PORTA_MAX_RANK];
    int shape_rank;
    int64_t shape[PORTA_MAX_RANK];
} merged_view;

static void merged_free(merged_view *m) {
    porta_tensor_release(m->permuted);
    porta_tensor_release(m->merged);
    porta_tensor_release(m->linear);
}

static porta_status *merge(const porta_tensor *self, const index_plan *plan, merged_view *m) {
    memset(m, 0, sizeof *m);
    int rank = porta_tensor_rank(self), count = plan->count;
    const int64_t *ss = porta_tensor_sizes(self);
    bool adjacent = plan->dims[count - 1] - plan->dims[0] == count - 1;
    int perm[PORTA_MAX_RANK], n = 0;
    bool indexed[PORTA_MAX_RANK] = {false};
    for (int j = 0; j < count; j++) indexed[plan->dims[j]] = true;
    m->first = adjacent ? plan->dims[0] : 0;
    for (int d = 0; d < m->first; d++) perm[n++] = d;
    for (int j = 0; j < count; j++) perm[n++] = plan->dims[j];
    for (int d = m->first; d < rank; d++)
        if (!indexed[d]) perm[n++] = d;

    int64_t product = 1, linear_count = core_shape_numel(plan->rank, plan->sizes);
    for (int j = 0; j < count; j++) product *= ss[plan->dims[j]];
    for (int d = 0; d < rank - count + 1; d++) {
        int from = d < m->first ? d : d + count - 1;
        m->sizes[d] = d == m->first ? product : ss[perm[from]];
    }
    m->rank = rank - count + 1;
    m->shape_rank = 0;
    for (int d = 0; d < m->rank; d++) {
        if (d != m->first) {
            m->shape[m->shape_rank++] = m->sizes[d];
            continue;
        }
        memcpy(m->shape + m->shape_rank, plan->sizes, (size_t)plan->rank * sizeof *plan->sizes);
        m->shape_rank += plan->rank;
    }

    porta_status *status;
    porta_tensor *linear = NULL, *step = NULL;
    CORE_TRY_GOTO(status, porta_permute(self, perm, &m->permuted), failed);
    CORE_TRY_GOTO(status, porta_reshape(m->permuted, m->rank, m->sizes, &m->merged), failed);
    /* Row-major over the indexed dims: ((i0 * s1 + i1) * s2 + i2) ... */
    linear = plan->index[0];
    porta_tensor_retain(linear);
    for (int j = 1; j < count; j++) {
        porta_tensor *next = NULL;
        CORE_TRY_GOTO(status,
                       index_scalar(porta_tensor_device(self), PORTA_I64,
                                    (double)ss[plan->dims[j]], &step),
                       failed);
        status = porta_ternary(PORTA_FMA, linear, step, plan->index[j], &next);
        porta_tensor_release(step);
        step = NULL;
        if (status) goto failed;
        porta_tensor_release(linear);
        linear = next;
    }
    CORE_TRY_GOTO(status, porta_reshape(linear, 1, &linear_count, &m->linear), failed);
    porta_tensor_release(linear);
    return NULL;
failed:
    porta_tensor_release(linear);
    merged_free(m);
    return status;
}

static porta_status *index_tensor(const porta_value *args, aten_results *r) {
    if (args[0].kind != PORTA_VALUE_TENSOR)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "index: expected a porta tensor to index");
    const porta_tensor *self = args[0].tensor;
    index_plan plan;
    merged_view m = {0};
    porta_tensor *picked = NULL, *out = NULL;
    porta_status *status;
    CORE_TRY_GOTO(status, plan_build(self, &args[1], &plan), done);
    if (!plan.count) { /* every entry None: the whole tensor */
        CORE_TRY_GOTO(status, index_clone(self, &out), done);
        status = aten_push_tensor(r, out);
        goto done;
    }
    CORE_TRY_GOTO(status, merge(self, &plan, &m), done);
    CORE_TRY_GOTO(status, porta_index_select(m.merged, m.first, m.linear, &picked), done);
    CORE_TRY_GOTO(status, porta_reshape(picked, m.shape_rank, m.shape, &out), done);
    status = aten_push_tensor(r, out);
done:
    plan_free(&plan);
    merged_free(&m);
    porta_tensor_release(picked);
    return status;
}

/* values as self's dtype spread over the indexing result's shape, then
 * viewed as [pre, N, post] to match the merged dim. */
static porta_status *values_for(const porta_tensor *self, const porta_value *values,
                                const merged_view *m, porta_tensor **out) {
    porta_dtype dtype = porta_tensor_dtype(self);
    porta_tensor *given = NULL, *spread = NULL;
    if (values->kind == PORTA_VALUE_TENSOR) {
        porta_dtype vd = porta_tensor_dtype(values->tensor);
        if (vd != dtype)
            return porta_error(PORTA_ERR_DTYPE,
                               "Index put requires the source and destination dtypes match, got "
                               "%s for the destination and %s for the source.",
                               porta_dtype_name(dtype), porta_dtype_name(vd));
        given = values->tensor;
        porta_tensor_retain(given);
    } else {
        PORTA_TRY(index_scalar(porta_tensor_device(self), dtype, aten_number(values), &given));
    }
    porta_status *status = porta_expand(given, m->shape_rank, m->shape, &spread);
    if (status) {
        char bv[CORE_SHAPE_STR_CAP], br[CORE_SHAPE_STR_CAP];
        porta_status_free(status);
        status = porta_error(PORTA_ERR_SHAPE,
                             "shape mismatch: value tensor of shape %s cannot be broadcast to "
                             "indexing result of shape %s",
                             core_format_shape(bv, sizeof bv, porta_tensor_rank(given),
                                                porta_tensor_sizes(given)),
                             core_format_shape(br, sizeof br, m->shape_rank, m->shape));
    }
    porta_tensor_release(given);
    if (status) return status;
    int64_t sizes[PORTA_MAX_RANK];
    memcpy(sizes, m->sizes, (size_t)m->rank * sizeof *sizes);
    sizes[m->first] = porta_tensor_sizes(m->linear)[0];
    status = porta_reshape(spread, m->rank, sizes, out);
    porta_tensor_release(spread);
    return status;
}

/* self[indices] = values (accumulate: +=), in place. */
static porta_status *put(porta_tensor *self, const porta_value *indices, const porta_value *values,
                         bool accumulate) {
    porta_scatter_reduce reduce = accumulate ? PORTA_SCATTER_ADD : PORTA_SCATTER_NONE;
    index_plan plan;
    merged_view m = {0};
    porta_tensor *vals = NULL, *spread = NULL, *back = NULL;
    porta_status *status;
    CORE_TRY_GOTO(status, plan_build(self, indices, &plan), done);
    if (!plan.count) {
        status = porta_error(PORTA_ERR_UNSUPPORTED, "index_put: no index tensor given");
        goto done;
    }
    CORE_TRY_GOTO(status, merge(self, &plan, &m), done);
    CORE_TRY_GOTO(status, values_for(self, values, &m, &vals), done);
    CORE_TRY_GOTO(status,
                   index_along(m.linear, m.first, m.rank, porta_tensor_sizes(vals), &spread),
                   done);
    CORE_TRY_GOTO(status, porta_scatter(m.merged, m.first, spread, vals, reduce, &m.merged), done);
    if (porta_tensor_buffer(m.merged) != porta_tensor_buffer(self)) {
        /* The merge had to copy: write the result back through the view. */
        CORE_TRY_GOTO(status,
                       porta_reshape(m.merged, porta_tensor_rank(m.permuted),
                                     porta_tensor_sizes(m.permuted), &back),
                       done);
        status = porta_copy(back, m.permuted);
    }
done:
    plan_free(&plan);
    merged_free(&m);
    porta_tensor_release(vals);
    porta_tensor_release(spread);
    porta_tensor_release(back);
    return status;
}

static porta_status *put_into(const porta_value *args, bool in_place, aten_results *r) {
    if (args[0].kind != PORTA_VALUE_TENSOR)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "index_put: expected a porta tensor");
    porta_tensor *self = args[0].tensor;
    if (in_place) {
        PORTA_TRY(put(self, &args[1], &args[2], args[3].b));
        porta_tensor_retain(self);
        return aten_push_tensor(r, self);
    }
    porta_tensor *copy = NULL;
    PORTA_TRY(index_clone(self, &copy));
    porta_status *status = put(copy, &args[1], &args[2], args[3].b);
    if (status) {
        porta_tensor_release(copy);
        return status;
    }
    return aten_push_tensor(r, copy);
}

static porta_status *index_put(const porta_value *args, aten_results *r) {
    return put_into(args, false, r);
}
static porta_status *index_put_(const porta_value *args, aten_results *r) {
    return put_into(args, true, r);
}

const aten_op aten_index_advanced_ops[] = {
    {"index.Tensor", "TO", index_tensor},
    {"index_put", "TOTb", index_put},
    {"index_put_", "TOTb", index_put_},
    /* `unsafe` only lets PyTorch skip checks; these are cheap enough. */
    {"_index_put_impl_", "TOTbb", index_put_},
    {NULL, NULL, NULL},
};
