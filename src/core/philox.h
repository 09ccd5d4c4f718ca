/*
 * The counter-based random generator every backend shares: Philox4x32-10
 * (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011;
 * the reference is Random123's philox4x32_10).
 *
 * How a stream of values is defined, so any backend can reproduce it:
 *
 *  - Element i of a destination tensor, counted in row-major order of its
 *    logical shape, takes stream position n = offset + i (uint64, wrapping).
 *  - Position n lives in Philox block n / 4, lane n % 4. The block's counter
 *    is the 128-bit word {lo32(n / 4), hi32(n / 4), 0, 0} and its key is
 *    {lo32(seed), hi32(seed)}; philox4x32_10(counter, key) gives four 32-bit
 *    words x[0..3], one per lane.
 *  - Uniform: u = (x[lane] >> 8) * 2^-24, an exact float in [0, 1) with 24
 *    random bits. U[low, high) is lo + (hi - lo) * u with lo = (float)low
 *    and hi = (float)high, each operation rounded to float (for a float64
 *    destination: low + (high - low) * u in double), then rounded to the
 *    destination dtype; a result >= high is replaced by lo, so the interval
 *    stays half-open.
 *  - Normal: lanes pair up as (0, 1) and (2, 3) within a block. For the pair
 *    (x[2j], x[2j+1]), Box-Muller takes u1 = ((x[2j] >> 8) + 1) * 2^-24 in
 *    (0, 1] (so its log is finite) and u2 = (x[2j+1] >> 8) * 2^-24, and gives
 *    r = sqrt(-2 ln u1), the even lane z = r cos(2 pi u2) and the odd lane
 *    z = r sin(2 pi u2). N(mean, std) is mean + std * z, evaluated like the
 *    uniform transform (mean and std rounded to float, or all in double for
 *    float64).
 *
 * Philox and the uniform values are exact integer arithmetic, hence bit for
 * bit identical everywhere; normal values depend on the platform's log, sqrt,
 * sin and cos, so backends agree to within a few ulp rather than bit for bit.
 */
#ifndef PORTA_CORE_PHILOX_H
#define PORTA_CORE_PHILOX_H

#include <math.h>
#include <stdint.h>

/* Round multipliers and Weyl key increments of Philox4x32. */
#define CORE_PHILOX_M0 0xD2511F53u
#define CORE_PHILOX_M1 0xCD9E8D57u
#define CORE_PHILOX_W0 0x9E3779B9u
#define CORE_PHILOX_W1 0xBB67AE85u

typedef struct core_philox_words {
    uint32_t x[4];
} core_philox_words;

/* philox4x32_10(counter, key), as Random123 defines it. */
static inline core_philox_words core_philox4x32_10(core_philox_words counter,
                                                     uint32_t key0, uint32_t key1) {
    uint32_t c0 = counter.x[0], c1 = counter.x[1], c2 = counter.x[2], c3 = counter.x[3];
    for (int round = 0; round < 10; round++) {
        uint64_t p0 = (uint64_t)CORE_PHILOX_M0 * c0;
        uint64_t p1 = (uint64_t)CORE_PHILOX_M1 * c2;
        uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
        uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
        c0 = hi1 ^ c1 ^ key0;
        c1 = lo1;
        c2 = hi0 ^ c3 ^ key1;
        c3 = lo0;
        key0 += CORE_PHILOX_W0;
        key1 += CORE_PHILOX_W1;
    }
    core_philox_words out = {{c0, c1, c2, c3}};
    return out;
}

/* The four words of stream block `block` (positions 4*block .. 4*block+3). */
static inline core_philox_words core_philox_block(uint64_t seed, uint64_t block) {
    core_philox_words counter = {{(uint32_t)block, (uint32_t)(block >> 32), 0, 0}};
    return core_philox4x32_10(counter, (uint32_t)seed, (uint32_t)(seed >> 32));
}

/* [0, 1) with 24 random bits: exactly representable in float. */
static inline float core_philox_unit(uint32_t word) {
    return (float)(word >> 8) * 0x1p-24f;
}

/* (0, 1]: the Box-Muller radius input, never 0. */
static inline float core_philox_unit_nonzero(uint32_t word) {
    return (float)((word >> 8) + 1) * 0x1p-24f;
}

/* Standard normals for the lane pair (even, odd), in float. */
static inline void core_philox_box_muller_f32(uint32_t even, uint32_t odd, float *z_even,
                                               float *z_odd) {
    float r = sqrtf(-2.0f * logf(core_philox_unit_nonzero(even)));
    float theta = 6.2831853071795864769f * core_philox_unit(odd);
    *z_even = r * cosf(theta);
    *z_odd = r * sinf(theta);
}

/* The same in double, for float64 destinations. */
static inline void core_philox_box_muller_f64(uint32_t even, uint32_t odd, double *z_even,
                                               double *z_odd) {
    double r = sqrt(-2.0 * log((double)core_philox_unit_nonzero(even)));
    double theta = 6.2831853071795864769 * (double)core_philox_unit(odd);
    *z_even = r * cos(theta);
    *z_odd = r * sin(theta);
}

#endif
