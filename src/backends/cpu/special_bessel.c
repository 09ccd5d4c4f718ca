/* Bessel and Airy functions in double precision (special_math.h). The
 * modified ones: power series for small arguments, Hankel's asymptotic
 * expansion for large ones, and for K in between the integral
 * K_nu(x) = int_0^inf exp(-x cosh t) cosh(nu t) dt by the trapezoidal
 * rule, which converges geometrically for such integrands. */
#include <float.h>
#include <math.h>
#include <stdbool.h>

#include "backends/cpu/special_math.h"

static const double pi = 3.14159265358979323846;
static const double euler_gamma = 0.57721566490153286061;

/* Past this argument Hankel's expansion is exact to double precision: its
 * smallest term is about exp(-2x). */
#define ASYMPTOTIC_FROM 20.0

/* sum_k (sign)^k a_k(nu) / x^k, a_k(nu) = prod_{j<=k} (4nu^2 - (2j-1)^2)
 * / (k! 8^k): the series of I_nu (alternating) and K_nu (not). */
static double hankel_series(double nu, double x, bool alternating) {
    double mu = 4 * nu * nu, term = 1, sum = 1;
    for (int k = 1; k < 100; k++) {
        double odd = 2 * k - 1;
        double next = term * (mu - odd * odd) / (k * 8 * x);
        if (alternating) next = -next;
        if (fabs(next) >= fabs(term)) break; /* the series has started to diverge */
        term = next;
        sum += term;
        if (fabs(term) < DBL_EPSILON / 2 * fabs(sum)) break;
    }
    return sum;
}

/* I_nu(x) for nu = 0 or 1 and x >= 0, times exp(-x) when scaled. */
static double bessel_i(int nu, double x, bool scaled) {
    if (isinf(x)) return scaled ? 0 : NAN; /* PyTorch's inf / inf */
    if (x <= ASYMPTOTIC_FROM) {
        double term = nu ? x / 2 : 1, sum = term, quarter_square = x * x / 4;
        for (int k = 1; k < 200; k++) {
            term *= quarter_square / (k * (k + nu));
            sum += term;
            if (term < DBL_EPSILON / 2 * sum) break;
        }
        return scaled ? sum * exp(-x) : sum;
    }
    double series = hankel_series(nu, x, true);
    /* e^x / sqrt(2 pi x) as one exp, so it overflows only where I does */
    if (!scaled) return series * exp(x - 0.5 * log(2 * pi * x));
    return series / sqrt(2 * pi * x);
}

double sp_i0(double x) { return bessel_i(0, fabs(x), false); }
double sp_i0e(double x) { return bessel_i(0, fabs(x), true); }
/* odd; -0 gives +0, as PyTorch negates only below zero */
double sp_i1(double x) { return x < 0 ? -bessel_i(1, -x, false) : bessel_i(1, x, false); }
double sp_i1e(double x) { return x < 0 ? -bessel_i(1, -x, true) : bessel_i(1, x, true); }

/* exp(x) K_nu(x) for x > 0 and 0 <= nu <= 1. */
static double bessel_k_scaled(double nu, double x) {
    if (x > ASYMPTOTIC_FROM) return sqrt(pi / (2 * x)) * hankel_series(nu, x, false);
    /* The integrand exp(-x (cosh t - 1)) cosh(nu t): a step of 0.25 suits
     * small x (the error falls as exp(-pi^2 / h)); larger x narrow its peak
     * to a width of about 1/sqrt(x), which the step follows. */
    double h = x > 4 ? 0.5 / sqrt(x) : 0.25, sum = 0.5;
    for (int k = 1; k < 100000; k++) {
        double t = k * h, half = sinh(t / 2);
        double f = exp(-2 * x * half * half) * cosh(nu * t);
        sum += f;
        /* past the peak (the integrand falls) and negligible */
        if (f < DBL_EPSILON / 4 * sum && x * sinh(t) > nu) break;
    }
    return h * sum;
}

/* K0 and K1: +inf at 0, NaN below. Tiny arguments use the leading terms
 * -(log(x/2) + gamma) and 1/x, exact there, instead of a long integral. */
static double bessel_k(int nu, double x, bool scaled) {
    if (isnan(x) || x < 0) return NAN;
    if (x == 0) return INFINITY;
    if (isinf(x)) return 0;
    if (x < 1e-10) return nu ? 1 / x : -(log(x / 2) + euler_gamma);
    double value = bessel_k_scaled(nu, x);
    return scaled ? value : value * exp(-x);
}

double sp_k0(double x) { return bessel_k(0, x, false); }
double sp_k0e(double x) { return bessel_k(0, x, true); }
double sp_k1(double x) { return bessel_k(1, x, false); }
double sp_k1e(double x) { return bessel_k(1, x, true); }

/* libm's Bessel functions of integer order; NaN at the infinities (where
 * PyTorch's phase is undefined), Y -inf at 0 and NaN below. */
double sp_bessel_j0(double x) { return isinf(x) ? NAN : j0(x); }
double sp_bessel_j1(double x) { return isinf(x) ? NAN : j1(x); }
double sp_bessel_y0(double x) {
    if (x == 0) return -INFINITY;
    return x < 0 || isinf(x) ? NAN : y0(x);
}
double sp_bessel_y1(double x) {
    if (x == 0) return -INFINITY;
    return x < 0 || isinf(x) ? NAN : y1(x);
}

/* sin(x)/x, by its Taylor series near 0 where the quotient loses digits;
 * 0 at the infinities. */
double sp_spherical_bessel_j0(double x) {
    if (isinf(x)) return 0;
    if (fabs(x) < 0.5) {
        double z = x * x;
        return 1 + z * (-1.0 / 6 +
                        z * (1.0 / 120 +
                             z * (-1.0 / 5040 +
                                  z * (1.0 / 362880 +
                                       z * (-1.0 / 39916800 + z * (1.0 / 6227020800.0))))));
    }
    return sin(x) / x;
}

/* Ai(0) and -Ai'(0). */
static const double airy_c1 = 0.355028053887817239260;
static const double airy_c2 = 0.258819403792806798405;

/* Ai(x) = c1 f(x) - c2 g(x) with the Maclaurin series
 * f = sum 3^k (1/3)_k x^3k / (3k)!, g = sum 3^k (2/3)_k x^(3k+1) / (3k+1)!. */
static double airy_series(double x) {
    double cube = x * x * x, f_term = 1, f = 1, g_term = x, g = x;
    for (int k = 1; k < 200; k++) {
        f_term *= cube / ((3.0 * k - 1) * (3.0 * k));
        g_term *= cube / ((3.0 * k) * (3.0 * k + 1));
        f += f_term;
        g += g_term;
        if (fabs(f_term) < DBL_EPSILON / 4 * fabs(f) && fabs(g_term) < DBL_EPSILON / 4 * fabs(g))
            break;
    }
    return airy_c1 * f - airy_c2 * g;
}

/* Ai(-z) for large z (DLMF 9.7.9): z^-1/4 / sqrt(pi) times
 * cos(zeta - pi/4) P + sin(zeta - pi/4) Q, zeta = 2/3 z^3/2, with
 * P = sum (-1)^k u_2k zeta^-2k, Q = sum (-1)^k u_2k+1 zeta^-(2k+1). */
static double airy_oscillating(double z) {
    double zeta = 2.0 / 3 * z * sqrt(z), u = 1, power = 1, p = 1, q = 0, previous = INFINITY;
    for (int k = 1; k < 100; k++) {
        u *= (6.0 * k - 5) * (6.0 * k - 3) * (6.0 * k - 1) / ((2.0 * k - 1) * 216 * k);
        power /= zeta;
        double term = u * power;
        if (term >= previous) break; /* diverging from here */
        previous = term;
        /* k odd: Q's terms (+, -, ...); k even: P's after the first */
        if (k % 2) q += (k % 4 == 1 ? 1 : -1) * term;
        else p += (k % 4 == 2 ? -1 : 1) * term;
        if (term < DBL_EPSILON / 4) break;
    }
    double phase = zeta - pi / 4;
    return (cos(phase) * p + sin(phase) * q) / (sqrt(pi) * sqrt(sqrt(z)));
}

/* Ai(x): NaN at the infinities (as PyTorch), 0 where it underflows; above
 * 2 through K_1/3: Ai(x) = sqrt(x/3) K_1/3(zeta) / pi. */
double sp_airy_ai(double x) {
    if (isnan(x) || isinf(x)) return NAN;
    if (x > 103.892) return 0;
    if (x < -7) return airy_oscillating(-x);
    if (x <= 2) return airy_series(x);
    double zeta = 2.0 / 3 * x * sqrt(x);
    return sqrt(x / 3) / pi * bessel_k_scaled(1.0 / 3, zeta) * exp(-zeta);
}
