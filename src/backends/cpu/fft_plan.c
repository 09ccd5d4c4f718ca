/* Building and caching the plans of fft_plan.h. Twiddles and chirps are
 * computed in double from exactly reduced angles and rounded once to the
 * plan's precision. Plans live for the process, like the kernel cache, so
 * they take memory from malloc rather than the counted buffer allocator. */
#include "backends/cpu/fft_plan.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"

/* malloc that answers with a status naming `what`; never NULL for 0 bytes. */
static porta_status *plan_alloc(size_t bytes, const char *what, void **out) {
    *out = malloc(bytes ? bytes : 1);
    if (!*out)
        return porta_error(PORTA_ERR_OUT_OF_MEMORY, "fft: could not allocate %zu bytes for %s",
                           bytes, what);
    return NULL;
}

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static cpu_fft_plan *cache;

/* exp(sign * 2 pi i * num / den) with num reduced modulo den. */
static void unit_root(int sign, int64_t num, int64_t den, double *re, double *im) {
    num %= den;
    if (num < 0) num += den;
    double angle = 2.0 * M_PI * (double)num / (double)den;
    *re = cos(angle);
    *im = sign * sin(angle);
}

/* The radices of n, 4s first; false when a prime factor is above
 * CPU_FFT_MAX_RADIX. */
static bool factor_radices(int64_t n, int *radices, int *count) {
    *count = 0;
    while (n % 4 == 0) { radices[(*count)++] = 4; n /= 4; }
    while (n % 2 == 0) { radices[(*count)++] = 2; n /= 2; }
    while (n > 1) {
        int64_t p = 3;
        while (p * p <= n && n % p) p += 2;
        if (p * p > n) p = n;
        if (p > CPU_FFT_MAX_RADIX) return false;
        radices[(*count)++] = (int)p;
        n /= p;
    }
    return true;
}

/* The smallest 2^a 3^b 5^c >= n. */
static int64_t smooth_length(int64_t n) {
    int64_t best = INT64_MAX;
    for (int64_t p5 = 1; p5 < best; p5 *= 5)
        for (int64_t p35 = p5; p35 < best; p35 *= 3) {
            int64_t v = p35;
            while (v < n) v *= 2;
            if (v < best) best = v;
        }
    return best;
}

/* Rounds `count` pairs of double to the plan's dtype (in place for float64). */
static porta_status *store_pairs(porta_dtype dtype, double *pairs, int64_t count, void **out) {
    if (dtype == PORTA_F64) {
        *out = pairs;
        return NULL;
    }
    void *f;
    porta_status *status = plan_alloc((size_t)(2 * count) * sizeof(float),
                                           "fft twiddles", &f);
    if (status) {
        free(pairs);
        return status;
    }
    for (int64_t i = 0; i < 2 * count; i++) ((float *)f)[i] = (float)pairs[i];
    free(pairs);
    *out = f;
    return NULL;
}

static porta_status *build_stages(cpu_fft_plan *plan, const int *radices, int count) {
    int64_t twiddle_pairs = 0, root_pairs = 0, span = 1;
    for (int s = 0; s < count; s++) {
        cpu_fft_stage *stage = &plan->stages[s];
        stage->radix = radices[s];
        stage->span = span;
        stage->twiddle_at = twiddle_pairs;
        stage->root_at = root_pairs;
        twiddle_pairs += span * (radices[s] - 1);
        root_pairs += radices[s];
        span *= radices[s];
    }
    plan->stage_count = count;
    double *tw, *roots;
    PORTA_TRY(plan_alloc((size_t)(2 * twiddle_pairs) * sizeof(double), "fft twiddles",
                              (void **)&tw));
    porta_status *status = plan_alloc((size_t)(2 * root_pairs) * sizeof(double),
                                           "fft roots", (void **)&roots);
    if (status) {
        free(tw);
        return status;
    }
    for (int s = 0; s < count; s++) {
        const cpu_fft_stage *stage = &plan->stages[s];
        int r = stage->radix;
        for (int64_t k = 0; k < stage->span; k++)
            for (int q = 1; q < r; q++) {
                double *p = tw + 2 * (stage->twiddle_at + k * (r - 1) + q - 1);
                unit_root(plan->sign, k * q, stage->span * r, &p[0], &p[1]);
            }
        for (int q = 0; q < r; q++) {
            double *p = roots + 2 * (stage->root_at + q);
            unit_root(plan->sign, q, r, &p[0], &p[1]);
        }
    }
    status = store_pairs(plan->dtype, tw, twiddle_pairs, &plan->twiddles);
    if (status) {
        free(roots);
        return status;
    }
    return store_pairs(plan->dtype, roots, root_pairs, &plan->roots);
}

static const cpu_fft_plan *plan_locked(int64_t n, int sign, porta_dtype dtype, bool real,
                                       porta_status **status);

static porta_status *build_bluestein(cpu_fft_plan *plan) {
    int64_t n = plan->n, m = smooth_length(2 * n - 1);
    plan->m = m;
    porta_status *status = NULL;
    plan->inner_forward = plan_locked(m, -1, plan->dtype, false, &status);
    if (!status) plan->inner_backward = plan_locked(m, 1, plan->dtype, false, &status);
    const cpu_fft_plan *exact = status ? NULL : plan_locked(m, -1, PORTA_F64, false, &status);
    if (status) return status;
    double *chirp, *spectrum, *scratch;
    PORTA_TRY(plan_alloc((size_t)(2 * n) * sizeof(double), "fft chirp", (void **)&chirp));
    status = plan_alloc((size_t)(2 * m) * sizeof(double), "fft chirp", (void **)&spectrum);
    if (status) {
        free(chirp);
        return status;
    }
    status = plan_alloc((size_t)(2 * cpu_fft_scratch_pairs(exact)) * sizeof(double),
                             "fft scratch", (void **)&scratch);
    if (status) {
        free(chirp);
        free(spectrum);
        return status;
    }
    /* k^2 modulo 2n keeps the angle pi k^2 / n exact for large k */
    for (int64_t k = 0; k < n; k++) {
        int64_t k2 = (int64_t)((uint64_t)k * (uint64_t)k % (uint64_t)(2 * n));
        unit_root(plan->sign, k2, 2 * n, &chirp[2 * k], &chirp[2 * k + 1]);
    }
    memset(spectrum, 0, (size_t)(2 * m) * sizeof(double));
    for (int64_t k = 0; k < n; k++) {
        spectrum[2 * k] = chirp[2 * k] / (double)m;
        spectrum[2 * k + 1] = -chirp[2 * k + 1] / (double)m;
        if (k) {
            spectrum[2 * (m - k)] = spectrum[2 * k];
            spectrum[2 * (m - k) + 1] = spectrum[2 * k + 1];
        }
    }
    cpu_fft_run_f64(exact, spectrum, scratch);
    free(scratch);
    status = store_pairs(plan->dtype, chirp, n, &plan->chirp);
    if (status) {
        free(spectrum);
        return status;
    }
    return store_pairs(plan->dtype, spectrum, m, &plan->chirp_spectrum);
}

static void plan_free(cpu_fft_plan *plan) {
    free(plan->twiddles);
    free(plan->roots);
    free(plan->chirp);
    free(plan->chirp_spectrum);
    free(plan);
}

static porta_status *build_real(cpu_fft_plan *plan) {
    int64_t half = plan->n / 2;
    porta_status *status = NULL;
    plan->half = plan_locked(half, plan->sign, plan->dtype, false, &status);
    if (status) return status;
    double *tw;
    PORTA_TRY(plan_alloc((size_t)(2 * half) * sizeof(double), "fft twiddles", (void **)&tw));
    for (int64_t k = 0; k < half; k++) unit_root(plan->sign, k, plan->n, &tw[2 * k], &tw[2 * k + 1]);
    return store_pairs(plan->dtype, tw, half, &plan->twiddles);
}

static const cpu_fft_plan *plan_locked(int64_t n, int sign, porta_dtype dtype, bool real,
                                       porta_status **status) {
    for (cpu_fft_plan *p = cache; p; p = p->next)
        if (p->n == n && p->sign == sign && p->dtype == dtype && p->real == real) return p;
    cpu_fft_plan *plan;
    *status = plan_alloc(sizeof *plan, "fft plan", (void **)&plan);
    if (*status) return NULL;
    memset(plan, 0, sizeof *plan);
    plan->n = n;
    plan->sign = sign;
    plan->dtype = dtype;
    plan->real = real;
    int radices[CPU_FFT_MAX_STAGES], count;
    if (real)
        *status = build_real(plan);
    else if (factor_radices(n, radices, &count))
        *status = build_stages(plan, radices, count);
    else
        *status = build_bluestein(plan);
    if (*status) {
        plan_free(plan);
        return NULL;
    }
    plan->next = cache;
    cache = plan;
    return plan;
}

const cpu_fft_plan *cpu_fft_plan_get(int64_t n, int sign, porta_dtype dtype,
                                     porta_status **status) {
    *status = NULL;
    pthread_mutex_lock(&cache_lock);
    const cpu_fft_plan *plan = plan_locked(n, sign, dtype, false, status);
    pthread_mutex_unlock(&cache_lock);
    return plan;
}

const cpu_fft_plan *cpu_fft_real_plan_get(int64_t n, int sign, porta_dtype dtype,
                                          porta_status **status) {
    *status = NULL;
    pthread_mutex_lock(&cache_lock);
    const cpu_fft_plan *plan = plan_locked(n, sign, dtype, true, status);
    pthread_mutex_unlock(&cache_lock);
    return plan;
}

int64_t cpu_fft_scratch_pairs(const cpu_fft_plan *plan) {
    if (plan->real) return plan->n / 2 + cpu_fft_scratch_pairs(plan->half);
    if (!plan->inner_forward) return plan->n;
    /* the padded sequence, then the inner transforms' own */
    return plan->m + cpu_fft_scratch_pairs(plan->inner_forward);
}
