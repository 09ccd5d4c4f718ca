/* porta_sort against a stable double-precision reference: every dtype, random
 * shapes, every axis, contiguous and scrambled inputs, zero-size tensors,
 * NaN, signed zeros and many ties; the graph builder; bad axes and
 * allocation failures. */
#include <stdlib.h>
#include <string.h>

#include "test_movement.h"

#define SHAPE(...) ((const int64_t[]){__VA_ARGS__})

/* Values drawn from a few choices, so rows hold many ties; floats also get
 * NaN, infinities and both zeros. */
static double tie_value(test_rng *rng, porta_dtype dtype) {
    static const double floats[] = {-2.5, -1, -0.0, 0.0, 0.5, 1, 3, NAN, INFINITY, -INFINITY};
    if (dtype == PORTA_BOOL) return (double)test_int(rng, 0, 1);
    if (porta_dtype_is_float(dtype)) return floats[test_int(rng, 0, 9)];
    return (double)test_int(rng, porta_dtype_is_signed(dtype) ? -4 : 0, 4);
}

static porta_tensor *tie_tensor(test_rng *rng, porta_dtype dtype, int rank, const int64_t *sizes) {
    porta_tensor *t = test_move_input(rng, dtype, rank, sizes);
    if (!t) return NULL;
    int64_t n = porta_tensor_numel(t);
    double *values = malloc((size_t)(n ? n : 1) * sizeof *values);
    for (int64_t i = 0; i < n; i++) values[i] = tie_value(rng, dtype);
    test_move_fill(t, values);
    free(values);
    return t;
}

/* a before b in a stable ascending order that puts NaN last; -0.0 == 0.0. */
static bool ref_less(double a, double b) {
    if (isnan(a)) return false;
    return isnan(b) || a < b;
}

/* The reference permutation of one row: a stable insertion sort. */
static void ref_sort_row(const double *row, int64_t n, bool descending, int64_t *perm) {
    for (int64_t i = 0; i < n; i++) {
        int64_t j = i;
        for (; j > 0; j--) {
            double prev = row[perm[j - 1]];
            bool after = descending ? ref_less(prev, row[i]) : ref_less(row[i], prev);
            if (!after) break;
            perm[j] = perm[j - 1];
        }
        perm[j] = i;
    }
}

/* Checks values and indices of sorting x along axis against the reference. */
static void check_sort(const porta_tensor *x, int axis, porta_sort_order order) {
    porta_tensor *values = NULL, *indices = NULL;
    CHECK_OK(porta_sort(x, axis, order, &values, &indices));
    int rank = porta_tensor_rank(x);
    const int64_t *sizes = porta_tensor_sizes(x);
    CHECK(porta_tensor_dtype(indices) == PORTA_I64);
    CHECK(porta_tensor_dtype(values) == porta_tensor_dtype(x));
    CHECK(porta_tensor_rank(values) == rank && porta_tensor_rank(indices) == rank);
    int a = axis < 0 ? axis + (rank ? rank : 1) : axis;
    int64_t n = rank ? sizes[a] : 1, numel = porta_tensor_numel(x);
    int64_t inner = 1; /* row-major distance between neighbours along the axis */
    for (int d = a + 1; d < rank; d++) inner *= sizes[d];
    double *xv = test_to_doubles(x), *got_values = test_to_doubles(values),
           *got_indices = test_to_doubles(indices);
    double *row = malloc((size_t)(n ? n : 1) * sizeof *row);
    int64_t *perm = malloc((size_t)(n ? n : 1) * sizeof *perm);
    int failures = 0;
    for (int64_t start = 0; start < numel && failures < 3; start++) {
        if ((start / inner) % n != 0) continue; /* not the first element of a row */
        for (int64_t i = 0; i < n; i++) row[i] = xv[start + i * inner];
        ref_sort_row(row, n, order == PORTA_SORT_DESCENDING, perm);
        for (int64_t i = 0; i < n; i++) {
            int64_t at = start + i * inner;
            double want = row[perm[i]];
            bool same_value = (isnan(want) && isnan(got_values[at])) || want == got_values[at];
            if (got_indices[at] != (double)perm[i] || !same_value) {
                CHECK_MSG(false, "sort %s axis %d order %d: element %lld is %g (index %g), "
                                 "expected %g (index %lld)",
                          porta_dtype_name(porta_tensor_dtype(x)), axis, (int)order,
                          (long long)at, got_values[at], got_indices[at], want,
                          (long long)perm[i]);
                failures++;
                break;
            }
        }
    }
    free(xv);
    free(got_values);
    free(got_indices);
    free(row);
    free(perm);
    porta_tensor_release(values);
    porta_tensor_release(indices);
}

TEST(test_sort_matches_reference) {
    test_rng rng = test_rng_make(811);
    for (int t = 0; t < TEST_REAL_DTYPE_COUNT; t++) {
        for (int trial = 0; trial < 8; trial++) {
            int rank = (int)test_int(&rng, 0, 4);
            int64_t sizes[PORTA_MAX_RANK];
            test_move_random_shape(&rng, rank, trial == 0 ? 0 : 1, 6, sizes);
            porta_tensor *x = tie_tensor(&rng, test_move_dtypes[t], rank, sizes);
            if (!x) return;
            for (int axis = rank ? -rank : -1; axis < (rank ? rank : 1); axis++) {
                check_sort(x, axis, PORTA_SORT_ASCENDING);
                check_sort(x, axis, PORTA_SORT_DESCENDING);
            }
            porta_tensor_release(x);
        }
    }
}

/* Rows long enough for several merge passes, and many rows for threads. */
TEST(test_sort_long_rows) {
    test_rng rng = test_rng_make(812);
    const porta_dtype dtypes[] = {PORTA_F32, PORTA_F64, PORTA_I64, PORTA_F16, PORTA_I8};
    for (int t = 0; t < 5; t++) {
        porta_tensor *x = tie_tensor(&rng, dtypes[t], 2, SHAPE(37, 1000));
        if (!x) return;
        check_sort(x, 1, PORTA_SORT_ASCENDING);
        check_sort(x, 0, PORTA_SORT_DESCENDING);
        porta_tensor_release(x);
    }
    /* distinct values, already sorted and reversed, exercise the merge's shortcut */
    porta_tensor *up = NULL, *down = NULL;
    CHECK_OK(porta_tensor_arange(test_cpu(), PORTA_F32, 0, 5000, 1, &up));
    CHECK_OK(porta_flip(up, (const int[]){0}, 1, &down));
    check_sort(up, 0, PORTA_SORT_ASCENDING);
    check_sort(down, 0, PORTA_SORT_ASCENDING);
    check_sort(down, 0, PORTA_SORT_DESCENDING);
    porta_tensor_release(up);
    porta_tensor_release(down);
}

/* Either result alone, and results written into given tensors. */
TEST(test_sort_partial_and_given_outputs) {
    test_rng rng = test_rng_make(813);
    porta_tensor *x = tie_tensor(&rng, PORTA_F32, 2, SHAPE(4, 9));
    porta_tensor *values = NULL, *indices = NULL, *ref_values = NULL, *ref_indices = NULL;
    if (!x) return;
    CHECK_OK(porta_sort(x, 1, PORTA_SORT_ASCENDING, &ref_values, &ref_indices));
    CHECK_OK(porta_sort(x, 1, PORTA_SORT_ASCENDING, NULL, &indices));
    CHECK_OK(porta_sort(x, 1, PORTA_SORT_ASCENDING, &values, NULL));
    double *a = test_to_doubles(values), *b = test_to_doubles(ref_values);
    double *c = test_to_doubles(indices), *d = test_to_doubles(ref_indices);
    CHECK(test_close("values only", a, b, 36, 0, 0));
    CHECK(test_close("indices only", c, d, 36, 0, 0));
    free(a);
    free(c);
    porta_tensor *given_values = test_empty(PORTA_F64, 2, SHAPE(4, 9));
    porta_tensor *given_indices = test_empty(PORTA_I64, 2, SHAPE(4, 9));
    CHECK_OK(porta_sort(x, 1, PORTA_SORT_ASCENDING, &given_values, &given_indices));
    a = test_to_doubles(given_values);
    c = test_to_doubles(given_indices);
    CHECK(test_close("given values", a, b, 36, 0, 0));
    CHECK(test_close("given indices", c, d, 36, 0, 0));
    free(a);
    free(b);
    free(c);
    free(d);
    porta_tensor *wrong = test_empty(PORTA_I64, 2, SHAPE(9, 4));
    CHECK_ERR(porta_sort(x, 1, PORTA_SORT_ASCENDING, NULL, &wrong), PORTA_ERR_SHAPE, "[9, 4]");
    porta_tensor_release(wrong);
    porta_tensor_release(given_values);
    porta_tensor_release(given_indices);
    porta_tensor_release(values);
    porta_tensor_release(indices);
    porta_tensor_release(ref_values);
    porta_tensor_release(ref_indices);
    porta_tensor_release(x);
}

TEST(test_sort_errors) {
    porta_tensor *x = test_empty(PORTA_F32, 2, SHAPE(2, 3)), *values = NULL, *indices = NULL;
    porta_tensor *scalar = test_empty(PORTA_F32, 0, NULL);
    CHECK_ERR(porta_sort(x, 2, PORTA_SORT_ASCENDING, &values, &indices), PORTA_ERR_OUT_OF_RANGE,
              "axis 2 is out of range for a rank-2 tensor");
    CHECK_ERR(porta_sort(x, -3, PORTA_SORT_ASCENDING, &values, &indices), PORTA_ERR_OUT_OF_RANGE,
              "-2..1");
    CHECK_ERR(porta_sort(scalar, 1, PORTA_SORT_ASCENDING, &values, &indices),
              PORTA_ERR_OUT_OF_RANGE, "rank-0");
    CHECK_ERR(porta_sort(x, 0, (porta_sort_order)2, &values, &indices),
              PORTA_ERR_INVALID_ARGUMENT, "order");
    CHECK_ERR(porta_sort(NULL, 0, PORTA_SORT_ASCENDING, &values, &indices),
              PORTA_ERR_INVALID_ARGUMENT, "x");
    CHECK_ERR(porta_sort(x, 0, PORTA_SORT_ASCENDING, NULL, NULL), PORTA_ERR_INVALID_ARGUMENT,
              "both NULL");
    CHECK(!values && !indices);
    porta_tensor_release(x);
    porta_tensor_release(scalar);
}

/* Every allocation the sort makes fails in turn, leaving nothing behind. */
TEST(test_sort_allocation_failure) {
    test_rng rng = test_rng_make(814);
    porta_tensor *x = tie_tensor(&rng, PORTA_F32, 2, SHAPE(8, 300));
    if (!x) return;
    bool succeeded = false;
    for (uint64_t extra = 0; !succeeded && extra < (1u << 20); extra += 512) {
        porta_tensor *values = NULL, *indices = NULL;
        porta_set_memory_limit(porta_memory_allocated() + extra);
        porta_status *status = porta_sort(x, 1, PORTA_SORT_DESCENDING, &values, &indices);
        porta_set_memory_limit(0);
        if (status) {
            CHECK(porta_status_code(status) == PORTA_ERR_OUT_OF_MEMORY);
            CHECK(!values && !indices);
            porta_status_free(status);
            continue;
        }
        succeeded = true;
        porta_tensor_release(values);
        porta_tensor_release(indices);
    }
    CHECK(succeeded);
    porta_tensor_release(x);
}

/* A graph's sort node and a gather of its permutation match eager sort. */
TEST(test_sort_graph) {
    test_rng rng = test_rng_make(815);
    porta_tensor *x = tie_tensor(&rng, PORTA_F64, 3, SHAPE(3, 5, 4));
    porta_tensor *eager_values = NULL, *eager_indices = NULL, *outputs[2] = {NULL, NULL};
    porta_graph *g = NULL;
    porta_node input, perm, sorted, again;
    if (!x) return;
    CHECK_OK(porta_sort(x, -2, PORTA_SORT_DESCENDING, &eager_values, &eager_indices));
    CHECK_OK(porta_graph_create(&g));
    CHECK_OK(porta_graph_input(g, PORTA_F64, 3, SHAPE(3, 5, 4), &input));
    CHECK_OK(porta_graph_sort(g, input, -2, PORTA_SORT_DESCENDING, &perm));
    CHECK_OK(porta_graph_sort(g, input, 1, PORTA_SORT_DESCENDING, &again));
    CHECK(again == perm); /* the axis is normalized before nodes are merged */
    CHECK_OK(porta_graph_gather(g, input, 1, perm, &sorted));
    CHECK_OK(porta_graph_output(g, sorted));
    CHECK_OK(porta_graph_output(g, perm));
    CHECK_ERR(porta_graph_sort(g, input, 3, PORTA_SORT_ASCENDING, &again),
              PORTA_ERR_OUT_OF_RANGE, "sort.ascending");
    CHECK_OK(porta_graph_verify(g));
    CHECK_OK(porta_graph_run(g, test_cpu(), &x, 1, outputs, 2));
    double *a = test_to_doubles(outputs[0]), *b = test_to_doubles(eager_values);
    double *c = test_to_doubles(outputs[1]), *d = test_to_doubles(eager_indices);
    CHECK(test_close("graph values", a, b, 60, 0, 0));
    CHECK(test_close("graph indices", c, d, 60, 0, 0));
    free(a);
    free(b);
    free(c);
    free(d);
    porta_tensor_release(outputs[0]);
    porta_tensor_release(outputs[1]);
    porta_graph_free(g);
    porta_tensor_release(eager_values);
    porta_tensor_release(eager_indices);
    porta_tensor_release(x);
}
