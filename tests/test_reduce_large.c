/* Reductions big enough to take the threaded paths: float32 sums that must
 * not drift over millions of elements, layouts that split one reduction
 * across threads or spread many over them (for each instruction set), and
 * results that do not depend on the thread count. */
#include <stdlib.h>

#include "runtime/tensor.h"
#include "test_reduce.h"

#define SHAPE(...) ((const int64_t[]){__VA_ARGS__})
#define AXES(...) ((const int[]){__VA_ARGS__})

static porta_tensor *reshaped(const porta_tensor *x, int rank, const int64_t *sizes) {
    porta_tensor *out = NULL;
    porta_status *status = porta_reshape(x, rank, sizes, &out);
    if (status) {
        test_fail(__FILE__, __LINE__, "reshape: %s", porta_status_message(status));
        porta_status_free(status);
    }
    return out;
}

/* A naive float32 loop over 16M values in [0, 1) is off by about 1e-3
 * relative; the kernels must stay within float32's reach of the exact sum. */
TEST(test_reduce_large_sum_accuracy) {
    enum { N = 1 << 24 };
    porta_tensor *x = NULL;
    CHECK_OK(porta_tensor_empty(test_cpu(), PORTA_F32, 1, SHAPE(N), &x));
    float *data = (float *)core_tensor_data(x);
    test_rng rng = test_rng_make(2024);
    double exact = 0, columns[4] = {0, 0, 0, 0};
    for (int64_t i = 0; i < N; i++) {
        data[i] = (float)test_uniform(&rng, 0.0, 1.0);
        exact += data[i];
        columns[i % 4] += data[i];
    }
    porta_tensor *all = NULL, *by_column = NULL, *by_row = NULL;
    porta_tensor *tall = reshaped(x, 2, SHAPE(N / 4, 4));
    porta_tensor *wide = tall ? reshaped(x, 2, SHAPE(4, N / 4)) : NULL;
    if (!wide) goto done;
    CHECK_OK(porta_reduce(PORTA_REDUCE_SUM, x, NULL, 0, false, &all));
    float got;
    CHECK_OK(porta_tensor_to_host(all, &got, sizeof got));
    CHECK_MSG(fabs(got - exact) <= 1e-6 * exact, "sum of %d floats: %.9g, exact %.9g", N, got,
              exact);

    CHECK_OK(porta_reduce(PORTA_REDUCE_SUM, tall, AXES(0), 1, false, &by_column));
    float got_columns[4];
    CHECK_OK(porta_tensor_to_host(by_column, got_columns, sizeof got_columns));
    double want_columns[4] = {columns[0], columns[1], columns[2], columns[3]};
    double got_doubles[4] = {got_columns[0], got_columns[1], got_columns[2], got_columns[3]};
    test_close("column sums", got_doubles, want_columns, 4, 1e-6, 0.0);

    CHECK_OK(porta_reduce(PORTA_REDUCE_SUM, wide, AXES(1), 1, true, &by_row));
    float got_rows[4];
    CHECK_OK(porta_tensor_to_host(by_row, got_rows, sizeof got_rows));
    double want_rows[4] = {0, 0, 0, 0};
    for (int64_t i = 0; i < N; i++) want_rows[i / (N / 4)] += data[i];
    double got_row_doubles[4] = {got_rows[0], got_rows[1], got_rows[2], got_rows[3]};
    test_close("row sums", got_row_doubles, want_rows, 4, 1e-6, 0.0);
done:
    porta_tensor_release(all);
    porta_tensor_release(by_column);
    porta_tensor_release(by_row);
    porta_tensor_release(tall);
    porta_tensor_release(wide);
    porta_tensor_release(x);
}

typedef struct layout_case {
    int rank;
    int64_t sizes[3];
    int axis_count;
    int axes[2];
    bool transposed; /* the two outermost axes swapped in memory */
} layout_case;

/* Few long reductions (split across threads), many short ones (spread over
 * threads), row and column orders, partial tiles (257, 700 and 20000
 * outputs). */
static const layout_case layout_cases[] = {
    {2, {3, 70000}, 1, {1}, false},   {2, {70000, 3}, 1, {0}, false},
    {2, {70000, 3}, 1, {0}, true},    {3, {2, 300, 257}, 2, {0, 2}, false},
    {3, {2, 300, 257}, 2, {2, 0}, true}, {2, {513, 700}, 1, {0}, false},
    {2, {513, 700}, 1, {-1}, true},   {2, {513, 700}, 0, {0}, false},
    {1, {200003}, 0, {0}, false},     {3, {64, 3, 1000}, 1, {1}, false},
    {2, {5, 20000}, 1, {0}, false},   {2, {5, 20000}, 1, {1}, true},
};

static porta_tensor *layout_tensor(test_rng *rng, porta_dtype dtype, const layout_case *c,
                                   reduce_fill fill) {
    if (!c->transposed) return reduce_random_tensor(rng, dtype, c->rank, c->sizes, fill);
    int64_t swapped[3] = {c->sizes[1], c->sizes[0], c->sizes[2]};
    porta_tensor *base = reduce_random_tensor(rng, dtype, c->rank, swapped, fill);
    if (!base) return NULL;
    porta_tensor *view = NULL;
    porta_status *status = porta_permute(base, c->rank == 3 ? AXES(1, 0, 2) : AXES(1, 0), &view);
    if (status) {
        test_fail(__FILE__, __LINE__, "permute: %s", porta_status_message(status));
        porta_status_free(status);
    }
    porta_tensor_release(base);
    return view;
}

TEST(test_reduce_large_layouts) {
    static const struct {
        porta_reduce_op op;
        porta_dtype dtype;
        reduce_fill fill;
    } runs[] = {
        {PORTA_REDUCE_SUM, PORTA_F32, FILL_WIDE},     {PORTA_REDUCE_SUM, PORTA_I32, FILL_WIDE},
        {PORTA_REDUCE_SUM, PORTA_BF16, FILL_WIDE},    {PORTA_REDUCE_MAX, PORTA_F16, FILL_NAN},
        {PORTA_REDUCE_MIN, PORTA_I8, FILL_WIDE},      {PORTA_REDUCE_ARGMAX, PORTA_F32, FILL_FEW},
        {PORTA_REDUCE_ARGMIN, PORTA_I16, FILL_WIDE},  {PORTA_REDUCE_ANY, PORTA_F64, FILL_SPARSE},
        {PORTA_REDUCE_ALL, PORTA_U8, FILL_WIDE},      {PORTA_REDUCE_PROD, PORTA_I64, FILL_WIDE},
    };
    for (int isa = -1; reduce_force_next_isa(&isa);) {
        test_rng rng = test_rng_make(99);
        for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) {
            for (size_t c = 0; c < sizeof layout_cases / sizeof layout_cases[0]; c++) {
                const layout_case *lc = &layout_cases[c];
                porta_tensor *x = layout_tensor(&rng, runs[r].dtype, lc, runs[r].fill);
                char what[96];
                snprintf(what, sizeof what, "%s %s %s layout %zu", cpu_isa_name((cpu_isa)isa),
                         porta_reduce_op_name(runs[r].op), porta_dtype_name(runs[r].dtype), c);
                bool arg = runs[r].op == PORTA_REDUCE_ARGMAX || runs[r].op == PORTA_REDUCE_ARGMIN;
                int axis_count = arg && lc->axis_count > 1 ? 1 : lc->axis_count;
                if (x) reduce_check(runs[r].op, x, lc->axes, axis_count, c % 2 == 0, what);
                porta_tensor_release(x);
            }
        }
    }
}

/* The split paths merge partial results per thread; one thread must give
 * the same answers (bit for bit where the order cannot matter). */
TEST(test_reduce_large_thread_counts_agree) {
    test_rng rng = test_rng_make(123);
    porta_tensor *x = reduce_random_tensor(&rng, PORTA_F32, 2, SHAPE(5, 300000), FILL_FEW);
    if (!x) return;
    static const porta_reduce_op ops[] = {PORTA_REDUCE_MAX, PORTA_REDUCE_ARGMIN,
                                          PORTA_REDUCE_ALL, PORTA_REDUCE_SUM};
    int threads = porta_get_num_threads();
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        porta_tensor *many = NULL, *one = NULL;
        CHECK_OK(porta_reduce(ops[i], x, AXES(1), 1, false, &many));
        CHECK_OK(porta_set_num_threads(1));
        porta_status *status = porta_reduce(ops[i], x, AXES(1), 1, false, &one);
        CHECK_OK(porta_set_num_threads(threads));
        CHECK_OK(status);
        double *a = test_to_doubles(many), *b = test_to_doubles(one);
        test_close(porta_reduce_op_name(ops[i]), a, b, 5, 1e-6, 0.0);
        free(a);
        free(b);
        porta_tensor_release(many);
        porta_tensor_release(one);
    }
    porta_tensor_release(x);
}
