/* The classical orthogonal polynomials (special_math.h) by their three-term
 * recurrences, with PyTorch's shortcuts: the closed values at the ends of
 * [-1, 1] (of [0, 1] for the shifted ones), the trigonometric forms of the
 * Chebyshev kinds inside it for degrees above 6, and 0 for negative
 * degrees and NaN. */
#include <math.h>
#include <stdint.h>

#include "backends/cpu/special_math.h"

/* The degree as PyTorch converts it, truncated toward zero (so -0.5 is
 * degree 0); -1 for the negative ones and NaN. */
static int64_t degree(double n) { return n > -1 && n < 9.2e18 ? (int64_t)n : -1; }

/* p_n from p_0, p_1 and the step p_(k+1) = a_k p_k - b_k p_(k-1), k >= 1. */
typedef double (*recurrence_step)(double x, int64_t k, double p, double previous);
static double recur(double x, int64_t n, double p0, double p1, recurrence_step step) {
    if (n == 0) return p0;
    double previous = p0, p = p1;
    for (int64_t k = 1; k < n; k++) {
        double next = step(x, k, p, previous);
        previous = p;
        p = next;
    }
    return p;
}

static double chebyshev_step(double x, int64_t k, double p, double previous) {
    (void)k;
    return (x + x) * p - previous;
}

/* The value at x = -1 of T, U, V, W: (-1)^n times 1, n + 1, 2n + 1, 1. */
static double alternating(int64_t n, double magnitude) { return n % 2 ? -magnitude : magnitude; }

double sp_chebyshev_t(double x, double n_value) {
    int64_t n = degree(n_value);
    if (n < 0) return 0;
    if (fabs(x) == 1) return x > 0 ? 1 : alternating(n, 1);
    if (n > 6 && fabs(x) < 1) return cos((double)n * acos(x));
    return recur(x, n, 1, x, chebyshev_step);
}

double sp_chebyshev_u(double x, double n_value) {
    int64_t n = degree(n_value);
    if (n < 0) return 0;
    double ends = (double)n + 1;
    if (fabs(x) == 1) return x > 0 ? ends : alternating(n, ends);
    if (n > 8 && fabs(x) < 1) {
        double theta = acos(x);
        return sin(ends * theta) / sin(theta);
    }
    return recur(x, n, 1, x + x, chebyshev_step);
}

double sp_chebyshev_v(double x, double n_value) {
    int64_t n = degree(n_value);
    if (n < 0) return 0;
    if (fabs(x) == 1) return x > 0 ? 1 : alternating(n, 2.0 * (double)n + 1);
    if (n > 8 && fabs(x) < 1) {
        double theta = acos(x);
        return cos(((double)n + 0.5) * theta) / cos(theta / 2);
    }
    return recur(x, n, 1, x + x - 1, chebyshev_step);
}

double sp_chebyshev_w(double x, double n_value) {
    int64_t n = degree(n_value);
    if (n < 0) return 0;
    if (fabs(x) == 1) return x > 0 ? 2.0 * (double)n + 1 : alternating(n, 1);
    if (n > 8 && fabs(x) < 1) {
        double theta = acos(x);
        return sin(((double)n + 0.5) * theta) / sin(theta / 2);
    }
    return recur(x, n, 1, x + x + 1, chebyshev_step);
}

/* The shifted kinds are the plain ones at 2x - 1. */
double sp_shifted_chebyshev_t(double x, double n) { return sp_chebyshev_t(x + x - 1, n); }
double sp_shifted_chebyshev_u(double x, double n) { return sp_chebyshev_u(x + x - 1, n); }
double sp_shifted_chebyshev_v(double x, double n) { return sp_chebyshev_v(x + x - 1, n); }
double sp_shifted_chebyshev_w(double x, double n) { return sp_chebyshev_w(x + x - 1, n); }

/* Physicists' Hermite: H_(k+1) = 2x H_k - 2k H_(k-1). */
static double hermite_h_step(double x, int64_t k, double p, double previous) {
    return (x + x) * p - 2.0 * (double)k * previous;
}
double sp_hermite_h(double x, double n_value) {
    int64_t n = degree(n_value);
    return n < 0 ? 0 : recur(x, n, 1, x + x, hermite_h_step);
}

/* Probabilists' Hermite: He_(k+1) = x He_k - k He_(k-1). */
static double hermite_he_step(double x, int64_t k, double p, double previous) {
    return x * p - (double)k * previous;
}
double sp_hermite_he(double x, double n_value) {
    int64_t n = degree(n_value);
    return n < 0 ? 0 : recur(x, n, 1, x, hermite_he_step);
}

/* Laguerre: (k+1) L_(k+1) = (2k + 1 - x) L_k - k L_(k-1); 1 at x = 0. */
static double laguerre_step(double x, int64_t k, double p, double previous) {
    double kd = (double)k;
    return ((2 * kd + 1 - x) * p - kd * previous) / (kd + 1);
}
double sp_laguerre_l(double x, double n_value) {
    int64_t n = degree(n_value);
    if (n < 0) return 0;
    if (x == 0) return 1;
    return recur(x, n, 1, 1 - x, laguerre_step);
}

/* Legendre: (k+1) P_(k+1) = (2k + 1) x P_k - k P_(k-1); P_n(+-1) = (+-1)^n. */
static double legendre_step(double x, int64_t k, double p, double previous) {
    double kd = (double)k;
    return ((2 * kd + 1) * x * p - kd * previous) / (kd + 1);
}
double sp_legendre_p(double x, double n_value) {
    int64_t n = degree(n_value);
    if (n < 0) return 0;
    if (fabs(x) == 1) return x > 0 ? 1 : alternating(n, 1);
    return recur(x, n, 1, x, legendre_step);
}
