/* Stage conversions between float16/bfloat16 and float for the staged half
 * loops: the AVX2 versions where the CPU has AVX2 and F16C, else one
 * element at a time. The choice is made once; tests can force the portable
 * loops to check them on machines that would never pick them. */
#include <stdatomic.h>

#include "backends/cpu/kernels_elementwise.h"

enum { CHOICE_UNSET = -1, CHOICE_PORTABLE, CHOICE_AVX2 };
static _Atomic int choice = CHOICE_UNSET;

static bool use_avx2(void) {
    int c = atomic_load_explicit(&choice, memory_order_relaxed);
    if (c == CHOICE_UNSET) {
        __builtin_cpu_init();
        int best = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c")
                       ? CHOICE_AVX2
                       : CHOICE_PORTABLE;
        /* a concurrent ew_half_force_portable wins */
        c = atomic_compare_exchange_strong(&choice, &c, best) ? best : c;
    }
    return c == CHOICE_AVX2;
}

void ew_half_force_portable(bool portable) {
    atomic_store(&choice, portable ? CHOICE_PORTABLE : CHOICE_UNSET);
}

void ew_widen_half(porta_dtype dtype, const uint16_t *src, float *dst, int64_t n) {
    if (use_avx2()) {
        ew_widen_half_avx2(dtype, src, dst, n);
    } else if (dtype == PORTA_F16) {
        for (int64_t i = 0; i < n; i++) dst[i] = porta_f16_to_f32(src[i]);
    } else {
        for (int64_t i = 0; i < n; i++) dst[i] = porta_bf16_to_f32(src[i]);
    }
}

void ew_narrow_half(porta_dtype dtype, const float *src, uint16_t *dst, int64_t n) {
    if (use_avx2()) {
        ew_narrow_half_avx2(dtype, src, dst, n);
    } else if (dtype == PORTA_F16) {
        for (int64_t i = 0; i < n; i++) dst[i] = porta_f32_to_f16(src[i]);
    } else {
        for (int64_t i = 0; i < n; i++) dst[i] = porta_f32_to_bf16(src[i]);
    }
}
