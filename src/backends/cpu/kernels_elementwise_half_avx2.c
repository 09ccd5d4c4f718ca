/* float16/bfloat16 <-> float conversions, 8 or 16 elements at a time:
 * F16C for float16, integer AVX2 for bfloat16's round to nearest even.
 * Results equal the scalar conversions of core/dtype.h, except for the
 * payload bits of NaNs. */
#include <immintrin.h>

#include "backends/cpu/kernels_elementwise.h"

void ew_widen_half_avx2(porta_dtype dtype, const uint16_t *src, float *dst, int64_t n) {
    int64_t i = 0;
    if (dtype == PORTA_F16) {
        for (; i + 8 <= n; i += 8) {
            __m128i halves = _mm_loadu_si128((const __m128i *)(const void *)(src + i));
            _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(halves));
        }
        for (; i < n; i++) dst[i] = core_f16_to_f32(src[i]);
    } else {
        for (; i + 8 <= n; i += 8) {
            __m128i halves = _mm_loadu_si128((const __m128i *)(const void *)(src + i));
            __m256i wide = _mm256_cvtepu16_epi32(halves);
            _mm256_storeu_ps(dst + i, _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16)));
        }
        for (; i < n; i++) dst[i] = core_bf16_to_f32(src[i]);
    }
}

/* Eight floats rounded to bfloat16, one per 32-bit lane: add 0x7fff plus
 * the lowest kept bit, then truncate; NaNs keep their top bits, made quiet. */
static __m256i round_to_bf16(const float *src) {
    const __m256i bits = _mm256_castps_si256(_mm256_loadu_ps(src));
    const __m256i kept = _mm256_srli_epi32(bits, 16);
    __m256i is_nan = _mm256_cmpgt_epi32(_mm256_and_si256(bits, _mm256_set1_epi32(0x7fffffff)),
                                        _mm256_set1_epi32(0x7f800000));
    __m256i bias = _mm256_add_epi32(_mm256_set1_epi32(0x7fff),
                                    _mm256_and_si256(kept, _mm256_set1_epi32(1)));
    __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(bits, bias), 16);
    __m256i quiet_nan = _mm256_or_si256(kept, _mm256_set1_epi32(0x40));
    return _mm256_blendv_epi8(rounded, quiet_nan, is_nan);
}

void ew_narrow_half_avx2(porta_dtype dtype, const float *src, uint16_t *dst, int64_t n) {
    int64_t i = 0;
    if (dtype == PORTA_F16) {
        for (; i + 8 <= n; i += 8)
            _mm_storeu_si128((__m128i *)(void *)(dst + i),
                             _mm256_cvtps_ph(_mm256_loadu_ps(src + i),
                                             _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
        for (; i < n; i++) dst[i] = core_f32_to_f16(src[i]);
    } else {
        for (; i + 16 <= n; i += 16) {
            /* packus interleaves the two halves by 128-bit lane; the
             * permute puts the four 64-bit groups back in order. */
            __m256i packed =
                _mm256_packus_epi32(round_to_bf16(src + i), round_to_bf16(src + i + 8));
            _mm256_storeu_si256((__m256i *)(void *)(dst + i),
                                _mm256_permute4x64_epi64(packed, 0xd8));
        }
        for (; i < n; i++) dst[i] = core_f32_to_bf16(src[i]);
    }
}
