/* PRIM_FACTOR in OpenCL C: the factorisations of backends/cpu/factor_dense.c
 * with the same algorithm choices, the same order of operations and the same
 * packed result (porta_factor_op), so results match the CPU's to rounding.
 * One work item factors one batch item: it reads the matrices through their
 * strides into double scratch, runs the unblocked algorithm there and writes
 * the packed result back. Devices without fp64 compute in float (the
 * prelude's `double`): float32 results then carry float's rounding, about
 * n * 1e-7 relative, where the CPU's are float32 roundings of double ones. */
#include <stdio.h>

#include "backends/clc/clk_kernels.h"
#include "backends/clc/clk_source.h"
#include "core/status.h"

/* The flags as numbers the kernel text can hold (porta.h's are enums). */
#define FACTOR_UPPER 1
#define FACTOR_UNIT_DIAGONAL 2
_Static_assert(FACTOR_UPPER == PORTA_FACTOR_UPPER && FACTOR_UNIT_DIAGONAL == PORTA_FACTOR_UNIT_DIAGONAL,
               "the factor kernels' flags are porta.h's");

/* Jacobi sweeps stop here at the latest, as on the CPU. */
#define FACTOR_MAX_SWEEPS 60
/* Row-major element (i, j) of the n-column matrix `a`. */
#define FACTOR_AT(i, j) a[(i) * n + (j)]

/* The arithmetic of one matrix in scratch (`__global double *`); the
 * machine epsilon and smallest normal follow `double`, which is float on
 * devices without fp64. */
#define FACTOR_DENSE_SOURCE_1                                                                \
    CLK_SOURCE(                                                                              \
        inline double factor_eps(void) {                                                     \
            return sizeof(double) == 8 ? (double)2.220446049250313e-16 : (double)1.1920929e-7f; \
        }                                                                                    \
        /* the smallest normal over epsilon: a singular value to divide by */                 \
        inline double factor_tiny(void) {                                                    \
            return sizeof(double) == 8 ? (double)1.0020841800044864e-292 : (double)9.8607613e-32f; \
        }                                                                                    \
        inline double factor_sign(double x) { return copysign((double)1, x); }               \
        void factor_cholesky(__global double *a, long n) {                                   \
            for (long j = 0; j < n; j++) {                                                   \
                double d = FACTOR_AT(j, j);                                                  \
                for (long k = 0; k < j; k++) d -= FACTOR_AT(j, k) * FACTOR_AT(j, k);         \
                if (!(d > 0)) {                                                              \
                    for (long i = j; i < n; i++)                                             \
                        for (long c = j; c <= i; c++) FACTOR_AT(i, c) = 0;                   \
                    break;                                                                   \
                }                                                                            \
                double ljj = sqrt(d);                                                        \
                FACTOR_AT(j, j) = ljj;                                                       \
                for (long i = j + 1; i < n; i++) {                                           \
                    double v = FACTOR_AT(i, j);                                              \
                    for (long k = 0; k < j; k++) v -= FACTOR_AT(i, k) * FACTOR_AT(j, k);     \
                    FACTOR_AT(i, j) = v / ljj;                                               \
                }                                                                            \
            }                                                                                \
            for (long i = 0; i < n; i++)                                                     \
                for (long c = i + 1; c < n; c++) FACTOR_AT(i, c) = 0;                        \
        }                                                                                    \
        void factor_lu(__global double *a, long m, long n, __global double *pivots) {        \
            long k = m < n ? m : n;                                                          \
            for (long j = 0; j < k; j++) {                                                   \
                long p = j;                                                                  \
                for (long i = j + 1; i < m; i++)                                             \
                    if (fabs(FACTOR_AT(i, j)) > fabs(FACTOR_AT(p, j))) p = i;                \
                pivots[j] = (double)(p + 1);                                                 \
                if (p != j)                                                                  \
                    for (long c = 0; c < n; c++) {                                           \
                        double t = FACTOR_AT(j, c);                                          \
                        FACTOR_AT(j, c) = FACTOR_AT(p, c);                                   \
                        FACTOR_AT(p, c) = t;                                                 \
                    }                                                                        \
                double pivot = FACTOR_AT(j, j);                                              \
                if (pivot != 0)                                                              \
                    for (long i = j + 1; i < m; i++) FACTOR_AT(i, j) /= pivot;               \
                for (long i = j + 1; i < m; i++) {                                           \
                    double l = FACTOR_AT(i, j);                                              \
                    if (l == 0) continue;                                                    \
                    for (long c = j + 1; c < n; c++) FACTOR_AT(i, c) -= l * FACTOR_AT(j, c); \
                }                                                                            \
            }                                                                                \
        }                                                                                    \
        void factor_triangular_solve(__global const double *a, long n, __global double *b,   \
                                     long k, int upper, int unit_diagonal) {                 \
            for (long step = 0; step < n; step++) {                                          \
                long i = upper ? n - 1 - step : step;                                        \
                long from = upper ? i + 1 : 0, to = upper ? n : i;                           \
                for (long r = from; r < to; r++) {                                           \
                    double air = FACTOR_AT(i, r);                                            \
                    if (air == 0) continue;                                                  \
                    for (long c = 0; c < k; c++) b[i * k + c] -= air * b[r * k + c];         \
                }                                                                            \
                if (!unit_diagonal)                                                          \
                    for (long c = 0; c < k; c++) b[i * k + c] /= FACTOR_AT(i, i);            \
            }                                                                                \
        }                                                                                    \
        void factor_qr(__global double *a, long m, long n, __global double *tau) {           \
            long k = m < n ? m : n;                                                          \
            for (long j = 0; j < k; j++) {                                                   \
                double alpha = FACTOR_AT(j, j), xnorm = 0;                                   \
                for (long i = j + 1; i < m; i++) xnorm = hypot(xnorm, FACTOR_AT(i, j));      \
                if (xnorm == 0) {                                                            \
                    tau[j] = 0;                                                              \
                    continue;                                                                \
                }                                                                            \
                double beta = -copysign(hypot(alpha, xnorm), alpha);                         \
                tau[j] = (beta - alpha) / beta;                                              \
                double scale = 1 / (alpha - beta);                                           \
                for (long i = j + 1; i < m; i++) FACTOR_AT(i, j) *= scale;                   \
                FACTOR_AT(j, j) = beta;                                                      \
                for (long c = j + 1; c < n; c++) {                                           \
                    double w = FACTOR_AT(j, c);                                              \
                    for (long i = j + 1; i < m; i++) w += FACTOR_AT(i, j) * FACTOR_AT(i, c); \
                    w *= tau[j];                                                             \
                    FACTOR_AT(j, c) -= w;                                                    \
                    for (long i = j + 1; i < m; i++) FACTOR_AT(i, c) -= w * FACTOR_AT(i, j); \
                }                                                                            \
            }                                                                                \
        }                                                                                    \
        void factor_swap_columns(__global double *a, long rows, long n, long j, long c) {    \
            for (long r = 0; r < rows; r++) {                                                \
                double t = FACTOR_AT(r, j);                                                  \
                FACTOR_AT(r, j) = FACTOR_AT(r, c);                                           \
                FACTOR_AT(r, c) = t;                                                         \
            }                                                                                \
        }                                                                                    \
        /* values sorted with the columns of first [first_rows, n] and of    \
         * second [n, n] (when has_second), as the CPU's selection sort */    \
        void factor_sort_columns(__global double *values, __global double *first,            \
                                 long first_rows, __global double *second, int has_second,   \
                                 long n, int descending) {                                   \
            for (long j = 0; j < n; j++) {                                                   \
                long best = j;                                                               \
                for (long c = j + 1; c < n; c++)                                             \
                    if (descending ? values[c] > values[best] : values[c] < values[best])    \
                        best = c;                                                            \
                if (best == j) continue;                                                     \
                double t = values[j];                                                        \
                values[j] = values[best];                                                    \
                values[best] = t;                                                            \
                factor_swap_columns(first, first_rows, n, j, best);                          \
                if (has_second) factor_swap_columns(second, n, n, j, best);                  \
            }                                                                                \
        })

#define FACTOR_DENSE_SOURCE_2                                                                \
    CLK_SOURCE(                                                                              \
        void factor_rotate_columns(__global double *a, long rows, long n, long p, long q,    \
                                   double c, double s) {                                     \
            for (long k = 0; k < rows; k++) {                                                \
                double x = FACTOR_AT(k, p), y = FACTOR_AT(k, q);                             \
                FACTOR_AT(k, p) = c * x - s * y;                                             \
                FACTOR_AT(k, q) = s * x + c * y;                                             \
            }                                                                                \
        }                                                                                    \
        void factor_eigh(__global double *a, long n, __global double *values,                \
                         __global double *vectors) {                                         \
            for (long i = 0; i < n; i++)                                                     \
                for (long c = 0; c < n; c++) {                                               \
                    if (c > i) FACTOR_AT(i, c) = FACTOR_AT(c, i);                            \
                    vectors[i * n + c] = i == c;                                             \
                }                                                                            \
            double eps = factor_eps();                                                       \
            for (int sweep = 0; sweep < FACTOR_MAX_SWEEPS; sweep++) {                        \
                double off = 0, total = 0;                                                   \
                for (long i = 0; i < n; i++)                                                 \
                    for (long c = 0; c < n; c++) {                                           \
                        double v = FACTOR_AT(i, c) * FACTOR_AT(i, c);                        \
                        total += v;                                                          \
                        if (c != i) off += v;                                                \
                    }                                                                        \
                if (off <= eps * eps * total) break;                                         \
                for (long p = 0; p < n; p++)                                                 \
                    for (long q = p + 1; q < n; q++) {                                       \
                        double apq = FACTOR_AT(p, q);                                        \
                        if (apq == 0) continue;                                              \
                        double theta = (FACTOR_AT(q, q) - FACTOR_AT(p, p)) / (2 * apq);      \
                        double t = factor_sign(theta) / (fabs(theta) + sqrt(theta * theta + 1)); \
                        double c = 1 / sqrt(t * t + 1), s = t * c;                           \
                        factor_rotate_columns(a, n, n, p, q, c, s);                          \
                        for (long k = 0; k < n; k++) {                                       \
                            double x = FACTOR_AT(p, k), y = FACTOR_AT(q, k);                 \
                            FACTOR_AT(p, k) = c * x - s * y;                                 \
                            FACTOR_AT(q, k) = s * x + c * y;                                 \
                        }                                                                    \
                        factor_rotate_columns(vectors, n, n, p, q, c, s);                    \
                    }                                                                        \
            }                                                                                \
            for (long i = 0; i < n; i++) values[i] = FACTOR_AT(i, i);                        \
            factor_sort_columns(values, vectors, n, vectors, 0, n, 0);                       \
        }                                                                                    \
        /* column j of u [m, n] for a zero singular value, as the CPU's */   \
        void factor_complete_column(__global double *a, long m, long n, long j) {            \
            for (long r = 0; r < m; r++) {                                                   \
                for (long i = 0; i < m; i++) FACTOR_AT(i, j) = i == r;                       \
                for (int pass = 0; pass < 2; pass++)                                         \
                    for (long c = 0; c < j; c++) {                                           \
                        double dot = 0;                                                      \
                        for (long i = 0; i < m; i++) dot += FACTOR_AT(i, c) * FACTOR_AT(i, j); \
                        for (long i = 0; i < m; i++) FACTOR_AT(i, j) -= dot * FACTOR_AT(i, c); \
                    }                                                                        \
                double norm = 0;                                                             \
                for (long i = 0; i < m; i++) norm = hypot(norm, FACTOR_AT(i, j));            \
                if (norm > 0.5f) {                                                           \
                    for (long i = 0; i < m; i++) FACTOR_AT(i, j) /= norm;                    \
                    return;                                                                  \
                }                                                                            \
            }                                                                                \
        }                                                                                    \
        void factor_svd(__global double *a, long m, long n, __global double *s,              \
                        __global double *v) {                                                \
            for (long i = 0; i < n; i++)                                                     \
                for (long c = 0; c < n; c++) v[i * n + c] = i == c;                          \
            double eps = factor_eps();                                                       \
            for (int sweep = 0; sweep < FACTOR_MAX_SWEEPS; sweep++) {                        \
                int rotated = 0;                                                             \
                for (long p = 0; p < n; p++)                                                 \
                    for (long q = p + 1; q < n; q++) {                                       \
                        double alpha = 0, beta = 0, gamma = 0;                               \
                        for (long i = 0; i < m; i++) {                                       \
                            double x = FACTOR_AT(i, p), y = FACTOR_AT(i, q);                 \
                            alpha += x * x;                                                  \
                            beta += y * y;                                                   \
                            gamma += x * y;                                                  \
                        }                                                                    \
                        if (!(fabs(gamma) > eps * sqrt(alpha * beta))) continue;             \
                        rotated = 1;                                                         \
                        double zeta = (beta - alpha) / (2 * gamma);                          \
                        double t = factor_sign(zeta) / (fabs(zeta) + sqrt(1 + zeta * zeta)); \
                        double c = 1 / sqrt(1 + t * t), sn = c * t;                          \
                        factor_rotate_columns(a, m, n, p, q, c, sn);                         \
                        factor_rotate_columns(v, n, n, p, q, c, sn);                         \
                    }                                                                        \
                if (!rotated) break;                                                         \
            }                                                                                \
            for (long j = 0; j < n; j++) {                                                   \
                double norm = 0;                                                             \
                for (long i = 0; i < m; i++) norm = hypot(norm, FACTOR_AT(i, j));            \
                s[j] = norm;                                                                 \
            }                                                                                \
            factor_sort_columns(s, a, m, v, 1, n, 1);                                        \
            for (long j = 0; j < n; j++) {                                                   \
                if (s[j] > factor_tiny()) {                                                  \
                    for (long i = 0; i < m; i++) FACTOR_AT(i, j) /= s[j];                    \
                } else {                                                                     \
                    factor_complete_column(a, m, n, j);                                      \
                }                                                                            \
            }                                                                                \
        })

/* LAPACK's dsytf2 and dsytrs with UPLO = 'L' (Bunch-Kaufman), as the CPU's
 * cpu_factor_ldl and cpu_factor_ldl_solve. */
#define FACTOR_LDL_SOURCE                                                                    \
    CLK_SOURCE(                                                                              \
        void factor_swap_rows(__global double *b, long k, long r, long t) {                  \
            for (long c = 0; c < k; c++) {                                                   \
                double v = b[r * k + c];                                                     \
                b[r * k + c] = b[t * k + c];                                                 \
                b[t * k + c] = v;                                                            \
            }                                                                                \
        }                                                                                    \
        void factor_ldl(__global double *a, long n, __global double *pivots) {               \
            const double alpha = (1 + sqrt((double)17)) / 8;                                 \
            for (long i = 0; i < n; i++)                                                     \
                for (long j = i + 1; j < n; j++) FACTOR_AT(i, j) = 0;                        \
            long k = 0;                                                                      \
            while (k < n) {                                                                  \
                long step = 1, kp = k, imax = k;                                             \
                double absakk = fabs(FACTOR_AT(k, k)), colmax = 0;                           \
                for (long i = k + 1; i < n; i++)                                             \
                    if (fabs(FACTOR_AT(i, k)) > colmax) colmax = fabs(FACTOR_AT(i, k)), imax = i; \
                int nan_diagonal = absakk != absakk;                                         \
                if (!(fmax(absakk, colmax) != 0) || nan_diagonal) {                          \
                    kp = k;                                                                  \
                } else if (absakk >= alpha * colmax) {                                       \
                    kp = k;                                                                  \
                } else {                                                                     \
                    double rowmax = 0;                                                       \
                    for (long j = k; j < imax; j++) rowmax = fmax(rowmax, fabs(FACTOR_AT(imax, j))); \
                    for (long i = imax + 1; i < n; i++)                                      \
                        rowmax = fmax(rowmax, fabs(FACTOR_AT(i, imax)));                     \
                    if (absakk >= alpha * colmax * (colmax / rowmax)) {                      \
                        kp = k;                                                              \
                    } else if (fabs(FACTOR_AT(imax, imax)) >= alpha * rowmax) {              \
                        kp = imax;                                                           \
                    } else {                                                                 \
                        kp = imax;                                                           \
                        step = 2;                                                            \
                    }                                                                        \
                }                                                                            \
                long kk = k + step - 1;                                                      \
                if (kp != kk && fmax(absakk, colmax) != 0) {                                 \
                    for (long i = kp + 1; i < n; i++) {                                      \
                        double t = FACTOR_AT(i, kk);                                         \
                        FACTOR_AT(i, kk) = FACTOR_AT(i, kp);                                 \
                        FACTOR_AT(i, kp) = t;                                                \
                    }                                                                        \
                    for (long j = kk + 1; j < kp; j++) {                                     \
                        double t = FACTOR_AT(j, kk);                                         \
                        FACTOR_AT(j, kk) = FACTOR_AT(kp, j);                                 \
                        FACTOR_AT(kp, j) = t;                                                \
                    }                                                                        \
                    double t = FACTOR_AT(kk, kk);                                            \
                    FACTOR_AT(kk, kk) = FACTOR_AT(kp, kp);                                   \
                    FACTOR_AT(kp, kp) = t;                                                   \
                    if (step == 2) {                                                         \
                        t = FACTOR_AT(k + 1, k);                                             \
                        FACTOR_AT(k + 1, k) = FACTOR_AT(kp, k);                              \
                        FACTOR_AT(kp, k) = t;                                                \
                    }                                                                        \
                }                                                                            \
                if (step == 1 && fmax(absakk, colmax) != 0 && !nan_diagonal) {               \
                    double d11 = 1 / FACTOR_AT(k, k);                                        \
                    for (long j = k + 1; j < n; j++)                                         \
                        for (long i = j; i < n; i++)                                         \
                            FACTOR_AT(i, j) -= d11 * FACTOR_AT(i, k) * FACTOR_AT(j, k);      \
                    for (long i = k + 1; i < n; i++) FACTOR_AT(i, k) *= d11;                 \
                } else if (step == 2 && k < n - 2) {                                         \
                    double d21 = FACTOR_AT(k + 1, k);                                        \
                    double d11 = FACTOR_AT(k + 1, k + 1) / d21, d22 = FACTOR_AT(k, k) / d21; \
                    double t = 1 / (d11 * d22 - 1);                                          \
                    d21 = t / d21;                                                           \
                    for (long j = k + 2; j < n; j++) {                                       \
                        double wk = d21 * (d11 * FACTOR_AT(j, k) - FACTOR_AT(j, k + 1));     \
                        double wkp1 = d21 * (d22 * FACTOR_AT(j, k + 1) - FACTOR_AT(j, k));   \
                        for (long i = j; i < n; i++)                                         \
                            FACTOR_AT(i, j) -= FACTOR_AT(i, k) * wk + FACTOR_AT(i, k + 1) * wkp1; \
                        FACTOR_AT(j, k) = wk;                                                \
                        FACTOR_AT(j, k + 1) = wkp1;                                          \
                    }                                                                        \
                }                                                                            \
                if (step == 1) {                                                             \
                    pivots[k] = (double)(kp + 1);                                            \
                } else {                                                                     \
                    pivots[k] = pivots[k + 1] = -(double)(kp + 1);                           \
                }                                                                            \
                k += step;                                                                   \
            }                                                                                \
        }                                                                                    \
        void factor_ldl_solve(__global const double *a, __global const double *pivots,       \
                              long n, __global double *b, long k) {                          \
            long i = 0;                                                                      \
            while (i < n) {                                                                  \
                if (pivots[i] > 0) {                                                         \
                    long kp = (long)pivots[i] - 1;                                           \
                    if (kp != i) factor_swap_rows(b, k, i, kp);                              \
                    for (long r = i + 1; r < n; r++)                                         \
                        for (long c = 0; c < k; c++) b[r * k + c] -= FACTOR_AT(r, i) * b[i * k + c]; \
                    for (long c = 0; c < k; c++) b[i * k + c] /= FACTOR_AT(i, i);            \
                    i += 1;                                                                  \
                } else {                                                                     \
                    long kp = -(long)pivots[i] - 1;                                          \
                    if (kp != i + 1) factor_swap_rows(b, k, i + 1, kp);                      \
                    for (long r = i + 2; r < n; r++)                                         \
                        for (long c = 0; c < k; c++)                                         \
                            b[r * k + c] -= FACTOR_AT(r, i) * b[i * k + c] +                 \
                                            FACTOR_AT(r, i + 1) * b[(i + 1) * k + c];        \
                    double akm1k = FACTOR_AT(i + 1, i), akm1 = FACTOR_AT(i, i) / akm1k;      \
                    double ak = FACTOR_AT(i + 1, i + 1) / akm1k;                             \
                    double denom = akm1 * ak - 1;                                            \
                    for (long c = 0; c < k; c++) {                                           \
                        double bkm1 = b[i * k + c] / akm1k, bk = b[(i + 1) * k + c] / akm1k; \
                        b[i * k + c] = (ak * bkm1 - bk) / denom;                             \
                        b[(i + 1) * k + c] = (akm1 * bk - bkm1) / denom;                     \
                    }                                                                        \
                    i += 2;                                                                  \
                }                                                                            \
            }                                                                                \
            i = n - 1;                                                                       \
            while (i >= 0) {                                                                 \
                if (pivots[i] > 0) {                                                         \
                    for (long r = i + 1; r < n; r++)                                         \
                        for (long c = 0; c < k; c++) b[i * k + c] -= FACTOR_AT(r, i) * b[r * k + c]; \
                    long kp = (long)pivots[i] - 1;                                           \
                    if (kp != i) factor_swap_rows(b, k, i, kp);                              \
                    i -= 1;                                                                  \
                } else {                                                                     \
                    for (long r = i + 1; r < n; r++)                                         \
                        for (long c = 0; c < k; c++) {                                       \
                            b[i * k + c] -= FACTOR_AT(r, i) * b[r * k + c];                  \
                            b[(i - 1) * k + c] -= FACTOR_AT(r, i - 1) * b[r * k + c];        \
                        }                                                                    \
                    long kp = -(long)pivots[i] - 1;                                          \
                    if (kp != i) factor_swap_rows(b, k, i, kp);                              \
                    i -= 2;                                                                  \
                }                                                                            \
            }                                                                                \
        })

/* Layout L: m, n, k, out's rows and columns, the op's flags, then for a, b
 * and out in turn: the batch rank r, the row and column strides, then r
 * (size, stride) pairs, as clk_offset reads them. */
#define FACTOR_LAYOUT_SOURCE                                                                 \
    CLK_SOURCE(                                                                              \
        inline __global const long *factor_next_section(__global const long *S) {            \
            return S + 3 + 2 * (S[0] > 0 ? S[0] : 0);                                        \
        })

/* What each op does with `a` (the input, [m, n]) into `w` (the packed
 * result, [out rows, out cols]); b, when there is one, is loaded into w. */
#define FACTOR_BODY_cholesky                                                                 \
    for (long i = 0; i < n * n; i++) w[i] = a[i];                                            \
    factor_cholesky(w, n);
#define FACTOR_BODY_lu                                                                       \
    for (long i = 0; i < m * n; i++) w[i] = a[i];                                            \
    for (long i = 0; i < n; i++) w[m * n + i] = 0;                                           \
    factor_lu(w, m, n, w + m * n);
#define FACTOR_BODY_qr                                                                       \
    for (long i = 0; i < m * n; i++) w[i] = a[i];                                            \
    for (long i = 0; i < n; i++) w[m * n + i] = 0;                                           \
    factor_qr(w, m, n, w + m * n);
#define FACTOR_BODY_triangular_solve                                                         \
    factor_triangular_solve(a, n, w, k, (flags & FACTOR_UPPER) != 0,                         \
                            (flags & FACTOR_UNIT_DIAGONAL) != 0);
#define FACTOR_BODY_eigh factor_eigh(a, n, w, w + n);
#define FACTOR_BODY_svd                                                                      \
    factor_svd(a, m, n, w + m * n, w + (m + 1) * n);                                         \
    for (long i = 0; i < m * n; i++) w[i] = a[i];
#define FACTOR_BODY_ldl                                                                      \
    for (long i = 0; i < n * n; i++) w[i] = a[i];                                            \
    for (long i = 0; i < n; i++) w[n * n + i] = 0;                                           \
    factor_ldl(w, n, w + n * n);
#define FACTOR_BODY_ldl_solve factor_ldl_solve(a, a + n * n, n, w, k);

/* The kernel of one op (NAME) and storage type T (SFX): one batch item per
 * work item, its scratch at item * (m * n + out rows * out cols). */
#define FACTOR_KERNEL(NAME, SFX, T)                                                          \
    CLK_SOURCE(__kernel void factor_##NAME##_##SFX(                                          \
        __global T *out, long out_off, __global const T *a_data, long a_off,                 \
        __global const T *b_data, long b_off, __global double *scratch,                      \
        __global const long *L, long count) {                                                \
        long item = get_global_id(0);                                                        \
        if (item >= count) return;                                                           \
        long m = L[0], n = L[1], k = L[2], out_rows = L[3], out_cols = L[4], flags = L[5];   \
        (void)k;                                                                             \
        (void)flags;                                                                         \
        __global const long *SA = L + 6, *SB = factor_next_section(SA);                      \
        __global const long *SO = factor_next_section(SB);                                   \
        __global double *a = scratch + item * (m * n + out_rows * out_cols);                 \
        __global double *w = a + m * n;                                                      \
        long base = a_off + clk_offset(item, (int)SA[0], SA + 3);                            \
        for (long i = 0; i < m; i++)                                                         \
            for (long j = 0; j < n; j++) a[i * n + j] = a_data[base + i * SA[1] + j * SA[2]]; \
        if (SB[0] >= 0) {                                                                    \
            base = b_off + clk_offset(item, (int)SB[0], SB + 3);                             \
            for (long i = 0; i < n; i++)                                                     \
                for (long j = 0; j < k; j++) w[i * k + j] = b_data[base + i * SB[1] + j * SB[2]]; \
        }                                                                                    \
        FACTOR_BODY_##NAME                                                                   \
        base = out_off + clk_offset(item, (int)SO[0], SO + 3);                               \
        for (long i = 0; i < out_rows; i++)                                                  \
            for (long j = 0; j < out_cols; j++)                                              \
                out[base + i * SO[1] + j * SO[2]] = (T)w[i * out_cols + j];                  \
    })

#define FACTOR_KERNELS(NAME) FACTOR_KERNEL(NAME, f32, float) FACTOR_KERNEL(NAME, f64, double)

static const char factor_source[] =
    CLK_COMMON_SOURCE FACTOR_DENSE_SOURCE_1 FACTOR_DENSE_SOURCE_2 FACTOR_LDL_SOURCE
    FACTOR_LAYOUT_SOURCE FACTOR_KERNELS(cholesky) FACTOR_KERNELS(lu)
    FACTOR_KERNELS(triangular_solve) FACTOR_KERNELS(qr) FACTOR_KERNELS(eigh)
    FACTOR_KERNELS(svd) FACTOR_KERNELS(ldl) FACTOR_KERNELS(ldl_solve);

void clk_factor_programs(clk_program_visit visit, void *ctx) {
    visit(ctx, "factor", factor_source, true);
}

/* Kernel names by porta_factor_op. */
static const char *const op_names[PORTA_FACTOR_OP_COUNT] = {
    [PORTA_FACTOR_CHOLESKY] = "cholesky",
    [PORTA_FACTOR_LU] = "lu",
    [PORTA_FACTOR_TRIANGULAR_SOLVE] = "triangular_solve",
    [PORTA_FACTOR_QR] = "qr",
    [PORTA_FACTOR_EIGH] = "eigh",
    [PORTA_FACTOR_SVD] = "svd",
    [PORTA_FACTOR_LDL] = "ldl",
    [PORTA_FACTOR_LDL_SOLVE] = "ldl_solve",
};

/* A tensor's section of the layout: its batch dims (all but the last two),
 * its row and column strides; none (batch rank -1) without a tensor. */
static void push_matrix(clk_layout *layout, const porta_tensor *t) {
    if (!t) {
        clk_push(layout, -1);
        clk_push(layout, 0);
        clk_push(layout, 0);
        return;
    }
    clk_push(layout, t->rank - 2);
    clk_push(layout, t->strides[t->rank - 2]);
    clk_push(layout, t->strides[t->rank - 1]);
    clk_push_dims(layout, t->rank - 2, t->sizes, t->strides);
}

porta_status *clk_exec_factor(const clk_launcher *launcher, porta_device *device,
                              const ir_prim *prim, const porta_tensor *const *inputs,
                              int input_count, porta_tensor *out) {
    const porta_tensor *a = inputs[0], *b = input_count > 1 ? inputs[1] : NULL;
    if (prim->op < 0 || prim->op >= PORTA_FACTOR_OP_COUNT)
        return porta_error(PORTA_ERR_INTERNAL, "factor kernel: expected a porta_factor_op, got %d",
                           prim->op);
    if ((out->dtype != PORTA_F32 && out->dtype != PORTA_F64) || a->dtype != out->dtype ||
        (b && b->dtype != out->dtype) || a->rank < 2 || out->rank < 2)
        return porta_error(PORTA_ERR_INTERNAL,
                           "factor kernel: expected float32 or float64 matrices of one dtype, "
                           "got a %s (rank %d) and out %s (rank %d)",
                           porta_dtype_name(a->dtype), a->rank, porta_dtype_name(out->dtype),
                           out->rank);
    PORTA_TRY(clk_check_dtype(device, "factor", out->dtype));
    if (porta_tensor_numel(out) == 0) return NULL;
    int64_t m = a->sizes[a->rank - 2], n = a->sizes[a->rank - 1];
    int64_t k = b ? b->sizes[b->rank - 1] : 0;
    int64_t out_rows = out->sizes[out->rank - 2], out_cols = out->sizes[out->rank - 1];
    int64_t items = porta_tensor_numel(out) / (out_rows * out_cols);
    clk_layout layout = {.count = 0};
    clk_push(&layout, m);
    clk_push(&layout, n);
    clk_push(&layout, k);
    clk_push(&layout, out_rows);
    clk_push(&layout, out_cols);
    clk_push(&layout, prim->axis);
    push_matrix(&layout, a);
    push_matrix(&layout, b);
    push_matrix(&layout, out);
    /* 8 bytes an element whatever the device's `double` */
    size_t scratch_bytes = (size_t)items * (size_t)(m * n + out_rows * out_cols) * sizeof(double);
    clk_mem layout_buffer = NULL, scratch = NULL;
    porta_status *status = clk_layout_buffer(device, &layout, &layout_buffer);
    if (!status) status = clk_buffer(device, scratch_bytes, NULL, &scratch);
    char name[48];
    snprintf(name, sizeof name, "factor_%s_%s", op_names[prim->op], clk_dtype_suffix(out->dtype));
    clk_args args;
    if (!status) status = clk_begin(launcher, device, factor_source, name, &args);
    if (!status) {
        clk_arg_tensor(&args, out);
        clk_arg_tensor(&args, a);
        clk_arg_tensor(&args, b ? b : a);
        clk_arg_buffer(&args, scratch);
        clk_arg_buffer(&args, layout_buffer);
        clk_arg_long(&args, items);
        status = clk_launch(&args, items);
    }
    clk_release(device, scratch);
    clk_release(device, layout_buffer);
    return status;
}
