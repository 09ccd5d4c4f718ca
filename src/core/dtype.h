/* dtype helpers shared by every layer: sizes, half-precision conversions and
 * reading/writing one element of any dtype as a double. */
#ifndef PORTA_CORE_DTYPE_H
#define PORTA_CORE_DTYPE_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "porta.h"

bool core_dtype_is_valid(int dtype);
bool core_dtype_is_integral(porta_dtype dtype); /* integers, not bool */

/* A float's IEEE bits and back, for the conversions that work on them. */
static inline uint32_t core_f32_bits(float f) {
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    return bits;
}

static inline float core_f32_from_bits(uint32_t bits) {
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* IEEE binary16 <-> binary32, round to nearest even; NaN stays NaN. */
static inline float core_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f;
    uint32_t mant = h & 0x3ff;
    uint32_t bits;
    if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (mant << 13);
    } else if (exp == 0) {
        if (mant == 0) {
            bits = sign;
        } else { /* subnormal: value = mant * 2^-24 */
            bits = core_f32_bits((float)mant * 5.9604644775390625e-8f) | sign;
        }
    } else {
        bits = sign | ((exp + 112) << 23) | (mant << 13);
    }
    return core_f32_from_bits(bits);
}

static inline uint16_t core_f32_to_f16(float f) {
    uint32_t bits = core_f32_bits(f);
    uint16_t sign = (uint16_t)((bits >> 16) & 0x8000);
    uint32_t abs = bits & 0x7fffffffu;
    if (abs >= 0x7f800000u) /* inf or NaN (keep a quiet NaN payload bit) */
        return sign | 0x7c00 | (abs > 0x7f800000u ? 0x200 : 0);
    if (abs >= 0x477ff000u) /* rounds to >= 65520: overflow to inf */
        return sign | 0x7c00;
    if (abs < 0x38800000u) { /* below the smallest normal half: subnormal or 0 */
        /* Adding 0.5 shifts the half subnormal grid onto float's lowest bits,
         * so the FPU's own rounding is round-to-nearest-even. */
        uint32_t rb = core_f32_bits(core_f32_from_bits(abs) + 0.5f);
        return sign | (uint16_t)(rb - 0x3f000000u);
    }
    uint32_t mant_odd = (abs >> 13) & 1;
    abs += 0xc8000fffu + mant_odd; /* rebias exponent (-112<<23) and round */
    return sign | (uint16_t)(abs >> 13);
}

static inline float core_bf16_to_f32(uint16_t b) { return core_f32_from_bits((uint32_t)b << 16); }

static inline uint16_t core_f32_to_bf16(float f) {
    uint32_t bits = core_f32_bits(f);
    if ((bits & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((bits >> 16) | 0x40);
    bits += 0x7fffu + ((bits >> 16) & 1);
    return (uint16_t)(bits >> 16);
}

/* Conversions from double follow C's casts with PyTorch's choices where C
 * leaves them undefined: float -> integer truncates toward zero and wraps
 * modulo 2^n (via int64), NaN -> 0, and anything nonzero -> true. */
static inline int64_t core_double_to_i64(double v) {
    if (v != v) return 0;
    if (v >= 9223372036854775807.0) return INT64_MIN; /* as x86 cvttsd2si */
    if (v < -9223372036854775808.0) return INT64_MIN;
    return (int64_t)v;
}

static inline double core_load_as_double(porta_dtype dtype, const void *p) {
    switch (dtype) {
    case PORTA_BOOL: return *(const uint8_t *)p ? 1.0 : 0.0;
    case PORTA_U8: return *(const uint8_t *)p;
    case PORTA_I8: return *(const int8_t *)p;
    case PORTA_I16: return *(const int16_t *)p;
    case PORTA_I32: return *(const int32_t *)p;
    case PORTA_I64: return (double)*(const int64_t *)p;
    case PORTA_F16: return core_f16_to_f32(*(const uint16_t *)p);
    case PORTA_BF16: return core_bf16_to_f32(*(const uint16_t *)p);
    case PORTA_F32: return *(const float *)p;
    case PORTA_F64: return *(const double *)p;
    default: return 0.0;
    }
}

static inline void core_store_from_double(porta_dtype dtype, void *p, double v) {
    switch (dtype) {
    case PORTA_BOOL: *(uint8_t *)p = v != 0.0; break;
    case PORTA_U8: *(uint8_t *)p = (uint8_t)core_double_to_i64(v); break;
    case PORTA_I8: *(int8_t *)p = (int8_t)core_double_to_i64(v); break;
    case PORTA_I16: *(int16_t *)p = (int16_t)core_double_to_i64(v); break;
    case PORTA_I32: *(int32_t *)p = (int32_t)core_double_to_i64(v); break;
    case PORTA_I64: *(int64_t *)p = core_double_to_i64(v); break;
    case PORTA_F16: *(uint16_t *)p = core_f32_to_f16((float)v); break;
    case PORTA_BF16: *(uint16_t *)p = core_f32_to_bf16((float)v); break;
    case PORTA_F32: *(float *)p = (float)v; break;
    case PORTA_F64: *(double *)p = v; break;
    default: break;
    }
}

#endif
