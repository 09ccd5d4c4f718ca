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

/* Swaps rows r and t of b [?, k]. */
static void swap_rows(double *b, int64_t k, int64_t r, int64_t t) {
    for (int64_t c = 0; c < k; c++) {
        double v = b[r * k + c];
        b[r * k + c] = b[t * k + c];
        b[t * k + c] = v;
    }
}

/* LAPACK's dsytf2 with UPLO = 'L' (Bunch-Kaufman), indices 0-based. */
void cpu_factor_ldl(double *a, int64_t n, double *pivots) {
    const double alpha = (1 + sqrt(17.0)) / 8;
#define A(i, j) a[(i) * n + (j)]
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = i + 1; j < n; j++) A(i, j) = 0;
    int64_t k = 0;
    while (k < n) {
        int64_t step = 1, kp = k, imax = k;
        double absakk = fabs(A(k, k)), colmax = 0;
        for (int64_t i = k + 1; i < n; i++)
            if (fabs(A(i, k)) > colmax) colmax = fabs(A(i, k)), imax = i;
        if (!(fmax(absakk, colmax) != 0) || isnan(absakk)) {
            kp = k; /* a zero column: D[k][k] = 0 is LAPACK's info */
        } else if (absakk >= alpha * colmax) {
            kp = k;
        } else {
            double rowmax = 0;
            for (int64_t j = k; j < imax; j++) rowmax = fmax(rowmax, fabs(A(imax, j)));
            for (int64_t i = imax + 1; i < n; i++) rowmax = fmax(rowmax, fabs(A(i, imax)));
            if (absakk >= alpha * colmax * (colmax / rowmax)) {
                kp = k;
            } else if (fabs(A(imax, imax)) >= alpha * rowmax) {
                kp = imax;
            } else {
                kp = imax;
                step = 2;
            }
        }
        int64_t kk = k + step - 1;
        if (kp != kk && fmax(absakk, colmax) != 0) {
            for (int64_t i = kp + 1; i < n; i++) {
                double t = A(i, kk);
                A(i, kk) = A(i, kp);
                A(i, kp) = t;
            }
            for (int64_t j = kk + 1; j < kp; j++) {
                double t = A(j, kk);
                A(j, kk) = A(kp, j);
                A(kp, j) = t;
            }
            double t = A(kk, kk);
            A(kk, kk) = A(kp, kp);
            A(kp, kp) = t;
            if (step == 2) {
                t = A(k + 1, k);
                A(k + 1, k) = A(kp, k);
                A(kp, k) = t;
            }
        }
        if (step == 1 && fmax(absakk, colmax) != 0 && !isnan(absakk)) {
            double d11 = 1 / A(k, k);
            for (int64_t j = k + 1; j < n; j++)
                for (int64_t i = j; i < n; i++) A(i, j) -= d11 * A(i, k) * A(j, k);
            for (int64_t i = k + 1; i < n; i++) A(i, k) *= d11;
        } else if (step == 2 && k < n - 2) {
            double d21 = A(k + 1, k);
            double d11 = A(k + 1, k + 1) / d21, d22 = A(k, k) / d21;
            double t = 1 / (d11 * d22 - 1);
            d21 = t / d21;
            for (int64_t j = k + 2; j < n; j++) {
                double wk = d21 * (d11 * A(j, k) - A(j, k + 1));
                double wkp1 = d21 * (d22 * A(j, k + 1) - A(j, k));
                for (int64_t i = j; i < n; i++) A(i, j) -= A(i, k) * wk + A(i, k + 1) * wkp1;
                A(j, k) = wk;
                A(j, k + 1) = wkp1;
            }
        }
        if (step == 1) {
            pivots[k] = (double)(kp + 1);
        } else {
            pivots[k] = pivots[k + 1] = -(double)(kp + 1);
        }
        k += step;
    }
}

/* LAPACK's dsytrs with UPLO = 'L' on ld [n, n] and pivots from
 * cpu_factor_ldl, b [n, k] overwritten with x. */
void cpu_factor_ldl_solve(const double *ld, const double *pivots, int64_t n, double *b,
                          int64_t k) {
    const double *a = ld;
    int64_t i = 0;
    while (i < n) { /* L D y = b */
        if (pivots[i] > 0) {
            int64_t kp = (int64_t)pivots[i] - 1;
            if (kp != i) swap_rows(b, k, i, kp);
            for (int64_t r = i + 1; r < n; r++)
                for (int64_t c = 0; c < k; c++) b[r * k + c] -= A(r, i) * b[i * k + c];
            for (int64_t c = 0; c < k; c++) b[i * k + c] /= A(i, i);
            i += 1;
        } else {
            int64_t kp = -(int64_t)pivots[i] - 1;
            if (kp != i + 1) swap_rows(b, k, i + 1, kp);
            for (int64_t r = i + 2; r < n; r++)
                for (int64_t c = 0; c < k; c++)
                    b[r * k + c] -= A(r, i) * b[i * k + c] + A(r, i + 1) * b[(i + 1) * k + c];
            double akm1k = A(i + 1, i), akm1 = A(i, i) / akm1k, ak = A(i + 1, i + 1) / akm1k;
            double denom = akm1 * ak - 1;
            for (int64_t c = 0; c < k; c++) {
                double bkm1 = b[i * k + c] / akm1k, bk = b[(i + 1) * k + c] / akm1k;
                b[i * k + c] = (ak * bkm1 - bk) / denom;
                b[(i + 1) * k + c] = (akm1 * bk - bkm1) / denom;
            }
            i += 2;
        }
    }
    i = n - 1;
    while (i >= 0) { /* L^T x = y, the interchanges undone */
        if (pivots[i] > 0) {
            for (int64_t r = i + 1; r < n; r++)
                for (int64_t c = 0; c < k; c++) b[i * k + c] -= A(r, i) * b[r * k + c];
            int64_t kp = (int64_t)pivots[i] - 1;
            if (kp != i) swap_rows(b, k, i, kp);
            i -= 1;
        } else {
            for (int64_t r = i + 1; r < n; r++)
                for (int64_t c = 0; c < k; c++) {
                    b[i * k + c] -= A(r, i) * b[r * k + c];
                    b[(i - 1) * k + c] -= A(r, i - 1) * b[r * k + c];
                }
            int64_t kp = -(int64_t)pivots[i] - 1;
            if (kp != i) swap_rows(b, k, i, kp);
            i -= 2;
        }
    }
#undef A
}
