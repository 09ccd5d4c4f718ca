/* Helpers shared by the index aten ops: see index/common.h. */
#include <stdlib.h>
#include <string.h>

#include "aten/index/common.h"
#include "core/status.h"
#include "runtime/tensor.h"

porta_status *index_recode(porta_status *status, porta_code from, porta_code to) {
    if (!status || porta_status_code(status) != from) return status;
    porta_status *recoded = porta_error(to, "%s", porta_status_message(status));
    porta_status_free(status);
    return recoded;
}

porta_status *index_scalar(porta_device *device, porta_dtype dtype, double value,
                           porta_tensor **out) {
    return porta_tensor_full(device, dtype, 0, NULL, value, out);
}

/* x reduced to one int64 value (MIN or MAX over every element). */
static porta_status *extreme(const porta_tensor *x, porta_reduce_op op, int64_t *value) {
    porta_tensor *r = NULL;
    PORTA_TRY(porta_reduce(op, x, NULL, 0, false, &r));
    porta_status *status = porta_tensor_to_host(r, value, sizeof *value);
    porta_tensor_release(r);
    return status;
}

/* The error for the first value outside [-size, size), read on the host
 * (only on the error path). */
static porta_status *out_of_bounds(const porta_tensor *index, int64_t size, int dim) {
    int64_t n = porta_tensor_numel(index);
    int64_t *values = malloc((size_t)n * sizeof *values);
    if (!values) return porta_error(PORTA_ERR_OUT_OF_MEMORY, "index: no memory for the report");
    porta_status *status = porta_tensor_to_host(index, values, (size_t)n * sizeof *values);
    int64_t k = 0;
    while (!status && k < n - 1 && values[k] >= -size && values[k] < size) k++;
    if (!status)
        status = porta_error(PORTA_ERR_OUT_OF_RANGE,
                             "index %lld is out of bounds for dimension %d with size %lld",
                             (long long)values[k], dim, (long long)size);
    free(values);
    return status;
}

porta_status *index_wrap(const porta_tensor *index, int64_t size, int dim, porta_tensor **out) {
    porta_tensor *wide = NULL, *bound = NULL, *wrapped = NULL;
    PORTA_TRY(porta_cast(index, PORTA_I64, &wide));
    porta_status *status = NULL;
    int64_t low = 0, high = 0;
    if (porta_tensor_numel(wide) == 0) goto done;
    CORE_TRY_GOTO(status, extreme(wide, PORTA_REDUCE_MIN, &low), done);
    CORE_TRY_GOTO(status, extreme(wide, PORTA_REDUCE_MAX, &high), done);
    if (low < -size || high >= size) {
        status = out_of_bounds(wide, size, dim);
        goto done;
    }
    if (low >= 0) goto done;
    /* Python's modulo (sign of the divisor) maps [-size, 0) to [0, size). */
    CORE_TRY_GOTO(status, index_scalar(porta_tensor_device(wide), PORTA_I64, (double)size, &bound),
                   done);
    CORE_TRY_GOTO(status, porta_binary(PORTA_REMAINDER, wide, bound, &wrapped), done);
    porta_tensor_release(wide);
    wide = wrapped;
done:
    porta_tensor_release(bound);
    if (status) {
        porta_tensor_release(wide);
        return status;
    }
    *out = wide;
    return NULL;
}

/* Row-major coordinates of the true bytes of a host bool array. */
static void coordinates(const bool *mask, int64_t numel, int rank, const int64_t *sizes,
                        int64_t *coords) {
    int64_t at[PORTA_MAX_RANK] = {0};
    for (int64_t i = 0; i < numel; i++) {
        if (mask[i]) {
            memcpy(coords, at, (size_t)rank * sizeof *at);
            coords += rank;
        }
        for (int d = rank - 1; d >= 0 && ++at[d] == sizes[d]; d--) at[d] = 0;
    }
}

/* The count and positions of non-zeros decide the result's shape, so they
 * are read back to the host; the mask is compacted there (libporta has no
 * device-side compaction yet). */
porta_status *index_nonzero(const porta_tensor *x, porta_tensor **out) {
    porta_tensor *zero = NULL, *mask = NULL;
    bool *host = NULL;
    int64_t *coords = NULL;
    int64_t numel = porta_tensor_numel(x), count = 0;
    int rank = porta_tensor_rank(x);
    const int64_t *sizes = porta_tensor_sizes(x);
    porta_status *status;
    CORE_TRY_GOTO(status, index_scalar(porta_tensor_device(x), porta_tensor_dtype(x), 0, &zero),
                   done);
    CORE_TRY_GOTO(status, porta_binary(PORTA_NE, x, zero, &mask), done);
    host = malloc((size_t)(numel ? numel : 1));
    if (!host) {
        status = porta_error(PORTA_ERR_OUT_OF_MEMORY, "nonzero: no memory for the mask");
        goto done;
    }
    CORE_TRY_GOTO(status, porta_tensor_to_host(mask, host, (size_t)numel), done);
    for (int64_t i = 0; i < numel; i++) count += host[i];
    int64_t cells = count * rank;
    coords = malloc((size_t)(cells > 0 ? cells : 1) * sizeof *coords);
    if (!coords) {
        status = porta_error(PORTA_ERR_OUT_OF_MEMORY, "nonzero: no memory for the coordinates");
        goto done;
    }
    coordinates(host, numel, rank, sizes, coords);
    int64_t shape[2] = {count, rank};
    status = porta_tensor_from_host(porta_tensor_device(x), PORTA_I64, 2, shape, coords, out);
done:
    free(host);
    free(coords);
    porta_tensor_release(zero);
    porta_tensor_release(mask);
    return status;
}

porta_status *index_along(const porta_tensor *index, int axis, int rank, const int64_t *sizes,
                          porta_tensor **out) {
    int64_t shape[PORTA_MAX_RANK];
    for (int d = 0; d < rank; d++) shape[d] = d == axis ? sizes[d] : 1;
    porta_tensor *column = NULL;
    PORTA_TRY(porta_reshape(index, rank, shape, &column));
    porta_status *status = porta_expand(column, rank, sizes, out);
    porta_tensor_release(column);
    return status;
}

void index_slices_of(const porta_tensor *self, int dim, int64_t count, index_slices *out) {
    out->rank = self->rank ? self->rank : 1;
    out->size = self->rank ? self->sizes[dim] : 1;
    for (int d = 0; d < out->rank; d++) {
        out->self_sizes[d] = self->rank ? self->sizes[d] : 1;
        out->source_sizes[d] = d == dim ? count : out->self_sizes[d];
    }
}

void index_bounds(aten_scope *s, const porta_tensor *flat, int64_t bounds[2]) {
    bounds[0] = scope_read_int(s, scope_reduce(s, PORTA_REDUCE_MIN, flat, NULL, 0, false));
    bounds[1] = scope_read_int(s, scope_reduce(s, PORTA_REDUCE_MAX, flat, NULL, 0, false));
}

porta_status *index_clone(const porta_tensor *x, porta_tensor **out) {
    porta_tensor *copy = NULL;
    PORTA_TRY(porta_tensor_empty(porta_tensor_device(x), porta_tensor_dtype(x),
                                 porta_tensor_rank(x), porta_tensor_sizes(x), &copy));
    porta_status *status = porta_copy(x, copy);
    if (status) {
        porta_tensor_release(copy);
        return status;
    }
    *out = copy;
    return NULL;
}
