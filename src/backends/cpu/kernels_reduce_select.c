/* Run-time choice among the reduction loops compiled for each instruction
 * set (cpu_isa.h makes it once). */
#include "backends/cpu/kernels_reduce.h"

static cpu_isa_choice choice = CPU_ISA_CHOICE_INIT(NULL);

static const reduce_kernel (*const tables[CPU_ISA_COUNT])[PORTA_DTYPE_COUNT] = {
    [CPU_ISA_GENERIC] = cpu_reduce_kernels_baseline,
    [CPU_ISA_AVX2] = cpu_reduce_kernels_avx2,
    [CPU_ISA_AVX512] = cpu_reduce_kernels_avx512,
};

const reduce_kernel *cpu_reduce_kernel(porta_reduce_op op, porta_dtype dtype) {
    if ((unsigned)op >= PORTA_REDUCE_OP_COUNT || (unsigned)dtype >= PORTA_DTYPE_COUNT)
        return NULL;
    const reduce_kernel *kernel = &tables[cpu_isa_choose(&choice)][op][dtype];
    return kernel->fold ? kernel : NULL;
}

bool cpu_reduce_isa_force(cpu_isa isa) { return cpu_isa_force(&choice, isa); }

void cpu_reduce_isa_reset(void) { cpu_isa_reset(&choice); }
