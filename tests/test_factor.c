/* The factorisation primitive (porta_factor) against known results: small
 * matrices with hand-computed factors, batches mixing good and failing
 * matrices (not positive-definite, singular), strided and broadcast
 * operands, the graph builder, and the errors for bad operands. */
#include <stdlib.h>
#include <string.h>

#include "test.h"

#define SHAPE(...) ((const int64_t[]){__VA_ARGS__})

static porta_tensor *from(porta_dtype dtype, int rank, const int64_t *sizes,
                          const double *values) {
    porta_tensor *t = NULL;
    porta_status *status = porta_tensor_from_host(test_cpu(), PORTA_F64, rank, sizes, values, &t);
    if (status) {
        test_fail(__FILE__, __LINE__, "from_host: %s", porta_status_message(status));
        porta_status_free(status);
        return NULL;
    }
    if (dtype == PORTA_F64) return t;
    porta_tensor *cast = NULL;
    status = porta_cast(t, dtype, &cast);
    porta_tensor_release(t);
    if (status) {
        test_fail(__FILE__, __LINE__, "cast: %s", porta_status_message(status));
        porta_status_free(status);
    }
    return cast;
}

/* Runs op on a (and b) and compares the packed result with want. */
static void check_factor(porta_factor_op op, int flags, const porta_tensor *a,
                         const porta_tensor *b, const double *want, int64_t n, double tol) {
    porta_tensor *out = NULL;
    CHECK_OK(porta_factor(op, flags, a, b, &out));
    CHECK(porta_tensor_numel(out) == n);
    double *got = test_to_doubles(out);
    CHECK(test_close(porta_factor_op_name(op), got, want, n, tol, tol));
    free(got);
    porta_tensor_release(out);
}

TEST(factor_cholesky_batch_with_a_matrix_not_positive_definite) {
    /* the second matrix fails at column 1 (-1 on the diagonal): that column
     * and the later ones are zero, so L[1][1] = 0 gives info 2 */
    static const double a[] = {4, 12, -16, 12, 37, -43, -16, -43, 98,
                               1, 0, 0, 0, -1, 0, 0, 0, 1};
    static const double want[] = {2, 0, 0, 6, 1, 0, -8, 5, 3,
                                  1, 0, 0, 0, 0, 0, 0, 0, 0};
    for (int f = 0; f < 2; f++) {
        porta_dtype dtype = f ? PORTA_F32 : PORTA_F64;
        porta_tensor *x = from(dtype, 3, SHAPE(2, 3, 3), a);
        check_factor(PORTA_FACTOR_CHOLESKY, 0, x, NULL, want, 18, test_rtol(dtype));
        porta_tensor_release(x);
    }
}

TEST(factor_lu_pivots_and_a_singular_matrix) {
    /* [[1, 2], [3, 4]]: row 2 pivots, L = [[1, 0], [1/3, 1]], U = [[3, 4],
     * [0, 2/3]]; [[1, 2], [2, 4]] leaves U[1][1] = 0 */
    static const double a[] = {1, 2, 3, 4, 1, 2, 2, 4};
    static const double want[] = {3, 4, 1.0 / 3, 2.0 / 3, 2, 2,
                                  2, 4, 0.5, 0, 2, 2};
    porta_tensor *x = from(PORTA_F64, 3, SHAPE(2, 2, 2), a);
    check_factor(PORTA_FACTOR_LU, 0, x, NULL, want, 12, 1e-15);
    porta_tensor_release(x);
    /* a wide matrix: min(m, n) = 2 pivots in a row of 3 */
    static const double wide[] = {0, 1, 2, 4, 5, 6};
    static const double wide_want[] = {4, 5, 6, 0, 1, 2, 2, 2, 0};
    x = from(PORTA_F32, 2, SHAPE(2, 3), wide);
    check_factor(PORTA_FACTOR_LU, 0, x, NULL, wide_want, 9, 1e-6);
    porta_tensor_release(x);
}

TEST(factor_triangular_solve_lower_upper_unit_broadcast_strided) {
    static const double lower[] = {2, 0, 1, 1};
    static const double b[] = {2, 4, 3, 5, 0, 2, 1, 1};
    porta_tensor *a = from(PORTA_F64, 2, SHAPE(2, 2), lower);
    porta_tensor *rhs = from(PORTA_F64, 3, SHAPE(2, 2, 2), b);
    /* x0 = b0 / 2, x1 = b1 - x0, a broadcast over b's batch */
    static const double want_lower[] = {1, 2, 2, 3, 0, 1, 1, 0};
    check_factor(PORTA_FACTOR_TRIANGULAR_SOLVE, 0, a, rhs, want_lower, 8, 1e-15);
    /* the transposed view is upper: [[2, 1], [0, 1]]; unit diagonal reads 1s */
    porta_tensor *upper = test_view_on(a, 2, SHAPE(2, 2), SHAPE(1, 2), 0);
    static const double want_upper[] = {-0.5, -0.5, 3, 5, -0.5, 0.5, 1, 1};
    check_factor(PORTA_FACTOR_TRIANGULAR_SOLVE, PORTA_FACTOR_UPPER, upper, rhs, want_upper, 8,
                 1e-15);
    static const double want_unit[] = {-1, -1, 3, 5, -1, 1, 1, 1};
    check_factor(PORTA_FACTOR_TRIANGULAR_SOLVE, PORTA_FACTOR_UPPER | PORTA_FACTOR_UNIT_DIAGONAL,
                 upper, rhs, want_unit, 8, 1e-15);
    porta_tensor_release(upper);
    porta_tensor_release(a);
    porta_tensor_release(rhs);
}

TEST(factor_qr_householder_as_geqrf) {
    /* [3, 4]^T: beta = -5, tau = 1.6, v = [1, 0.5] */
    static const double a[] = {3, 4};
    static const double want[] = {-5, 0.5, 1.6};
    porta_tensor *x = from(PORTA_F64, 2, SHAPE(2, 1), a);
    check_factor(PORTA_FACTOR_QR, 0, x, NULL, want, 3, 1e-15);
    porta_tensor_release(x);
    /* a zero column below the diagonal: H = I, tau = 0 */
    static const double diagonal[] = {2, 0, 0, 3};
    static const double diagonal_want[] = {2, 0, 0, 3, 0, 0};
    x = from(PORTA_F64, 2, SHAPE(2, 2), diagonal);
    check_factor(PORTA_FACTOR_QR, 0, x, NULL, diagonal_want, 6, 1e-15);
    porta_tensor_release(x);
}

/* |v| of each element: eigen and singular vectors are unique up to sign. */
static void check_abs(const char *what, porta_tensor *out, const double *want, int64_t n,
                      double tol) {
    double *got = test_to_doubles(out);
    for (int64_t i = 0; i < n; i++) got[i] = fabs(got[i]);
    CHECK(test_close(what, got, want, n, tol, tol));
    free(got);
}

TEST(factor_eigh_ascending_orthonormal) {
    /* only the lower triangle is read: the 9 above the diagonal is ignored */
    static const double a[] = {2, 9, 1, 2};
    const double h = sqrt(0.5);
    const double want[] = {1, 3, h, h, h, h};
    porta_tensor *x = from(PORTA_F64, 2, SHAPE(2, 2), a), *out = NULL;
    CHECK_OK(porta_factor(PORTA_FACTOR_EIGH, 0, x, NULL, &out));
    check_abs("eigh", out, want, 6, 1e-14);
    double *got = test_to_doubles(out);
    CHECK(fabs(got[2] * got[3] + got[4] * got[5]) < 1e-14); /* eigenvector 0 . eigenvector 1 */
    CHECK(fabs(got[2] + got[4]) < 1e-14);                    /* eigenvalue 1: [1, -1] / sqrt 2 */
    free(got);
    porta_tensor_release(out);
    porta_tensor_release(x);
}

TEST(factor_svd_values_descending_and_rank_deficient) {
    /* [[3, 0], [4, 5]]: A^T A = [[25, 20], [20, 25]], values sqrt 45, sqrt 5 */
    static const double a[] = {3, 0, 4, 5, 1, 1, 1, 1};
    porta_tensor *x = from(PORTA_F64, 3, SHAPE(2, 2, 2), a), *out = NULL;
    CHECK_OK(porta_factor(PORTA_FACTOR_SVD, 0, x, NULL, &out));
    double *got = test_to_doubles(out);
    /* per matrix: U rows 0-1, S row 2, V rows 3-4 */
    const double want_values[] = {sqrt(45), sqrt(5), 2, 0};
    const double got_values[] = {got[4], got[5], got[14], got[15]};
    CHECK(test_close("singular values", got_values, want_values, 4, 1e-14, 1e-14));
    for (int b = 0; b < 2; b++) { /* U diag(S) V^T rebuilds A; U's columns are orthonormal */
        const double *u = got + 10 * b, *s = u + 4, *v = u + 6;
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 2; j++) {
                double rebuilt = 0, dot = 0;
                for (int k = 0; k < 2; k++) {
                    rebuilt += u[i * 2 + k] * s[k] * v[j * 2 + k];
                    dot += u[k * 2 + i] * u[k * 2 + j];
                }
                CHECK(fabs(rebuilt - a[4 * b + 2 * i + j]) < 1e-13);
                CHECK(fabs(dot - (i == j)) < 1e-13);
            }
    }
    free(got);
    porta_tensor_release(out);
    porta_tensor_release(x);
}

TEST(factor_graph_node_matches_eager) {
    static const double a[] = {4, 2, 2, 3};
    porta_tensor *x = from(PORTA_F64, 2, SHAPE(2, 2), a), *eager = NULL, *outputs[1] = {NULL};
    CHECK_OK(porta_factor(PORTA_FACTOR_CHOLESKY, 0, x, NULL, &eager));
    porta_graph *g = NULL;
    porta_node input, factor, unused;
    CHECK_OK(porta_graph_create(&g));
    CHECK_OK(porta_graph_input(g, PORTA_F64, 2, SHAPE(2, 2), &input));
    CHECK_OK(porta_graph_factor(g, PORTA_FACTOR_CHOLESKY, 0, input, -1, &factor));
    CHECK_ERR(porta_graph_factor(g, PORTA_FACTOR_CHOLESKY, PORTA_FACTOR_UPPER, input, -1, &unused),
              PORTA_ERR_INVALID_ARGUMENT, "factor.cholesky: expected flags within 0, got 1");
    CHECK_OK(porta_graph_output(g, factor));
    CHECK_OK(porta_graph_run(g, test_cpu(), &x, 1, outputs, 1));
    double *got = test_to_doubles(outputs[0]), *want = test_to_doubles(eager);
    CHECK(test_close("graph cholesky", got, want, 4, 0, 0));
    free(got);
    free(want);
    porta_tensor_release(outputs[0]);
    porta_graph_free(g);
    porta_tensor_release(eager);
    porta_tensor_release(x);
}

TEST(factor_errors_name_what_was_expected) {
    static const double a[] = {1, 2, 3, 4, 5, 6};
    porta_tensor *wide = from(PORTA_F64, 2, SHAPE(2, 3), a);
    porta_tensor *ints = from(PORTA_I32, 2, SHAPE(2, 3), a);
    porta_tensor *out = NULL;
    CHECK_ERR(porta_factor(PORTA_FACTOR_CHOLESKY, 0, wide, NULL, &out), PORTA_ERR_SHAPE,
              "factor.cholesky: A must be batches of square matrices, but A has shape 2 x 3");
    CHECK_ERR(porta_factor(PORTA_FACTOR_LU, 0, ints, NULL, &out), PORTA_ERR_DTYPE,
              "expected A of dtype float32 or float64, got int32");
    CHECK_ERR(porta_factor(PORTA_FACTOR_SVD, 0, wide, NULL, &out), PORTA_ERR_SHAPE,
              "at least as many rows as columns, got 2 x 3");
    CHECK_ERR(porta_factor(PORTA_FACTOR_TRIANGULAR_SOLVE, 0, wide, NULL, &out),
              PORTA_ERR_INVALID_ARGUMENT, "b");
    CHECK_ERR(porta_factor(PORTA_FACTOR_OP_COUNT, 0, wide, NULL, &out),
              PORTA_ERR_INVALID_ARGUMENT, "expected an op below 8, got 8");
    CHECK(out == NULL);
    porta_tensor_release(wide);
    porta_tensor_release(ints);
}

TEST(factor_aten_det_and_solve_through_the_op_table) {
    static const double a[] = {1, 2, 3, 4};
    porta_tensor *x = from(PORTA_F64, 2, SHAPE(2, 2), a);
    porta_value args[1] = {{.kind = PORTA_VALUE_TENSOR, .tensor = x}};
    porta_value *results = NULL;
    int count = 0;
    CHECK_OK(porta_aten_call(porta_aten_op_find("_linalg_det"), args, 1, &results, &count));
    CHECK(count == 3 && results[0].kind == PORTA_VALUE_TENSOR);
    double *det = test_to_doubles(results[0].tensor);
    CHECK(fabs(det[0] + 2) < 1e-14); /* 1 * 4 - 2 * 3, one row swap */
    free(det);
    porta_aten_results_free(results, count);
    porta_tensor_release(x);
}

TEST(factor_ldl_bunch_kaufman_as_sytrf_and_its_solve) {
    /* LAPACK's results: a 2x2 block first (pivots -2, -2), then two 1x1 */
    static const double a[] = {1, 4, 2, 0, 4, 0, 1, 3, 2, 1, -2, 5, 0, 3, 5, 1};
    static const double want[] = {1, 0, 0, 0, 4, 0, 0, 0, 0.25, 0.4375, -2.9375, 0,
                                  0.75, -0.1875, -1.2553191489361701, 6.191489361702128,
                                  -2, -2, 3, 4};
    porta_tensor *x = from(PORTA_F64, 2, SHAPE(4, 4), a), *packed = NULL;
    check_factor(PORTA_FACTOR_LDL, 0, x, NULL, want, 20, 1e-14);
    CHECK_OK(porta_factor(PORTA_FACTOR_LDL, 0, x, NULL, &packed));
    static const double b[] = {1, 2, 3, 4};
    static const double solution[] = {-0.36769759450171824, 0.054982817869415834,
                                      0.5738831615120275, 0.9656357388316152};
    porta_tensor *rhs = from(PORTA_F64, 2, SHAPE(4, 1), b);
    check_factor(PORTA_FACTOR_LDL_SOLVE, 0, packed, rhs, solution, 4, 1e-14);
    porta_tensor_release(rhs);
    porta_tensor_release(packed);
    porta_tensor_release(x);
}
