/* Stage conversions between float16/bfloat16 and float for the staged half
 * loops: the AVX2 versions where the CPU has AVX2 (with F16C), else one
 * element at a time. The choice is made once (cpu_isa.h); tests can force
 * the portable loops to check them on machines that would never pick them. */
#include "backends/cpu/cpu_isa.h"
#include "backends/cpu/kernels_elementwise.h"

static cpu_isa_choice choice = CPU_ISA_CHOICE_INIT(NULL);

static bool use_avx2(void) { return cpu_isa_choose(&choice) >= CPU_ISA_AVX2; }

void ew_half_force_portable(bool portable) {
    if (portable)
        cpu_isa_force(&choice, CPU_ISA_GENERIC);
    else
        cpu_isa_reset(&choice);
}

void ew_widen_half(porta_dtype dtype, const uint16_t *src, float *dst, int64_t n) {
    if (use_avx2()) {
        ew_widen_half_avx2(dtype, src, dst, n);
    } else if (dtype == PORTA_F16) {
        for (int64_t i = 0; i < n; i++) dst[i] = core_f16_to_f32(src[i]);
    } else {
        for (int64_t i = 0; i < n; i++) dst[i] = core_bf16_to_f32(src[i]);
    }
}

void ew_narrow_half(porta_dtype dtype, const float *src, uint16_t *dst, int64_t n) {
    if (use_avx2()) {
        ew_narrow_half_avx2(dtype, src, dst, n);
    } else if (dtype == PORTA_F16) {
        for (int64_t i = 0; i < n; i++) dst[i] = core_f32_to_f16(src[i]);
    } else {
        for (int64_t i = 0; i < n; i++) dst[i] = core_f32_to_bf16(src[i]);
    }
}
