/* Run-time instruction-set detection and the per-family cached choice. */
#include "backends/cpu/cpu_isa.h"

#include <stdlib.h>
#include <string.h>

static const char *const names[CPU_ISA_COUNT] = {
    [CPU_ISA_GENERIC] = "generic",
    [CPU_ISA_AVX2] = "avx2",
    [CPU_ISA_AVX512] = "avx512",
};

bool cpu_isa_supported(cpu_isa isa) {
    __builtin_cpu_init();
    switch (isa) {
    case CPU_ISA_GENERIC: return true;
    case CPU_ISA_AVX2:
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
               __builtin_cpu_supports("f16c");
    case CPU_ISA_AVX512:
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
               cpu_isa_supported(CPU_ISA_AVX2);
    case CPU_ISA_COUNT: break;
    }
    return false;
}

const char *cpu_isa_name(cpu_isa isa) {
    return (unsigned)isa < CPU_ISA_COUNT ? names[isa] : "?";
}

static cpu_isa best_supported(void) {
    if (cpu_isa_supported(CPU_ISA_AVX512)) return CPU_ISA_AVX512;
    if (cpu_isa_supported(CPU_ISA_AVX2)) return CPU_ISA_AVX2;
    return CPU_ISA_GENERIC;
}

/* The variable may only lower the choice: naming an instruction set the
 * CPU lacks falls back to the best one it has rather than crashing. */
static cpu_isa default_isa(const char *env_override) {
    const char *requested = env_override ? getenv(env_override) : NULL;
    if (requested) {
        for (int isa = 0; isa < CPU_ISA_COUNT; isa++)
            if (strcmp(requested, names[isa]) == 0 && cpu_isa_supported((cpu_isa)isa))
                return (cpu_isa)isa;
    }
    return best_supported();
}

cpu_isa cpu_isa_choose(cpu_isa_choice *choice) {
    int isa = atomic_load_explicit(&choice->isa, memory_order_relaxed);
    if (isa == CPU_ISA_UNSET) {
        int chosen = (int)default_isa(choice->env_override);
        /* A concurrent override wins over the default. */
        if (atomic_compare_exchange_strong(&choice->isa, &isa, chosen)) isa = chosen;
    }
    return (cpu_isa)isa;
}

bool cpu_isa_force(cpu_isa_choice *choice, cpu_isa isa) {
    if ((unsigned)isa >= CPU_ISA_COUNT || !cpu_isa_supported(isa)) return false;
    atomic_store(&choice->isa, (int)isa);
    return true;
}

void cpu_isa_reset(cpu_isa_choice *choice) { atomic_store(&choice->isa, CPU_ISA_UNSET); }
