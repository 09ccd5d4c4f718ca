/* Stage conversions between float16/bfloat16 and float for the staged half
 * loops: the AVX2 versions where the CPU has AVX2 and F16C, else one
 * element at a time. */
#include "backends/cpu/kernels_elementwise.h"

static bool have_avx2(void) {
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
}

void ew_widen_half(porta_dtype dtype, const uint16_t *src, float *dst, int64_t n) {
    if (have_avx2()) {
        ew_widen_half_avx2(dtype, src, dst, n);
    } else if (dtype == PORTA_F16) {
        for (int64_t i = 0; i < n; i++) dst[i] = porta_f16_to_f32(src[i]);
    } else {
        for (int64_t i = 0; i < n; i++) dst[i] = porta_bf16_to_f32(src[i]);
    }
}

void ew_narrow_half(porta_dtype dtype, const float *src, uint16_t *dst, int64_t n) {
    if (have_avx2()) {
        ew_narrow_half_avx2(dtype, src, dst, n);
    } else if (dtype == PORTA_F16) {
        for (int64_t i = 0; i < n; i++) dst[i] = porta_f32_to_f16(src[i]);
    } else {
        for (int64_t i = 0; i < n; i++) dst[i] = porta_f32_to_bf16(src[i]);
    }
}
