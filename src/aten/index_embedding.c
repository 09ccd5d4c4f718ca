/* embedding (rows of weight picked by index) and its dense backward (the
 * gradient rows added back into a [num_weights, D] zero tensor). */
#include "aten/index_common.h"
#include "core/status.h"

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
    PORTA_TRY_GOTO(status, porta_reshape(indices, 1, &n, &flat), done);
    PORTA_TRY_GOTO(status, porta_index_select(weight, 0, flat, &rows), done);
    PORTA_TRY_GOTO(status, porta_reshape(rows, rank + 1, shape, &out), done);
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
        PORTA_TRY_GOTO(status, index_scalar(device, PORTA_I64, (double)padding_idx, &pad), done);
        PORTA_TRY_GOTO(status, porta_binary(PORTA_NE, index, pad, &keep), done);
        PORTA_TRY_GOTO(status, porta_reshape(keep, 2, column, &keep_col), done);
        PORTA_TRY_GOTO(status, index_scalar(device, dtype, 0, &zero), done);
        porta_tensor *kept = NULL;
        PORTA_TRY_GOTO(status, porta_ternary(PORTA_WHERE, keep_col, scaled, zero, &kept), done);
        porta_tensor_release(scaled);
        scaled = kept;
    }
    if (by_freq) {
        PORTA_TRY_GOTO(status, porta_tensor_full(device, dtype, 1, &num_weights, 0, &counts), done);
        PORTA_TRY_GOTO(status, index_scalar(device, dtype, 1, &one), done);
        PORTA_TRY_GOTO(status, porta_expand(one, 1, &n, &ones), done);
        PORTA_TRY_GOTO(status, porta_scatter(counts, 0, index, ones, PORTA_SCATTER_ADD, &counts),
                       done);
        PORTA_TRY_GOTO(status, porta_index_select(counts, 0, index, &per_row), done);
        PORTA_TRY_GOTO(status, porta_reshape(per_row, 2, column, &per_col), done);
        porta_tensor *divided = NULL;
        PORTA_TRY_GOTO(status, porta_binary(PORTA_DIV, scaled, per_col, &divided), done);
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
    PORTA_TRY_GOTO(status, porta_reshape(indices, 1, &n, &flat), done);
    PORTA_TRY_GOTO(status, porta_cast(flat, PORTA_I64, &index), done);
    PORTA_TRY_GOTO(status, porta_reshape(grad, 2, rows_shape, &rows), done);
    PORTA_TRY_GOTO(status, scaled_rows(rows, index, num_weights, args[3].i, args[4].b, &scaled),
                   done);
    PORTA_TRY_GOTO(status, index_along(index, 0, 2, rows_shape, &spread), done);
    PORTA_TRY_GOTO(status,
                   porta_tensor_full(porta_tensor_device(grad), porta_tensor_dtype(grad), 2,
                                     out_shape, 0, &out),
                   done);
    PORTA_TRY_GOTO(status, porta_scatter(out, 0, spread, scaled, PORTA_SCATTER_ADD, &out), done);
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

const aten_op aten_index_embedding_ops[] = {
    {"embedding", "TTibb", embedding},
    {"embedding_dense_backward", "TTiib", embedding_dense_backward},
    {NULL, NULL, NULL},
};
