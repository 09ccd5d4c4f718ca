/* The arithmetic of fft_plan.h's transforms for one precision: included by
 * fft_run.c once per precision with REAL (float or double) and FN(name)
 * (which appends the precision's suffix) defined. Pairs are (re, im). */

/* The radix-r butterfly on re/im in place: out_q = sum_t v_t w^(q t),
 * w = exp(sign 2 pi i / r); roots holds w^0..w^(r-1). */
static inline __attribute__((always_inline)) void FN(butterfly)(int r, REAL *re, REAL *im,
                                                                 REAL sign, const REAL *roots) {
    switch (r) {
    case 2: {
        REAL r0 = re[0], i0 = im[0];
        re[0] = r0 + re[1], im[0] = i0 + im[1];
        re[1] = r0 - re[1], im[1] = i0 - im[1];
        return;
    }
    case 3: {
        const REAL h = (REAL)0.86602540378443864676; /* sin(2 pi / 3) */
        REAL sr = re[1] + re[2], si = im[1] + im[2];
        REAL dr = sign * h * (re[1] - re[2]), di = sign * h * (im[1] - im[2]);
        REAL mr = re[0] - sr / 2, mi = im[0] - si / 2;
        re[0] += sr, im[0] += si;
        re[1] = mr - di, im[1] = mi + dr; /* m + i d */
        re[2] = mr + di, im[2] = mi - dr;
        return;
    }
    case 4: {
        REAL ar = re[0] + re[2], ai = im[0] + im[2], br = re[0] - re[2], bi = im[0] - im[2];
        REAL cr = re[1] + re[3], ci = im[1] + im[3];
        /* w (v1 - v3) with w = sign i */
        REAL dr = -sign * (im[1] - im[3]), di = sign * (re[1] - re[3]);
        re[0] = ar + cr, im[0] = ai + ci;
        re[1] = br + dr, im[1] = bi + di;
        re[2] = ar - cr, im[2] = ai - ci;
        re[3] = br - dr, im[3] = bi - di;
        return;
    }
    case 5: {
        const REAL c1 = (REAL)0.30901699437494742410, c2 = (REAL)-0.80901699437494742410;
        const REAL s1 = (REAL)0.95105651629515357212, s2 = (REAL)0.58778525229247312917;
        REAL a1r = re[1] + re[4], a1i = im[1] + im[4], a2r = re[2] + re[3], a2i = im[2] + im[3];
        REAL b1r = re[1] - re[4], b1i = im[1] - im[4], b2r = re[2] - re[3], b2i = im[2] - im[3];
        REAL m1r = re[0] + c1 * a1r + c2 * a2r, m1i = im[0] + c1 * a1i + c2 * a2i;
        REAL m2r = re[0] + c2 * a1r + c1 * a2r, m2i = im[0] + c2 * a1i + c1 * a2i;
        /* i sign (s1 b1 + s2 b2) and i sign (s2 b1 - s1 b2) */
        REAL n1r = -sign * (s1 * b1i + s2 * b2i), n1i = sign * (s1 * b1r + s2 * b2r);
        REAL n2r = -sign * (s2 * b1i - s1 * b2i), n2i = sign * (s2 * b1r - s1 * b2r);
        re[0] += a1r + a2r, im[0] += a1i + a2i;
        re[1] = m1r + n1r, im[1] = m1i + n1i;
        re[4] = m1r - n1r, im[4] = m1i - n1i;
        re[2] = m2r + n2r, im[2] = m2i + n2i;
        re[3] = m2r - n2r, im[3] = m2i - n2i;
        return;
    }
    default: {
        REAL out_re[CPU_FFT_MAX_RADIX], out_im[CPU_FFT_MAX_RADIX];
        for (int q = 0; q < r; q++) {
            REAL sr = 0, si = 0;
            for (int t = 0, e = 0; t < r; t++, e = (e + q) % r) {
                REAL wr = roots[2 * e], wi = roots[2 * e + 1];
                sr += re[t] * wr - im[t] * wi;
                si += re[t] * wi + im[t] * wr;
            }
            out_re[q] = sr, out_im[q] = si;
        }
        for (int q = 0; q < r; q++) re[q] = out_re[q], im[q] = out_im[q];
        return;
    }
    }
}

/* One Stockham stage: the r values n/r apart are twiddled by their place k
 * in the span-long transforms built so far, combined, and written span
 * apart into transforms of span * r values. Inlined into FN(stage) once
 * per common radix, so each of those loops has a constant length and,
 * unrolled, keeps its values in registers. */
static inline __attribute__((always_inline)) void FN(stage_of)(const cpu_fft_plan *plan,
                                                              const cpu_fft_stage *st,
                                                              const REAL *in, REAL *out, int r) {
    const int64_t span = st->span, stride = plan->n / r;
    const REAL *tw = (const REAL *)plan->twiddles + 2 * st->twiddle_at;
    const REAL *roots = (const REAL *)plan->roots + 2 * st->root_at;
    const REAL sign = (REAL)plan->sign;
    REAL re[CPU_FFT_MAX_RADIX], im[CPU_FFT_MAX_RADIX];
    for (int64_t block = 0; block < stride / span; block++)
        for (int64_t k = 0; k < span; k++) {
            int64_t j = block * span + k;
            _Pragma("GCC unroll 8")
            for (int q = 0; q < r; q++) {
                re[q] = in[2 * (j + q * stride)];
                im[q] = in[2 * (j + q * stride) + 1];
            }
            if (k) {
                const REAL *w = tw + 2 * k * (r - 1);
                _Pragma("GCC unroll 8")
                for (int q = 1; q < r; q++) {
                    REAL wr = w[2 * (q - 1)], wi = w[2 * (q - 1) + 1];
                    REAL vr = re[q];
                    re[q] = vr * wr - im[q] * wi;
                    im[q] = vr * wi + im[q] * wr;
                }
            }
            FN(butterfly)(r, re, im, sign, roots);
            int64_t base = block * span * r + k;
            _Pragma("GCC unroll 8")
            for (int q = 0; q < r; q++) {
                out[2 * (base + q * span)] = re[q];
                out[2 * (base + q * span) + 1] = im[q];
            }
        }
}

/* The radix-4 stage of FN(stage_of) with the four values in scalars (the
 * one most lengths spend their time in). */
static void FN(stage4)(const cpu_fft_plan *plan, const cpu_fft_stage *st, const REAL *in,
                       REAL *out) {
    const int64_t span = st->span, stride = plan->n / 4;
    const REAL *tw = (const REAL *)plan->twiddles + 2 * st->twiddle_at;
    const REAL sign = (REAL)plan->sign;
    for (int64_t block = 0; block < stride / span; block++) {
        const REAL *x = in + 2 * block * span;
        REAL *y = out + 2 * block * span * 4;
        for (int64_t k = 0; k < span; k++) {
            const REAL *w = tw + 6 * k;
            REAL r0 = x[2 * k], i0 = x[2 * k + 1];
            REAL a1 = x[2 * (k + stride)], b1 = x[2 * (k + stride) + 1];
            REAL a2 = x[2 * (k + 2 * stride)], b2 = x[2 * (k + 2 * stride) + 1];
            REAL a3 = x[2 * (k + 3 * stride)], b3 = x[2 * (k + 3 * stride) + 1];
            REAL r1 = a1 * w[0] - b1 * w[1], i1 = a1 * w[1] + b1 * w[0];
            REAL r2 = a2 * w[2] - b2 * w[3], i2 = a2 * w[3] + b2 * w[2];
            REAL r3 = a3 * w[4] - b3 * w[5], i3 = a3 * w[5] + b3 * w[4];
            REAL ar = r0 + r2, ai = i0 + i2, br = r0 - r2, bi = i0 - i2;
            REAL cr = r1 + r3, ci = i1 + i3;
            REAL dr = -sign * (i1 - i3), di = sign * (r1 - r3);
            y[2 * k] = ar + cr, y[2 * k + 1] = ai + ci;
            y[2 * (k + span)] = br + dr, y[2 * (k + span) + 1] = bi + di;
            y[2 * (k + 2 * span)] = ar - cr, y[2 * (k + 2 * span) + 1] = ai - ci;
            y[2 * (k + 3 * span)] = br - dr, y[2 * (k + 3 * span) + 1] = bi - di;
        }
    }
}

static void FN(stage)(const cpu_fft_plan *plan, const cpu_fft_stage *st, const REAL *in,
                      REAL *out) {
    switch (st->radix) {
    case 4: FN(stage4)(plan, st, in, out); break;
    case 2: FN(stage_of)(plan, st, in, out, 2); break;
    case 3: FN(stage_of)(plan, st, in, out, 3); break;
    case 5: FN(stage_of)(plan, st, in, out, 5); break;
    default: FN(stage_of)(plan, st, in, out, st->radix); break;
    }
}

static void FN(bluestein)(const cpu_fft_plan *plan, REAL *data, REAL *scratch) {
    const int64_t n = plan->n, m = plan->m;
    const REAL *chirp = plan->chirp, *spectrum = plan->chirp_spectrum;
    REAL *a = scratch, *inner = scratch + 2 * m;
    for (int64_t k = 0; k < n; k++) {
        REAL xr = data[2 * k], xi = data[2 * k + 1], cr = chirp[2 * k], ci = chirp[2 * k + 1];
        a[2 * k] = xr * cr - xi * ci;
        a[2 * k + 1] = xr * ci + xi * cr;
    }
    for (int64_t k = 2 * n; k < 2 * m; k++) a[k] = 0;
    FN(cpu_fft_run)(plan->inner_forward, a, inner);
    for (int64_t k = 0; k < m; k++) {
        REAL ar = a[2 * k], ai = a[2 * k + 1], sr = spectrum[2 * k], si = spectrum[2 * k + 1];
        a[2 * k] = ar * sr - ai * si;
        a[2 * k + 1] = ar * si + ai * sr;
    }
    FN(cpu_fft_run)(plan->inner_backward, a, inner);
    for (int64_t k = 0; k < n; k++) {
        REAL ar = a[2 * k], ai = a[2 * k + 1], cr = chirp[2 * k], ci = chirp[2 * k + 1];
        data[2 * k] = ar * cr - ai * ci;
        data[2 * k + 1] = ar * ci + ai * cr;
    }
}

void FN(cpu_fft_run)(const cpu_fft_plan *plan, REAL *data, REAL *scratch) {
    if (plan->inner_forward) {
        FN(bluestein)(plan, data, scratch);
        return;
    }
    REAL *in = data, *out = scratch;
    for (int s = 0; s < plan->stage_count; s++) {
        FN(stage)(plan, &plan->stages[s], in, out);
        REAL *t = in;
        in = out;
        out = t;
    }
    if (in != data) memcpy(data, in, (size_t)(2 * plan->n) * sizeof(REAL));
}
