/* Helpers shared by the movement and index tests. */
#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"
#include "runtime/tensor.h"
#include "test_movement.h"

const porta_dtype test_move_dtypes[TEST_REAL_DTYPE_COUNT] = {
    PORTA_BOOL, PORTA_U8, PORTA_I8, PORTA_I16, PORTA_I32,
    PORTA_I64, PORTA_F16, PORTA_BF16, PORTA_F32, PORTA_F64,
};

void test_move_random_shape(test_rng *rng, int rank, int64_t low, int64_t high, int64_t *sizes) {
    for (int d = 0; d < rank; d++) sizes[d] = test_int(rng, low, high);
}

porta_tensor *test_move_scrambled(test_rng *rng, porta_dtype dtype, int rank,
                                  const int64_t *sizes) {
    /* Storage order: a random permutation of the dims, innermost last. */
    int order[PORTA_MAX_RANK];
    for (int d = 0; d < rank; d++) order[d] = d;
    test_shuffle(rng, order, rank);
    int64_t strides[PORTA_MAX_RANK];
    int64_t span = test_int(rng, 1, 2); /* a gap between neighbours, sometimes */
    for (int k = rank - 1; k >= 0; k--) {
        int d = order[k];
        strides[d] = span;
        span *= sizes[d] + test_int(rng, 0, 2);
    }
    int64_t offset = 0;
    bool empty = false;
    for (int d = 0; d < rank; d++) empty = empty || sizes[d] == 0;
    for (int d = 0; d < rank; d++) {
        if (test_int(rng, 0, 1) == 0) continue;
        if (!empty) offset += (sizes[d] - 1) * strides[d];
        strides[d] = -strides[d];
    }
    int64_t total = span > 0 ? span : 1;
    porta_tensor *storage = test_random_tensor(rng, dtype, 1, &total, -4.0, 4.0);
    porta_tensor *view = test_view_on(storage, rank, sizes, strides, offset);
    porta_tensor_release(storage);
    return view;
}

porta_tensor *test_move_input(test_rng *rng, porta_dtype dtype, int rank, const int64_t *sizes) {
    if (test_int(rng, 0, 1)) return test_move_scrambled(rng, dtype, rank, sizes);
    return test_random_tensor(rng, dtype, rank, sizes, -4.0, 4.0);
}

void test_move_fill(porta_tensor *t, const double *values) {
    int rank = porta_tensor_rank(t);
    const int64_t *sizes = porta_tensor_sizes(t), *strides = porta_tensor_strides(t);
    if (porta_tensor_numel(t) == 0) return;
    size_t elem = porta_dtype_size(porta_tensor_dtype(t));
    char *data = core_tensor_data(t);
    int64_t idx[PORTA_MAX_RANK] = {0};
    int64_t n = 0;
    do {
        core_store_from_double(porta_tensor_dtype(t),
                                data + test_offset(rank, idx, strides) * (int64_t)elem,
                                values[n++]);
    } while (test_next_index(rank, sizes, idx));
}

porta_tensor *test_move_int_tensor(test_rng *rng, porta_dtype dtype, int rank,
                                   const int64_t *sizes, int64_t low, int64_t high) {
    porta_tensor *t = test_move_input(rng, dtype, rank, sizes);
    if (!t) return NULL;
    int64_t numel = porta_tensor_numel(t);
    double *values = malloc((size_t)(numel > 0 ? numel : 1) * sizeof *values);
    for (int64_t i = 0; i < numel; i++) values[i] = (double)test_int(rng, low, high);
    test_move_fill(t, values);
    free(values);
    return t;
}

int64_t test_move_position(int rank, const int64_t *sizes, const int64_t *idx) {
    int64_t position = 0;
    for (int d = 0; d < rank; d++) position = position * sizes[d] + idx[d];
    return position;
}

bool test_move_same_buffer(const porta_tensor *a, const porta_tensor *b) {
    return porta_tensor_buffer(a) == porta_tensor_buffer(b);
}

bool test_move_check_map(const char *what, const porta_tensor *x, const porta_tensor *out,
                         test_move_map map, const void *ctx, double fill) {
    int rank = porta_tensor_rank(out);
    const int64_t *sizes = porta_tensor_sizes(out);
    int64_t numel = porta_tensor_numel(out);
    if (numel == 0) return true;
    unsigned char rounded[8];
    core_store_from_double(porta_tensor_dtype(out), rounded, fill);
    double pad = core_load_as_double(porta_tensor_dtype(out), rounded);
    double *xs = test_to_doubles(x), *got = test_to_doubles(out);
    double *want = malloc((size_t)numel * sizeof *want);
    int64_t idx[PORTA_MAX_RANK] = {0}, x_idx[PORTA_MAX_RANK];
    int64_t n = 0;
    do {
        bool inside = map(ctx, idx, x_idx);
        want[n++] = inside ? xs[test_move_position(porta_tensor_rank(x), porta_tensor_sizes(x),
                                                   x_idx)]
                           : pad;
    } while (test_next_index(rank, sizes, idx));
    bool ok = test_close(what, got, want, numel, 0.0, 0.0);
    free(xs);
    free(got);
    free(want);
    return ok;
}
