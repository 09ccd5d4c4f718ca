/* What the linear-algebra compositions share: the factorisation primitive
 * as a scope step, views of matrices (transposes, rows, diagonals),
 * triangles, identities, LAPACK-style info outputs and PyTorch's errors
 * for them. */
#ifndef PORTA_ATEN_LINALG_FACTOR_H
#define PORTA_ATEN_LINALG_FACTOR_H

#include "aten/dispatch/scope.h"

/* porta_factor as a step. */
porta_tensor *aten_linalg_factor(aten_scope *s, porta_factor_op op, int flags,
                                 const porta_tensor *a, const porta_tensor *b);
/* Checks that x is a float32 or float64 batch of matrices (PyTorch's
 * wording: "<op>: Expected a floating point or complex tensor as input.
 * Got Half" and "... must have at least 2 dimensions."). */
porta_status *aten_linalg_check_matrix(const char *op, const char *name, const porta_tensor *x);
porta_status *aten_linalg_check_square(const char *op, const char *name, const porta_tensor *x);
/* x with its last two axes swapped (a view). */
porta_tensor *aten_linalg_transpose(aten_scope *s, const porta_tensor *x);
/* x's values laid out column-major (the transpose of a contiguous copy of
 * its transpose), as LAPACK leaves a factorisation on PyTorch's CPU. */
porta_tensor *aten_linalg_column_major(aten_scope *s, const porta_tensor *x);
/* A tensor of dtype [0] on like's device: an output PyTorch leaves empty. */
porta_tensor *aten_linalg_empty(aten_scope *s, const porta_tensor *like, porta_dtype dtype);
/* Rows [start, stop) or columns of x (views). */
porta_tensor *aten_linalg_rows(aten_scope *s, const porta_tensor *x, int64_t start, int64_t stop);
porta_tensor *aten_linalg_columns(aten_scope *s, const porta_tensor *x, int64_t start,
                                  int64_t stop);
/* The main diagonal of x [..., m, n] as [..., min(m, n)] (a view). */
porta_tensor *aten_linalg_diagonal(aten_scope *s, const porta_tensor *x);
/* x with elements above (tril) or below (triu) diagonal `k` zeroed. */
porta_tensor *aten_linalg_tril(aten_scope *s, const porta_tensor *x, int64_t k);
porta_tensor *aten_linalg_triu(aten_scope *s, const porta_tensor *x, int64_t k);
/* The [rows, cols] identity of dtype on device. */
porta_tensor *aten_linalg_eye(aten_scope *s, porta_device *device, porta_dtype dtype, int64_t rows,
                         int64_t cols);
/* int32 [...]: 1 + the first position along the last axis where `bad`
 * (bool [..., n]) holds, 0 where it never does: LAPACK's info. */
porta_tensor *aten_linalg_first_failure(aten_scope *s, const porta_tensor *bad);
/* Raises PyTorch's error for a nonzero info (int32, one per matrix) of
 * `api` ("linalg.cholesky", "linalg.inv", ...): torch's
 * _linalg_check_errors, worded alike. is_matrix: one matrix, no batch. */
porta_status *aten_linalg_check_errors(const porta_tensor *info, const char *api, bool is_matrix);
/* The row permutation of LU pivots [..., k] (1-based, LAPACK's) for m
 * rows: int64 [..., m], perm[i] the row of A that row i of L U holds;
 * inverse: its inverse permutation. Read on the host: pivots are
 * sequential swaps. */
porta_tensor *aten_linalg_pivot_permutation(aten_scope *s, const porta_tensor *pivots, int64_t m,
                                       bool inverse);
/* The first `columns` columns of Q = H_1 ... H_k, H_j = I - tau_j v_j v_j^T,
 * with v_j column j of v [..., m, k] below the diagonal (unit on it): orgqr.
 * One rank-1 update per reflector, each a pair of matmuls. */
porta_tensor *aten_linalg_householder_product(aten_scope *s, const porta_tensor *v,
                                         const porta_tensor *tau, int64_t columns);
/* The SVD of a [..., m, n]: u [..., m, k] (or [..., m, m] when full),
 * values [..., k] descending, vh [..., k, n], k = min(m, n). */
void aten_linalg_svd(aten_scope *s, const porta_tensor *a, bool full, porta_tensor **u,
                     porta_tensor **values, porta_tensor **vh);

#endif
