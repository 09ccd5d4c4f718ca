/* Movement views: reshape, permute, expand, slice and flip, against index
 * maps written here, on contiguous and scrambled layouts of every dtype. */
#include <stdlib.h>
#include <string.h>

#include "runtime/tensor.h"
#include "test_movement.h"

#define TRIALS 12

/* ---- reshape ---- */

static bool map_same_position(const void *ctx, const int64_t *out_idx, int64_t *x_idx) {
    const porta_tensor *const *pair = ctx; /* {x, out}: same row-major order */
    int64_t position = test_move_position(porta_tensor_rank(pair[1]),
                                          porta_tensor_sizes(pair[1]), out_idx);
    int rank = porta_tensor_rank(pair[0]);
    const int64_t *sizes = porta_tensor_sizes(pair[0]);
    for (int d = rank - 1; d >= 0; d--) {
        x_idx[d] = position % sizes[d];
        position /= sizes[d];
    }
    return true;
}

/* A new shape for numel elements: x's sizes shuffled, some neighbours
 * merged, some 1s inserted, and sometimes one size left to infer (-1). */
static int random_reshape(test_rng *rng, int rank, const int64_t *sizes, int64_t *shape) {
    int64_t pool[PORTA_MAX_RANK];
    memcpy(pool, sizes, (size_t)rank * sizeof *sizes);
    for (int d = rank - 1; d > 0; d--) {
        int j = (int)test_int(rng, 0, d);
        int64_t tmp = pool[d];
        pool[d] = pool[j];
        pool[j] = tmp;
    }
    int count = 0;
    for (int d = 0; d < rank; d++) {
        if (count > 0 && test_int(rng, 0, 2) == 0)
            shape[count - 1] *= pool[d];
        else
            shape[count++] = pool[d];
        if (count < 6 && test_int(rng, 0, 4) == 0) shape[count++] = 1;
    }
    bool empty = false;
    for (int d = 0; d < rank; d++) empty = empty || sizes[d] == 0;
    if (count > 0 && !empty && test_int(rng, 0, 1)) shape[test_int(rng, 0, count - 1)] = -1;
    return count;
}

TEST(test_move_reshape_values) {
    test_rng rng = test_rng_make(101);
    for (int t = 0; t < TEST_REAL_DTYPE_COUNT; t++) {
        porta_dtype dtype = test_move_dtypes[t];
        for (int trial = 0; trial < TRIALS; trial++) {
            int rank = (int)test_int(&rng, 0, 4);
            int64_t sizes[PORTA_MAX_RANK], shape[PORTA_MAX_RANK];
            test_move_random_shape(&rng, rank, trial == 0 ? 0 : 1, 4, sizes);
            int new_rank = random_reshape(&rng, rank, sizes, shape);
            porta_tensor *x = test_move_input(&rng, dtype, rank, sizes);
            porta_tensor *out = NULL;
            CHECK_OK(porta_reshape(x, new_rank, shape, &out));
            CHECK(porta_tensor_rank(out) == new_rank);
            CHECK(porta_tensor_numel(out) == porta_tensor_numel(x));
            for (int d = 0; d < new_rank; d++)
                CHECK(shape[d] == -1 || porta_tensor_sizes(out)[d] == shape[d]);
            if (porta_tensor_is_contiguous(x)) CHECK(test_move_same_buffer(x, out));
            const porta_tensor *pair[2] = {x, out};
            test_move_check_map("reshape", x, out, map_same_position, pair, 0.0);
            porta_tensor_release(out);
            porta_tensor_release(x);
        }
    }
}

/* Reshapes a [4, 6] tensor seen through `strides` (in a 24-element buffer)
 * and checks that it is a view with the strides PyTorch gives, or a copy
 * (want_strides NULL). */
static void check_reshape_layout(int rank, const int64_t *sizes, const int64_t *strides,
                                 int new_rank, const int64_t *shape, const int64_t *want_strides) {
    int64_t total = 24;
    test_rng rng = test_rng_make(7);
    porta_tensor *storage = test_random_tensor(&rng, PORTA_F32, 1, &total, -1.0, 1.0);
    porta_tensor *x = NULL, *out = NULL;
    CHECK_OK(porta_tensor_view(porta_tensor_buffer(storage), PORTA_F32, rank, sizes, strides, 0,
                               &x));
    porta_tensor_release(storage);
    CHECK_OK(porta_reshape(x, new_rank, shape, &out));
    if (want_strides) {
        CHECK(test_move_same_buffer(x, out));
        CHECK(!memcmp(porta_tensor_strides(out), want_strides, (size_t)new_rank * sizeof(int64_t)));
    } else {
        CHECK(!test_move_same_buffer(x, out));
        CHECK(porta_tensor_is_contiguous(out));
    }
    const porta_tensor *pair[2] = {x, out};
    test_move_check_map("reshape layout", x, out, map_same_position, pair, 0.0);
    porta_tensor_release(out);
    porta_tensor_release(x);
}

TEST(test_move_reshape_view_or_copy) {
    /* x = arange(24).view(4, 6).t(): sizes [6, 4], strides [1, 6]. */
    int64_t t_sizes[] = {6, 4}, t_strides[] = {1, 6};
    check_reshape_layout(2, t_sizes, t_strides, 3, (int64_t[]){6, 2, 2},
                         (int64_t[]){1, 12, 6});
    check_reshape_layout(2, t_sizes, t_strides, 4, (int64_t[]){3, 2, 4, 1},
                         (int64_t[]){2, 1, 6, 6});
    check_reshape_layout(2, t_sizes, t_strides, 1, (int64_t[]){24}, NULL);
    check_reshape_layout(2, t_sizes, t_strides, 2, (int64_t[]){4, 6}, NULL);
    /* Expanded rows, sizes [4, 3], strides [0, 1]. */
    int64_t e_sizes[] = {4, 3}, e_strides[] = {0, 1};
    check_reshape_layout(2, e_sizes, e_strides, 3, (int64_t[]){2, 2, 3}, (int64_t[]){0, 0, 1});
    check_reshape_layout(2, e_sizes, e_strides, 1, (int64_t[]){12}, NULL);
    /* Every other element, sizes [3, 4], strides [8, 2]: merging is a view. */
    int64_t s_sizes[] = {3, 4}, s_strides[] = {8, 2};
    check_reshape_layout(2, s_sizes, s_strides, 1, (int64_t[]){12}, (int64_t[]){2});
    check_reshape_layout(2, s_sizes, s_strides, 3, (int64_t[]){3, 2, 2}, (int64_t[]){8, 4, 2});
    /* Rows with a gap, sizes [3, 4], strides [6, 1]: rows cannot merge. */
    int64_t g_sizes[] = {3, 4}, g_strides[] = {6, 1};
    check_reshape_layout(2, g_sizes, g_strides, 3, (int64_t[]){3, 2, 2}, (int64_t[]){6, 2, 1});
    check_reshape_layout(2, g_sizes, g_strides, 2, (int64_t[]){6, 2}, NULL);
    /* Reversed, sizes [24], stride [-1]: splitting keeps it a view. */
    int64_t r_sizes[] = {24}, r_strides[] = {-1};
    test_rng rng = test_rng_make(8);
    porta_tensor *base = test_random_tensor(&rng, PORTA_I32, 1, r_sizes, 0, 0);
    porta_tensor *reversed = NULL, *out = NULL;
    CHECK_OK(porta_tensor_view(porta_tensor_buffer(base), PORTA_I32, 1, r_sizes, r_strides, 23,
                               &reversed));
    CHECK_OK(porta_reshape(reversed, 2, (int64_t[]){4, 6}, &out));
    CHECK(test_move_same_buffer(base, out));
    CHECK(porta_tensor_strides(out)[0] == -6 && porta_tensor_strides(out)[1] == -1);
    CHECK(porta_tensor_offset(out) == 23);
    porta_tensor_release(out);
    porta_tensor_release(reversed);
    porta_tensor_release(base);
}

TEST(test_move_reshape_special_shapes) {
    test_rng rng = test_rng_make(102);
    int64_t sizes[] = {2, 3};
    porta_tensor *x = test_random_tensor(&rng, PORTA_F32, 2, sizes, -1.0, 1.0);
    porta_tensor *out = NULL;
    CHECK_OK(porta_reshape(x, 3, (int64_t[]){-1, 1, 2}, &out));
    CHECK(porta_tensor_sizes(out)[0] == 3);
    porta_tensor_release(out);
    out = NULL;
    CHECK_ERR(porta_reshape(x, 2, (int64_t[]){2, 5}, &out), PORTA_ERR_SHAPE,
              "shape '[2, 5]' is invalid for input of size 6");
    CHECK_ERR(porta_reshape(x, 2, (int64_t[]){4, -1}, &out), PORTA_ERR_SHAPE,
              "shape '[4, -1]' is invalid for input of size 6");
    CHECK_ERR(porta_reshape(x, 2, (int64_t[]){-1, -1}, &out), PORTA_ERR_SHAPE,
              "only one dimension can be inferred");
    CHECK_ERR(porta_reshape(x, 2, (int64_t[]){-2, -3}, &out), PORTA_ERR_SHAPE, "invalid size -2");
    CHECK_ERR(porta_reshape(x, 17, (int64_t[17]){0}, &out), PORTA_ERR_INVALID_ARGUMENT, "0..16");
    CHECK_ERR(porta_reshape(x, 2, NULL, &out), PORTA_ERR_INVALID_ARGUMENT, "NULL");
    CHECK_ERR(porta_reshape(NULL, 1, (int64_t[]){6}, &out), PORTA_ERR_INVALID_ARGUMENT, NULL);
    CHECK_ERR(porta_reshape(x, 1, (int64_t[]){6}, NULL), PORTA_ERR_INVALID_ARGUMENT, NULL);
    CHECK(out == NULL);
    /* A view never writes into a given tensor. */
    porta_tensor *given = x;
    CHECK_ERR(porta_reshape(x, 1, (int64_t[]){6}, &given), PORTA_ERR_INVALID_ARGUMENT,
              "must be NULL");
    porta_tensor_release(x);

    /* rank 0 <-> rank n of ones, and zero-size shapes */
    porta_tensor *scalar = test_random_tensor(&rng, PORTA_I64, 0, NULL, 0, 0);
    CHECK_OK(porta_reshape(scalar, 3, (int64_t[]){1, -1, 1}, &out));
    CHECK(porta_tensor_rank(out) == 3 && porta_tensor_numel(out) == 1);
    porta_tensor *back = NULL;
    CHECK_OK(porta_reshape(out, 0, NULL, &back));
    CHECK(porta_tensor_rank(back) == 0 && test_move_same_buffer(back, scalar));
    porta_tensor_release(back);
    porta_tensor_release(out);
    porta_tensor_release(scalar);

    int64_t empty_sizes[] = {0, 3};
    porta_tensor *empty = test_move_scrambled(&rng, PORTA_F16, 2, empty_sizes);
    out = NULL;
    CHECK_OK(porta_reshape(empty, 3, (int64_t[]){3, 0, 5}, &out));
    CHECK(porta_tensor_numel(out) == 0 && test_move_same_buffer(out, empty));
    porta_tensor_release(out);
    out = NULL;
    CHECK_ERR(porta_reshape(empty, 2, (int64_t[]){0, -1}, &out), PORTA_ERR_SHAPE, "ambiguous");
    CHECK_ERR(porta_reshape(empty, 1, (int64_t[]){1}, &out), PORTA_ERR_SHAPE,
              "invalid for input of size 0");
    porta_tensor_release(empty);
}

/* ---- permute ---- */

typedef struct permute_ctx {
    int rank;
    int dims[PORTA_MAX_RANK];
} permute_ctx;

static bool map_permute(const void *ctx, const int64_t *out_idx, int64_t *x_idx) {
    const permute_ctx *p = ctx;
    for (int i = 0; i < p->rank; i++) x_idx[p->dims[i]] = out_idx[i];
    return true;
}

TEST(test_move_permute_values) {
    test_rng rng = test_rng_make(103);
    for (int t = 0; t < TEST_REAL_DTYPE_COUNT; t++) {
        for (int trial = 0; trial < TRIALS; trial++) {
            permute_ctx p;
            p.rank = (int)test_int(&rng, 0, 5);
            int64_t sizes[PORTA_MAX_RANK];
            test_move_random_shape(&rng, p.rank, trial == 0 ? 0 : 1, 4, sizes);
            for (int d = 0; d < p.rank; d++) p.dims[d] = d;
            test_shuffle(&rng, p.dims, p.rank);
            int given[PORTA_MAX_RANK]; /* some dims counted from the end */
            for (int d = 0; d < p.rank; d++)
                given[d] = test_int(&rng, 0, 1) ? p.dims[d] - p.rank : p.dims[d];
            porta_tensor *x = test_move_input(&rng, test_move_dtypes[t], p.rank, sizes);
            porta_tensor *out = NULL;
            CHECK_OK(porta_permute(x, given, &out));
            CHECK(test_move_same_buffer(x, out));
            for (int d = 0; d < p.rank; d++)
                CHECK(porta_tensor_sizes(out)[d] == sizes[p.dims[d]]);
            test_move_check_map("permute", x, out, map_permute, &p, 0.0);
            porta_tensor_release(out);
            porta_tensor_release(x);
        }
    }
}

TEST(test_move_permute_errors) {
    test_rng rng = test_rng_make(104);
    int64_t sizes[] = {2, 3, 4};
    porta_tensor *x = test_random_tensor(&rng, PORTA_F32, 3, sizes, -1.0, 1.0);
    porta_tensor *out = NULL;
    CHECK_ERR(porta_permute(x, (int[]){0, 2, 0}, &out), PORTA_ERR_INVALID_ARGUMENT,
              "dim 0 appears twice");
    CHECK_ERR(porta_permute(x, (int[]){0, -1, 2}, &out), PORTA_ERR_INVALID_ARGUMENT,
              "dim 2 appears twice");
    CHECK_ERR(porta_permute(x, (int[]){0, 1, 3}, &out), PORTA_ERR_OUT_OF_RANGE,
              "axis 3 is out of range for a rank-3 tensor");
    CHECK_ERR(porta_permute(x, NULL, &out), PORTA_ERR_INVALID_ARGUMENT, "dims is NULL");
    CHECK_ERR(porta_permute(NULL, (int[]){0}, &out), PORTA_ERR_INVALID_ARGUMENT, NULL);
    CHECK(out == NULL);
    porta_tensor_release(x);
}

/* ---- expand ---- */

typedef struct expand_ctx {
    int lead;
    const porta_tensor *x;
} expand_ctx;

static bool map_expand(const void *ctx, const int64_t *out_idx, int64_t *x_idx) {
    const expand_ctx *e = ctx;
    for (int d = 0; d < porta_tensor_rank(e->x); d++)
        x_idx[d] = porta_tensor_sizes(e->x)[d] == 1 ? 0 : out_idx[d + e->lead];
    return true;
}

TEST(test_move_expand_values) {
    test_rng rng = test_rng_make(105);
    for (int t = 0; t < TEST_REAL_DTYPE_COUNT; t++) {
        for (int trial = 0; trial < TRIALS; trial++) {
            int rank = (int)test_int(&rng, 0, 3);
            int64_t sizes[PORTA_MAX_RANK], target[PORTA_MAX_RANK];
            test_move_random_shape(&rng, rank, 1, 3, sizes);
            for (int d = 0; d < rank; d++)
                if (test_int(&rng, 0, 1)) sizes[d] = 1;
            expand_ctx e = {(int)test_int(&rng, 0, 2), NULL};
            for (int d = 0; d < e.lead; d++) target[d] = test_int(&rng, 0, 3);
            for (int d = 0; d < rank; d++) {
                int64_t choice = test_int(&rng, 0, 2);
                target[e.lead + d] = choice == 0 ? -1
                                     : sizes[d] == 1 && choice == 1 ? test_int(&rng, 0, 4)
                                                                    : sizes[d];
            }
            porta_tensor *x = test_move_input(&rng, test_move_dtypes[t], rank, sizes);
            e.x = x;
            porta_tensor *out = NULL;
            CHECK_OK(porta_expand(x, e.lead + rank, target, &out));
            CHECK(test_move_same_buffer(x, out));
            for (int d = 0; d < e.lead + rank; d++) {
                int64_t want = target[d] == -1 ? sizes[d - e.lead] : target[d];
                CHECK(porta_tensor_sizes(out)[d] == want);
                if (d < e.lead || (sizes[d - e.lead] == 1 && want != 1))
                    CHECK(porta_tensor_strides(out)[d] == 0);
            }
            test_move_check_map("expand", x, out, map_expand, &e, 0.0);
            porta_tensor_release(out);
            porta_tensor_release(x);
        }
    }
}

TEST(test_move_expand_errors) {
    test_rng rng = test_rng_make(106);
    int64_t sizes[] = {2, 1};
    porta_tensor *x = test_random_tensor(&rng, PORTA_F32, 2, sizes, -1.0, 1.0);
    porta_tensor *out = NULL;
    CHECK_ERR(porta_expand(x, 1, (int64_t[]){2}, &out), PORTA_ERR_SHAPE,
              "the number of sizes provided (1) must be greater or equal");
    CHECK_ERR(porta_expand(x, 2, (int64_t[]){3, 4}, &out), PORTA_ERR_SHAPE,
              "the expanded size of the tensor (3) must match the existing size (2) at "
              "non-singleton dimension 0");
    CHECK_ERR(porta_expand(x, 3, (int64_t[]){-1, 2, 4}, &out), PORTA_ERR_SHAPE,
              "new leading dimension 0");
    CHECK_ERR(porta_expand(x, 2, (int64_t[]){2, -3}, &out), PORTA_ERR_SHAPE, "expanded size");
    CHECK_ERR(porta_expand(x, 2, NULL, &out), PORTA_ERR_INVALID_ARGUMENT, "sizes is NULL");
    CHECK(out == NULL);
    porta_tensor_release(x);
}

/* ---- slice ---- */

/* Python's definition, element by element: the indices start + k * step
 * before stop, after negative bounds count from the end and bounds clamp to
 * the ends (n - 1 and "before 0" when stepping backwards). */
static int64_t python_slice(int64_t n, int64_t start, int64_t stop, int64_t step,
                            int64_t *picked) {
    int64_t low = step > 0 ? 0 : -1, high = step > 0 ? n : n - 1;
    int64_t bounds[2] = {start, stop};
    for (int b = 0; b < 2; b++) {
        if (bounds[b] < 0) bounds[b] = bounds[b] < -n ? low : bounds[b] + n;
        if (bounds[b] > high) bounds[b] = high;
    }
    int64_t count = 0;
    for (int64_t i = bounds[0]; step > 0 ? i < bounds[1] : i > bounds[1]; i += step) {
        picked[count++] = i;
        /* the last pick: stepping on would pass stop (or overflow) */
        if (step > 0 ? bounds[1] - i <= step : bounds[1] - i >= step) break;
    }
    return count;
}

static const struct {
    int64_t n, start, stop, step, count;
    int64_t picked[8];
} python_table[] = {
    /* generated with list(range(n))[start:stop:step] in CPython */
    {5, 0, 5, 1, 5, {0, 1, 2, 3, 4}},
    {5, 1, 4, 1, 3, {1, 2, 3}},
    {5, -2, 5, 1, 2, {3, 4}},
    {5, -10, 10, 1, 5, {0, 1, 2, 3, 4}},
    {5, 3, 1, 1, 0, {0}},
    {5, 0, 5, 2, 3, {0, 2, 4}},
    {5, 1, 5, 3, 2, {1, 4}},
    {5, INT64_MAX, INT64_MIN, -1, 5, {4, 3, 2, 1, 0}},
    {5, -1, INT64_MIN, -1, 5, {4, 3, 2, 1, 0}},
    {5, 4, 0, -1, 4, {4, 3, 2, 1}},
    {5, 4, 0, -2, 2, {4, 2}},
    {5, 10, -10, -1, 5, {4, 3, 2, 1, 0}},
    {5, -10, 10, -1, 0, {0}},
    {5, 2, 2, 1, 0, {0}},
    {5, 2, 2, -1, 0, {0}},
    {5, 0, INT64_MAX, INT64_MAX, 1, {0}},
    {5, INT64_MAX, INT64_MIN, INT64_MIN + 1, 1, {4}},
    {5, INT64_MAX, INT64_MIN, INT64_MIN, 1, {4}},
    {5, 3, -1, -1, 0, {0}},
    {5, -1, -6, -1, 5, {4, 3, 2, 1, 0}},
    {5, -6, INT64_MAX, 1, 5, {0, 1, 2, 3, 4}},
    {0, 0, 5, 1, 0, {0}},
    {0, INT64_MAX, INT64_MIN, -1, 0, {0}},
    {1, INT64_MAX, INT64_MIN, -1, 1, {0}},
    {7, 6, INT64_MIN, -3, 3, {6, 3, 0}},
    {7, -3, -100, -2, 3, {4, 2, 0}},
};

TEST(test_move_slice_python_table) {
    for (size_t c = 0; c < sizeof python_table / sizeof python_table[0]; c++) {
        int64_t n = python_table[c].n;
        int64_t values[8];
        for (int64_t i = 0; i < n; i++) values[i] = 10 * i;
        porta_tensor *x = NULL, *out = NULL;
        CHECK_OK(porta_tensor_from_host(test_cpu(), PORTA_I64, 1, &n, values, &x));
        porta_status *status = porta_slice(x, 0, python_table[c].start, python_table[c].stop,
                                           python_table[c].step, &out);
        CHECK_MSG(!status, "case %zu: %s", c, porta_status_message(status));
        porta_status_free(status);
        if (out) {
            int64_t count = porta_tensor_sizes(out)[0], got[8] = {0};
            CHECK_MSG(count == python_table[c].count, "case %zu: %lld elements, expected %lld", c,
                      (long long)count, (long long)python_table[c].count);
            if (count == python_table[c].count) {
                CHECK_OK(porta_tensor_to_host(out, got, sizeof got));
                for (int64_t i = 0; i < count; i++)
                    CHECK_MSG(got[i] == 10 * python_table[c].picked[i],
                              "case %zu: element %lld is %lld", c, (long long)i,
                              (long long)got[i]);
            }
            int64_t reference[8];
            CHECK(python_slice(n, python_table[c].start, python_table[c].stop,
                               python_table[c].step, reference) == python_table[c].count);
        }
        porta_tensor_release(out);
        porta_tensor_release(x);
    }
}

typedef struct slice_ctx {
    int axis;
    const int64_t *picked;
} slice_ctx;

static bool map_slice(const void *ctx, const int64_t *out_idx, int64_t *x_idx) {
    const slice_ctx *s = ctx;
    memcpy(x_idx, out_idx, PORTA_MAX_RANK * sizeof *x_idx);
    x_idx[s->axis] = s->picked[out_idx[s->axis]];
    return true;
}

static int64_t random_bound(test_rng *rng, int64_t n) {
    switch (test_int(rng, 0, 9)) {
    case 0: return INT64_MIN;
    case 1: return INT64_MAX;
    default: return test_int(rng, -n - 3, n + 3);
    }
}

/* Slices of slices, so offsets and strides build on views. */
TEST(test_move_slice_values) {
    test_rng rng = test_rng_make(107);
    for (int t = 0; t < TEST_REAL_DTYPE_COUNT; t++) {
        for (int trial = 0; trial < TRIALS; trial++) {
            int rank = (int)test_int(&rng, 1, 4);
            int64_t sizes[PORTA_MAX_RANK];
            test_move_random_shape(&rng, rank, trial == 0 ? 0 : 1, 6, sizes);
            porta_tensor *x = test_move_input(&rng, test_move_dtypes[t], rank, sizes);
            for (int round = 0; round < 2 && x; round++) {
                slice_ctx s;
                s.axis = (int)test_int(&rng, 0, rank - 1);
                int64_t n = porta_tensor_sizes(x)[s.axis];
                int64_t start = random_bound(&rng, n), stop = random_bound(&rng, n);
                int64_t step = test_int(&rng, 1, 4) * (test_int(&rng, 0, 1) ? 1 : -1);
                int64_t picked[16];
                int64_t count = python_slice(n, start, stop, step, picked);
                s.picked = picked;
                int given_axis = test_int(&rng, 0, 1) ? s.axis - rank : s.axis;
                porta_tensor *out = NULL;
                CHECK_OK(porta_slice(x, given_axis, start, stop, step, &out));
                CHECK(test_move_same_buffer(x, out));
                CHECK_MSG(porta_tensor_sizes(out)[s.axis] == count,
                          "slice [%lld:%lld:%lld] of %lld: %lld elements, expected %lld",
                          (long long)start, (long long)stop, (long long)step, (long long)n,
                          (long long)porta_tensor_sizes(out)[s.axis], (long long)count);
                test_move_check_map("slice", x, out, map_slice, &s, 0.0);
                porta_tensor_release(x);
                x = out;
            }
            porta_tensor_release(x);
        }
    }
}

TEST(test_move_slice_errors) {
    test_rng rng = test_rng_make(108);
    int64_t sizes[] = {4, 5};
    porta_tensor *x = test_random_tensor(&rng, PORTA_F32, 2, sizes, -1.0, 1.0);
    porta_tensor *scalar = test_random_tensor(&rng, PORTA_F32, 0, NULL, -1.0, 1.0);
    porta_tensor *out = NULL;
    CHECK_ERR(porta_slice(x, 1, 0, 5, 0, &out), PORTA_ERR_INVALID_ARGUMENT,
              "step must be non-zero");
    CHECK_ERR(porta_slice(x, 2, 0, 5, 1, &out), PORTA_ERR_OUT_OF_RANGE,
              "axis 2 is out of range for a rank-2 tensor (expected -2..1)");
    CHECK_ERR(porta_slice(scalar, 0, 0, 1, 1, &out), PORTA_ERR_SHAPE, "rank-0");
    CHECK(out == NULL);
    porta_tensor_release(scalar);
    porta_tensor_release(x);
}

/* ---- flip ---- */

static bool map_flip(const void *ctx, const int64_t *out_idx, int64_t *x_idx) {
    const porta_tensor *x = ((const porta_tensor *const *)ctx)[0];
    const bool *flipped = ((const bool *const *)ctx)[1];
    for (int d = 0; d < porta_tensor_rank(x); d++)
        x_idx[d] = flipped[d] ? porta_tensor_sizes(x)[d] - 1 - out_idx[d] : out_idx[d];
    return true;
}

TEST(test_move_flip_values) {
    test_rng rng = test_rng_make(109);
    for (int t = 0; t < TEST_REAL_DTYPE_COUNT; t++) {
        for (int trial = 0; trial < TRIALS; trial++) {
            int rank = (int)test_int(&rng, 0, 4);
            int64_t sizes[PORTA_MAX_RANK];
            test_move_random_shape(&rng, rank, trial == 0 ? 0 : 1, 4, sizes);
            bool flipped[PORTA_MAX_RANK] = {false};
            int axes[PORTA_MAX_RANK], count = 0;
            for (int d = 0; d < rank; d++) {
                if (!test_int(&rng, 0, 1)) continue;
                flipped[d] = true;
                axes[count++] = test_int(&rng, 0, 1) ? d - rank : d;
            }
            porta_tensor *x = test_move_input(&rng, test_move_dtypes[t], rank, sizes);
            porta_tensor *out = NULL, *twice = NULL;
            CHECK_OK(porta_flip(x, axes, count, &out));
            CHECK(test_move_same_buffer(x, out));
            const void *ctx[2] = {x, flipped};
            test_move_check_map("flip", x, out, map_flip, ctx, 0.0);
            CHECK_OK(porta_flip(out, axes, count, &twice));
            CHECK(porta_tensor_offset(twice) == porta_tensor_offset(x));
            CHECK(!memcmp(porta_tensor_strides(twice), porta_tensor_strides(x),
                          (size_t)rank * sizeof(int64_t)));
            porta_tensor_release(twice);
            porta_tensor_release(out);
            porta_tensor_release(x);
        }
    }
}

TEST(test_move_flip_errors) {
    test_rng rng = test_rng_make(110);
    int64_t sizes[] = {4, 5};
    porta_tensor *x = test_random_tensor(&rng, PORTA_F32, 2, sizes, -1.0, 1.0);
    porta_tensor *out = NULL;
    CHECK_ERR(porta_flip(x, (int[]){1, -1}, 2, &out), PORTA_ERR_INVALID_ARGUMENT,
              "dim 1 appears multiple times");
    CHECK_ERR(porta_flip(x, (int[]){-3}, 1, &out), PORTA_ERR_OUT_OF_RANGE, "axis -3");
    CHECK_ERR(porta_flip(x, NULL, 1, &out), PORTA_ERR_INVALID_ARGUMENT, "axes is NULL");
    CHECK_ERR(porta_flip(x, (int[]){0}, -1, &out), PORTA_ERR_INVALID_ARGUMENT, NULL);
    CHECK(out == NULL);
    /* A scalar flips along its one axis, like torch.flip, to itself. */
    porta_tensor *scalar = test_random_tensor(&rng, PORTA_F32, 0, NULL, -1.0, 1.0);
    CHECK_OK(porta_flip(scalar, (int[]){-1}, 1, &out));
    CHECK(porta_tensor_rank(out) == 0 && porta_tensor_offset(out) == porta_tensor_offset(scalar));
    porta_tensor_release(out);
    porta_tensor_release(scalar);
    porta_tensor_release(x);
}

/* ---- aliasing ---- */

/* Views write through: values written into a chain of views show in the
 * base exactly where the views' index maps say. */
TEST(test_move_views_alias) {
    test_rng rng = test_rng_make(111);
    int64_t sizes[] = {3, 4, 5}, chain_sizes[] = {3, 3, 4};
    porta_tensor *x = test_move_scrambled(&rng, PORTA_F32, 3, sizes);
    double *before = test_to_doubles(x);
    porta_tensor *permuted = NULL, *sliced = NULL, *flipped = NULL;
    CHECK_OK(porta_permute(x, (int[]){2, 0, 1}, &permuted));          /* [5, 3, 4] */
    CHECK_OK(porta_slice(permuted, 0, -1, INT64_MIN, -2, &sliced));     /* rows 4, 2, 0 */
    CHECK_OK(porta_flip(sliced, (int[]){2}, 1, &flipped));             /* [3, 3, 4] */
    double written[36];
    for (int i = 0; i < 36; i++) written[i] = 100 + i;
    test_move_fill(flipped, written);
    double *after = test_to_doubles(x);
    bool touched[60] = {false};
    int64_t idx[3] = {0}, n = 0;
    do {
        int64_t a = idx[0], b = idx[1], c = idx[2];
        int64_t x_idx[3] = {b, 3 - c, 4 - 2 * a};
        int64_t position = test_move_position(3, sizes, x_idx);
        touched[position] = true;
        CHECK(after[position] == written[n++]);
    } while (test_next_index(3, chain_sizes, idx));
    for (int i = 0; i < 60; i++)
        if (!touched[i]) CHECK(after[i] == before[i]);
    free(before);
    free(after);
    porta_tensor_release(flipped);
    porta_tensor_release(sliced);
    porta_tensor_release(permuted);
    porta_tensor_release(x);

    /* reshape of a contiguous tensor is a view too */
    int64_t rows[] = {2, 6};
    porta_tensor *y = test_random_tensor(&rng, PORTA_I16, 2, rows, 0, 0), *reshaped = NULL;
    CHECK_OK(porta_reshape(y, 2, (int64_t[]){3, 4}, &reshaped));
    double counting[12];
    for (int i = 0; i < 12; i++) counting[i] = i;
    test_move_fill(reshaped, counting);
    double *y_values = test_to_doubles(y);
    CHECK(test_close("reshape alias", y_values, counting, 12, 0.0, 0.0));
    free(y_values);
    porta_tensor_release(reshaped);
    porta_tensor_release(y);
}

/* ---- graphs ---- */

/* Inference normalizes movement prims: requests that mean the same view
 * build the same node, and a graph replays them like eager calls. */
TEST(test_move_graph_nodes) {
    porta_graph *graph = NULL;
    CHECK_OK(porta_graph_create(&graph));
    porta_node x, a, b, c, d, e, f, g, h;
    CHECK_OK(porta_graph_input(graph, PORTA_F32, 2, (int64_t[]){4, 6}, &x));
    CHECK_OK(porta_graph_slice(graph, x, 1, -1, INT64_MIN, -1, &a));
    CHECK_OK(porta_graph_slice(graph, x, -1, 100, -100, -1, &b));
    CHECK(a == b);
    CHECK_OK(porta_graph_slice(graph, x, 0, 1, 3, 1, &c));
    CHECK_OK(porta_graph_slice(graph, x, 0, -3, -1, 1, &d));
    CHECK(c == d);
    CHECK_OK(porta_graph_flip(graph, a, (int[]){1, 0}, 2, &e));
    CHECK_OK(porta_graph_flip(graph, a, (int[]){-2, -1}, 2, &f));
    CHECK(e == f);
    CHECK_OK(porta_graph_reshape(graph, e, 2, (int64_t[]){-1, 3}, &g));
    CHECK_OK(porta_graph_reshape(graph, e, 2, (int64_t[]){8, -1}, &h));
    CHECK(g == h);
    porta_node padded, permuted;
    CHECK_OK(porta_graph_pad(graph, g, (int64_t[]){1, -2, 0, 2}, 7.5, &padded));
    CHECK_OK(porta_graph_permute(graph, padded, (int[]){1, 0}, &permuted));
    CHECK_OK(porta_graph_output(graph, permuted));
    CHECK_OK(porta_graph_verify(graph));

    test_rng rng = test_rng_make(112);
    porta_tensor *input = test_random_tensor(&rng, PORTA_F32, 2, (int64_t[]){4, 6}, -1.0, 1.0);
    porta_tensor *result = NULL;
    porta_status *status = porta_graph_run(graph, test_cpu(), &input, 1, &result, 1);
    CHECK_MSG(!status, "graph run: %s", porta_status_message(status));
    porta_status_free(status);
    porta_tensor *v1 = NULL, *v2 = NULL, *v3 = NULL, *v4 = NULL, *eager = NULL;
    CHECK_OK(porta_slice(input, 1, -1, INT64_MIN, -1, &v1));
    CHECK_OK(porta_flip(v1, (int[]){0, 1}, 2, &v2));
    CHECK_OK(porta_reshape(v2, 2, (int64_t[]){8, 3}, &v3));
    CHECK_OK(porta_pad(v3, (int64_t[]){1, -2, 0, 2}, 7.5, &v4));
    CHECK_OK(porta_permute(v4, (int[]){1, 0}, &eager));
    if (result) {
        CHECK(porta_tensor_rank(result) == 2 && porta_tensor_sizes(result)[0] == 5 &&
              porta_tensor_sizes(result)[1] == 7);
        double *got = test_to_doubles(result), *want = test_to_doubles(eager);
        test_close("graph vs eager", got, want, 35, 0.0, 0.0);
        free(got);
        free(want);
    }
    porta_tensor_release(result);
    porta_tensor_release(eager);
    porta_tensor_release(v4);
    porta_tensor_release(v3);
    porta_tensor_release(v2);
    porta_tensor_release(v1);
    porta_tensor_release(input);
    porta_graph_free(graph);
}

/* Reshape copies when it must; the copy is the one allocation that can fail. */
TEST(test_move_reshape_out_of_memory) {
    test_rng rng = test_rng_make(113);
    int64_t sizes[] = {40, 50};
    porta_tensor *x = test_random_tensor(&rng, PORTA_F64, 2, sizes, -1.0, 1.0), *t = NULL;
    CHECK_OK(porta_permute(x, (int[]){1, 0}, &t));
    uint64_t used = porta_memory_allocated();
    porta_set_memory_limit(used + 1024);
    porta_tensor *out = NULL;
    CHECK_ERR(porta_reshape(t, 1, (int64_t[]){2000}, &out), PORTA_ERR_OUT_OF_MEMORY, NULL);
    CHECK(out == NULL);
    CHECK_OK(porta_reshape(x, 1, (int64_t[]){2000}, &out)); /* a view allocates nothing */
    porta_set_memory_limit(0);
    CHECK(porta_memory_allocated() == used);
    porta_tensor_release(out);
    porta_tensor_release(t);
    porta_tensor_release(x);
}
