/* Run-time choice among the reduction loops compiled for each instruction
 * set. CPUID is behind __builtin_cpu_supports and too slow to ask on every
 * reduction, so the choice is made once; an atomic keeps concurrent first
 * calls and test overrides safe. */
#include <stdatomic.h>

#include "backends/cpu/kernels_reduce.h"

#define ISA_UNSET (-1)

static _Atomic int active_isa = ISA_UNSET;

static const reduce_kernel (*const tables[REDUCE_ISA_COUNT])[PORTA_DTYPE_COUNT] = {
    [REDUCE_ISA_BASELINE] = cpu_reduce_kernels_baseline,
    [REDUCE_ISA_AVX2] = cpu_reduce_kernels_avx2,
    [REDUCE_ISA_AVX512] = cpu_reduce_kernels_avx512,
};

/* Each check names every extension its file is compiled with (CMakeLists). */
bool cpu_reduce_isa_supported(reduce_isa isa) {
    __builtin_cpu_init();
    switch (isa) {
    case REDUCE_ISA_BASELINE: return true;
    case REDUCE_ISA_AVX2:
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
               __builtin_cpu_supports("f16c");
    case REDUCE_ISA_AVX512:
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
               cpu_reduce_isa_supported(REDUCE_ISA_AVX2);
    case REDUCE_ISA_COUNT: break;
    }
    return false;
}

static int best_supported(void) {
    if (cpu_reduce_isa_supported(REDUCE_ISA_AVX512)) return REDUCE_ISA_AVX512;
    if (cpu_reduce_isa_supported(REDUCE_ISA_AVX2)) return REDUCE_ISA_AVX2;
    return REDUCE_ISA_BASELINE;
}

const reduce_kernel *cpu_reduce_kernel(porta_reduce_op op, porta_dtype dtype) {
    if ((unsigned)op >= PORTA_REDUCE_OP_COUNT || (unsigned)dtype >= PORTA_DTYPE_COUNT)
        return NULL;
    int isa = atomic_load_explicit(&active_isa, memory_order_relaxed);
    if (isa == ISA_UNSET) {
        int chosen = best_supported();
        /* A concurrent override wins over the default. */
        if (atomic_compare_exchange_strong(&active_isa, &isa, chosen)) isa = chosen;
    }
    const reduce_kernel *kernel = &tables[isa][op][dtype];
    return kernel->fold ? kernel : NULL;
}

bool cpu_reduce_isa_force(reduce_isa isa) {
    if ((unsigned)isa >= REDUCE_ISA_COUNT || !cpu_reduce_isa_supported(isa)) return false;
    atomic_store(&active_isa, (int)isa);
    return true;
}

void cpu_reduce_isa_reset(void) { atomic_store(&active_isa, ISA_UNSET); }
