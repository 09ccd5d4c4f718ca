/* The run-time choice among vmath's per-ISA tables. */
#include "backends/cpu/vmath.h"

static cpu_isa_choice choice = CPU_ISA_CHOICE_INIT("PORTA_VMATH_ISA");

const vmath_table *vmath_f32(void) {
    switch (cpu_isa_choose(&choice)) {
    case CPU_ISA_AVX512: return &vmath_table_avx512;
    case CPU_ISA_AVX2: return &vmath_table_avx2;
    default: return &vmath_table_generic;
    }
}

bool vmath_isa_force(cpu_isa isa) { return cpu_isa_force(&choice, isa); }

void vmath_isa_reset(void) { cpu_isa_reset(&choice); }
