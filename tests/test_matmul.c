/* matmul against a double-precision reference: every dtype, batch
 * broadcasting, transposed / strided / negative-stride operands and
 * outputs, zero sizes, type promotion, errors and allocation failure. */
#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"
#include "runtime/tensor.h"
#include "test.h"

static const porta_dtype all_dtypes[] = {PORTA_U8,  PORTA_I8,   PORTA_I16, PORTA_I32, PORTA_I64,
                                         PORTA_F16, PORTA_BF16, PORTA_F32, PORTA_F64};
#define ALL_DTYPE_COUNT 9

/* Memory layouts of an operand's view. */
typedef enum layout {
    LAYOUT_CONTIGUOUS,
    LAYOUT_TRANSPOSED, /* the last two axes swapped in memory */
    LAYOUT_SCRAMBLED,  /* random axis order, gaps, negative strides */
    LAYOUT_COUNT
} layout;

/* A view of `sizes` with random contents laid out as `kind`, on a buffer of
 * its own (the view holds the only reference). */
static porta_tensor *random_view(test_rng *rng, porta_dtype dtype, int rank,
                                 const int64_t *sizes, layout kind) {
    int order[PORTA_MAX_RANK]; /* axes from outermost to innermost in memory */
    for (int d = 0; d < rank; d++) order[d] = d;
    if (kind == LAYOUT_TRANSPOSED && rank >= 2) {
        order[rank - 2] = rank - 1;
        order[rank - 1] = rank - 2;
    }
    if (kind == LAYOUT_SCRAMBLED) test_shuffle(rng, order, rank);
    int64_t strides[PORTA_MAX_RANK], offset = 0, span = 1;
    for (int i = rank - 1; i >= 0; i--) {
        int d = order[i];
        int64_t gap = kind == LAYOUT_SCRAMBLED ? test_int(rng, 1, 2) : 1;
        strides[d] = span * gap;
        span = strides[d] * (sizes[d] > 0 ? sizes[d] : 1);
    }
    bool empty = false;
    for (int d = 0; d < rank; d++) empty |= sizes[d] == 0;
    if (kind == LAYOUT_SCRAMBLED)
        for (int d = 0; d < rank; d++)
            if (test_int(rng, 0, 1) && !empty) {
                offset += (sizes[d] - 1) * strides[d];
                strides[d] = -strides[d];
            }
    int64_t total = empty ? 0 : span;
    porta_tensor *storage = test_random_tensor(rng, dtype, 1, &total, -2.0, 2.0);
    porta_tensor *view = test_view_on(storage, rank, sizes, strides, offset);
    porta_tensor_release(storage);
    return view;
}

/* Row-major batch offset of multi-index idx (of `rank` batch axes of the
 * output) into an operand with `op_rank` batch axes, broadcasting size 1. */
static int64_t operand_batch(const int64_t *idx, int rank, const int64_t *op_sizes, int op_rank) {
    int64_t flat = 0;
    for (int d = 0; d < op_rank; d++) {
        int64_t i = op_sizes[d] == 1 ? 0 : idx[d + rank - op_rank];
        flat = flat * op_sizes[d] + i;
    }
    return flat;
}

/* Checks c == a @ b with a, b, c read back in row-major order. Integers must
 * match exactly after wrapping to the dtype; floats within a tolerance
 * scaled by sum |a||b|, which bounds the rounding of any summation order. */
static void check_matmul(const porta_tensor *a, const porta_tensor *b, const porta_tensor *c,
                         const char *what) {
    int ra = porta_tensor_rank(a), rb = porta_tensor_rank(b), rc = porta_tensor_rank(c);
    const int64_t *sa = porta_tensor_sizes(a), *sb = porta_tensor_sizes(b);
    const int64_t *sc = porta_tensor_sizes(c);
    int64_t m = sa[ra - 2], k = sa[ra - 1], n = sb[rb - 1];
    CHECK_MSG(sc[rc - 2] == m && sc[rc - 1] == n, "%s: result shape", what);
    double *va = test_to_doubles(a), *vb = test_to_doubles(b), *vc = test_to_doubles(c);
    /* The arithmetic may be narrower than c (out= casts the result). */
    porta_dtype dtype = porta_tensor_dtype(c);
    double rtol = 4 * fmax(test_rtol(dtype), test_rtol(porta_tensor_dtype(a)));
    int64_t idx[PORTA_MAX_RANK] = {0};
    int batch_rank = rc - 2;
    int64_t batches = porta_tensor_numel(c) / (m * n > 0 ? m * n : 1);
    if (m * n == 0) batches = 0;
    int failures = 0;
    for (int64_t bi = 0; bi < batches; bi++) {
        const double *pa = va + operand_batch(idx, batch_rank, sa, ra - 2) * m * k;
        const double *pb = vb + operand_batch(idx, batch_rank, sb, rb - 2) * k * n;
        const double *pc = vc + bi * m * n;
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                double sum = 0.0, mag = 0.0;
                int64_t isum = 0;
                for (int64_t q = 0; q < k; q++) {
                    sum += pa[i * k + q] * pb[q * n + j];
                    mag += fabs(pa[i * k + q] * pb[q * n + j]);
                    isum += (int64_t)pa[i * k + q] * (int64_t)pb[q * n + j];
                }
                double got = pc[i * n + j], want;
                bool ok;
                if (porta_dtype_is_float(dtype)) {
                    want = sum;
                    ok = fabs(got - want) <= rtol * mag + 1e-30;
                } else {
                    char wrapped[8];
                    core_store_from_double(dtype, wrapped, (double)isum);
                    want = core_load_as_double(dtype, wrapped);
                    ok = got == want;
                }
                if (!ok && failures++ < 3)
                    test_fail(__FILE__, __LINE__, "%s (%s): batch %lld [%lld, %lld] is %.9g, "
                              "expected %.9g", what, porta_dtype_name(dtype), (long long)bi,
                              (long long)i, (long long)j, got, want);
            }
        test_next_index(batch_rank, sc, idx);
    }
    free(va);
    free(vb);
    free(vc);
}

/* Runs porta_matmul on fresh views of the given shapes and layouts. */
static void run_case(test_rng *rng, porta_dtype dtype, int ra, const int64_t *sa, layout la,
                     int rb, const int64_t *sb, layout lb, const char *what) {
    porta_tensor *a = random_view(rng, dtype, ra, sa, la);
    porta_tensor *b = random_view(rng, dtype, rb, sb, lb);
    porta_tensor *c = NULL;
    if (a && b) {
        porta_status *status = porta_matmul(a, b, &c);
        if (status) {
            test_fail(__FILE__, __LINE__, "%s (%s): %s", what, porta_dtype_name(dtype),
                      porta_status_message(status));
            porta_status_free(status);
        } else {
            CHECK(porta_tensor_dtype(c) == dtype);
            check_matmul(a, b, c, what);
        }
    }
    porta_tensor_release(a);
    porta_tensor_release(b);
    porta_tensor_release(c);
}

TEST(test_matmul_2d_every_dtype) {
    test_rng rng = test_rng_make(1);
    for (int d = 0; d < ALL_DTYPE_COUNT; d++)
        for (int trial = 0; trial < 6; trial++) {
            int64_t m = test_int(&rng, 1, 40), k = test_int(&rng, 1, 40), n = test_int(&rng, 1, 40);
            int64_t sa[2] = {m, k}, sb[2] = {k, n};
            run_case(&rng, all_dtypes[d], 2, sa, (layout)(trial % LAYOUT_COUNT), 2, sb,
                     (layout)(trial / 2 % LAYOUT_COUNT), "2-d");
        }
}

TEST(test_matmul_batch_broadcasting) {
    test_rng rng = test_rng_make(2);
    for (int d = 0; d < ALL_DTYPE_COUNT; d++) {
        /* [2, 1, M, K] @ [3, K, N] -> [2, 3, M, N]; and a rank-2 operand
         * shared by every batch of the other. */
        int64_t sa[4] = {2, 1, 5, 7}, sb[3] = {3, 7, 4};
        run_case(&rng, all_dtypes[d], 4, sa, LAYOUT_SCRAMBLED, 3, sb, LAYOUT_TRANSPOSED,
                 "[2,1,5,7] @ [3,7,4]");
        int64_t sc[2] = {6, 3}, sd[4] = {2, 2, 3, 5};
        run_case(&rng, all_dtypes[d], 2, sc, LAYOUT_CONTIGUOUS, 4, sd, LAYOUT_SCRAMBLED,
                 "[6,3] @ [2,2,3,5]");
        /* One b for every batch: batches of rows fold into one GEMM when a
         * and out allow it (contiguous a; rows of one, as in a batched
         * matrix-vector product), and stay separate when they do not. */
        int64_t se[4] = {3, 2, 5, 6}, sf[2] = {6, 4}, sg[3] = {7, 1, 6};
        run_case(&rng, all_dtypes[d], 4, se, LAYOUT_CONTIGUOUS, 2, sf, LAYOUT_TRANSPOSED,
                 "[3,2,5,6] @ [6,4]");
        run_case(&rng, all_dtypes[d], 3, sg, LAYOUT_CONTIGUOUS, 2, sf, LAYOUT_CONTIGUOUS,
                 "[7,1,6] @ [6,4]");
        run_case(&rng, all_dtypes[d], 4, se, LAYOUT_SCRAMBLED, 2, sf, LAYOUT_SCRAMBLED,
                 "[3,2,5,6] @ [6,4], scrambled");
    }
}

/* A batch operand expanded with stride 0 (porta_expand), and outputs given
 * as strided views (out=), including a transposed and a dtype-casting one. */
TEST(test_matmul_expanded_operand_and_strided_out) {
    test_rng rng = test_rng_make(3);
    const porta_dtype dtypes[] = {PORTA_F32, PORTA_F64, PORTA_F16, PORTA_I32};
    for (int d = 0; d < 4; d++) {
        porta_dtype dtype = dtypes[d];
        int64_t sa[2] = {6, 9}, sb[3] = {4, 9, 5}, expanded[3] = {4, 6, 9};
        int64_t sc[3] = {4, 6, 5};
        porta_tensor *a = random_view(&rng, dtype, 2, sa, LAYOUT_TRANSPOSED);
        porta_tensor *b = random_view(&rng, dtype, 3, sb, LAYOUT_SCRAMBLED);
        porta_tensor *ae = NULL, *c = NULL, *cast_out = NULL;
        CHECK_OK(porta_expand(a, 3, expanded, &ae));
        CHECK(porta_tensor_strides(ae)[0] == 0);
        porta_tensor *strided_out = random_view(&rng, dtype, 3, sc, LAYOUT_SCRAMBLED);
        porta_tensor *given = strided_out;
        CHECK_OK(porta_matmul(ae, b, &given));
        CHECK(given == strided_out);
        check_matmul(ae, b, strided_out, "expanded a, strided out");
        /* The float64 out= of a lower-precision result is cast on the way. */
        CHECK_OK(porta_tensor_empty(test_cpu(), PORTA_F64, 3, sc, &cast_out));
        porta_tensor *target = cast_out;
        CHECK_OK(porta_matmul(ae, b, &target));
        CHECK_OK(porta_matmul(ae, b, &c));
        double *got = test_to_doubles(cast_out), *want = test_to_doubles(c);
        CHECK(test_close("out= cast to float64", got, want, 4 * 6 * 5, 0.0, 0.0));
        free(got);
        free(want);
        porta_tensor_release(c);
        porta_tensor_release(cast_out);
        porta_tensor_release(strided_out);
        porta_tensor_release(ae);
        porta_tensor_release(a);
        porta_tensor_release(b);
    }
}

/* out= may be an operand itself (a = a @ b): the result must be that of the
 * original operands. */
TEST(test_matmul_out_aliasing_an_operand) {
    test_rng rng = test_rng_make(9);
    int64_t s[3] = {3, 7, 7};
    const porta_dtype dtypes[] = {PORTA_F32, PORTA_F64, PORTA_I32};
    for (int d = 0; d < 3; d++) {
        porta_tensor *a = random_view(&rng, dtypes[d], 3, s, LAYOUT_CONTIGUOUS);
        porta_tensor *b = random_view(&rng, dtypes[d], 3, s, LAYOUT_TRANSPOSED);
        porta_tensor *want = NULL;
        CHECK_OK(porta_matmul(a, b, &want));
        porta_tensor *target = a;
        CHECK_OK(porta_matmul(a, b, &target));
        porta_tensor *target_b = b;
        porta_tensor *want_b = NULL;
        CHECK_OK(porta_matmul(want, b, &want_b));
        CHECK_OK(porta_matmul(a, b, &target_b)); /* a now holds a @ b */
        double *got = test_to_doubles(a), *ref = test_to_doubles(want);
        CHECK(test_close("a = a @ b", got, ref, 3 * 7 * 7, 0.0, 0.0));
        free(got);
        free(ref);
        got = test_to_doubles(b);
        ref = test_to_doubles(want_b);
        CHECK(test_close("b = a @ b", got, ref, 3 * 7 * 7, 0.0, 0.0));
        free(got);
        free(ref);
        porta_tensor_release(want);
        porta_tensor_release(want_b);
        porta_tensor_release(a);
        porta_tensor_release(b);
    }
}

/* A graph of matmuls runs to the same result as the eager calls. */
TEST(test_matmul_in_a_graph) {
    test_rng rng = test_rng_make(10);
    int64_t sa[3] = {2, 4, 6}, sb[2] = {6, 3}, sc[2] = {3, 5};
    porta_tensor *a = random_view(&rng, PORTA_F32, 3, sa, LAYOUT_SCRAMBLED);
    porta_tensor *b = random_view(&rng, PORTA_F32, 2, sb, LAYOUT_TRANSPOSED);
    porta_tensor *c = random_view(&rng, PORTA_F32, 2, sc, LAYOUT_CONTIGUOUS);
    porta_tensor *ab = NULL, *want = NULL, *got = NULL;
    porta_graph *graph = NULL;
    CHECK_OK(porta_graph_create(&graph));
    porta_node na, nb, nc, nab, nabc;
    porta_status *status = porta_graph_input(graph, PORTA_F32, 3, sa, &na);
    if (!status) status = porta_graph_input(graph, PORTA_F32, 2, sb, &nb);
    if (!status) status = porta_graph_input(graph, PORTA_F32, 2, sc, &nc);
    if (!status) status = porta_graph_matmul(graph, na, nb, &nab);
    if (!status) status = porta_graph_matmul(graph, nab, nc, &nabc);
    if (!status) status = porta_graph_output(graph, nabc);
    porta_tensor *inputs[3] = {a, b, c};
    if (!status) status = porta_graph_run(graph, test_cpu(), inputs, 3, &got, 1);
    if (!status) status = porta_matmul(a, b, &ab);
    if (!status) status = porta_matmul(ab, c, &want);
    if (status) {
        test_fail(__FILE__, __LINE__, "%s", porta_status_message(status));
        porta_status_free(status);
    } else {
        double *g = test_to_doubles(got), *w = test_to_doubles(want);
        CHECK(test_close("graph matmul", g, w, 2 * 4 * 5, 0.0, 0.0));
        free(g);
        free(w);
    }
    porta_graph_free(graph);
    porta_tensor_release(got);
    porta_tensor_release(want);
    porta_tensor_release(ab);
    porta_tensor_release(a);
    porta_tensor_release(b);
    porta_tensor_release(c);
}

/* Shapes that cross the blocking of the float64/integer kernel and the
 * packing of sgemm, and many small batches (the batch-parallel path). */
TEST(test_matmul_large_and_many_batches) {
    test_rng rng = test_rng_make(4);
    const porta_dtype dtypes[] = {PORTA_F32, PORTA_F64, PORTA_I64, PORTA_BF16};
    for (int d = 0; d < 4; d++) {
        int64_t sa[2] = {130, 300}, sb[2] = {300, 270};
        run_case(&rng, dtypes[d], 2, sa, LAYOUT_CONTIGUOUS, 2, sb, LAYOUT_TRANSPOSED, "large");
        /* Deep enough that half precision widens A in several row panels. */
        int64_t da[2] = {150, 16384}, db[2] = {16384, 8};
        if (dtypes[d] == PORTA_BF16)
            run_case(&rng, dtypes[d], 2, da, LAYOUT_CONTIGUOUS, 2, db, LAYOUT_SCRAMBLED, "deep");
        int64_t ba[3] = {97, 7, 9}, bb[3] = {97, 9, 6};
        run_case(&rng, dtypes[d], 3, ba, LAYOUT_SCRAMBLED, 3, bb, LAYOUT_CONTIGUOUS,
                 "97 small batches");
    }
}

TEST(test_matmul_zero_sizes) {
    test_rng rng = test_rng_make(5);
    const int64_t shapes[][4] = {
        /* batch, M, K, N */
        {2, 0, 3, 4}, {2, 3, 3, 0}, {2, 3, 0, 4}, {0, 3, 4, 5}, {1, 0, 0, 0},
    };
    for (int d = 0; d < ALL_DTYPE_COUNT; d++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            int64_t sa[3] = {shapes[s][0], shapes[s][1], shapes[s][2]};
            int64_t sb[3] = {shapes[s][0], shapes[s][2], shapes[s][3]};
            run_case(&rng, all_dtypes[d], 3, sa, LAYOUT_SCRAMBLED, 3, sb, LAYOUT_CONTIGUOUS,
                     "zero-size");
        }
    /* K == 0 writes zeros over whatever out held. */
    int64_t sa[2] = {3, 0}, sb[2] = {0, 2}, sc[2] = {3, 2};
    porta_tensor *a = random_view(&rng, PORTA_F32, 2, sa, LAYOUT_CONTIGUOUS);
    porta_tensor *b = random_view(&rng, PORTA_F32, 2, sb, LAYOUT_CONTIGUOUS);
    porta_tensor *c = NULL;
    CHECK_OK(porta_tensor_empty(test_cpu(), PORTA_F32, 2, sc, &c));
    CHECK_OK(porta_fill(c, NAN));
    porta_tensor *target = c;
    CHECK_OK(porta_matmul(a, b, &target));
    double *got = test_to_doubles(c), zeros[6] = {0};
    CHECK(test_close("K == 0", got, zeros, 6, 0.0, 0.0));
    free(got);
    porta_tensor_release(a);
    porta_tensor_release(b);
    porta_tensor_release(c);
}

TEST(test_matmul_type_promotion) {
    test_rng rng = test_rng_make(6);
    const struct { porta_dtype a, b, want; } cases[] = {
        {PORTA_I32, PORTA_F32, PORTA_F32},
        {PORTA_F16, PORTA_BF16, PORTA_F32},
        {PORTA_U8, PORTA_I8, PORTA_I16},
        {PORTA_F32, PORTA_F64, PORTA_F64},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t sa[2] = {4, 6}, sb[2] = {6, 3};
        porta_tensor *a = random_view(&rng, cases[i].a, 2, sa, LAYOUT_CONTIGUOUS);
        porta_tensor *b = random_view(&rng, cases[i].b, 2, sb, LAYOUT_TRANSPOSED);
        porta_tensor *c = NULL;
        CHECK_OK(porta_matmul(a, b, &c));
        CHECK(porta_tensor_dtype(c) == cases[i].want);
        check_matmul(a, b, c, "promotion");
        porta_tensor_release(a);
        porta_tensor_release(b);
        porta_tensor_release(c);
    }
}

TEST(test_matmul_errors) {
    test_rng rng = test_rng_make(7);
    int64_t s23[2] = {2, 3}, s45[2] = {4, 5}, s3[1] = {3}, s34[2] = {3, 4};
    int64_t b234[3] = {2, 3, 4}, b334[3] = {3, 3, 4}, b223[3] = {2, 2, 3};
    porta_tensor *a = random_view(&rng, PORTA_F32, 2, s23, LAYOUT_CONTIGUOUS);
    porta_tensor *b = random_view(&rng, PORTA_F32, 2, s45, LAYOUT_CONTIGUOUS);
    porta_tensor *v = random_view(&rng, PORTA_F32, 1, s3, LAYOUT_CONTIGUOUS);
    porta_tensor *ok = random_view(&rng, PORTA_F32, 2, s34, LAYOUT_CONTIGUOUS);
    porta_tensor *flags = random_view(&rng, PORTA_BOOL, 2, s34, LAYOUT_CONTIGUOUS);
    porta_tensor *ba = random_view(&rng, PORTA_F32, 3, b223, LAYOUT_CONTIGUOUS);
    porta_tensor *bb = random_view(&rng, PORTA_F32, 3, b334, LAYOUT_CONTIGUOUS);
    porta_tensor *out = NULL;
    CHECK_ERR(porta_matmul(a, b, &out), PORTA_ERR_SHAPE,
              "matmul: shapes [2, 3] and [4, 5] cannot be multiplied (3 != 4)");
    CHECK_ERR(porta_matmul(v, ok, &out), PORTA_ERR_SHAPE, "rank >= 2");
    porta_tensor *scalar = random_view(&rng, PORTA_F32, 0, s3, LAYOUT_CONTIGUOUS);
    CHECK_ERR(porta_matmul(scalar, scalar, &out), PORTA_ERR_SHAPE, "[] and []");
    porta_tensor_release(scalar);
    CHECK_ERR(porta_matmul(ok, v, &out), PORTA_ERR_SHAPE, "[3, 4] and [3]");
    CHECK_ERR(porta_matmul(a, flags, &out), PORTA_ERR_DTYPE, "bool");
    CHECK_ERR(porta_matmul(ba, bb, &out), PORTA_ERR_SHAPE, "cannot be broadcast");
    CHECK_ERR(porta_matmul(NULL, ok, &out), PORTA_ERR_INVALID_ARGUMENT, "NULL");
    CHECK_ERR(porta_matmul(a, ok, NULL), PORTA_ERR_INVALID_ARGUMENT, "out");
    CHECK(out == NULL);
    /* out= with the wrong shape, or a dtype the result cannot be cast to */
    porta_tensor *wrong = random_view(&rng, PORTA_F32, 3, b234, LAYOUT_CONTIGUOUS);
    porta_tensor *ints = random_view(&rng, PORTA_I32, 2, s34, LAYOUT_CONTIGUOUS);
    porta_tensor *target = wrong;
    CHECK_ERR(porta_matmul(a, ok, &target), PORTA_ERR_SHAPE, "out");
    target = ints;
    int64_t s33[2] = {3, 3};
    porta_tensor *sq3 = random_view(&rng, PORTA_F32, 2, s33, LAYOUT_CONTIGUOUS);
    CHECK_ERR(porta_matmul(sq3, ok, &target), PORTA_ERR_DTYPE, "int32");
    /* The graph builder infers the same shapes and rejects the same input. */
    porta_graph *graph = NULL;
    CHECK_OK(porta_graph_create(&graph));
    porta_node na, nb, nc, nbad;
    CHECK_OK(porta_graph_input(graph, PORTA_F16, 4, (int64_t[]){5, 1, 2, 3}, &na));
    CHECK_OK(porta_graph_input(graph, PORTA_I64, 3, (int64_t[]){7, 3, 4}, &nb));
    CHECK_OK(porta_graph_matmul(graph, na, nb, &nc));
    porta_dtype dtype;
    int rank;
    int64_t sizes[PORTA_MAX_RANK];
    CHECK_OK(porta_graph_node_type(graph, nc, &dtype, &rank, sizes));
    CHECK(dtype == PORTA_F16 && rank == 4 && sizes[0] == 5 && sizes[1] == 7 && sizes[2] == 2 &&
          sizes[3] == 4);
    CHECK_ERR(porta_graph_matmul(graph, nb, na, &nbad), PORTA_ERR_SHAPE, "(4 != 2)");
    porta_graph_free(graph);
    porta_tensor_release(sq3);
    porta_tensor_release(ints);
    porta_tensor_release(wrong);
    porta_tensor_release(a);
    porta_tensor_release(b);
    porta_tensor_release(v);
    porta_tensor_release(ok);
    porta_tensor_release(flags);
    porta_tensor_release(ba);
    porta_tensor_release(bb);
}

/* Every allocation a matmul makes can fail cleanly: the output, the cast of
 * a promoted operand, and the kernels' scratch (packing buffers, float32
 * copies of half-precision operands, sgemm's own). */
TEST(test_matmul_out_of_memory) {
    test_rng rng = test_rng_make(8);
    const porta_dtype dtypes[] = {PORTA_F32, PORTA_F64, PORTA_BF16, PORTA_I16};
    for (int d = 0; d < 4; d++) {
        int64_t sa[2] = {40, 50}, sb[2] = {50, 30}, sc[2] = {40, 30};
        porta_tensor *a = random_view(&rng, dtypes[d], 2, sa, LAYOUT_CONTIGUOUS);
        porta_tensor *b = random_view(&rng, dtypes[d], 2, sb, LAYOUT_TRANSPOSED);
        porta_tensor *wide = random_view(&rng, PORTA_F64, 2, sb, LAYOUT_CONTIGUOUS);
        porta_tensor *c = NULL, *out = NULL;
        CHECK_OK(porta_tensor_empty(test_cpu(), dtypes[d], 2, sc, &c));
        porta_set_memory_limit(porta_memory_allocated() + 256);
        CHECK_ERR(porta_matmul(a, b, &out), PORTA_ERR_OUT_OF_MEMORY, NULL);
        CHECK_ERR(porta_matmul(a, wide, &out), PORTA_ERR_OUT_OF_MEMORY, NULL);
        porta_tensor *target = c;
        porta_status *status = porta_matmul(a, b, &target);
        /* sgemm may not need scratch for a small problem; the others must. */
        if (dtypes[d] != PORTA_F32)
            CHECK_ERR(status, PORTA_ERR_OUT_OF_MEMORY, NULL);
        else
            porta_status_free(status);
        porta_set_memory_limit(0);
        CHECK(out == NULL);
        porta_tensor_release(c);
        porta_tensor_release(a);
        porta_tensor_release(b);
        porta_tensor_release(wide);
    }
}
