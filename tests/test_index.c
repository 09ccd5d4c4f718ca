/* gather and index_select against index maps written here, on contiguous
 * and scrambled layouts, int64 and int32 indices, every dtype. */
#include <stdlib.h>
#include <string.h>

#include "runtime/tensor.h"
#include "test_movement.h"

#define TRIALS 10

static const porta_dtype index_dtypes[] = {PORTA_I64, PORTA_I32};

/* out[i] = x[i with axis replaced by index[i]]; index has out's shape. */
typedef struct gather_ctx {
    int axis;
    int rank;
    const int64_t *sizes; /* out's and index's */
    const double *index;
} gather_ctx;

static bool map_gather(const void *ctx, const int64_t *out_idx, int64_t *x_idx) {
    const gather_ctx *g = ctx;
    memcpy(x_idx, out_idx, PORTA_MAX_RANK * sizeof *x_idx);
    if (g->rank) x_idx[g->axis] = (int64_t)g->index[test_move_position(g->rank, g->sizes, out_idx)];
    return true;
}

/* Gathers and checks every element; the index holds valid values. */
static void check_gather(const porta_tensor *x, int axis, const porta_tensor *index) {
    int rank = porta_tensor_rank(x);
    porta_tensor *out = NULL;
    CHECK_OK(porta_gather(x, axis, index, &out));
    CHECK(porta_tensor_dtype(out) == porta_tensor_dtype(x));
    CHECK(porta_tensor_rank(out) == rank);
    CHECK(!memcmp(porta_tensor_sizes(out), porta_tensor_sizes(index),
                  (size_t)rank * sizeof(int64_t)));
    double *index_values = test_to_doubles(index);
    gather_ctx g = {axis < 0 ? axis + rank : axis, rank, porta_tensor_sizes(index),
                    index_values};
    test_move_check_map("gather", x, out, map_gather, &g, 0.0);
    free(index_values);
    porta_tensor_release(out);
}

TEST(test_index_gather_values) {
    test_rng rng = test_rng_make(301);
    for (int t = 0; t < TEST_REAL_DTYPE_COUNT; t++) {
        for (int trial = 0; trial < TRIALS; trial++) {
            int rank = (int)test_int(&rng, 0, 4);
            int axis = rank ? (int)test_int(&rng, 0, rank - 1) : 0;
            int64_t sizes[PORTA_MAX_RANK], index_sizes[PORTA_MAX_RANK];
            test_move_random_shape(&rng, rank, trial == 0 ? 0 : 1, 5, sizes);
            for (int d = 0; d < rank; d++)
                index_sizes[d] = d == axis ? test_int(&rng, 0, 7) : test_int(&rng, 0, sizes[d]);
            if (rank && sizes[axis] == 0) index_sizes[axis] = 0;
            int64_t limit = rank ? sizes[axis] : 1;
            porta_tensor *x = test_move_input(&rng, test_move_dtypes[t], rank, sizes);
            porta_tensor *index = test_move_int_tensor(&rng, index_dtypes[trial % 2], rank,
                                                       index_sizes, 0, limit - 1);
            check_gather(x, test_int(&rng, 0, 1) && rank ? axis - rank : axis, index);
            porta_tensor_release(index);
            porta_tensor_release(x);
        }
    }
}

static void gather_large_cases(void) {
    test_rng rng = test_rng_make(302);
    int64_t sizes[] = {300, 700}, index_sizes[] = {500, 600}, long_sizes[] = {100000};
    porta_tensor *x = test_random_tensor(&rng, PORTA_F32, 2, sizes, -1.0, 1.0);
    porta_tensor *along_rows = test_move_int_tensor(&rng, PORTA_I64, 2, index_sizes, 0, 299);
    index_sizes[0] = 250;
    index_sizes[1] = 900;
    porta_tensor *along_columns = test_move_int_tensor(&rng, PORTA_I64, 2, index_sizes, 0, 699);
    check_gather(x, 0, along_rows);
    check_gather(x, 1, along_columns);
    porta_tensor *line = test_random_tensor(&rng, PORTA_F16, 1, long_sizes, -1.0, 1.0);
    porta_tensor *picks = test_move_int_tensor(&rng, PORTA_I32, 1, long_sizes, 0, 99999);
    check_gather(line, 0, picks);
    porta_tensor_release(picks);
    porta_tensor_release(line);
    porta_tensor_release(along_columns);
    porta_tensor_release(along_rows);
    porta_tensor_release(x);
}

/* Long rows and many rows, so the pool splits the work, on both axes, with
 * the default threads and with more threads than cores. */
TEST(test_index_gather_large) {
    int threads = porta_get_num_threads();
    gather_large_cases();
    CHECK_OK(porta_set_num_threads(7));
    gather_large_cases();
    CHECK_OK(porta_set_num_threads(threads));
}

TEST(test_index_gather_errors) {
    test_rng rng = test_rng_make(303);
    int64_t sizes[] = {3, 5}, index_sizes[] = {2, 4};
    porta_tensor *x = test_random_tensor(&rng, PORTA_F32, 2, sizes, -1.0, 1.0);
    porta_tensor *index = test_move_int_tensor(&rng, PORTA_I64, 2, index_sizes, 0, 4);
    porta_tensor *out = NULL;
    /* out-of-range values: the first in row-major order is reported */
    double values[8] = {0, 1, 2, 3, 4, 7, 9, 0};
    test_move_fill(index, values);
    CHECK_ERR(porta_gather(x, 1, index, &out), PORTA_ERR_OUT_OF_RANGE,
              "gather: index 7 is out of bounds for dimension 1 with size 5");
    values[5] = -1;
    test_move_fill(index, values);
    CHECK_ERR(porta_gather(x, -1, index, &out), PORTA_ERR_OUT_OF_RANGE,
              "index -1 is out of bounds for dimension 1 with size 5");
    values[5] = 0;
    values[6] = 0;
    test_move_fill(index, values);
    CHECK_ERR(porta_gather(x, 0, index, &out), PORTA_ERR_OUT_OF_RANGE,
              "index 3 is out of bounds for dimension 0 with size 3");
    CHECK_ERR(porta_gather(x, 2, index, &out), PORTA_ERR_OUT_OF_RANGE, "axis 2");

    porta_tensor *floats = test_random_tensor(&rng, PORTA_F32, 2, index_sizes, 0.0, 1.0);
    CHECK_ERR(porta_gather(x, 1, floats, &out), PORTA_ERR_DTYPE, "got float32");
    porta_tensor *flat = test_move_int_tensor(&rng, PORTA_I64, 1, (int64_t[]){2}, 0, 1);
    CHECK_ERR(porta_gather(x, 1, flat, &out), PORTA_ERR_SHAPE, "same rank");
    porta_tensor *wide = test_move_int_tensor(&rng, PORTA_I64, 2, (int64_t[]){4, 2}, 0, 1);
    CHECK_ERR(porta_gather(x, 1, wide, &out), PORTA_ERR_SHAPE,
              "index [4, 2] must not be larger than x [3, 5] apart from dimension 1");
    CHECK_ERR(porta_gather(NULL, 1, wide, &out), PORTA_ERR_INVALID_ARGUMENT, NULL);
    CHECK_ERR(porta_gather(x, 1, NULL, &out), PORTA_ERR_INVALID_ARGUMENT, NULL);
    CHECK_ERR(porta_gather(x, 1, wide, NULL), PORTA_ERR_INVALID_ARGUMENT, NULL);
    CHECK(out == NULL);
    /* an index past x along axis may be longer than x there */
    porta_tensor *tall = test_move_int_tensor(&rng, PORTA_I64, 2, (int64_t[]){3, 9}, 0, 4);
    check_gather(x, 1, tall);
    porta_tensor_release(tall);
    porta_tensor_release(wide);
    porta_tensor_release(flat);
    porta_tensor_release(floats);
    porta_tensor_release(index);
    porta_tensor_release(x);
}

/* ---- index_select ---- */

typedef struct select_ctx {
    int axis;
    int rank;
    const double *index;
} select_ctx;

static bool map_select(const void *ctx, const int64_t *out_idx, int64_t *x_idx) {
    const select_ctx *s = ctx;
    memcpy(x_idx, out_idx, PORTA_MAX_RANK * sizeof *x_idx);
    if (s->rank) x_idx[s->axis] = (int64_t)s->index[out_idx[s->axis]];
    return true;
}

static void check_select(const porta_tensor *x, int axis, const porta_tensor *index) {
    int rank = porta_tensor_rank(x);
    int normalized = axis < 0 ? axis + rank : axis;
    porta_tensor *out = NULL;
    CHECK_OK(porta_index_select(x, axis, index, &out));
    CHECK(porta_tensor_dtype(out) == porta_tensor_dtype(x));
    CHECK(porta_tensor_rank(out) == rank);
    for (int d = 0; d < rank; d++)
        CHECK(porta_tensor_sizes(out)[d] ==
              (d == normalized ? porta_tensor_numel(index) : porta_tensor_sizes(x)[d]));
    double *index_values = test_to_doubles(index);
    select_ctx s = {normalized, rank, index_values};
    test_move_check_map("index_select", x, out, map_select, &s, 0.0);
    free(index_values);
    porta_tensor_release(out);
}

TEST(test_index_select_values) {
    test_rng rng = test_rng_make(304);
    for (int t = 0; t < TEST_REAL_DTYPE_COUNT; t++) {
        for (int trial = 0; trial < TRIALS; trial++) {
            int rank = (int)test_int(&rng, 0, 4);
            int axis = rank ? (int)test_int(&rng, 0, rank - 1) : 0;
            int64_t sizes[PORTA_MAX_RANK];
            test_move_random_shape(&rng, rank, trial == 0 ? 0 : 1, 5, sizes);
            int64_t limit = rank ? sizes[axis] : 1;
            int64_t count = limit == 0 ? 0 : rank ? test_int(&rng, 0, 8) : 1;
            int index_rank = rank == 0 || count == 1 ? (int)test_int(&rng, 0, 1) : 1;
            porta_tensor *x = test_move_input(&rng, test_move_dtypes[t], rank, sizes);
            porta_tensor *index = test_move_int_tensor(&rng, index_dtypes[trial % 2], index_rank,
                                                       &count, 0, limit - 1);
            check_select(x, test_int(&rng, 0, 1) && rank ? axis - rank : axis, index);
            porta_tensor_release(index);
            porta_tensor_release(x);
        }
    }
}

/* Embedding-style lookups (contiguous row copies) and column picks, large
 * enough for the pool. */
TEST(test_index_select_large) {
    test_rng rng = test_rng_make(305);
    int64_t table_sizes[] = {5000, 64}, count = 20000;
    porta_tensor *table = test_random_tensor(&rng, PORTA_BF16, 2, table_sizes, -1.0, 1.0);
    porta_tensor *rows = test_move_int_tensor(&rng, PORTA_I64, 1, &count, 0, 4999);
    check_select(table, 0, rows);
    int64_t columns = 100;
    porta_tensor *picks = test_move_int_tensor(&rng, PORTA_I32, 1, &columns, 0, 63);
    check_select(table, 1, picks);
    porta_tensor *scrambled = test_move_scrambled(&rng, PORTA_F64, 2, table_sizes);
    check_select(scrambled, 0, rows);
    porta_tensor_release(scrambled);
    porta_tensor_release(picks);
    porta_tensor_release(rows);
    porta_tensor_release(table);
}

TEST(test_index_select_errors) {
    test_rng rng = test_rng_make(306);
    int64_t sizes[] = {3, 5}, count = 4;
    porta_tensor *x = test_random_tensor(&rng, PORTA_I16, 2, sizes, 0, 0);
    porta_tensor *index = test_move_int_tensor(&rng, PORTA_I64, 1, &count, 0, 2);
    porta_tensor *out = NULL;
    double values[4] = {0, 2, 3, -2};
    test_move_fill(index, values);
    CHECK_ERR(porta_index_select(x, 0, index, &out), PORTA_ERR_OUT_OF_RANGE,
              "index_select: index 3 is out of bounds for dimension 0 with size 3");
    values[2] = 1;
    test_move_fill(index, values);
    CHECK_ERR(porta_index_select(x, 0, index, &out), PORTA_ERR_OUT_OF_RANGE,
              "index -2 is out of bounds");
    porta_tensor *matrix = test_move_int_tensor(&rng, PORTA_I64, 2, (int64_t[]){2, 2}, 0, 1);
    CHECK_ERR(porta_index_select(x, 0, matrix, &out), PORTA_ERR_SHAPE, "0-D or 1-D index");
    porta_tensor *floats = test_random_tensor(&rng, PORTA_F64, 1, &count, 0.0, 1.0);
    CHECK_ERR(porta_index_select(x, 0, floats, &out), PORTA_ERR_DTYPE, "got float64");
    porta_tensor *bytes = test_random_tensor(&rng, PORTA_U8, 1, &count, 0, 0);
    CHECK_ERR(porta_index_select(x, 0, bytes, &out), PORTA_ERR_DTYPE, "got uint8");
    CHECK_ERR(porta_index_select(x, -3, index, &out), PORTA_ERR_OUT_OF_RANGE, "axis -3");
    porta_tensor *scalar = test_random_tensor(&rng, PORTA_F32, 0, NULL, 0.0, 1.0);
    CHECK_ERR(porta_index_select(scalar, 0, index, &out), PORTA_ERR_SHAPE,
              "exactly one index, got 4");
    CHECK(out == NULL);
    porta_tensor_release(scalar);
    porta_tensor_release(bytes);
    porta_tensor_release(floats);
    porta_tensor_release(matrix);
    porta_tensor_release(index);
    porta_tensor_release(x);
}

/* out= semantics, and out left untouched when an index is out of range. */
TEST(test_index_out_param) {
    test_rng rng = test_rng_make(307);
    int64_t sizes[] = {4, 6}, count = 3, out_sizes[] = {3, 6};
    porta_tensor *x = test_move_scrambled(&rng, PORTA_F32, 2, sizes);
    porta_tensor *index = test_move_int_tensor(&rng, PORTA_I64, 1, &count, 0, 3);
    porta_tensor *given = test_move_scrambled(&rng, PORTA_F32, 2, out_sizes);
    porta_tensor *out = given;
    CHECK_OK(porta_index_select(x, 0, index, &out));
    CHECK(out == given);
    double *index_values = test_to_doubles(index);
    select_ctx s = {0, 2, index_values};
    test_move_check_map("index_select into out", x, given, map_select, &s, 0.0);
    free(index_values);

    porta_tensor *wide = test_random_tensor(&rng, PORTA_F64, 2, out_sizes, 0.0, 1.0);
    out = wide;
    CHECK_OK(porta_index_select(x, 0, index, &out));
    double *got = test_to_doubles(wide), *want = test_to_doubles(given);
    test_close("index_select cast to out", got, want, 18, 0.0, 0.0);
    free(got);
    free(want);

    double *before = test_to_doubles(wide);
    test_move_fill(index, (double[]){1, 4, 0});
    out = wide;
    CHECK_ERR(porta_index_select(x, 0, index, &out), PORTA_ERR_OUT_OF_RANGE, "index 4");
    double *after = test_to_doubles(wide);
    test_close("out untouched on error", after, before, 18, 0.0, 0.0);
    free(before);
    free(after);
    porta_tensor_release(wide);
    porta_tensor_release(given);
    porta_tensor_release(index);
    porta_tensor_release(x);
}

TEST(test_index_out_of_memory) {
    test_rng rng = test_rng_make(308);
    int64_t sizes[] = {50, 40}, count = 30;
    porta_tensor *x = test_random_tensor(&rng, PORTA_F64, 2, sizes, -1.0, 1.0);
    porta_tensor *index32 = test_move_int_tensor(&rng, PORTA_I32, 1, &count, 0, 39);
    porta_tensor *index64 = test_move_int_tensor(&rng, PORTA_I64, 2, (int64_t[]){50, 30}, 0, 39);
    porta_tensor *src = test_random_tensor(&rng, PORTA_F64, 2, (int64_t[]){50, 30}, -1.0, 1.0);
    uint64_t used = porta_memory_allocated();
    porta_tensor *out = NULL;
    /* too little for the result; then enough for the int64 index but not
     * the result */
    uint64_t limits[] = {used + 64, used + 30 * 8 + 64};
    for (int i = 0; i < 2; i++) {
        porta_set_memory_limit(limits[i]);
        CHECK_ERR(porta_index_select(x, 1, index32, &out), PORTA_ERR_OUT_OF_MEMORY, NULL);
        CHECK_ERR(porta_gather(x, 1, index64, &out), PORTA_ERR_OUT_OF_MEMORY, NULL);
        CHECK_ERR(porta_scatter(x, 1, index64, src, PORTA_SCATTER_ADD, &out),
                  PORTA_ERR_OUT_OF_MEMORY, NULL);
        porta_set_memory_limit(0);
        CHECK(out == NULL && porta_memory_allocated() == used);
    }
    porta_tensor_release(src);
    porta_tensor_release(index64);
    porta_tensor_release(index32);
    porta_tensor_release(x);
}
