/* Reductions on hand-picked inputs whose answers PyTorch fixes: NaN
 * propagation, ties, the flattened arg index, rank 0, empty reductions,
 * dtypes and wrapping, out= tensors, and reductions as graph nodes. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"
#include "runtime/tensor.h"
#include "ir/infer.h"
#include "test_reduce.h"

#define SHAPE(...) ((const int64_t[]){__VA_ARGS__})
#define AXES(...) ((const int[]){__VA_ARGS__})
#define VALUES(...) ((const double[]){__VA_ARGS__})

static porta_tensor *from_doubles(porta_dtype dtype, int rank, const int64_t *sizes,
                                  const double *values) {
    porta_tensor *t = test_empty(dtype, rank, sizes);
    if (!t) return NULL;
    size_t elem = porta_dtype_size(dtype);
    for (int64_t i = 0; i < porta_tensor_numel(t); i++)
        core_store_from_double(dtype, core_tensor_data(t) + (size_t)i * elem, values[i]);
    return t;
}

/* Reduces and compares with `want` exactly (NaN matching NaN), checking the
 * result's dtype and shape too. */
static void expect_reduce(porta_reduce_op op, const porta_tensor *x, const int *axes,
                          int axis_count, bool keepdim, porta_dtype dtype, int rank,
                          const int64_t *sizes, const double *want, const char *what) {
    porta_tensor *out = NULL;
    porta_status *status = porta_reduce(op, x, axes, axis_count, keepdim, &out);
    if (status) {
        test_fail(__FILE__, __LINE__, "%s: %s", what, porta_status_message(status));
        porta_status_free(status);
        return;
    }
    bool shape_ok = porta_tensor_dtype(out) == dtype && porta_tensor_rank(out) == rank &&
                    (rank == 0 || !memcmp(porta_tensor_sizes(out), sizes,
                                          (size_t)rank * sizeof *sizes));
    CHECK_MSG(shape_ok, "%s: got %s rank %d", what, porta_dtype_name(porta_tensor_dtype(out)),
              porta_tensor_rank(out));
    if (shape_ok) {
        double *got = test_to_doubles(out);
        test_close(what, got, want, porta_tensor_numel(out), 0.0, 0.0);
        free(got);
    }
    porta_tensor_release(out);
}

static const porta_dtype float_dtypes[] = {PORTA_F16, PORTA_BF16, PORTA_F32, PORTA_F64};

TEST(test_reduce_nan_propagates) {
    for (int t = 0; t < 4; t++) {
        porta_dtype dtype = float_dtypes[t];
        porta_tensor *x = from_doubles(dtype, 2, SHAPE(2, 4),
                                       VALUES(1, NAN, 3, NAN, 2, 5, -1, 0));
        if (!x) return;
        const char *name = porta_dtype_name(dtype);
        expect_reduce(PORTA_REDUCE_MAX, x, AXES(1), 1, false, dtype, 1, SHAPE(2), VALUES(NAN, 5), name);
        expect_reduce(PORTA_REDUCE_MIN, x, AXES(1), 1, false, dtype, 1, SHAPE(2), VALUES(NAN, -1), name);
        expect_reduce(PORTA_REDUCE_ARGMAX, x, AXES(1), 1, false, PORTA_I64, 1, SHAPE(2), VALUES(1, 1), name);
        expect_reduce(PORTA_REDUCE_ARGMIN, x, AXES(1), 1, false, PORTA_I64, 1, SHAPE(2), VALUES(1, 2), name);
        expect_reduce(PORTA_REDUCE_ARGMAX, x, NULL, 0, false, PORTA_I64, 0, NULL, VALUES(1), name);
        expect_reduce(PORTA_REDUCE_SUM, x, AXES(1), 1, false, dtype, 1, SHAPE(2), VALUES(NAN, 6), name);
        expect_reduce(PORTA_REDUCE_MAX, x, AXES(0), 1, false, dtype, 1, SHAPE(4), VALUES(2, NAN, 3, NAN), name);
        expect_reduce(PORTA_REDUCE_ARGMIN, x, AXES(0), 1, false, PORTA_I64, 1, SHAPE(4), VALUES(0, 0, 1, 0), name);
        expect_reduce(PORTA_REDUCE_ANY, x, AXES(1), 1, false, PORTA_BOOL, 1, SHAPE(2), VALUES(1, 1), name);
        expect_reduce(PORTA_REDUCE_ALL, x, AXES(1), 1, false, PORTA_BOOL, 1, SHAPE(2), VALUES(1, 0), name);
        porta_tensor_release(x);
    }
}

/* Long runs go through the vector lanes and blocks: a NaN in the middle of a
 * run, or of a column, must still win, and the first NaN give the index. */
TEST(test_reduce_nan_in_long_runs) {
    enum { N = 3000 };
    double *values = malloc(N * 3 * sizeof *values);
    for (int i = 0; i < N * 3; i++) values[i] = (double)(i / 3 % 97) * 0.25;
    values[1700 * 3 + 1] = NAN;
    values[2500 * 3 + 1] = NAN;
    values[2999 * 3 + 2] = NAN;
    porta_tensor *x = from_doubles(PORTA_F32, 2, SHAPE(N, 3), values);
    free(values);
    if (!x) return;
    expect_reduce(PORTA_REDUCE_MAX, x, AXES(0), 1, false, PORTA_F32, 1, SHAPE(3),
                  VALUES(24, NAN, NAN), "max of columns");
    expect_reduce(PORTA_REDUCE_ARGMAX, x, AXES(0), 1, false, PORTA_I64, 1, SHAPE(3),
                  VALUES(96, 1700, 2999), "argmax of columns");
    expect_reduce(PORTA_REDUCE_ARGMIN, x, AXES(0), 1, true, PORTA_I64, 2, SHAPE(1, 3),
                  VALUES(0, 1700, 2999), "argmin of columns");
    expect_reduce(PORTA_REDUCE_ARGMAX, x, NULL, 0, false, PORTA_I64, 0, NULL,
                  VALUES(1700 * 3 + 1), "argmax flattened");
    porta_tensor *xt = NULL;
    CHECK_OK(porta_permute(x, AXES(1, 0), &xt)); /* [3, N]: the runs are strided now */
    expect_reduce(PORTA_REDUCE_MIN, xt, AXES(1), 1, false, PORTA_F32, 1, SHAPE(3),
                  VALUES(0, NAN, NAN), "min of strided runs");
    expect_reduce(PORTA_REDUCE_ARGMAX, xt, AXES(-1), 1, false, PORTA_I64, 1, SHAPE(3),
                  VALUES(96, 1700, 2999), "argmax of strided runs");
    porta_tensor_release(xt);
    porta_tensor_release(x);
}

TEST(test_reduce_arg_ties_take_first) {
    porta_tensor *x = from_doubles(PORTA_I32, 2, SHAPE(2, 4), VALUES(3, 1, 3, 3, 2, 1, 1, 2));
    if (!x) return;
    expect_reduce(PORTA_REDUCE_ARGMAX, x, AXES(1), 1, false, PORTA_I64, 1, SHAPE(2), VALUES(0, 0), "argmax rows");
    expect_reduce(PORTA_REDUCE_ARGMIN, x, AXES(1), 1, false, PORTA_I64, 1, SHAPE(2), VALUES(1, 1), "argmin rows");
    expect_reduce(PORTA_REDUCE_ARGMAX, x, AXES(0), 1, false, PORTA_I64, 1, SHAPE(4), VALUES(0, 0, 0, 0), "argmax columns");
    porta_tensor *flipped = NULL; /* reversed rows: ties now resolve to the other end in memory */
    CHECK_OK(porta_slice(x, 1, 3, -5, -1, &flipped));
    expect_reduce(PORTA_REDUCE_ARGMAX, flipped, AXES(1), 1, false, PORTA_I64, 1, SHAPE(2), VALUES(0, 0), "argmax reversed");
    expect_reduce(PORTA_REDUCE_ARGMIN, flipped, AXES(1), 1, false, PORTA_I64, 1, SHAPE(2), VALUES(2, 1), "argmin reversed");
    porta_tensor_release(flipped);
    porta_tensor_release(x);

    enum { N = 5000 };
    double *same = malloc(N * sizeof *same);
    for (int i = 0; i < N; i++) same[i] = 7;
    porta_tensor *flat = from_doubles(PORTA_F32, 1, SHAPE(N), same);
    free(same);
    if (!flat) return;
    expect_reduce(PORTA_REDUCE_ARGMAX, flat, NULL, 0, false, PORTA_I64, 0, NULL, VALUES(0), "argmax all equal");
    expect_reduce(PORTA_REDUCE_ARGMIN, flat, AXES(0), 1, true, PORTA_I64, 1, SHAPE(1), VALUES(0), "argmin all equal");
    porta_tensor_release(flat);
}

TEST(test_reduce_arg_flattened_shapes) {
    porta_tensor *x = from_doubles(PORTA_F64, 3, SHAPE(2, 1, 3), VALUES(4, 2, 9, 9, 0, 1));
    if (!x) return;
    expect_reduce(PORTA_REDUCE_ARGMAX, x, NULL, 0, false, PORTA_I64, 0, NULL, VALUES(2), "no axis");
    expect_reduce(PORTA_REDUCE_ARGMAX, x, NULL, 0, true, PORTA_I64, 3, SHAPE(1, 1, 1), VALUES(2), "no axis, keepdim");
    expect_reduce(PORTA_REDUCE_ARGMIN, x, NULL, 0, true, PORTA_I64, 3, SHAPE(1, 1, 1), VALUES(4), "argmin no axis");
    expect_reduce(PORTA_REDUCE_ARGMAX, x, AXES(-1), 1, true, PORTA_I64, 3, SHAPE(2, 1, 1), VALUES(2, 0), "last axis");
    expect_reduce(PORTA_REDUCE_ARGMAX, x, AXES(1), 1, false, PORTA_I64, 2, SHAPE(2, 3), VALUES(0, 0, 0, 0, 0, 0), "size-1 axis");
    porta_tensor_release(x);
}

TEST(test_reduce_rank0) {
    porta_tensor *x = from_doubles(PORTA_F32, 0, NULL, VALUES(5));
    if (!x) return;
    for (int keepdim = 0; keepdim < 2; keepdim++) {
        expect_reduce(PORTA_REDUCE_SUM, x, NULL, 0, keepdim, PORTA_F32, 0, NULL, VALUES(5), "sum");
        expect_reduce(PORTA_REDUCE_PROD, x, AXES(0), 1, keepdim, PORTA_F32, 0, NULL, VALUES(5), "prod axis 0");
        expect_reduce(PORTA_REDUCE_MAX, x, AXES(-1), 1, keepdim, PORTA_F32, 0, NULL, VALUES(5), "max axis -1");
        expect_reduce(PORTA_REDUCE_ARGMAX, x, AXES(0), 1, keepdim, PORTA_I64, 0, NULL, VALUES(0), "argmax");
        expect_reduce(PORTA_REDUCE_ARGMIN, x, NULL, 0, keepdim, PORTA_I64, 0, NULL, VALUES(0), "argmin");
        expect_reduce(PORTA_REDUCE_ALL, x, AXES(0), 1, keepdim, PORTA_BOOL, 0, NULL, VALUES(1), "all");
    }
    porta_tensor *out = NULL;
    CHECK_ERR(porta_reduce(PORTA_REDUCE_SUM, x, AXES(1), 1, false, &out), PORTA_ERR_OUT_OF_RANGE,
              "expected -1..0");
    CHECK_ERR(porta_reduce(PORTA_REDUCE_SUM, x, AXES(0, -1), 2, false, &out),
              PORTA_ERR_INVALID_ARGUMENT, "dim 0 appears multiple times");
    porta_tensor_release(x);
}

TEST(test_reduce_empty) {
    porta_tensor *x = from_doubles(PORTA_F32, 2, SHAPE(0, 3), NULL);
    porta_tensor *xi = from_doubles(PORTA_I16, 2, SHAPE(0, 3), NULL);
    if (!x || !xi) goto done;
    expect_reduce(PORTA_REDUCE_SUM, x, AXES(0), 1, false, PORTA_F32, 1, SHAPE(3), VALUES(0, 0, 0), "sum");
    expect_reduce(PORTA_REDUCE_PROD, x, AXES(0), 1, true, PORTA_F32, 2, SHAPE(1, 3), VALUES(1, 1, 1), "prod");
    expect_reduce(PORTA_REDUCE_ANY, x, AXES(0), 1, false, PORTA_BOOL, 1, SHAPE(3), VALUES(0, 0, 0), "any");
    expect_reduce(PORTA_REDUCE_ALL, x, AXES(0), 1, false, PORTA_BOOL, 1, SHAPE(3), VALUES(1, 1, 1), "all");
    expect_reduce(PORTA_REDUCE_SUM, x, NULL, 0, false, PORTA_F32, 0, NULL, VALUES(0), "sum of all");
    expect_reduce(PORTA_REDUCE_SUM, xi, NULL, 0, true, PORTA_I64, 2, SHAPE(1, 1), VALUES(0), "int sum");
    expect_reduce(PORTA_REDUCE_PROD, xi, AXES(0), 1, false, PORTA_I64, 1, SHAPE(3), VALUES(1, 1, 1), "int prod");
    /* Reducing a non-empty axis of an empty tensor is fine even for max. */
    expect_reduce(PORTA_REDUCE_MAX, x, AXES(1), 1, false, PORTA_F32, 1, SHAPE(0), NULL, "max keeps the empty axis");
    expect_reduce(PORTA_REDUCE_ARGMIN, xi, AXES(1), 1, true, PORTA_I64, 2, SHAPE(0, 1), NULL, "argmin keeps the empty axis");
    porta_tensor *out = NULL;
    CHECK_ERR(porta_reduce(PORTA_REDUCE_MAX, x, AXES(0), 1, false, &out), PORTA_ERR_SHAPE,
              "reduce.max: expected reduction axis 0 to have non-zero size, got shape [0, 3]");
    CHECK_ERR(porta_reduce(PORTA_REDUCE_MIN, x, NULL, 0, false, &out), PORTA_ERR_SHAPE,
              "non-zero size");
    CHECK_ERR(porta_reduce(PORTA_REDUCE_ARGMAX, xi, NULL, 0, false, &out), PORTA_ERR_SHAPE,
              "reduce.argmax: expected reduction axis 0");
    CHECK(out == NULL);
done:
    porta_tensor_release(x);
    porta_tensor_release(xi);
}

TEST(test_reduce_result_dtypes) {
    double bits[300];
    for (int i = 0; i < 300; i++) bits[i] = i % 3 != 0;
    porta_tensor *flags = from_doubles(PORTA_BOOL, 1, SHAPE(300), bits);
    for (int i = 0; i < 300; i++) bits[i] = 200;
    porta_tensor *bytes = from_doubles(PORTA_U8, 1, SHAPE(300), bits);
    if (!flags || !bytes) goto done;
    expect_reduce(PORTA_REDUCE_SUM, flags, NULL, 0, false, PORTA_I64, 0, NULL, VALUES(200), "sum of bool counts");
    expect_reduce(PORTA_REDUCE_SUM, bytes, NULL, 0, false, PORTA_I64, 0, NULL, VALUES(60000), "uint8 sum in int64");
    expect_reduce(PORTA_REDUCE_MAX, flags, NULL, 0, false, PORTA_BOOL, 0, NULL, VALUES(1), "max of bool");
    expect_reduce(PORTA_REDUCE_MIN, flags, NULL, 0, false, PORTA_BOOL, 0, NULL, VALUES(0), "min of bool");
    expect_reduce(PORTA_REDUCE_ALL, bytes, NULL, 0, false, PORTA_BOOL, 0, NULL, VALUES(1), "all of uint8");
    expect_reduce(PORTA_REDUCE_MAX, bytes, NULL, 0, true, PORTA_U8, 1, SHAPE(1), VALUES(200), "max keeps uint8");
done:
    porta_tensor_release(flags);
    porta_tensor_release(bytes);
}

/* int64 sums and products wrap, and float16 sums overflow to inf only at the
 * end: they accumulate in float32 like PyTorch's. */
TEST(test_reduce_overflow) {
    int64_t big[2] = {INT64_MAX, 1};
    porta_tensor *x = NULL, *out = NULL;
    CHECK_OK(porta_tensor_from_host(test_cpu(), PORTA_I64, 1, SHAPE(2), big, &x));
    CHECK_OK(porta_reduce(PORTA_REDUCE_SUM, x, NULL, 0, false, &out));
    int64_t got = 0;
    CHECK_OK(porta_tensor_to_host(out, &got, sizeof got));
    CHECK(got == INT64_MIN);
    porta_tensor_release(out);
    out = NULL;
    CHECK_OK(porta_reduce(PORTA_REDUCE_PROD, x, NULL, 0, false, &out));
    CHECK_OK(porta_tensor_to_host(out, &got, sizeof got));
    CHECK(got == INT64_MAX);
    porta_tensor_release(out);
    porta_tensor_release(x);

    double halves[200];
    for (int i = 0; i < 200; i++) halves[i] = i < 100 ? 60000 : -60000;
    porta_tensor *h = from_doubles(PORTA_F16, 1, SHAPE(200), halves);
    if (!h) return;
    expect_reduce(PORTA_REDUCE_SUM, h, NULL, 0, false, PORTA_F16, 0, NULL, VALUES(0), "f16 partial sums beyond f16 range");
    porta_tensor *first = NULL;
    CHECK_OK(porta_slice(h, 0, 0, 100, 1, &first));
    expect_reduce(PORTA_REDUCE_SUM, first, NULL, 0, false, PORTA_F16, 0, NULL, VALUES(INFINITY), "f16 sum overflows");
    porta_tensor_release(first);
    porta_tensor_release(h);
}

TEST(test_reduce_out_tensor) {
    test_rng rng = test_rng_make(77);
    porta_tensor *x = reduce_random_tensor(&rng, PORTA_F32, 2, SHAPE(3, 5), FILL_WIDE);
    porta_tensor *given = NULL, *wide = NULL, *storage = NULL, *strided = NULL, *ints = NULL;
    if (!x) return;
    CHECK_OK(porta_tensor_empty(test_cpu(), PORTA_F32, 1, SHAPE(3), &given));
    porta_tensor *out = given;
    CHECK(reduce_check_out(PORTA_REDUCE_SUM, x, AXES(1), 1, false, out, "same dtype"));
    CHECK_OK(porta_reduce(PORTA_REDUCE_SUM, x, AXES(1), 1, false, &out));
    CHECK(out == given); /* written in place, not replaced */

    CHECK_OK(porta_tensor_empty(test_cpu(), PORTA_F64, 2, SHAPE(1, 5), &wide));
    CHECK(reduce_check_out(PORTA_REDUCE_MAX, x, AXES(0), 1, true, wide, "cast to float64"));
    CHECK(reduce_check_out(PORTA_REDUCE_ARGMAX, x, AXES(0), 1, true, wide, "indices as float64"));

    /* A reversed, gapped out: the result lands element by element. */
    CHECK_OK(porta_tensor_empty(test_cpu(), PORTA_BOOL, 1, SHAPE(10), &storage));
    CHECK_OK(porta_tensor_view(porta_tensor_buffer(storage), PORTA_BOOL, 1, SHAPE(5),
                               (const int64_t[]){-2}, 9, &strided));
    CHECK(reduce_check_out(PORTA_REDUCE_ANY, x, AXES(-2), 1, false, strided, "strided out"));

    CHECK_OK(porta_tensor_empty(test_cpu(), PORTA_I64, 1, SHAPE(3), &ints));
    out = ints;
    CHECK_ERR(porta_reduce(PORTA_REDUCE_SUM, x, AXES(1), 1, false, &out), PORTA_ERR_DTYPE,
              "can't be cast");
    out = given;
    CHECK_ERR(porta_reduce(PORTA_REDUCE_SUM, x, AXES(0), 1, false, &out), PORTA_ERR_SHAPE,
              "expected [5]");
    CHECK(out == given);
    porta_tensor_release(x);
    porta_tensor_release(given);
    porta_tensor_release(wide);
    porta_tensor_release(storage);
    porta_tensor_release(strided);
    porta_tensor_release(ints);
}

/* Inference rewrites axes as a sorted set (all of them for "none"), and
 * rewriting twice changes nothing, as graphs rely on when they hash nodes. */
TEST(test_reduce_infer_normalizes_axes) {
    ir_meta x = {PORTA_I8, 3, {4, 5, 6}}, out;
    ir_prim prim;
    memset(&prim, 0, sizeof prim);
    prim.kind = PRIM_REDUCE;
    prim.op = PORTA_REDUCE_SUM;
    prim.axes[0] = 2;
    prim.axes[1] = -3;
    prim.axis_count = 2;
    prim.keepdim = true;
    CHECK_OK(ir_infer(&prim, &x, 1, &out));
    CHECK(prim.axis_count == 2 && prim.axes[0] == 0 && prim.axes[1] == 2);
    CHECK(out.dtype == PORTA_I64 && out.rank == 3 && out.sizes[0] == 1 && out.sizes[1] == 5 &&
          out.sizes[2] == 1);
    ir_prim again = prim;
    CHECK_OK(ir_infer(&again, &x, 1, &out));
    CHECK(!memcmp(&again, &prim, sizeof prim));

    prim.axis_count = 0;
    prim.keepdim = false;
    CHECK_OK(ir_infer(&prim, &x, 1, &out));
    CHECK(prim.axis_count == 3 && prim.axes[0] == 0 && prim.axes[1] == 1 && prim.axes[2] == 2);
    CHECK(out.rank == 0);

    prim.op = PORTA_REDUCE_ARGMIN;
    prim.axis_count = 0;
    CHECK_OK(ir_infer(&prim, &x, 1, &out));
    CHECK(prim.axis_count == 0 && prim.axes[0] == 0 && out.rank == 0 && out.dtype == PORTA_I64);
}

TEST(test_reduce_graph_matches_eager) {
    porta_graph *g = NULL;
    CHECK_OK(porta_graph_create(&g));
    porta_node in, a, b, c;
    CHECK_OK(porta_graph_input(g, PORTA_F32, 3, SHAPE(4, 5, 6), &in));
    CHECK_OK(porta_graph_reduce(g, PORTA_REDUCE_SUM, in, AXES(-1, 0), 2, true, &a));
    CHECK_OK(porta_graph_reduce(g, PORTA_REDUCE_SUM, in, AXES(0, 2), 2, true, &b));
    CHECK(a == b); /* the same reduction, however its axes were written */
    CHECK_OK(porta_graph_reduce(g, PORTA_REDUCE_ARGMAX, a, AXES(1), 1, false, &c));
    porta_dtype dtype;
    int rank;
    int64_t sizes[PORTA_MAX_RANK];
    CHECK_OK(porta_graph_node_type(g, a, &dtype, &rank, sizes));
    CHECK(dtype == PORTA_F32 && rank == 3 && sizes[0] == 1 && sizes[1] == 5 && sizes[2] == 1);
    CHECK_OK(porta_graph_node_type(g, c, &dtype, &rank, sizes));
    CHECK(dtype == PORTA_I64 && rank == 2 && sizes[0] == 1 && sizes[1] == 1);
    porta_node bad;
    CHECK_ERR(porta_graph_reduce(g, PORTA_REDUCE_MAX, in, AXES(3), 1, false, &bad),
              PORTA_ERR_OUT_OF_RANGE, "axis 3 is out of range for a rank-3 tensor (expected -3..2)");
    CHECK_OK(porta_graph_output(g, a));
    CHECK_OK(porta_graph_output(g, c));

    test_rng rng = test_rng_make(5);
    porta_tensor *x = reduce_random_tensor(&rng, PORTA_F32, 3, SHAPE(4, 5, 6), FILL_WIDE);
    porta_tensor *outs[2] = {NULL, NULL};
    CHECK_OK(porta_graph_run(g, test_cpu(), &x, 1, outs, 2));
    CHECK(reduce_check_out(PORTA_REDUCE_SUM, x, AXES(0, 2), 2, true, NULL, "eager"));
    porta_tensor *eager = NULL;
    CHECK_OK(porta_reduce(PORTA_REDUCE_SUM, x, AXES(2, 0), 2, true, &eager));
    double *from_graph = test_to_doubles(outs[0]), *from_eager = test_to_doubles(eager);
    test_close("graph vs eager", from_graph, from_eager, 5, 0.0, 0.0);
    free(from_graph);
    free(from_eager);
    porta_tensor_release(eager);
    porta_tensor_release(outs[0]);
    porta_tensor_release(outs[1]);
    porta_tensor_release(x);
    porta_graph_free(g);
}

/* Reduces the 16 copies of every float16 pattern with op and checks that
 * max and min give each pattern back bit for bit (NaN as some NaN) and that
 * any sees exactly the nonzero ones. */
static void check_f16_patterns(porta_reduce_op op, const porta_tensor *x, int axis,
                               const char *what) {
    enum { PATTERNS = 65536 };
    porta_tensor *out = NULL;
    CHECK_OK(porta_reduce(op, x, &axis, 1, false, &out));
    bool flags = op == PORTA_REDUCE_ANY;
    uint16_t *halves = malloc(PATTERNS * sizeof *halves);
    uint8_t *bytes = (uint8_t *)halves;
    porta_status *status = porta_tensor_to_host(out, halves, PATTERNS * (flags ? 1 : 2));
    porta_tensor_release(out);
    int wrong = 0;
    for (int h = 0; h < PATTERNS && !status; h++) {
        bool nan = (h & 0x7c00) == 0x7c00 && (h & 0x3ff);
        bool ok;
        if (flags)
            ok = bytes[h] == ((h & 0x7fff) != 0);
        else if (nan)
            ok = (halves[h] & 0x7c00) == 0x7c00 && (halves[h] & 0x3ff);
        else
            ok = halves[h] == h;
        if (!ok && wrong++ < 3)
            test_fail(__FILE__, __LINE__, "%s %s: pattern 0x%04x gave 0x%04x", what,
                      porta_reduce_op_name(op), h, flags ? bytes[h] : halves[h]);
    }
    free(halves);
    CHECK_OK(status);
}

/* Every float16 bit pattern, 16 copies each, reduced along the copies by the
 * run loops (copies contiguous) and the row loops (patterns contiguous), for
 * each instruction set: the vectorized float16 loads must be exact. */
TEST(test_reduce_f16_all_bit_patterns) {
    enum { PATTERNS = 65536, COPIES = 16 };
    uint16_t *by_row = malloc(PATTERNS * COPIES * sizeof *by_row);
    uint16_t *by_column = malloc(PATTERNS * COPIES * sizeof *by_column);
    for (int h = 0; h < PATTERNS; h++)
        for (int k = 0; k < COPIES; k++) {
            by_row[h * COPIES + k] = (uint16_t)h;
            by_column[k * PATTERNS + h] = (uint16_t)h;
        }
    porta_tensor *runs = NULL, *rows = NULL;
    porta_status *status = porta_tensor_from_host(test_cpu(), PORTA_F16, 2,
                                                  SHAPE(PATTERNS, COPIES), by_row, &runs);
    if (!status)
        status = porta_tensor_from_host(test_cpu(), PORTA_F16, 2, SHAPE(COPIES, PATTERNS),
                                        by_column, &rows);
    free(by_row);
    free(by_column);
    CHECK_OK(status);
    static const porta_reduce_op ops[] = {PORTA_REDUCE_MAX, PORTA_REDUCE_MIN, PORTA_REDUCE_ANY};
    for (int isa = -1; reduce_force_next_isa(&isa);) {
        char what[64];
        for (int o = 0; o < 3; o++) {
            snprintf(what, sizeof what, "%s run loop", cpu_isa_name((cpu_isa)isa));
            check_f16_patterns(ops[o], runs, 1, what);
            snprintf(what, sizeof what, "%s row loop", cpu_isa_name((cpu_isa)isa));
            check_f16_patterns(ops[o], rows, 0, what);
        }
    }
    porta_tensor_release(runs);
    porta_tensor_release(rows);
}
