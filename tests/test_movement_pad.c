/* pad: constant padding and cropping against an index map written here. */
#include <stdlib.h>
#include <string.h>

#include "test_movement.h"

typedef struct pad_ctx {
    int rank;
    const int64_t *pads;
    const int64_t *x_sizes;
} pad_ctx;

static bool map_pad(const void *ctx, const int64_t *out_idx, int64_t *x_idx) {
    const pad_ctx *p = ctx;
    for (int d = 0; d < p->rank; d++) {
        x_idx[d] = out_idx[d] - p->pads[2 * d];
        if (x_idx[d] < 0 || x_idx[d] >= p->x_sizes[d]) return false;
    }
    return true;
}

/* Pads x, checks the result's shape and every element. */
static void check_pad(porta_tensor *x, const int64_t *pads, double value) {
    int rank = porta_tensor_rank(x);
    porta_tensor *out = NULL;
    CHECK_OK(porta_pad(x, pads, value, &out));
    CHECK(porta_tensor_dtype(out) == porta_tensor_dtype(x));
    CHECK(porta_tensor_rank(out) == rank);
    for (int d = 0; d < rank; d++)
        CHECK(porta_tensor_sizes(out)[d] ==
              porta_tensor_sizes(x)[d] + pads[2 * d] + pads[2 * d + 1]);
    pad_ctx p = {rank, pads, porta_tensor_sizes(x)};
    test_move_check_map("pad", x, out, map_pad, &p, value);
    porta_tensor_release(out);
}

TEST(test_move_pad_values) {
    test_rng rng = test_rng_make(201);
    const double values[] = {0.0, -1.0, 2.5, 1.0};
    for (int t = 0; t < TEST_REAL_DTYPE_COUNT; t++) {
        for (int trial = 0; trial < 16; trial++) {
            int rank = (int)test_int(&rng, 0, 4);
            int64_t sizes[PORTA_MAX_RANK], pads[2 * PORTA_MAX_RANK];
            test_move_random_shape(&rng, rank, trial == 0 ? 0 : 1, 5, sizes);
            for (int d = 0; d < rank; d++) {
                /* positive, negative (cropping) or zero on each side */
                pads[2 * d] = test_int(&rng, -2, 3);
                pads[2 * d + 1] = test_int(&rng, -2, 3);
                while (sizes[d] + pads[2 * d] + pads[2 * d + 1] < 0) pads[2 * d]++;
            }
            porta_tensor *x = test_move_input(&rng, test_move_dtypes[t], rank, sizes);
            check_pad(x, pads, values[trial % 4]);
            porta_tensor_release(x);
        }
    }
}

/* Big enough for the thread pool and the contiguous row copies; padding on
 * an outer dim only lets the unpadded inner dims merge. */
static void pad_large_cases(void) {
    test_rng rng = test_rng_make(202);
    int64_t sizes[] = {16, 3, 100, 90};
    porta_tensor *x = test_random_tensor(&rng, PORTA_F32, 4, sizes, -1.0, 1.0);
    check_pad(x, (int64_t[]){0, 0, 0, 0, 2, 3, 1, 4}, -7.0);
    check_pad(x, (int64_t[]){1, 2, 0, 0, 0, 0, 0, 0}, 3.0);
    check_pad(x, (int64_t[]){0, 0, 1, -1, -10, 20, -5, -5}, 0.0);
    porta_tensor *scrambled = test_move_scrambled(&rng, PORTA_BF16, 4, sizes);
    check_pad(scrambled, (int64_t[]){-1, 2, 0, 1, 3, 3, 2, -2}, 0.5);
    porta_tensor_release(scrambled);
    porta_tensor_release(x);
}

TEST(test_move_pad_large) {
    int threads = porta_get_num_threads();
    pad_large_cases();
    CHECK_OK(porta_set_num_threads(7)); /* more threads than cores */
    pad_large_cases();
    CHECK_OK(porta_set_num_threads(threads));
}

TEST(test_move_pad_special_shapes) {
    test_rng rng = test_rng_make(203);
    /* rank 0: nothing to pad, a copy */
    porta_tensor *scalar = test_random_tensor(&rng, PORTA_I32, 0, NULL, 0, 0);
    check_pad(scalar, NULL, 1.0);
    porta_tensor_release(scalar);
    /* from and to zero-size */
    int64_t empty_sizes[] = {0, 3};
    porta_tensor *empty = test_move_scrambled(&rng, PORTA_F16, 2, empty_sizes);
    check_pad(empty, (int64_t[]){2, 0, 1, 1}, 4.0);
    check_pad(empty, (int64_t[]){0, 0, -3, 1}, 4.0);
    porta_tensor_release(empty);
    int64_t sizes[] = {3, 4};
    porta_tensor *x = test_move_scrambled(&rng, PORTA_I64, 2, sizes);
    check_pad(x, (int64_t[]){0, 0, -4, 0}, 9.0);
    check_pad(x, (int64_t[]){-3, 2, 0, 0}, 9.0);
    check_pad(x, (int64_t[]){0, 0, 0, 0}, 9.0);
    check_pad(x, (int64_t[]){5, -7, -6, 8}, 9.0); /* x entirely cropped away */
    porta_tensor_release(x);
}

/* out= semantics: written in place, or cast to out's dtype. */
TEST(test_move_pad_out_param) {
    test_rng rng = test_rng_make(204);
    int64_t sizes[] = {3, 4}, padded[] = {4, 7};
    int64_t pads[] = {1, 0, 2, 1};
    porta_tensor *x = test_move_scrambled(&rng, PORTA_F32, 2, sizes);
    porta_tensor *given = test_move_scrambled(&rng, PORTA_F32, 2, padded);
    porta_tensor *out = given;
    CHECK_OK(porta_pad(x, pads, -2.0, &out));
    CHECK(out == given);
    pad_ctx p = {2, pads, sizes};
    test_move_check_map("pad into out", x, given, map_pad, &p, -2.0);

    porta_tensor *wide = test_random_tensor(&rng, PORTA_F64, 2, padded, 0, 0);
    out = wide;
    CHECK_OK(porta_pad(x, pads, -2.0, &out));
    double *got = test_to_doubles(wide), *want = test_to_doubles(given);
    test_close("pad cast to out", got, want, 28, 0.0, 0.0);
    free(got);
    free(want);

    porta_tensor *narrow = test_random_tensor(&rng, PORTA_I32, 2, padded, 0, 0);
    out = narrow;
    CHECK_ERR(porta_pad(x, pads, -2.0, &out), PORTA_ERR_DTYPE, "can't be cast");
    out = x;
    CHECK_ERR(porta_pad(x, pads, -2.0, &out), PORTA_ERR_SHAPE, "expected [4, 7]");
    porta_tensor_release(narrow);
    porta_tensor_release(wide);
    porta_tensor_release(given);
    porta_tensor_release(x);
}

TEST(test_move_pad_errors) {
    test_rng rng = test_rng_make(205);
    int64_t sizes[] = {5, 2};
    porta_tensor *x = test_random_tensor(&rng, PORTA_F32, 2, sizes, -1.0, 1.0);
    porta_tensor *out = NULL;
    CHECK_ERR(porta_pad(x, (int64_t[]){-3, -3, 0, 0}, 0.0, &out), PORTA_ERR_SHAPE,
              "padding (-3, -3) on axis 0 of a tensor of shape [5, 2]");
    CHECK_ERR(porta_pad(x, (int64_t[]){0, 0, INT64_MAX, 1}, 0.0, &out), PORTA_ERR_SHAPE, "axis 1");
    CHECK_ERR(porta_pad(x, (int64_t[]){0, 0, INT64_MAX / 4, 0}, 0.0, &out), PORTA_ERR_SHAPE,
              "int64");
    CHECK_ERR(porta_pad(x, NULL, 0.0, &out), PORTA_ERR_INVALID_ARGUMENT, "pads is NULL");
    CHECK_ERR(porta_pad(NULL, (int64_t[]){0, 0}, 0.0, &out), PORTA_ERR_INVALID_ARGUMENT, NULL);
    CHECK_ERR(porta_pad(x, (int64_t[]){0, 0, 0, 0}, 0.0, NULL), PORTA_ERR_INVALID_ARGUMENT, NULL);
    CHECK(out == NULL);

    uint64_t used = porta_memory_allocated();
    porta_set_memory_limit(used + 16);
    CHECK_ERR(porta_pad(x, (int64_t[]){1, 1, 1, 1}, 0.0, &out), PORTA_ERR_OUT_OF_MEMORY, NULL);
    porta_set_memory_limit(0);
    CHECK(out == NULL && porta_memory_allocated() == used);
    porta_tensor_release(x);
}
