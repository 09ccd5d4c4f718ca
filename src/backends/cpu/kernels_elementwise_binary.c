/* Binary elementwise kernels: the run-time choice among the loops of
 * kernels_elementwise_binary_loops.h compiled for each instruction set, and
 * their baseline build. */
#define EW_BINARY_TABLE ew_binary_loops_baseline
#include "backends/cpu/kernels_elementwise_binary_loops.h"

/* The variable lets benchmarks compare the builds in one binary. */
static cpu_isa_choice choice = CPU_ISA_CHOICE_INIT("PORTA_BINARY_ISA");

static const ew_loop_fn (*const tables[CPU_ISA_COUNT])[PORTA_DTYPE_COUNT] = {
    [CPU_ISA_GENERIC] = ew_binary_loops_baseline,
    [CPU_ISA_AVX2] = ew_binary_loops_avx2,
    [CPU_ISA_AVX512] = ew_binary_loops_avx512,
};

ew_loop_fn ew_binary_loop(porta_binary_op op, porta_dtype dtype) {
    if ((unsigned)op >= PORTA_BINARY_OP_COUNT || (unsigned)dtype >= PORTA_DTYPE_COUNT)
        return NULL;
    return tables[cpu_isa_choose(&choice)][op][dtype];
}

bool ew_binary_is_costly(porta_binary_op op) {
    switch (op) {
    case PORTA_FLOOR_DIVIDE: case PORTA_REMAINDER: case PORTA_FMOD: case PORTA_POW:
    case PORTA_ATAN2:
        return true;
    default:
        return op >= PORTA_IGAMMA; /* the special functions: series and loops */
    }
}

bool ew_binary_isa_force(cpu_isa isa) { return cpu_isa_force(&choice, isa); }

void ew_binary_isa_reset(void) { cpu_isa_reset(&choice); }
