/* embedding (rows of weight picked by index) and its dense backward (the
 * gradient rows added back into a [num_weights, D] zero tensor), and
 * _embedding_bag: the picked rows summed, averaged or maxed per bag by a
 * scatter along each index's bag (offset2bag, laid out on the host from the
 * offsets), with its backward ops. */
#include <math.h>
#include <stdlib.h>

#include "aten/index/common.h"
#include "aten/dispatch/scope.h"
#include "core/status.h"
#include "runtime/tensor.h"

static porta_status *check_indices(const porta_tensor *indices) {
    porta_dtype dtype = porta_tensor_dtype(indices);
    if (dtype != PORTA_I64 && dtype != PORTA_I32)
        return porta_error(PORTA_ERR_DTYPE,
                           "Expected tensor for argument #1 'indices' to have one of the following "
                           "scalar types: Long, Int; but got %s instead",
                           porta_dtype_name(dtype));
    return NULL;
}

static porta_status *embedding(const porta_value *args, aten_results *r) {
    if (args[0].kind != PORTA_VALUE_TENSOR || args[1].kind != PORTA_VALUE_TENSOR)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "embedding: expected porta tensors");
    const porta_tensor *weight = args[0].tensor, *indices = args[1].tensor;
    PORTA_TRY(check_indices(indices));
    if (porta_tensor_rank(weight) != 2)
        return porta_error(PORTA_ERR_SHAPE, "'weight' must be 2-D, got rank %d",
                           porta_tensor_rank(weight));
    int rank = porta_tensor_rank(indices);
    if (rank + 1 > PORTA_MAX_RANK)
        return porta_error(PORTA_ERR_UNSUPPORTED, "embedding: indices of rank %d", rank);
    int64_t n = porta_tensor_numel(indices), shape[PORTA_MAX_RANK];
    for (int d = 0; d < rank; d++) shape[d] = porta_tensor_sizes(indices)[d];
    shape[rank] = porta_tensor_sizes(weight)[1];
    porta_tensor *flat = NULL, *rows = NULL, *out = NULL;
    porta_status *status;
    CORE_TRY_GOTO(status, porta_reshape(indices, 1, &n, &flat), done);
    CORE_TRY_GOTO(status, porta_index_select(weight, 0, flat, &rows), done);
    CORE_TRY_GOTO(status, porta_reshape(rows, rank + 1, shape, &out), done);
    status = aten_push_tensor(r, out);
done:
    porta_tensor_release(flat);
    porta_tensor_release(rows);
    return status;
}

/* grad rows [n, D] scaled: zero at padding_idx, divided by how often their
 * index occurs with scale_grad_by_freq. */
static porta_status *scaled_rows(porta_tensor *rows, const porta_tensor *index,
                                 int64_t num_weights, int64_t padding_idx, bool by_freq,
                                 porta_tensor **out) {
    porta_device *device = porta_tensor_device(rows);
    porta_dtype dtype = porta_tensor_dtype(rows);
    int64_t n = porta_tensor_sizes(rows)[0], column[2] = {n, 1};
    porta_tensor *scaled = rows, *pad = NULL, *keep = NULL, *keep_col = NULL, *zero = NULL,
                 *counts = NULL, *one = NULL, *ones = NULL, *per_row = NULL, *per_col = NULL;
    porta_tensor_retain(scaled);
    porta_status *status = NULL;
    if (padding_idx >= 0) {
        CORE_TRY_GOTO(status, index_scalar(device, PORTA_I64, (double)padding_idx, &pad), done);
        CORE_TRY_GOTO(status, porta_binary(PORTA_NE, index, pad, &keep), done);
        CORE_TRY_GOTO(status, porta_reshape(keep, 2, column, &keep_col), done);
        CORE_TRY_GOTO(status, index_scalar(device, dtype, 0, &zero), done);
        porta_tensor *kept = NULL;
        CORE_TRY_GOTO(status, porta_ternary(PORTA_WHERE, keep_col, scaled, zero, &kept), done);
        porta_tensor_release(scaled);
        scaled = kept;
    }
    if (by_freq) {
        CORE_TRY_GOTO(status, porta_tensor_full(device, dtype, 1, &num_weights, 0, &counts), done);
        CORE_TRY_GOTO(status, index_scalar(device, dtype, 1, &one), done);
        CORE_TRY_GOTO(status, porta_expand(one, 1, &n, &ones), done);
        CORE_TRY_GOTO(status, porta_scatter(counts, 0, index, ones, PORTA_SCATTER_ADD, &counts),
                       done);
        CORE_TRY_GOTO(status, porta_index_select(counts, 0, index, &per_row), done);
        CORE_TRY_GOTO(status, porta_reshape(per_row, 2, column, &per_col), done);
        porta_tensor *divided = NULL;
        CORE_TRY_GOTO(status, porta_binary(PORTA_DIV, scaled, per_col, &divided), done);
        porta_tensor_release(scaled);
        scaled = divided;
    }
done:
    porta_tensor_release(pad);
    porta_tensor_release(keep);
    porta_tensor_release(keep_col);
    porta_tensor_release(zero);
    porta_tensor_release(counts);
    porta_tensor_release(one);
    porta_tensor_release(ones);
    porta_tensor_release(per_row);
    porta_tensor_release(per_col);
    if (status) {
        porta_tensor_release(scaled);
        return status;
    }
    *out = scaled;
    return NULL;
}

static porta_status *embedding_dense_backward(const porta_value *args, aten_results *r) {
    if (args[0].kind != PORTA_VALUE_TENSOR || args[1].kind != PORTA_VALUE_TENSOR)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "embedding_dense_backward: expected porta tensors");
    const porta_tensor *grad = args[0].tensor, *indices = args[1].tensor;
    PORTA_TRY(check_indices(indices));
    int64_t num_weights = args[2].i, n = porta_tensor_numel(indices);
    int grad_rank = porta_tensor_rank(grad);
    int64_t dim = grad_rank ? porta_tensor_sizes(grad)[grad_rank - 1] : 1;
    int64_t rows_shape[2] = {n, dim}, out_shape[2] = {num_weights, dim};
    porta_tensor *index = NULL, *flat = NULL, *rows = NULL, *scaled = NULL, *spread = NULL,
                 *out = NULL;
    porta_status *status;
    CORE_TRY_GOTO(status, porta_reshape(indices, 1, &n, &flat), done);
    CORE_TRY_GOTO(status, porta_cast(flat, PORTA_I64, &index), done);
    CORE_TRY_GOTO(status, porta_reshape(grad, 2, rows_shape, &rows), done);
    CORE_TRY_GOTO(status, scaled_rows(rows, index, num_weights, args[3].i, args[4].b, &scaled),
                   done);
    CORE_TRY_GOTO(status, index_along(index, 0, 2, rows_shape, &spread), done);
    CORE_TRY_GOTO(status,
                   porta_tensor_full(porta_tensor_device(grad), porta_tensor_dtype(grad), 2,
                                     out_shape, 0, &out),
                   done);
    CORE_TRY_GOTO(status, porta_scatter(out, 0, spread, scaled, PORTA_SCATTER_ADD, &out), done);
    status = aten_push_tensor(r, out);
    out = NULL;
done:
    porta_tensor_release(index);
    porta_tensor_release(flat);
    porta_tensor_release(rows);
    porta_tensor_release(scaled);
    porta_tensor_release(spread);
    porta_tensor_release(out);
    return status;
}

enum { BAG_SUM = 0, BAG_MEAN, BAG_MAX };

/* Each index's bag, int64 [n], from offsets read to the host: bag b holds
 * positions offsets[b] .. offsets[b + 1] - 1, the last bag running to the
 * end (as PyTorch's CPU lays them out, include_last_offset or not). */
static porta_tensor *bag_of_each_index(aten_scope *s, const porta_tensor *offsets, int64_t n,
                                       bool include_last, int64_t *bags) {
    porta_tensor *wide = scope_contiguous(s, scope_cast(s, offsets, PORTA_I64));
    if (!wide) return NULL;
    int64_t count = porta_tensor_numel(wide);
    *bags = include_last && count > 0 ? count - 1 : count;
    int64_t *starts = malloc((size_t)(count ? count : 1) * sizeof *starts);
    double *bag = malloc((size_t)(n ? n : 1) * sizeof *bag);
    porta_status *status = !starts || !bag ? porta_error(PORTA_ERR_OUT_OF_MEMORY,
                                                         "embedding_bag: no memory for %lld "
                                                         "offsets", (long long)count)
                                           : porta_tensor_to_host(wide, starts,
                                                                  (size_t)count * sizeof *starts);
    if (!status && count > 0 && starts[0] != 0)
        status = porta_error(PORTA_ERR_INVALID_ARGUMENT,
                             "offsets[0] has to be 0, i.e., the first sequence in the mini-batch "
                             "has to start from position 0. However, got %lld",
                             (long long)starts[0]);
    if (!status && count > 0 && starts[count - 1] > n)
        status = porta_error(PORTA_ERR_INVALID_ARGUMENT,
                             "offsets[-1] can not be greater than input's length %lld but got "
                             "offsets[-1] of %lld",
                             (long long)n, (long long)starts[count - 1]);
    porta_tensor *result = NULL;
    if (status) {
        scope_fail(s, status);
    } else {
        for (int64_t i = 0, b = 0; i < n; i++) {
            while (b + 1 < *bags && starts[b + 1] <= i) b++;
            bag[i] = (double)b;
        }
        result = scope_cast(s, scope_from_host(s, wide->buffer->device, 1, &n, bag), PORTA_I64);
    }
    free(starts);
    free(bag);
    return result;
}

/* A [n] tensor as an [n, 1] column. */
static porta_tensor *as_column(aten_scope *s, const porta_tensor *t) {
    if (!t) return NULL;
    int64_t column[2] = {porta_tensor_numel(t), 1};
    return scope_reshape(s, t, 2, column);
}

/* A [n] tensor spread over [n, d]: the index that scatters whole rows. */
static porta_tensor *spread_rows(aten_scope *s, const porta_tensor *t, int64_t d) {
    if (!t) return NULL;
    int64_t sizes[2] = {porta_tensor_numel(t), d};
    return scope_expand(s, as_column(s, t), 2, sizes);
}

static porta_status *check_bag_args(const porta_tensor *weight, const porta_tensor *indices,
                                    const porta_tensor *offsets, int64_t mode,
                                    const porta_tensor *per_sample_weights) {
    if (!porta_dtype_is_float(weight->dtype))
        return porta_error(PORTA_ERR_DTYPE,
                           "Expected tensor for argument #1 'weight' to have one of the following "
                           "scalar types: Half, BFloat16, Float, Double; but got %s instead",
                           porta_dtype_name(weight->dtype));
    PORTA_TRY(check_indices(indices));
    PORTA_TRY(check_indices(offsets));
    if (weight->rank != 2 || indices->rank != 1 || offsets->rank != 1)
        return porta_error(PORTA_ERR_SHAPE,
                           "embedding_bag: expected a 2-D weight, 1-D indices and 1-D offsets, "
                           "got ranks %d, %d and %d",
                           weight->rank, indices->rank, offsets->rank);
    if (mode < BAG_SUM || mode > BAG_MAX)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "`mode` must be sum, mean, or max.");
    if (!per_sample_weights) return NULL;
    if (mode != BAG_SUM)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "embedding_bag: per_sample_weights only supported with mode='sum'");
    if (per_sample_weights->dtype != weight->dtype || per_sample_weights->rank != 1 ||
        per_sample_weights->sizes[0] != indices->sizes[0])
        return porta_error(PORTA_ERR_SHAPE,
                           "embedding_bag: expected per_sample_weights of weight's dtype %s and "
                           "shape [%lld], got %s of rank %d",
                           porta_dtype_name(weight->dtype), (long long)indices->sizes[0],
                           porta_dtype_name(per_sample_weights->dtype),
                           per_sample_weights->rank);
    return NULL;
}

/* max mode: the per-column maximum of each bag's rows (padding rows at
 * -inf), 0 for an empty bag, and the weight row it came from (the first
 * such element, as the CPU's strict comparison keeps). */
static void bag_max(aten_scope *s, const porta_tensor *rows, const porta_tensor *index,
                    const porta_tensor *bag, const porta_tensor *empty, int64_t bags,
                    porta_tensor **out, porta_tensor **max_indices) {
    porta_device *device = index->buffer->device;
    int64_t n = porta_tensor_numel(index), d = rows ? rows->sizes[1] : 0, shape[2] = {bags, d};
    porta_tensor *spread = spread_rows(s, bag, d);
    porta_tensor *lowest = scope_full(s, device, rows ? rows->dtype : PORTA_F32, 2, shape, -INFINITY);
    porta_tensor *maxima = scope_scatter(s, lowest, 0, spread, rows, PORTA_SCATTER_AMAX);
    porta_tensor *zero = scope_full(s, device, rows ? rows->dtype : PORTA_F32, 0, NULL, 0);
    *out = scope_ternary(s, PORTA_WHERE, empty, zero, maxima);
    if (n == 0) {
        *max_indices = scope_full(s, device, PORTA_I64, 2, shape, 0);
        return;
    }
    porta_tensor *at_max = scope_binary(s, PORTA_EQ, rows, scope_gather(s, maxima, 0, spread));
    porta_tensor *position = scope_ternary(s, PORTA_WHERE, at_max, as_column(s, scope_arange(s, device, n)),
                                        scope_full(s, device, PORTA_I64, 0, NULL, (double)(n - 1)));
    porta_tensor *first = scope_scatter(s, scope_full(s, device, PORTA_I64, 2, shape, (double)(n - 1)), 0,
                                        spread, position, PORTA_SCATTER_AMIN);
    porta_tensor *source = scope_gather(s, spread_rows(s, index, d), 0, first);
    *max_indices = scope_ternary(s, PORTA_WHERE, empty, scope_full(s, device, PORTA_I64, 0, NULL, 0),
                                 source);
}

/* _embedding_bag(weight, indices, offsets, scale_grad_by_freq, mode, sparse,
 * per_sample_weights?, include_last_offset, padding_idx) -> (output,
 * offset2bag, bag_size, max_indices) */
static porta_status *embedding_bag(const porta_value *a, aten_results *r) {
    const porta_tensor *weight = a[0].tensor, *indices = a[1].tensor, *offsets = a[2].tensor;
    const porta_tensor *per_sample = a[6].kind == PORTA_VALUE_TENSOR ? a[6].tensor : NULL;
    int64_t mode = a[4].i, padding_idx = a[8].i;
    PORTA_TRY(check_bag_args(weight, indices, offsets, mode, per_sample));
    aten_scope s;
    scope_begin(&s);
    porta_device *device = weight->buffer->device;
    int64_t n = indices->sizes[0], d = weight->sizes[1], bags = 0;
    porta_tensor *bag = bag_of_each_index(&s, offsets, n, a[7].b, &bags);
    porta_tensor *index = scope_cast(&s, indices, PORTA_I64);
    porta_tensor *keep = padding_idx >= 0 ? scope_binary_number(&s, PORTA_NE, index, (double)padding_idx)
                                          : scope_full(&s, device, PORTA_BOOL, 1, &n, 1);
    porta_tensor *bag_size = scope_scatter(&s, scope_full(&s, device, PORTA_I64, 1, &bags, 0), 0, bag,
                                           scope_cast(&s, keep, PORTA_I64), PORTA_SCATTER_ADD);
    porta_tensor *rows = scope_index_select(&s, weight, 0, index);
    porta_tensor *zero = scope_full(&s, device, weight->dtype, 0, NULL, 0);
    porta_tensor *empty = as_column(&s, scope_binary_number(&s, PORTA_EQ, bag_size, 0));
    porta_tensor *out, *max_indices;
    int64_t shape[2] = {bags, d};
    if (mode == BAG_MAX) {
        porta_tensor *lowest = scope_full(&s, device, weight->dtype, 0, NULL, -INFINITY);
        rows = scope_ternary(&s, PORTA_WHERE, as_column(&s, keep), rows, lowest);
        bag_max(&s, rows, index, bag, empty, bags, &out, &max_indices);
    } else {
        if (per_sample) rows = scope_binary(&s, PORTA_MUL, rows, as_column(&s, per_sample));
        rows = scope_ternary(&s, PORTA_WHERE, as_column(&s, keep), rows, zero);
        out = scope_scatter(&s, scope_full(&s, device, weight->dtype, 2, shape, 0), 0,
                            spread_rows(&s, bag, d), rows, PORTA_SCATTER_ADD);
        if (mode == BAG_MEAN) {
            porta_tensor *count = scope_binary_number(&s, PORTA_MAXIMUM, bag_size, 1);
            out = scope_binary(&s, PORTA_DIV, out, as_column(&s, scope_cast(&s, count, weight->dtype)));
        }
        max_indices = mode == BAG_MEAN ? bag_size : scope_full(&s, device, PORTA_I64, 1, &bags, 0);
    }
    scope_push(&s, r, out);
    scope_push(&s, r, bag);
    scope_push(&s, r, bag_size);
    scope_push(&s, r, max_indices);
    return index_recode(scope_end(&s), PORTA_ERR_OUT_OF_RANGE, PORTA_ERR_INVALID_ARGUMENT);
}

/* The weight gradient of an embedding bag, from the forward's offset2bag,
 * bag_size and max_indices. */
typedef struct bag_grad_args {
    const porta_tensor *grad, *indices, *bag, *bag_size, *max_indices, *per_sample;
    int64_t num_weights, mode, padding_idx;
    bool by_freq;
} bag_grad_args;

static porta_status *bag_backward(const bag_grad_args *g, aten_results *r) {
    PORTA_TRY(check_indices(g->indices));
    if (g->grad->rank != 2)
        return porta_error(PORTA_ERR_SHAPE, "embedding_bag_backward: expected a 2-D grad, got "
                                            "rank %d", g->grad->rank);
    aten_scope s;
    scope_begin(&s);
    porta_device *device = g->grad->buffer->device;
    int64_t d = g->grad->sizes[1], shape[2] = {g->num_weights, d};
    porta_tensor *zeros = scope_full(&s, device, g->grad->dtype, 2, shape, 0), *out;
    porta_tensor *zero = scope_full(&s, device, g->grad->dtype, 0, NULL, 0);
    if (g->mode == BAG_MAX) {
        porta_tensor *empty = as_column(&s, scope_binary_number(&s, PORTA_EQ, g->bag_size, 0));
        porta_tensor *kept = scope_ternary(&s, PORTA_WHERE, empty, zero, g->grad);
        out = scope_scatter(&s, zeros, 0, g->max_indices, kept, PORTA_SCATTER_ADD);
    } else {
        porta_tensor *index = scope_cast(&s, g->indices, PORTA_I64);
        porta_tensor *rows = scope_index_select(&s, g->grad, 0, g->bag);
        if (g->mode == BAG_MEAN) {
            porta_tensor *count = scope_cast(&s, scope_binary_number(&s, PORTA_MAXIMUM, g->bag_size, 1),
                                             g->grad->dtype);
            rows = scope_binary(&s, PORTA_DIV, rows, as_column(&s, scope_index_select(&s, count, 0,
                                                                                 g->bag)));
        }
        if (g->per_sample) rows = scope_binary(&s, PORTA_MUL, rows, as_column(&s, g->per_sample));
        porta_tensor *scaled = NULL;
        if (rows && index) {
            porta_status *status = scaled_rows(rows, index, g->num_weights, g->padding_idx,
                                               g->by_freq, &scaled); /* before scaled is read */
            scope_hold(&s, status, scaled);
        }
        out = scope_scatter(&s, zeros, 0, spread_rows(&s, index, d), scaled, PORTA_SCATTER_ADD);
    }
    scope_push(&s, r, out);
    return scope_end(&s);
}

/* _embedding_bag_backward(grad, indices, offsets, offset2bag, bag_size,
 * maximum_indices, num_weights, scale_grad_by_freq, mode, sparse,
 * per_sample_weights?, padding_idx) */
static porta_status *embedding_bag_backward(const porta_value *a, aten_results *r) {
    if (a[9].b)
        return porta_error(PORTA_ERR_UNSUPPORTED,
                           "embedding_bag: porta has no sparse tensors; use sparse=False");
    bag_grad_args g = {a[0].tensor, a[1].tensor, a[3].tensor, a[4].tensor, a[5].tensor,
                       aten_optional_tensor(&a[10]), a[6].i, a[8].i, a[11].i, a[7].b};
    return bag_backward(&g, r);
}

/* _embedding_bag_dense_backward(grad, indices, offset2bag, bag_size,
 * maximum_indices, num_weights, scale_grad_by_freq, mode,
 * per_sample_weights?, padding_idx) */
static porta_status *embedding_bag_dense_backward(const porta_value *a, aten_results *r) {
    bag_grad_args g = {a[0].tensor, a[1].tensor, a[2].tensor, a[3].tensor, a[4].tensor,
                       aten_optional_tensor(&a[8]), a[5].i, a[7].i, a[9].i, a[6].b};
    return bag_backward(&g, r);
}

/* _embedding_bag_per_sample_weights_backward(grad, weight, indices, offsets,
 * offset2bag, mode, padding_idx): each index's bag gradient dotted with its
 * weight row, 0 at padding. */
static porta_status *embedding_bag_per_sample_weights_backward(const porta_value *a,
                                                                aten_results *r) {
    const porta_tensor *grad = a[0].tensor, *weight = a[1].tensor, *indices = a[2].tensor;
    if (a[5].i != BAG_SUM)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "embedding_bag_backward: per_sample_weights only supported for "
                           "mode='sum'");
    PORTA_TRY(check_indices(indices));
    aten_scope s;
    scope_begin(&s);
    porta_tensor *index = scope_cast(&s, indices, PORTA_I64);
    porta_tensor *products = scope_binary(&s, PORTA_MUL, scope_index_select(&s, grad, 0, a[4].tensor),
                                          scope_index_select(&s, weight, 0, index));
    int columns[1] = {1};
    porta_tensor *dots = scope_reduce(&s, PORTA_REDUCE_SUM, products, columns, 1, false);
    if (a[6].i >= 0) {
        porta_tensor *zero = scope_full(&s, grad->buffer->device, grad->dtype, 0, NULL, 0);
        dots = scope_ternary(&s, PORTA_WHERE, scope_binary_number(&s, PORTA_EQ, index, (double)a[6].i),
                             zero, dots);
    }
    scope_push(&s, r, dots);
    return scope_end(&s);
}

const aten_op aten_index_embedding_ops[] = {
    {"_embedding_bag", "TTTbibtbi", embedding_bag},
    {"_embedding_bag_backward", "TTTTTTibibti", embedding_bag_backward},
    {"_embedding_bag_dense_backward", "TTTTTibiti", embedding_bag_dense_backward},
    {"_embedding_bag_forward_only", "TTTbibtbi", embedding_bag},
    {"_embedding_bag_per_sample_weights_backward", "TTTTTii",
     embedding_bag_per_sample_weights_backward},
    {"embedding", "TTibb", embedding},
    {"embedding_dense_backward", "TTiib", embedding_dense_backward},
    {NULL, NULL, NULL},
};
