/* Run-time choice of the GEMM micro-kernel (cpu_isa.h makes it once). */
#include "gemm_kernel.h"

static cpu_isa_choice choice = CPU_ISA_CHOICE_INIT("PORTA_GEMM_ISA");

static const gemm_kernel *const kernels[CPU_ISA_COUNT] = {
    [CPU_ISA_GENERIC] = &gemm_kernel_generic,
    [CPU_ISA_AVX2] = &gemm_kernel_avx2,
    [CPU_ISA_AVX512] = &gemm_kernel_avx512,
};

const gemm_kernel *gemm_kernel_active(void) { return kernels[cpu_isa_choose(&choice)]; }

bool gemm_isa_force(cpu_isa isa) { return cpu_isa_force(&choice, isa); }

void gemm_isa_reset(void) { cpu_isa_reset(&choice); }
