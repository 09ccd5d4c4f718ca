/* Plans of one-dimensional complex Fourier transforms on the CPU: a length
 * split into radix stages (4, 2, 3, 5, then any odd prime up to
 * CPU_FFT_MAX_RADIX) run as a self-sorting (Stockham) decimation in time,
 * or, for lengths with a larger prime factor, Bluestein's chirp-z
 * convolution through plans of a 5-smooth length. Plans are built once per
 * (length, direction, precision) and kept for the process. */
#ifndef PORTA_CPU_FFT_PLAN_H
#define PORTA_CPU_FFT_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "porta.h"

/* Odd primes above this go through Bluestein: a radix-p stage costs p
 * complex products per value, Bluestein about three transforms of a
 * 5-smooth length >= 2n - 1. */
#define CPU_FFT_MAX_RADIX 31
#define CPU_FFT_MAX_STAGES 64

typedef struct cpu_fft_stage {
    int radix;
    int64_t span;         /* the product of the earlier stages' radices */
    int64_t twiddle_at;   /* first of its span * (radix - 1) twiddles, in pairs */
    int64_t root_at;      /* first of its radix roots of unity, in pairs */
} cpu_fft_stage;

typedef struct cpu_fft_plan {
    int64_t n;
    int sign;             /* the exponent's: -1 forward, +1 backward */
    porta_dtype dtype;    /* float32 or float64: the twiddles' and the arithmetic's */
    int stage_count;
    cpu_fft_stage stages[CPU_FFT_MAX_STAGES];
    void *twiddles;       /* (re, im) pairs of dtype */
    void *roots;
    /* Bluestein (inner != NULL): chirp[k] = exp(sign i pi k^2 / n), k < n,
     * and the spectrum of the conjugate chirp's circular extension to m,
     * divided by m, both pairs of dtype */
    int64_t m;
    const struct cpu_fft_plan *inner_forward, *inner_backward;
    void *chirp, *chirp_spectrum;
    /* a real plan (cpu_fft_real_plan_get): the complex plan of n / 2 and,
     * in twiddles, exp(sign 2 pi i k / n) for k < n / 2 */
    bool real;
    const struct cpu_fft_plan *half;
    struct cpu_fft_plan *next; /* the cache's list */
} cpu_fft_plan;

/* The plan of length n >= 1; NULL with *status set when memory runs out. */
const cpu_fft_plan *cpu_fft_plan_get(int64_t n, int sign, porta_dtype dtype,
                                     porta_status **status);
/* The plan of a real transform of an even length n >= 2 as a complex one
 * of n / 2 (R2C forward, sign -1; C2R backward, sign +1): the even and odd
 * values become one complex sequence, split after (R2C) or joined before
 * (C2R) the half-length transform with the twiddles. */
const cpu_fft_plan *cpu_fft_real_plan_get(int64_t n, int sign, porta_dtype dtype,
                                          porta_status **status);
/* Complex values of scratch that cpu_fft_run_* needs beside the data. */
int64_t cpu_fft_scratch_pairs(const cpu_fft_plan *plan);

/* Transforms the n (re, im) pairs of data in place (unnormalized). */
void cpu_fft_run_f32(const cpu_fft_plan *plan, float *data, float *scratch);
void cpu_fft_run_f64(const cpu_fft_plan *plan, double *data, double *scratch);

#endif
