/* Special functions in double precision for the elementwise kernels, with
 * PyTorch's values at poles, negative arguments, infinities and NaN. The
 * float kernels evaluate them in double and round once. */
#ifndef PORTA_BACKENDS_CPU_SPECIAL_MATH_H
#define PORTA_BACKENDS_CPU_SPECIAL_MATH_H

double sp_erfinv(double y);
/* log|Gamma(x)|, through lgamma_r: its sign goes to a local instead of the
 * global signgam, which would race between pool threads. */
double sp_lgamma(double x);
double sp_digamma(double x);
/* Hurwitz zeta: sum over k >= 0 of (k + q)^-s. */
double sp_zeta(double s, double q);
/* Regularized lower (igamma) and upper (igammac) incomplete gamma. */
double sp_igamma(double a, double x);
double sp_igammac(double a, double x);

/* Modified Bessel functions of the first kind, plain and times exp(-|x|). */
double sp_i0(double x);
double sp_i0e(double x);
double sp_i1(double x);
double sp_i1e(double x);
/* Of the second kind, plain and times exp(x). */
double sp_k0(double x);
double sp_k0e(double x);
double sp_k1(double x);
double sp_k1e(double x);
/* Bessel functions of the first and second kind (libm's), and j0 of the
 * spherical kind. */
double sp_bessel_j0(double x);
double sp_bessel_j1(double x);
double sp_bessel_y0(double x);
double sp_bessel_y1(double x);
double sp_spherical_bessel_j0(double x);
double sp_airy_ai(double x);

/* exp(x^2) erfc(x); log of the standard normal CDF; its inverse. */
double sp_erfcx(double x);
double sp_log_ndtr(double x);
double sp_ndtri(double p);

/* The orthogonal polynomials of degree n (truncated to an integer, as
 * PyTorch converts it; negative degrees give 0) at x. */
double sp_chebyshev_t(double x, double n);
double sp_chebyshev_u(double x, double n);
double sp_chebyshev_v(double x, double n);
double sp_chebyshev_w(double x, double n);
double sp_shifted_chebyshev_t(double x, double n);
double sp_shifted_chebyshev_u(double x, double n);
double sp_shifted_chebyshev_v(double x, double n);
double sp_shifted_chebyshev_w(double x, double n);
double sp_hermite_h(double x, double n);
double sp_hermite_he(double x, double n);
double sp_laguerre_l(double x, double n);
double sp_legendre_p(double x, double n);

#endif
