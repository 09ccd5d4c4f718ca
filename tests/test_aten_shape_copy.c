/* The layout rules of src/aten/shape/copy.h (PyTorch's density test, its
 * inferred dense strides, memory formats, clone_preserve_strides), and the
 * failure paths of the copy ops, which must release what they made. */
#include <stdlib.h>
#include <string.h>

#include "aten/shape/copy.h"
#include "test.h"

static bool same_ints(const int64_t *a, const int64_t *b, int n) {
    return n == 0 || !memcmp(a, b, (size_t)n * sizeof *a);
}

TEST(test_aten_is_dense_follows_pytorch) {
    int64_t sizes[] = {2, 3, 4};
    CHECK(aten_is_dense(3, sizes, (int64_t[]){12, 4, 1}));
    CHECK(aten_is_dense(3, sizes, (int64_t[]){1, 2, 6})); /* permuted */
    CHECK(!aten_is_dense(3, sizes, (int64_t[]){24, 8, 2})); /* stepped */
    CHECK(!aten_is_dense(3, sizes, (int64_t[]){0, 4, 1}));  /* expanded */
    CHECK(!aten_is_dense(3, sizes, (int64_t[]){-12, 4, 1}));
    int64_t ones[] = {2, 1, 3};
    CHECK(aten_is_dense(3, ones, (int64_t[]){3, 99, 1})); /* a size-1 dim's stride is free */
    CHECK(aten_is_dense(0, NULL, NULL));
    CHECK(!aten_is_dense(1, (int64_t[]){4}, (int64_t[]){2}));
    CHECK(aten_is_dense(1, (int64_t[]){1}, (int64_t[]){7}));
}

TEST(test_aten_infer_dense_strides_keeps_the_permutation) {
    /* PyTorch's own example: stride-0 dims keep their place. */
    int64_t sizes[] = {6, 5, 4, 3, 2}, strides[] = {6, 0, 120, 0, 1}, got[5];
    aten_infer_dense_strides(5, sizes, strides, got);
    CHECK(same_ints(got, (int64_t[]){6, 36, 180, 2, 1}, 5));
    /* A transposed, stepped layout stays transposed. */
    int64_t sizes2[] = {3, 4}, strides2[] = {2, 12};
    aten_infer_dense_strides(2, sizes2, strides2, got);
    CHECK(same_ints(got, (int64_t[]){1, 3}, 2));
    /* Equal strides: the smaller dim goes inside. */
    int64_t sizes3[] = {2, 5}, strides3[] = {1, 1};
    aten_infer_dense_strides(2, sizes3, strides3, got);
    CHECK(same_ints(got, (int64_t[]){1, 2}, 2));
}

TEST(test_aten_like_strides_per_memory_format) {
    int64_t sizes[] = {2, 3, 4, 5}, got[4];
    porta_tensor *x = test_empty(PORTA_F32, 4, sizes);
    if (!x) return;
    porta_value format = {.kind = PORTA_VALUE_INT, .i = PORTA_MEMORY_CHANNELS_LAST};
    CHECK_OK(aten_like_strides("clone", x, &format, got));
    CHECK(same_ints(got, (int64_t[]){60, 1, 15, 3}, 4));
    format.i = PORTA_MEMORY_CONTIGUOUS;
    CHECK_OK(aten_like_strides("clone", x, &format, got));
    CHECK(same_ints(got, (int64_t[]){60, 20, 5, 1}, 4));
    porta_value none = {.kind = PORTA_VALUE_NONE};
    CHECK_OK(aten_like_strides("clone", x, &none, got)); /* preserve */
    CHECK(same_ints(got, (int64_t[]){60, 20, 5, 1}, 4));
    format.i = PORTA_MEMORY_CHANNELS_LAST_3D;
    CHECK_ERR(aten_like_strides("clone", x, &format, got), PORTA_ERR_INVALID_ARGUMENT,
              "required rank 5 tensor to use channels_last_3d format, got rank 4");
    format.i = 9;
    CHECK_ERR(aten_like_strides("empty_like", x, &format, got), PORTA_ERR_INVALID_ARGUMENT,
              "memory_format code 9");
    porta_tensor_release(x);
}

TEST(test_aten_clone_preserve_strides_copies_the_whole_buffer) {
    int64_t sizes[] = {4, 6};
    test_rng rng = test_rng_make(3);
    porta_tensor *base = test_random_tensor(&rng, PORTA_F64, 2, sizes, -1, 1);
    porta_tensor *view = test_view_on(base, 2, (int64_t[]){3, 3}, (int64_t[]){6, 2}, 7);
    porta_tensor *copy = NULL;
    if (!view) goto done;
    CHECK_OK(aten_clone_preserve_strides(view, &copy));
    CHECK(porta_tensor_buffer(copy) != porta_tensor_buffer(view));
    CHECK(porta_buffer_size(porta_tensor_buffer(copy)) == porta_buffer_size(porta_tensor_buffer(base)));
    CHECK(porta_tensor_offset(copy) == 7);
    CHECK(same_ints(porta_tensor_strides(copy), porta_tensor_strides(view), 2));
    double *want = test_to_doubles(view), *got = test_to_doubles(copy);
    if (want && got) test_close("clone_preserve_strides", got, want, 9, 0, 0);
    free(want);
    free(got);
    /* Overlapping elements cannot keep their layout: a dense clone. */
    porta_tensor *expanded = test_view_on(base, 2, (int64_t[]){3, 6}, (int64_t[]){0, 1}, 0);
    porta_tensor *dense = NULL;
    if (expanded) {
        CHECK_OK(aten_clone_preserve_strides(expanded, &dense));
        if (dense) CHECK(same_ints(porta_tensor_strides(dense), (int64_t[]){6, 1}, 2));
    }
    porta_tensor_release(expanded);
    porta_tensor_release(dense);
done:
    porta_tensor_release(base);
    porta_tensor_release(view);
    porta_tensor_release(copy);
}

/* Calls an aten op by name; returns its status, releasing any results. */
static porta_status *call(const char *name, const porta_value *args, int count) {
    porta_value *results = NULL;
    int result_count = 0;
    porta_status *status = porta_aten_call(porta_aten_op_find(name), args, count, &results,
                                           &result_count);
    if (!status) porta_aten_results_free(results, result_count);
    return status;
}

TEST(test_aten_copy_ops_release_everything_when_memory_runs_out) {
    int64_t sizes[] = {64, 64};
    porta_tensor *x = test_empty(PORTA_F32, 2, sizes);
    if (!x) return;
    CHECK_OK(porta_fill(x, 1.0));
    porta_value tensor = {.kind = PORTA_VALUE_TENSOR, .tensor = x};
    porta_value none = {.kind = PORTA_VALUE_NONE};
    porta_value two = {.kind = PORTA_VALUE_INT, .i = 2}, zero = {.kind = PORTA_VALUE_INT, .i = 0};
    porta_value reps = {.kind = PORTA_VALUE_INTS, .ints = {(int64_t[]){2, 2}, 2}};
    porta_value src_rows = {.kind = PORTA_VALUE_TENSOR, .tensor = x};
    uint64_t previous = porta_set_memory_limit(porta_memory_allocated() + 1024);
    CHECK_ERR(call("clone", (porta_value[]){tensor, none}, 2), PORTA_ERR_OUT_OF_MEMORY, NULL);
    CHECK_ERR(call("repeat", (porta_value[]){tensor, reps}, 2), PORTA_ERR_OUT_OF_MEMORY, NULL);
    CHECK_ERR(call("copy", (porta_value[]){tensor, src_rows, none}, 3), PORTA_ERR_OUT_OF_MEMORY,
              NULL);
    CHECK_ERR(call("slice_scatter", (porta_value[]){tensor, src_rows, zero, none, none,
                                                     (porta_value){.kind = PORTA_VALUE_INT, .i = 1}},
                   6),
              PORTA_ERR_OUT_OF_MEMORY, NULL);
    porta_set_memory_limit(previous);
    /* A src of the wrong shape fails after the copy of self was made. */
    porta_value row = {.kind = PORTA_VALUE_TENSOR, .tensor = x};
    CHECK_ERR(call("select_scatter", (porta_value[]){tensor, row, zero, two}, 4), PORTA_ERR_SHAPE,
              "src size = [64, 64], slice size = [64]");
    porta_tensor_release(x);
}

TEST(test_aten_repeat_names_the_rank_limit) {
    int64_t size = 2;
    porta_tensor *x = test_empty(PORTA_F32, 1, &size);
    if (!x) return;
    int64_t reps[9] = {2, 2, 2, 2, 2, 2, 2, 2, 2};
    porta_value args[2] = {{.kind = PORTA_VALUE_TENSOR, .tensor = x},
                           {.kind = PORTA_VALUE_INTS, .ints = {reps, 9}}};
    CHECK_ERR(call("repeat", args, 2), PORTA_ERR_UNSUPPORTED, "9 repeat dims");
    args[1].ints.count = 8; /* 8 pairs of dims fit */
    CHECK_OK(call("repeat", args, 2));
    porta_tensor_release(x);
}
