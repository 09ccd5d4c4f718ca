/* The factorisations of PRIM_FACTOR on one row-major double matrix: the
 * unblocked algorithms that the CPU kernel runs per batch item (and that
 * the OpenCL C kernels follow step for step). */
#ifndef PORTA_CPU_FACTOR_DENSE_H
#define PORTA_CPU_FACTOR_DENSE_H

#include <stdbool.h>
#include <stdint.h>

/* a [n, n] (lower triangle read) becomes L; where a is not positive-
 * definite, column j (the first failing) and the later ones become zero. */
void cpu_factor_cholesky(double *a, int64_t n);
/* a [m, n] becomes L\U of partial pivoting; pivots[min(m, n)] LAPACK's
 * 1-based row numbers (a zero pivot leaves its column unscaled, as getrf). */
void cpu_factor_lu(double *a, int64_t m, int64_t n, double *pivots);
/* b [n, k] becomes x with a x = b, a [n, n] triangular. */
void cpu_factor_triangular_solve(const double *a, int64_t n, double *b, int64_t k, bool upper,
                             bool unit_diagonal);
/* a [m, n] becomes geqrf's R and Householder vectors; tau[min(m, n)]. */
void cpu_factor_qr(double *a, int64_t m, int64_t n, double *tau);
/* a [n, n] symmetric (lower triangle read; destroyed): values ascending,
 * vectors [n, n] the eigenvectors as columns (cyclic Jacobi). */
void cpu_factor_eigh(double *a, int64_t n, double *values, double *vectors);
/* a [m, n], m >= n, becomes the thin U; s[n] the singular values
 * descending, v [n, n] the right singular vectors as columns (one-sided
 * Jacobi; U's columns for zero singular values complete an orthonormal set). */
void cpu_factor_svd(double *a, int64_t m, int64_t n, double *s, double *v);
/* a [n, n] symmetric (lower triangle read) becomes sytrf's L and D (lower,
 * Bunch-Kaufman), zero above the diagonal; pivots[n] LAPACK's ipiv. */
void cpu_factor_ldl(double *a, int64_t n, double *pivots);
/* b [n, k] becomes x with A x = b, A given by cpu_factor_ldl's ld, pivots. */
void cpu_factor_ldl_solve(const double *ld, const double *pivots, int64_t n, double *b,
                          int64_t k);

#endif
