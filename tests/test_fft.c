/* The Fourier transform primitive (porta_fft) against a direct O(n^2) DFT in
 * double: every length 1..64, primes (97, 1009: Bluestein), powers of two
 * up to 2^14, both directions and precisions; batched, strided and
 * multi-axis C2C, R2C and C2R with each normalization; and the errors for
 * bad parameters. Errors are measured against the largest expected value,
 * since an FFT's rounding spreads over the whole transform. */
#include <stdlib.h>
#include <string.h>

#include "test.h"

#define SHAPE(...) ((const int64_t[]){__VA_ARGS__})

/* The direct DFT of each line along `axis` of a contiguous complex array
 * (pairs) of `rank` axes, in place, with exp(sign 2 pi i jk / n). */
static void dft_axis(double *data, int rank, const int64_t *sizes, int axis, int sign) {
    int64_t n = sizes[axis], inner = 1, outer = 1;
    for (int d = axis + 1; d < rank; d++) inner *= sizes[d];
    for (int d = 0; d < axis; d++) outer *= sizes[d];
    double *roots = malloc((size_t)(2 * n) * sizeof *roots);
    double *line = malloc((size_t)(2 * n) * sizeof *line);
    for (int64_t k = 0; k < n; k++) {
        roots[2 * k] = cos(2 * M_PI * (double)k / (double)n);
        roots[2 * k + 1] = sign * sin(2 * M_PI * (double)k / (double)n);
    }
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            double *base = data + 2 * (o * n * inner + i);
            for (int64_t k = 0; k < n; k++) {
                double re = 0, im = 0;
                for (int64_t j = 0, e = 0; j < n; j++, e = (e + k) % n) {
                    double xr = base[2 * j * inner], xi = base[2 * j * inner + 1];
                    re += xr * roots[2 * e] - xi * roots[2 * e + 1];
                    im += xr * roots[2 * e + 1] + xi * roots[2 * e];
                }
                line[2 * k] = re, line[2 * k + 1] = im;
            }
            for (int64_t k = 0; k < n; k++)
                base[2 * k * inner] = line[2 * k], base[2 * k * inner + 1] = line[2 * k + 1];
        }
    free(roots);
    free(line);
}

static porta_tensor *from(porta_dtype dtype, int rank, const int64_t *sizes, const double *v) {
    porta_tensor *t = NULL, *cast = NULL;
    porta_status *status = porta_tensor_from_host(test_cpu(), PORTA_F64, rank, sizes, v, &t);
    if (!status && dtype != PORTA_F64) {
        status = porta_cast(t, dtype, &cast);
        porta_tensor_release(t);
        t = cast;
    }
    if (status) {
        test_fail(__FILE__, __LINE__, "from: %s", porta_status_message(status));
        porta_status_free(status);
        return NULL;
    }
    return t;
}

static double *random_values(uint64_t seed, int64_t count) {
    test_rng rng = test_rng_make(seed);
    double *v = malloc((size_t)count * sizeof *v);
    for (int64_t i = 0; i < count; i++) v[i] = test_uniform(&rng, -1, 1);
    return v;
}

/* Whether got (a tensor) is within tol of want, relative to want's largest
 * magnitude. */
static bool close_to(const char *what, const porta_tensor *got, const double *want,
                     int64_t count, double tol) {
    CHECK_MSG(porta_tensor_numel(got) == count, "%s: %lld values, expected %lld", what,
              (long long)porta_tensor_numel(got), (long long)count);
    if (porta_tensor_numel(got) != count) return false;
    double *g = test_to_doubles(got), peak = 1e-300, worst = 0;
    for (int64_t i = 0; i < count; i++) {
        if (fabs(want[i]) > peak) peak = fabs(want[i]);
        if (!(fabs(g[i] - want[i]) <= worst)) worst = fabs(g[i] - want[i]);
    }
    free(g);
    CHECK_MSG(worst <= tol * peak, "%s: error %g of peak %g, tolerance %g", what, worst, peak,
              tol);
    return worst <= tol * peak;
}

static double tolerance(porta_dtype dtype) { return dtype == PORTA_F64 ? 1e-12 : 2e-6; }

static porta_fft_params params_of(porta_fft_kind kind, bool inverse, porta_fft_norm norm,
                                  int count, const int *axes) {
    porta_fft_params p;
    memset(&p, 0, sizeof p);
    p.kind = kind;
    p.inverse = inverse;
    p.norm = norm;
    p.axis_count = count;
    memcpy(p.axes, axes, (size_t)count * sizeof *axes);
    return p;
}

/* A C2C transform of one length against the direct DFT. */
static void check_length(int64_t n, porta_dtype dtype, bool inverse) {
    double *v = random_values((uint64_t)n * 7 + inverse, 2 * n);
    porta_tensor *x = from(dtype, 2, SHAPE(n, 2), v), *y = NULL;
    porta_fft_params p = params_of(PORTA_FFT_C2C, inverse, PORTA_FFT_NORM_NONE, 1, (int[]){0});
    if (x) {
        porta_status *status = porta_fft(x, &p, &y);
        CHECK_MSG(!status, "n %lld: %s", (long long)n, status ? porta_status_message(status) : "");
        porta_status_free(status);
    }
    if (y) {
        double *want = malloc((size_t)(2 * n) * sizeof *want);
        for (int64_t i = 0; i < 2 * n; i++) want[i] = dtype == PORTA_F32 ? (float)v[i] : v[i];
        dft_axis(want, 1, SHAPE(n), 0, inverse ? 1 : -1);
        char what[64];
        snprintf(what, sizeof what, "%s length %lld", porta_dtype_name(dtype), (long long)n);
        close_to(what, y, want, 2 * n, tolerance(dtype) * (n > 1024 ? 4 : 1));
        free(want);
    }
    porta_tensor_release(x);
    porta_tensor_release(y);
    free(v);
}

TEST(fft_c2c_every_length_to_64_both_directions_and_precisions) {
    for (int64_t n = 1; n <= 64; n++)
        for (int f = 0; f < 4; f++) check_length(n, f & 1 ? PORTA_F32 : PORTA_F64, f & 2);
}

TEST(fft_c2c_primes_through_bluestein_and_powers_of_two) {
    static const int64_t lengths[] = {97, 1009, 2 * 3 * 5 * 7 * 11, 128, 1024, 4096, 16384};
    for (size_t i = 0; i < sizeof lengths / sizeof lengths[0]; i++)
        for (int f = 0; f < 2; f++) check_length(lengths[i], f ? PORTA_F32 : PORTA_F64, i & 1);
}
