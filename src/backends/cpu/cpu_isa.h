/* The instruction sets the CPU backend compiles kernels for, and a cached,
 * overridable run-time choice among them that each kernel family (GEMM,
 * reductions, half conversions) keeps for itself. */
#ifndef PORTA_CPU_ISA_H
#define PORTA_CPU_ISA_H

#include <stdatomic.h>
#include <stdbool.h>

/* Each level names the extensions its *_avx2.c / *_avx512.c files are
 * compiled with (CMakeLists) and includes the one below it. */
typedef enum cpu_isa {
    CPU_ISA_GENERIC, /* x86-64 baseline: SSE2 */
    CPU_ISA_AVX2,    /* with FMA and F16C */
    CPU_ISA_AVX512,  /* F, BW, VL and DQ */
    CPU_ISA_COUNT
} cpu_isa;

bool cpu_isa_supported(cpu_isa isa);
/* "generic", "avx2" or "avx512"; "?" for anything else. */
const char *cpu_isa_name(cpu_isa isa);

/* One family's choice. CPUID (behind __builtin_cpu_supports) and getenv are
 * too slow to ask on every kernel call, so the choice is made on first use;
 * the atomic keeps concurrent first calls and test overrides safe. */
typedef struct cpu_isa_choice {
    _Atomic int isa;          /* a cpu_isa, or CPU_ISA_UNSET before first use */
    const char *env_override; /* variable that may lower the choice, or NULL */
} cpu_isa_choice;

#define CPU_ISA_UNSET (-1)
#define CPU_ISA_CHOICE_INIT(env_override) {CPU_ISA_UNSET, env_override}

/* The forced ISA if any, else the best the CPU supports, lowered to the one
 * the choice's variable names when the CPU supports that. */
cpu_isa cpu_isa_choose(cpu_isa_choice *choice);
/* Overrides the choice for tests and benchmarks; false (and no change)
 * when the CPU lacks the instruction set. */
bool cpu_isa_force(cpu_isa_choice *choice, cpu_isa isa);
/* Drops any override: the next use chooses again. */
void cpu_isa_reset(cpu_isa_choice *choice);

#endif
