/* Run-time choice of the GEMM micro-kernel. The choice is cached because
 * CPUID (behind __builtin_cpu_supports) and getenv are slow next to a small
 * GEMM; an atomic keeps concurrent first calls and test overrides safe. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "gemm_kernel.h"

#define ISA_UNSET (-1)

static _Atomic int active_isa = ISA_UNSET;

static const gemm_kernel *const kernels[GEMM_ISA_COUNT] = {
    [GEMM_ISA_GENERIC] = &gemm_kernel_generic,
    [GEMM_ISA_AVX2] = &gemm_kernel_avx2,
    [GEMM_ISA_AVX512] = &gemm_kernel_avx512,
};

bool gemm_isa_supported(gemm_isa isa) {
    __builtin_cpu_init();
    switch (isa) {
    case GEMM_ISA_GENERIC: return true;
    case GEMM_ISA_AVX2:
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case GEMM_ISA_AVX512:
        /* The kernel file is built with F, BW, VL and DQ enabled. */
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
               gemm_isa_supported(GEMM_ISA_AVX2);
    case GEMM_ISA_COUNT: break;
    }
    return false;
}

static gemm_isa best_supported(void) {
    if (gemm_isa_supported(GEMM_ISA_AVX512)) return GEMM_ISA_AVX512;
    if (gemm_isa_supported(GEMM_ISA_AVX2)) return GEMM_ISA_AVX2;
    return GEMM_ISA_GENERIC;
}

/* PORTA_GEMM_ISA may only lower the choice: naming an instruction set the
 * CPU lacks falls back to the best one it has rather than crashing. */
static gemm_isa default_isa(void) {
    static const char *const names[GEMM_ISA_COUNT] = {
        [GEMM_ISA_GENERIC] = "generic",
        [GEMM_ISA_AVX2] = "avx2",
        [GEMM_ISA_AVX512] = "avx512",
    };
    const char *requested = getenv("PORTA_GEMM_ISA");
    if (requested) {
        for (int isa = 0; isa < GEMM_ISA_COUNT; isa++)
            if (strcmp(requested, names[isa]) == 0 && gemm_isa_supported((gemm_isa)isa))
                return (gemm_isa)isa;
    }
    return best_supported();
}

const gemm_kernel *gemm_kernel_active(void) {
    int isa = atomic_load_explicit(&active_isa, memory_order_relaxed);
    if (isa == ISA_UNSET) {
        int chosen = (int)default_isa();
        /* A concurrent override wins over the default. */
        if (!atomic_compare_exchange_strong(&active_isa, &isa, chosen)) return kernels[isa];
        isa = chosen;
    }
    return kernels[isa];
}

bool gemm_isa_force(gemm_isa isa) {
    if ((int)isa < 0 || isa >= GEMM_ISA_COUNT || !gemm_isa_supported(isa)) return false;
    atomic_store(&active_isa, (int)isa);
    return true;
}

void gemm_isa_reset(void) { atomic_store(&active_isa, ISA_UNSET); }
