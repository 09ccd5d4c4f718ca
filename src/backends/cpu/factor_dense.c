/* The unblocked factorisations of PRIM_FACTOR in double precision on one
 * row-major matrix, with LAPACK's conventions where PyTorch's results
 * depend on them (getrf's pivots, geqrf's Householder vectors and tau). */
#include "backends/cpu/factor_dense.h"

#include <float.h>
#include <math.h>
#include <string.h>

/* Jacobi sweeps stop here at the latest; they converge quadratically, in
 * well under 30 sweeps for any size that fits in memory. */
#define MAX_SWEEPS 60

void cpu_factor_cholesky(double *a, int64_t n) {
    for (int64_t j = 0; j < n; j++) {
        double d = a[j * n + j];
        for (int64_t k = 0; k < j; k++) d -= a[j * n + k] * a[j * n + k];
        if (!(d > 0)) { /* not positive-definite (NaN included, as potrf) */
            for (int64_t i = j; i < n; i++)
                for (int64_t c = j; c <= i; c++) a[i * n + c] = 0;
            break;
        }
        double ljj = sqrt(d);
        a[j * n + j] = ljj;
        for (int64_t i = j + 1; i < n; i++) {
            double v = a[i * n + j];
            for (int64_t k = 0; k < j; k++) v -= a[i * n + k] * a[j * n + k];
            a[i * n + j] = v / ljj;
        }
    }
    for (int64_t i = 0; i < n; i++)
        for (int64_t c = i + 1; c < n; c++) a[i * n + c] = 0;
}

void cpu_factor_lu(double *a, int64_t m, int64_t n, double *pivots) {
    int64_t k = m < n ? m : n;
    for (int64_t j = 0; j < k; j++) {
        int64_t p = j;
        for (int64_t i = j + 1; i < m; i++)
            if (fabs(a[i * n + j]) > fabs(a[p * n + j])) p = i;
        pivots[j] = (double)(p + 1);
        if (p != j)
            for (int64_t c = 0; c < n; c++) {
                double t = a[j * n + c];
                a[j * n + c] = a[p * n + c];
                a[p * n + c] = t;
            }
        double pivot = a[j * n + j];
        if (pivot != 0)
            for (int64_t i = j + 1; i < m; i++) a[i * n + j] /= pivot;
        for (int64_t i = j + 1; i < m; i++) {
            double l = a[i * n + j];
            if (l == 0) continue;
            for (int64_t c = j + 1; c < n; c++) a[i * n + c] -= l * a[j * n + c];
        }
    }
}

void cpu_factor_triangular_solve(const double *a, int64_t n, double *b, int64_t k, bool upper,
                             bool unit_diagonal) {
    for (int64_t step = 0; step < n; step++) {
        int64_t i = upper ? n - 1 - step : step;
        int64_t from = upper ? i + 1 : 0, to = upper ? n : i;
        for (int64_t r = from; r < to; r++) {
            double air = a[i * n + r];
            if (air == 0) continue;
            for (int64_t c = 0; c < k; c++) b[i * k + c] -= air * b[r * k + c];
        }
        if (!unit_diagonal)
            for (int64_t c = 0; c < k; c++) b[i * k + c] /= a[i * n + i];
    }
}

void cpu_factor_qr(double *a, int64_t m, int64_t n, double *tau) {
    int64_t k = m < n ? m : n;
    for (int64_t j = 0; j < k; j++) {
        double alpha = a[j * n + j], xnorm = 0;
        for (int64_t i = j + 1; i < m; i++) xnorm = hypot(xnorm, a[i * n + j]);
        if (xnorm == 0) { /* H = I, as LAPACK's dlarfg */
            tau[j] = 0;
            continue;
        }
        double beta = -copysign(hypot(alpha, xnorm), alpha);
        tau[j] = (beta - alpha) / beta;
        double scale = 1 / (alpha - beta);
        for (int64_t i = j + 1; i < m; i++) a[i * n + j] *= scale;
        a[j * n + j] = beta;
        for (int64_t c = j + 1; c < n; c++) { /* apply I - tau v v^T, v[j] = 1 */
            double w = a[j * n + c];
            for (int64_t i = j + 1; i < m; i++) w += a[i * n + j] * a[i * n + c];
            w *= tau[j];
            a[j * n + c] -= w;
            for (int64_t i = j + 1; i < m; i++) a[i * n + c] -= w * a[i * n + j];
        }
    }
}

/* Swaps columns j and c of a [rows, n]. */
static void swap_columns(double *a, int64_t rows, int64_t n, int64_t j, int64_t c) {
    for (int64_t r = 0; r < rows; r++) {
        double t = a[r * n + j];
        a[r * n + j] = a[r * n + c];
        a[r * n + c] = t;
    }
}

/* Sorts values ascending or descending, with them the columns of first
 * [first_rows, n] and of second [n, n] (NULL: none): selection sort, n is
 * small next to the factorisation. */
static void sort_columns(double *values, double *first, int64_t first_rows, double *second,
                         int64_t n, bool descending) {
    for (int64_t j = 0; j < n; j++) {
        int64_t best = j;
        for (int64_t c = j + 1; c < n; c++)
            if (descending ? values[c] > values[best] : values[c] < values[best]) best = c;
        if (best == j) continue;
        double t = values[j];
        values[j] = values[best];
        values[best] = t;
        swap_columns(first, first_rows, n, j, best);
        if (second) swap_columns(second, n, n, j, best);
    }
}

void cpu_factor_eigh(double *a, int64_t n, double *values, double *vectors) {
    for (int64_t i = 0; i < n; i++)
        for (int64_t c = 0; c < n; c++) {
            if (c > i) a[i * n + c] = a[c * n + i];
            vectors[i * n + c] = i == c;
        }
    for (int sweep = 0; sweep < MAX_SWEEPS; sweep++) {
        double off = 0, total = 0;
        for (int64_t i = 0; i < n; i++)
            for (int64_t c = 0; c < n; c++) {
                double v = a[i * n + c] * a[i * n + c];
                total += v;
                if (c != i) off += v;
            }
        if (off <= DBL_EPSILON * DBL_EPSILON * total) break;
        for (int64_t p = 0; p < n; p++)
            for (int64_t q = p + 1; q < n; q++) {
                double apq = a[p * n + q];
                if (apq == 0) continue;
                double theta = (a[q * n + q] - a[p * n + p]) / (2 * apq);
                double t = copysign(1, theta) / (fabs(theta) + sqrt(theta * theta + 1));
                double c = 1 / sqrt(t * t + 1), s = t * c;
                for (int64_t k = 0; k < n; k++) { /* A J */
                    double x = a[k * n + p], y = a[k * n + q];
                    a[k * n + p] = c * x - s * y;
                    a[k * n + q] = s * x + c * y;
                }
                for (int64_t k = 0; k < n; k++) { /* J^T (A J) */
                    double x = a[p * n + k], y = a[q * n + k];
                    a[p * n + k] = c * x - s * y;
                    a[q * n + k] = s * x + c * y;
                }
                for (int64_t k = 0; k < n; k++) {
                    double x = vectors[k * n + p], y = vectors[k * n + q];
                    vectors[k * n + p] = c * x - s * y;
                    vectors[k * n + q] = s * x + c * y;
                }
            }
    }
    for (int64_t i = 0; i < n; i++) values[i] = a[i * n + i];
    sort_columns(values, vectors, n, NULL, n, false);
}

/* Column j of u [m, n] for a zero singular value: the first unit vector
 * that, orthogonalized (twice) against columns 0..j-1, keeps half its norm. */
static void complete_column(double *u, int64_t m, int64_t n, int64_t j) {
    for (int64_t r = 0; r < m; r++) {
        for (int64_t i = 0; i < m; i++) u[i * n + j] = i == r;
        for (int pass = 0; pass < 2; pass++)
            for (int64_t c = 0; c < j; c++) {
                double dot = 0;
                for (int64_t i = 0; i < m; i++) dot += u[i * n + c] * u[i * n + j];
                for (int64_t i = 0; i < m; i++) u[i * n + j] -= dot * u[i * n + c];
            }
        double norm = 0;
        for (int64_t i = 0; i < m; i++) norm = hypot(norm, u[i * n + j]);
        if (norm > 0.5) {
            for (int64_t i = 0; i < m; i++) u[i * n + j] /= norm;
            return;
        }
    }
}

void cpu_factor_svd(double *a, int64_t m, int64_t n, double *s, double *v) {
    for (int64_t i = 0; i < n; i++)
        for (int64_t c = 0; c < n; c++) v[i * n + c] = i == c;
    for (int sweep = 0; sweep < MAX_SWEEPS; sweep++) {
        bool rotated = false;
        for (int64_t p = 0; p < n; p++)
            for (int64_t q = p + 1; q < n; q++) {
                double alpha = 0, beta = 0, gamma = 0;
                for (int64_t i = 0; i < m; i++) {
                    double x = a[i * n + p], y = a[i * n + q];
                    alpha += x * x;
                    beta += y * y;
                    gamma += x * y;
                }
                if (!(fabs(gamma) > DBL_EPSILON * sqrt(alpha * beta))) continue;
                rotated = true;
                double zeta = (beta - alpha) / (2 * gamma);
                double t = copysign(1, zeta) / (fabs(zeta) + sqrt(1 + zeta * zeta));
                double c = 1 / sqrt(1 + t * t), sn = c * t;
                for (int64_t i = 0; i < m; i++) {
                    double x = a[i * n + p], y = a[i * n + q];
                    a[i * n + p] = c * x - sn * y;
                    a[i * n + q] = sn * x + c * y;
                }
                for (int64_t i = 0; i < n; i++) {
                    double x = v[i * n + p], y = v[i * n + q];
                    v[i * n + p] = c * x - sn * y;
                    v[i * n + q] = sn * x + c * y;
                }
            }
        if (!rotated) break;
    }
    for (int64_t j = 0; j < n; j++) {
        double norm = 0;
        for (int64_t i = 0; i < m; i++) norm = hypot(norm, a[i * n + j]);
        s[j] = norm;
    }
    /* sorted first, so the columns of zero values come last and are
     * completed against every other one (the Jacobi rotations leave the
     * columns orthogonal to rounding whatever their norms, so only values
     * too small to divide by need a completed column) */
    sort_columns(s, a, m, v, n, true);
    for (int64_t j = 0; j < n; j++) {
        if (s[j] > DBL_MIN / DBL_EPSILON) {
            for (int64_t i = 0; i < m; i++) a[i * n + j] /= s[j];
        } else {
            complete_column(a, m, n, j);
        }
    }
}
