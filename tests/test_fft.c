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

/* Complex pairs of the real values v (imaginary parts zero). */
static double *complexified(const double *v, int64_t count) {
    double *c = calloc((size_t)(2 * count), sizeof *c);
    for (int64_t i = 0; i < count; i++) c[2 * i] = v[i];
    return c;
}

/* The first `keep` values along `axis` of a contiguous complex array of
 * `sizes` (rank axes), as a new contiguous array. */
static double *truncated(const double *data, int rank, const int64_t *sizes, int axis,
                         int64_t keep) {
    int64_t inner = 1, outer = 1;
    for (int d = axis + 1; d < rank; d++) inner *= sizes[d];
    for (int d = 0; d < axis; d++) outer *= sizes[d];
    double *out = malloc((size_t)(2 * outer * keep * inner) * sizeof *out);
    for (int64_t o = 0; o < outer; o++)
        memcpy(out + 2 * o * keep * inner, data + 2 * o * sizes[axis] * inner,
               (size_t)(2 * keep * inner) * sizeof *out);
    return out;
}

static void scale_all(double *v, int64_t count, double s) {
    for (int64_t i = 0; i < count; i++) v[i] *= s;
}

TEST(fft_c2c_two_axes_of_a_strided_batch_with_each_normalization) {
    /* x [5, 6, 2 (batch), 2 (pair)] read through a permuted view of [2, 5, 6, 2] */
    const int64_t sizes[] = {5, 6, 2};
    double *v = random_values(3, 5 * 6 * 2 * 2);
    for (int f = 0; f < 2; f++) {
        porta_dtype dtype = f ? PORTA_F32 : PORTA_F64;
        porta_tensor *base = from(dtype, 4, SHAPE(2, 5, 6, 2), v), *x = NULL;
        CHECK_OK(porta_permute(base, (int[]){1, 2, 0, 3}, &x));
        /* want: x's values in x's order, then the DFT along axes 0 and 1 */
        double *want = test_to_doubles(x);
        dft_axis(want, 3, sizes, 0, 1);
        dft_axis(want, 3, sizes, 1, 1);
        for (int norm = 0; norm < 3; norm++) {
            porta_fft_params p = params_of(PORTA_FFT_C2C, true, norm, 2, (int[]){-3, 1});
            porta_tensor *y = NULL;
            CHECK_OK(porta_fft(x, &p, &y));
            double *scaled = malloc(sizeof(double) * 120);
            memcpy(scaled, want, sizeof(double) * 120);
            scale_all(scaled, 120, norm == 0 ? 1 : norm == 1 ? 1 / sqrt(30.0) : 1 / 30.0);
            close_to("c2c two axes", y, scaled, 120, tolerance(dtype));
            free(scaled);
            porta_tensor_release(y);
        }
        free(want);
        porta_tensor_release(x);
        porta_tensor_release(base);
    }
    free(v);
}

TEST(fft_r2c_onesided_over_two_axes_and_c2r_back) {
    /* real x [3, 7, 10]: R2C over (0, 2) halves axis 2 to 6; C2R over the
     * same axes with last_size 10 and "forward" normalization on the other
     * side gives x back */
    const int64_t sizes[] = {3, 7, 10};
    double *v = random_values(5, 210);
    for (int f = 0; f < 2; f++) {
        porta_dtype dtype = f ? PORTA_F32 : PORTA_F64;
        porta_tensor *x = from(dtype, 3, sizes, v), *y = NULL, *back = NULL;
        porta_fft_params p = params_of(PORTA_FFT_R2C, false, PORTA_FFT_NORM_BY_ROOT_N, 2,
                                       (int[]){0, 2});
        CHECK_OK(porta_fft(x, &p, &y));
        double *full = complexified(v, 210);
        dft_axis(full, 3, sizes, 0, -1);
        dft_axis(full, 3, sizes, 2, -1);
        double *want = truncated(full, 3, sizes, 2, 6);
        scale_all(want, 252, 1 / sqrt(30.0));
        close_to("r2c", y, want, 252, tolerance(dtype));
        CHECK(porta_tensor_rank(y) == 4 && porta_tensor_sizes(y)[2] == 6);

        porta_fft_params q = params_of(PORTA_FFT_C2R, false, PORTA_FFT_NORM_BY_ROOT_N, 2,
                                       (int[]){0, 2});
        q.last_size = 10;
        CHECK_OK(porta_fft(y, &q, &back));
        close_to("c2r of r2c", back, v, 210, tolerance(dtype) * 4);
        free(full);
        free(want);
        porta_tensor_release(x);
        porta_tensor_release(y);
        porta_tensor_release(back);
    }
    free(v);
}

TEST(fft_c2r_odd_length_reads_half_plus_one_and_ignores_the_rest) {
    /* x [4 (batch), 9 (>= 11/2 + 1 = 6), 2]: C2R along axis 1 to length 11
     * reads values 0..5; the reference extends them by Hermitian symmetry */
    double *v = random_values(11, 4 * 9 * 2);
    for (int f = 0; f < 2; f++) {
        porta_dtype dtype = f ? PORTA_F32 : PORTA_F64;
        porta_tensor *x = from(dtype, 3, SHAPE(4, 9, 2), v), *y = NULL;
        porta_fft_params p = params_of(PORTA_FFT_C2R, false, PORTA_FFT_NORM_BY_N, 1, (int[]){1});
        p.last_size = 11;
        CHECK_OK(porta_fft(x, &p, &y));
        double want[44];
        for (int b = 0; b < 4; b++) {
            double line[22];
            for (int t = 0; t < 6; t++) {
                line[2 * t] = v[(b * 9 + t) * 2];
                line[2 * t + 1] = v[(b * 9 + t) * 2 + 1];
            }
            line[1] = 0; /* the zero frequency's imaginary part is ignored */
            for (int t = 6; t < 11; t++) {
                line[2 * t] = line[2 * (11 - t)];
                line[2 * t + 1] = -line[2 * (11 - t) + 1];
            }
            dft_axis(line, 1, SHAPE(11), 0, 1);
            for (int t = 0; t < 11; t++) want[b * 11 + t] = line[2 * t] / 11;
        }
        close_to("c2r odd", y, want, 44, tolerance(dtype) * 4);
        porta_tensor_release(x);
        porta_tensor_release(y);
    }
    free(v);
}

TEST(fft_errors_name_what_was_expected) {
    porta_tensor *x = test_empty(PORTA_F32, 2, SHAPE(4, 3)), *y = NULL;
    porta_tensor *i = test_empty(PORTA_I32, 2, SHAPE(4, 2));
    porta_fft_params p = params_of(PORTA_FFT_C2C, false, PORTA_FFT_NORM_NONE, 1, (int[]){0});
    CHECK_ERR(porta_fft(x, &p, &y), PORTA_ERR_SHAPE, "last axis of 2");
    CHECK_ERR(porta_fft(i, &p, &y), PORTA_ERR_DTYPE, "float32 or float64");
    p.axes[0] = 1;
    CHECK_ERR(porta_fft(x, &p, &y), PORTA_ERR_SHAPE, "last axis of 2");
    p = params_of(PORTA_FFT_R2C, false, PORTA_FFT_NORM_NONE, 2, (int[]){1, -1});
    CHECK_ERR(porta_fft(x, &p, &y), PORTA_ERR_INVALID_ARGUMENT, "named twice");
    p = params_of(PORTA_FFT_C2R, false, PORTA_FFT_NORM_NONE, 1, (int[]){0});
    p.last_size = 8; /* needs 5 values along axis 0, x has 4 */
    porta_tensor *pairs = test_empty(PORTA_F32, 2, SHAPE(4, 2));
    CHECK_ERR(porta_fft(pairs, &p, &y), PORTA_ERR_SHAPE, "at most the input's 4");
    p.norm = 7;
    CHECK_ERR(porta_fft(pairs, &p, &y), PORTA_ERR_INVALID_ARGUMENT, "normalization");
    porta_tensor_release(pairs);
    porta_tensor_release(x);
    porta_tensor_release(i);
}

TEST(fft_graph_node_runs_as_the_eager_op) {
    double v[16];
    for (int i = 0; i < 16; i++) v[i] = i % 5 - 2;
    porta_tensor *x = from(PORTA_F64, 2, SHAPE(8, 2), v), *want = NULL;
    porta_fft_params p = params_of(PORTA_FFT_C2C, false, PORTA_FFT_NORM_BY_N, 1, (int[]){-1});
    CHECK_OK(porta_fft(x, &p, &want));
    porta_graph *g = NULL;
    CHECK_OK(porta_graph_create(&g));
    porta_node input, node, unused;
    CHECK_OK(porta_graph_input(g, PORTA_F64, 2, SHAPE(8, 2), &input));
    CHECK_OK(porta_graph_fft(g, input, &p, &node));
    p.kind = PORTA_FFT_R2C; /* x [8, 2] is real here: its last axis halves to 2 */
    CHECK_OK(porta_graph_fft(g, input, &p, &unused));
    p.axes[0] = 2;
    CHECK_ERR(porta_graph_fft(g, input, &p, &unused), PORTA_ERR_INVALID_ARGUMENT, "axes in");
    CHECK_OK(porta_graph_output(g, node));
    porta_tensor *got = NULL;
    CHECK_OK(porta_graph_run(g, test_cpu(), &x, 1, &got, 1));
    double *w = test_to_doubles(want);
    if (got) close_to("graph fft", got, w, 16, 1e-15);
    free(w);
    porta_tensor_release(got);
    porta_graph_free(g);
    porta_tensor_release(want);
    porta_tensor_release(x);
}

/* R2C and C2R of one length (batch of 3 lines along axis 1) against the
 * direct DFT; C2R's input is not Hermitian at 0 and n/2, whose imaginary
 * parts are ignored. */
static void check_real_length(int64_t n, porta_dtype dtype) {
    int64_t h = n / 2 + 1;
    double *v = random_values((uint64_t)n * 13, 3 * n), *c = random_values((uint64_t)n, 6 * h);
    porta_tensor *x = from(dtype, 2, SHAPE(3, n), v), *spec = from(dtype, 3, SHAPE(3, h, 2), c);
    porta_tensor *y = NULL, *back = NULL;
    porta_fft_params p = params_of(PORTA_FFT_R2C, false, PORTA_FFT_NORM_NONE, 1, (int[]){1});
    CHECK_OK(porta_fft(x, &p, &y));
    p = params_of(PORTA_FFT_C2R, false, PORTA_FFT_NORM_NONE, 1, (int[]){1});
    p.last_size = n;
    CHECK_OK(porta_fft(spec, &p, &back));
    double *want = malloc((size_t)(6 * n) * sizeof *want);
    double *real_want = malloc((size_t)(3 * n) * sizeof *real_want);
    double *line = malloc((size_t)(2 * n) * sizeof *line);
    for (int b = 0; b < 3; b++) {
        for (int64_t t = 0; t < n; t++) {
            line[2 * t] = dtype == PORTA_F32 ? (float)v[b * n + t] : v[b * n + t];
            line[2 * t + 1] = 0;
        }
        dft_axis(line, 1, SHAPE(n), 0, -1);
        memcpy(want + 2 * b * h, line, (size_t)(2 * h) * sizeof *line);
        for (int64_t t = 0; t < n; t++) {
            int64_t k = t < h ? t : n - t;
            double re = c[2 * (b * h + k)], im = c[2 * (b * h + k) + 1];
            if (dtype == PORTA_F32) re = (float)re, im = (float)im;
            line[2 * t] = re;
            line[2 * t + 1] = t < h ? im : -im;
            if (t == 0 || 2 * t == n) line[2 * t + 1] = 0;
        }
        dft_axis(line, 1, SHAPE(n), 0, 1);
        for (int64_t t = 0; t < n; t++) real_want[b * n + t] = line[2 * t];
    }
    char what[64];
    snprintf(what, sizeof what, "r2c %s length %lld", porta_dtype_name(dtype), (long long)n);
    if (y) close_to(what, y, want, 6 * h, tolerance(dtype));
    snprintf(what, sizeof what, "c2r %s length %lld", porta_dtype_name(dtype), (long long)n);
    if (back) close_to(what, back, real_want, 3 * n, tolerance(dtype));
    free(line);
    free(want);
    free(real_want);
    free(v);
    free(c);
    porta_tensor_release(x);
    porta_tensor_release(spec);
    porta_tensor_release(y);
    porta_tensor_release(back);
}

TEST(fft_r2c_and_c2r_every_length_to_64_and_long_ones) {
    for (int64_t n = 1; n <= 64; n++)
        for (int f = 0; f < 2; f++) check_real_length(n, f ? PORTA_F32 : PORTA_F64);
    static const int64_t longer[] = {194, 2018, 4096};
    for (size_t i = 0; i < sizeof longer / sizeof longer[0]; i++)
        check_real_length(longer[i], PORTA_F64);
}
