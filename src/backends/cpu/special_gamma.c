/* The gamma family and the error-function relatives in double precision
 * (special_math.h): each from its textbook series, continued fraction or
 * asymptotic expansion, with PyTorch's values at the edges. */
#include <float.h>
#include <math.h>
#include <stdbool.h>

#include "backends/cpu/special_math.h"

static const double pi = 3.14159265358979323846;

/* Winitzki's closed form gets within 2e-3, then two Halley steps on erf
 * (erfc near +-1, where 1 - |y| is exact) reach double precision; Halley
 * suits erf since f'' = -2x f'. */
double sp_erfinv(double y) {
    if (!(y > -1.0 && y < 1.0)) {
        if (y == 1.0) return INFINITY;
        if (y == -1.0) return -INFINITY;
        return NAN;
    }
    if (y == 0.0) return y;
    const double a = 0.147, two_over_pi_a = 2.0 / (pi * a);
    double ln = log1p(-y * y), t = two_over_pi_a + 0.5 * ln;
    double x = copysign(sqrt(sqrt(t * t - ln / a) - t), y);
    bool tail = fabs(y) > 0.5;
    double target = tail ? 1.0 - fabs(y) : y;
    for (int step = 0; step < 2; step++) {
        double ax = tail ? fabs(x) : x;
        double f = tail ? erfc(ax) - target : erf(ax) - target;
        double df = (tail ? -1.1283791670955126 : 1.1283791670955126) * exp(-ax * ax);
        ax -= f / (df + ax * f);
        x = tail ? copysign(ax, y) : ax;
    }
    return x;
}

double sp_lgamma(double x) {
    int sign;
    return lgamma_r(x, &sign);
}

/* psi(x): the reflection formula below zero, the recurrence
 * psi(x) = psi(x + 1) - 1/x up to x >= 10, then the asymptotic series
 * log x - 1/(2x) - sum B_2k / (2k x^2k). Poles: +-inf at +-0 (the sign
 * opposite to zero's, as C's tgamma), NaN at the negative integers. */
double sp_digamma(double x) {
    if (x == 0) return copysign(INFINITY, -x);
    if (x < 0) {
        if (x == trunc(x)) return NAN;
        /* pi * frac(x) keeps tan's argument small, so it stays accurate */
        return sp_digamma(1 - x) - pi / tan(pi * (x - trunc(x)));
    }
    if (x == INFINITY) return x;
    double shift = 0;
    while (x < 10) {
        shift -= 1 / x;
        x += 1;
    }
    double z = 1 / (x * x);
    double series =
        z * (1.0 / 12 -
             z * (1.0 / 120 -
                  z * (1.0 / 252 -
                       z * (1.0 / 240 - z * (1.0 / 132 - z * (691.0 / 32760 - z / 12))))));
    return shift + log(x) - 0.5 / x - series;
}

/* B_2k / (2k)!, k = 1..12: the Euler-Maclaurin corrections' weights. */
static const double bernoulli_over_factorial[] = {
    1.0 / 12,
    -1.0 / 720,
    1.0 / 30240,
    -1.0 / 1209600,
    1.0 / 47900160,
    -691.0 / 2730 / 479001600.0,
    7.0 / 6 / 87178291200.0,
    -3617.0 / 510 / 20922789888000.0,
    43867.0 / 798 / 6402373705728000.0,
    -174611.0 / 330 / 2432902008176640000.0,
    854513.0 / 138 / 1124000727777607680000.0,
    -236364091.0 / 2730 / 620448401733239439360000.0,
};

/* Euler-Maclaurin summation: the first terms directly until the argument
 * passes 9, then the tail's integral, half its first term and Bernoulli
 * corrections. s <= 1 diverges (NaN; +inf at 1); q at or below zero is a
 * pole at the integers and has no real power for non-integer s. */
double sp_zeta(double s, double q) {
    if (isnan(s) || isnan(q)) return NAN;
    if (s == 1) return INFINITY;
    if (s < 1) return NAN;
    if (q <= 0) {
        if (q == floor(q)) return INFINITY;
        if (s != floor(s)) return NAN;
    }
    /* the leading terms of the expansion for huge q (DLMF 25.11.43) */
    if (q > 1e8) return (1 / (s - 1) + 1 / (2 * q)) * pow(q, 1 - s);
    double sum = pow(q, -s), a = q, term = 0;
    int n = 0;
    while (n < 9 || a <= 9.0) {
        n++;
        a += 1;
        term = pow(a, -s);
        sum += term;
        if (fabs(term / sum) < DBL_EPSILON / 2) return sum;
    }
    /* sum already holds a^-s once; the tail from a adds the rest */
    sum += term * a / (s - 1) - 0.5 * term;
    /* derivative factor of the k-th correction: (s)_(2k-1) a^(-s-2k+1) */
    double factor = s * term / a;
    for (int k = 0; k < 12; k++) {
        double correction = bernoulli_over_factorial[k] * factor;
        sum += correction;
        if (fabs(correction / sum) < DBL_EPSILON / 2) break;
        factor *= (s + 2 * k + 1) * (s + 2 * k + 2) / (a * a);
    }
    return sum;
}

/* x^a e^-x / Gamma(a): the common factor of both incomplete gammas. */
static double gamma_prefactor(double a, double x) {
    return exp(a * log(x) - x - sp_lgamma(a));
}

/* P(a, x) by its power series, for x < a + 1 where it converges fast. */
static double lower_series(double a, double x) {
    double term = 1 / a, sum = term;
    for (int k = 1; k < 10000; k++) {
        term *= x / (a + k);
        sum += term;
        if (fabs(term) < fabs(sum) * DBL_EPSILON / 2) break;
    }
    return sum * gamma_prefactor(a, x);
}

/* Q(a, x) by Legendre's continued fraction (modified Lentz), for
 * x >= a + 1. */
static double upper_fraction(double a, double x) {
    const double tiny = 1e-300;
    double b = x + 1 - a, c = 1 / tiny, d = 1 / b, h = d;
    for (int i = 1; i < 10000; i++) {
        double an = -i * (i - a);
        b += 2;
        d = an * d + b;
        if (fabs(d) < tiny) d = tiny;
        c = b + an / c;
        if (fabs(c) < tiny) c = tiny;
        d = 1 / d;
        double delta = d * c;
        h *= delta;
        if (fabs(delta - 1) < DBL_EPSILON) break;
    }
    return h * gamma_prefactor(a, x);
}

/* PyTorch's edge values: NaN below zero, at a == 0 with x == 0 and where
 * both are infinite. Returns true with *value set when one applies. */
static bool incomplete_gamma_edge(double a, double x, bool upper, double *value) {
    double lower;
    if (isnan(a) || isnan(x) || x < 0 || a < 0) {
        *value = NAN;
        return true;
    }
    if (a == 0) {
        lower = x > 0 ? 1 : NAN;
    } else if (x == 0) {
        lower = 0;
    } else if (isinf(a)) {
        lower = isinf(x) ? NAN : 0;
    } else if (isinf(x)) {
        lower = 1;
    } else {
        return false;
    }
    *value = upper && !isnan(lower) ? 1 - lower : lower;
    return true;
}

double sp_igamma(double a, double x) {
    double edge;
    if (incomplete_gamma_edge(a, x, false, &edge)) return edge;
    return x < a + 1 ? lower_series(a, x) : 1 - upper_fraction(a, x);
}

double sp_igammac(double a, double x) {
    double edge;
    if (incomplete_gamma_edge(a, x, true, &edge)) return edge;
    return x < a + 1 ? 1 - lower_series(a, x) : upper_fraction(a, x);
}

/* exp(x^2) erfc(x): directly while erfc stays a normal number and the
 * product cannot overflow, then Laplace's continued fraction
 * sqrt(pi) erfcx(x) = 1/(x + (1/2)/(x + 1/(x + (3/2)/(x + ...)))).
 * Below zero, erfcx(x) = 2 exp(x^2) - erfcx(-x), infinite past -26.7. */
double sp_erfcx(double x) {
    if (isnan(x)) return x;
    if (x < 0) {
        if (x < -26.7) return INFINITY;
        return 2 * exp(x * x) - sp_erfcx(-x);
    }
    if (x < 10) return exp(x * x) * erfc(x);
    if (isinf(x)) return 0;
    double fraction = x;
    for (int k = 60; k >= 1; k--) fraction = x + (k / 2.0) / fraction;
    return 1 / (sqrt(pi) * fraction);
}

/* log(Phi(x)): log1p of the small complement above -1; below, with
 * erfc(-x/sqrt2) = erfcx(-x/sqrt2) exp(-x^2/2), as a difference of logs
 * that never underflows. */
double sp_log_ndtr(double x) {
    double t = x / sqrt(2.0);
    if (x < -1) return log(sp_erfcx(-t) / 2) - t * t;
    return log1p(-erfc(t) / 2);
}

/* Phi(x) and its density, for Newton's steps. */
static double ndtr(double x) { return erfc(-x / sqrt(2.0)) / 2; }
static double normal_density(double x) { return exp(-x * x / 2) / sqrt(2 * pi); }

/* The inverse of Phi: 0 -> -inf, 1 -> +inf, NaN outside [0, 1]. The
 * middle starts from erfinv and polishes once with Newton on Phi; the
 * lower tail solves log Phi(x) = log p by Newton from the leading term of
 * its expansion; the upper tail is the lower one mirrored (1 - p is exact
 * there). */
double sp_ndtri(double p) {
    if (!(p >= 0 && p <= 1)) return NAN;
    if (p == 0) return -INFINITY;
    if (p == 1) return INFINITY;
    if (p > 0.98) return -sp_ndtri(1 - p);
    if (p >= 0.02) {
        double x = sqrt(2.0) * sp_erfinv(2 * p - 1);
        return x - (ndtr(x) - p) / normal_density(x);
    }
    double log_p = log(p), x = -sqrt(-2 * log_p);
    for (int step = 0; step < 100; step++) {
        double log_cdf = sp_log_ndtr(x);
        /* d/dx log Phi(x) = density / Phi = exp(log density - log Phi) */
        double slope = exp(-x * x / 2 - 0.5 * log(2 * pi) - log_cdf);
        double dx = (log_cdf - log_p) / slope;
        x -= dx;
        if (fabs(dx) <= 1e-16 * fabs(x)) break;
    }
    return x;
}
