/* scatter with every reduction against a serial double-precision reference
 * that rounds to the dtype after each update, as the kernel does. */
#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"
#include "test_movement.h"

static const porta_scatter_reduce reductions[] = {
    PORTA_SCATTER_NONE, PORTA_SCATTER_ADD, PORTA_SCATTER_MUL, PORTA_SCATTER_AMAX,
    PORTA_SCATTER_AMIN,
};

static double rounded(porta_dtype dtype, double v) {
    unsigned char bytes[8];
    core_store_from_double(dtype, bytes, v);
    return core_load_as_double(dtype, bytes);
}

static double combine(porta_scatter_reduce reduce, double a, double b) {
    switch (reduce) {
    case PORTA_SCATTER_NONE: return b;
    case PORTA_SCATTER_ADD: return a + b;
    case PORTA_SCATTER_MUL: return a * b;
    case PORTA_SCATTER_AMAX: return a > b ? a : b;
    case PORTA_SCATTER_AMIN: return a < b ? a : b;
    }
    return 0.0;
}

/* Scatters, then replays the updates in index order on x's values. */
static void check_scatter(const porta_tensor *x, int axis, const porta_tensor *index,
                          const porta_tensor *src, porta_scatter_reduce reduce) {
    porta_dtype dtype = porta_tensor_dtype(x);
    int rank = porta_tensor_rank(x);
    int normalized = axis < 0 ? axis + rank : axis;
    porta_tensor *out = NULL;
    porta_status *status = porta_scatter(x, axis, index, src, reduce, &out);
    CHECK_MSG(!status, "scatter (%s, reduce %d): %s", porta_dtype_name(dtype), (int)reduce,
              porta_status_message(status));
    porta_status_free(status);
    if (!out) return;
    CHECK(porta_tensor_dtype(out) == dtype && porta_tensor_rank(out) == rank);
    double *want = test_to_doubles(x), *index_values = test_to_doubles(index);
    double *src_values = test_to_doubles(src), *got = test_to_doubles(out);
    const int64_t *index_sizes = porta_tensor_sizes(index);
    if (porta_tensor_numel(index) > 0) {
        int64_t idx[PORTA_MAX_RANK] = {0}, target[PORTA_MAX_RANK];
        int64_t n = 0;
        do {
            memcpy(target, idx, sizeof target);
            if (rank) target[normalized] = (int64_t)index_values[n];
            int64_t at = test_move_position(rank, porta_tensor_sizes(x), target);
            double v = src_values[test_move_position(rank, porta_tensor_sizes(src), idx)];
            want[at] = rounded(dtype, combine(reduce, want[at], v));
            n++;
        } while (test_next_index(rank, index_sizes, idx));
    }
    char what[64];
    snprintf(what, sizeof what, "scatter %s reduce %d axis %d", porta_dtype_name(dtype),
             (int)reduce, normalized);
    test_close(what, got, want, porta_tensor_numel(x), 0.0, 0.0);
    free(got);
    free(src_values);
    free(index_values);
    free(want);
    porta_tensor_release(out);
}

TEST(test_index_scatter_values) {
    test_rng rng = test_rng_make(401);
    for (int t = 0; t < TEST_REAL_DTYPE_COUNT; t++) {
        porta_dtype dtype = test_move_dtypes[t];
        for (int trial = 0; trial < 15; trial++) {
            int rank = (int)test_int(&rng, 0, 4);
            int axis = rank ? (int)test_int(&rng, 0, rank - 1) : 0;
            int64_t sizes[PORTA_MAX_RANK], src_sizes[PORTA_MAX_RANK], index_sizes[PORTA_MAX_RANK];
            test_move_random_shape(&rng, rank, trial == 0 ? 0 : 1, 4, sizes);
            for (int d = 0; d < rank; d++) {
                src_sizes[d] = test_int(&rng, d == axis ? 0 : sizes[d], sizes[d] + 3);
                int64_t bound = d == axis ? src_sizes[d] : sizes[d];
                index_sizes[d] = test_int(&rng, 0, bound);
            }
            if (rank && sizes[axis] == 0) index_sizes[axis] = 0;
            int64_t limit = rank ? sizes[axis] : 1;
            porta_tensor *x = test_move_input(&rng, dtype, rank, sizes);
            porta_tensor *src = test_move_input(&rng, dtype, rank, src_sizes);
            porta_tensor *index = test_move_int_tensor(&rng, trial % 2 ? PORTA_I32 : PORTA_I64,
                                                       rank, index_sizes, 0, limit - 1);
            int given_axis = test_int(&rng, 0, 1) && rank ? axis - rank : axis;
            for (size_t r = 0; r < sizeof reductions / sizeof reductions[0]; r++)
                check_scatter(x, given_axis, index, src, reductions[r]);
            porta_tensor_release(index);
            porta_tensor_release(src);
            porta_tensor_release(x);
        }
    }
}

static void scatter_large_cases(void) {
    test_rng rng = test_rng_make(402);
    int64_t sizes[] = {40, 30, 50}, src_sizes[] = {60, 40, 60};
    porta_dtype dtypes[] = {PORTA_F32, PORTA_I64, PORTA_F16};
    for (int t = 0; t < 3; t++) {
        porta_tensor *x = test_random_tensor(&rng, dtypes[t], 3, sizes, -2.0, 2.0);
        porta_tensor *src = test_move_input(&rng, dtypes[t], 3, src_sizes);
        for (int axis = 0; axis < 3; axis++) {
            int64_t index_sizes[3];
            for (int d = 0; d < 3; d++) index_sizes[d] = d == axis ? src_sizes[d] : sizes[d];
            porta_tensor *index = test_move_int_tensor(&rng, PORTA_I64, 3, index_sizes, 0,
                                                       sizes[axis] - 1);
            check_scatter(x, axis, index, src, PORTA_SCATTER_ADD);
            check_scatter(x, axis, index, src, PORTA_SCATTER_NONE);
            check_scatter(x, axis, index, src, PORTA_SCATTER_AMAX);
            porta_tensor_release(index);
        }
        porta_tensor_release(src);
        porta_tensor_release(x);
    }
    /* one long row along the axis: every update may hit any element */
    int64_t length = 200000, slots = 1000;
    porta_tensor *x = test_random_tensor(&rng, PORTA_F64, 1, &slots, -1.0, 1.0);
    porta_tensor *src = test_random_tensor(&rng, PORTA_F64, 1, &length, -1.0, 1.0);
    porta_tensor *index = test_move_int_tensor(&rng, PORTA_I64, 1, &length, 0, slots - 1);
    check_scatter(x, 0, index, src, PORTA_SCATTER_ADD);
    check_scatter(x, 0, index, src, PORTA_SCATTER_NONE);
    porta_tensor_release(index);
    porta_tensor_release(src);
    porta_tensor_release(x);
}

/* Many updates per element, spread over the pool: the result must equal
 * the serial one exactly (updates keep index order), on every axis, with
 * the default threads and with more threads than cores. */
TEST(test_index_scatter_large) {
    int threads = porta_get_num_threads();
    scatter_large_cases();
    CHECK_OK(porta_set_num_threads(7));
    scatter_large_cases();
    CHECK_OK(porta_set_num_threads(threads));
}

/* NaN propagates through amax/amin from either side, as in PyTorch. */
TEST(test_index_scatter_nan) {
    int64_t three = 3;
    porta_tensor *x = NULL, *src = NULL, *index = NULL, *out = NULL;
    CHECK_OK(porta_tensor_from_host(test_cpu(), PORTA_F32, 1, &three,
                                    (float[]){NAN, 1.0f, 2.0f}, &x));
    CHECK_OK(porta_tensor_from_host(test_cpu(), PORTA_F32, 1, &three,
                                    (float[]){5.0f, NAN, -1.0f}, &src));
    CHECK_OK(porta_tensor_from_host(test_cpu(), PORTA_I64, 1, &three, (int64_t[]){0, 1, 2},
                                    &index));
    porta_scatter_reduce modes[] = {PORTA_SCATTER_AMAX, PORTA_SCATTER_AMIN};
    for (int m = 0; m < 2; m++) {
        CHECK_OK(porta_scatter(x, 0, index, src, modes[m], &out));
        float got[3];
        CHECK_OK(porta_tensor_to_host(out, got, sizeof got));
        CHECK(isnan(got[0]) && isnan(got[1]));
        CHECK(got[2] == (m == 0 ? 2.0f : -1.0f));
        porta_tensor_release(out);
        out = NULL;
    }
    porta_tensor_release(index);
    porta_tensor_release(src);
    porta_tensor_release(x);
}

TEST(test_index_scatter_errors) {
    test_rng rng = test_rng_make(403);
    int64_t sizes[] = {3, 5}, index_sizes[] = {2, 4};
    porta_tensor *x = test_random_tensor(&rng, PORTA_F32, 2, sizes, -1.0, 1.0);
    porta_tensor *src = test_random_tensor(&rng, PORTA_F32, 2, sizes, -1.0, 1.0);
    porta_tensor *index = test_move_int_tensor(&rng, PORTA_I64, 2, index_sizes, 0, 2);
    porta_tensor *out = NULL;
    test_move_fill(index, (double[]){0, 1, 2, 0, 1, 3, 0, 0});
    CHECK_ERR(porta_scatter(x, 0, index, src, PORTA_SCATTER_ADD, &out), PORTA_ERR_OUT_OF_RANGE,
              "scatter.add: index 3 is out of bounds for dimension 0 with size 3");
    /* out= keeps its contents when the index is bad */
    porta_tensor *given = test_random_tensor(&rng, PORTA_F32, 2, sizes, -1.0, 1.0);
    double *before = test_to_doubles(given);
    out = given;
    CHECK_ERR(porta_scatter(x, 0, index, src, PORTA_SCATTER_NONE, &out), PORTA_ERR_OUT_OF_RANGE,
              "scatter: index 3");
    double *after = test_to_doubles(given);
    test_close("out untouched on error", after, before, 15, 0.0, 0.0);
    free(before);
    free(after);
    out = NULL;

    porta_tensor *doubles = test_random_tensor(&rng, PORTA_F64, 2, sizes, -1.0, 1.0);
    CHECK_ERR(porta_scatter(x, 1, index, doubles, PORTA_SCATTER_NONE, &out), PORTA_ERR_DTYPE,
              "expected src of x's dtype float32, got float64");
    porta_tensor *floats = test_random_tensor(&rng, PORTA_F32, 2, index_sizes, 0.0, 1.0);
    CHECK_ERR(porta_scatter(x, 1, floats, src, PORTA_SCATTER_NONE, &out), PORTA_ERR_DTYPE,
              "index, got float32");
    porta_tensor *small_src = test_random_tensor(&rng, PORTA_F32, 2, (int64_t[]){2, 3}, 0.0, 1.0);
    CHECK_ERR(porta_scatter(x, 1, index, small_src, PORTA_SCATTER_NONE, &out), PORTA_ERR_SHAPE,
              "index [2, 4] must not be larger than src [2, 3], but is at dimension 1");
    porta_tensor *tall = test_move_int_tensor(&rng, PORTA_I64, 2, (int64_t[]){4, 1}, 0, 2);
    CHECK_ERR(porta_scatter(x, 1, tall, src, PORTA_SCATTER_NONE, &out), PORTA_ERR_SHAPE,
              "apart from dimension 1");
    porta_tensor *flat_src = test_random_tensor(&rng, PORTA_F32, 1, (int64_t[]){15}, 0.0, 1.0);
    CHECK_ERR(porta_scatter(x, 1, index, flat_src, PORTA_SCATTER_NONE, &out), PORTA_ERR_SHAPE,
              "src must have the same rank as x");
    CHECK_ERR(porta_scatter(x, 1, index, src, (porta_scatter_reduce)9, &out),
              PORTA_ERR_INVALID_ARGUMENT, "invalid reduction 9");
    CHECK_ERR(porta_scatter(x, 1, index, NULL, PORTA_SCATTER_NONE, &out),
              PORTA_ERR_INVALID_ARGUMENT, NULL);
    CHECK(out == NULL);
    porta_tensor_release(flat_src);
    porta_tensor_release(tall);
    porta_tensor_release(small_src);
    porta_tensor_release(floats);
    porta_tensor_release(doubles);
    porta_tensor_release(given);
    porta_tensor_release(index);
    porta_tensor_release(src);
    porta_tensor_release(x);
}

/* Results on zero-size operands: nothing scattered, gathered or selected. */
TEST(test_index_zero_size) {
    test_rng rng = test_rng_make(404);
    int64_t sizes[] = {3, 0, 2}, empty_index[] = {3, 0, 2}, count = 0;
    porta_tensor *x = test_move_scrambled(&rng, PORTA_I8, 3, sizes);
    porta_tensor *index = test_move_int_tensor(&rng, PORTA_I64, 3, empty_index, 0, 0);
    porta_tensor *none = test_move_int_tensor(&rng, PORTA_I32, 1, &count, 0, 0);
    porta_tensor *out = NULL;
    CHECK_OK(porta_gather(x, 2, index, &out));
    CHECK(porta_tensor_numel(out) == 0);
    porta_tensor_release(out);
    out = NULL;
    CHECK_OK(porta_index_select(x, 0, none, &out));
    CHECK(porta_tensor_sizes(out)[0] == 0 && porta_tensor_sizes(out)[2] == 2);
    porta_tensor_release(out);
    out = NULL;
    CHECK_OK(porta_scatter(x, 0, index, x, PORTA_SCATTER_MUL, &out));
    CHECK(porta_tensor_numel(out) == 0);
    porta_tensor_release(out);
    out = NULL;
    /* a non-empty x with an empty index: scatter copies x */
    int64_t full[] = {2, 3}, nothing[] = {0, 3};
    porta_tensor *y = test_move_scrambled(&rng, PORTA_BF16, 2, full);
    porta_tensor *no_index = test_move_int_tensor(&rng, PORTA_I64, 2, nothing, 0, 0);
    check_scatter(y, 0, no_index, y, PORTA_SCATTER_ADD);
    /* an index into an empty axis is out of bounds */
    int64_t one = 1, zero_axis[] = {0};
    porta_tensor *empty_axis = test_random_tensor(&rng, PORTA_F32, 1, zero_axis, 0.0, 1.0);
    porta_tensor *zero = test_move_int_tensor(&rng, PORTA_I64, 1, &one, 0, 0);
    CHECK_ERR(porta_index_select(empty_axis, 0, zero, &out), PORTA_ERR_OUT_OF_RANGE,
              "index 0 is out of bounds for dimension 0 with size 0");
    CHECK(out == NULL);
    porta_tensor_release(zero);
    porta_tensor_release(empty_axis);
    porta_tensor_release(no_index);
    porta_tensor_release(y);
    porta_tensor_release(none);
    porta_tensor_release(index);
    porta_tensor_release(x);
}
