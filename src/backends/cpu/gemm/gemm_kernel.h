/* The micro-kernels behind cpu_sgemm, one per instruction set, and the
 * run-time choice between them. */
#ifndef PORTA_CPU_GEMM_KERNEL_H
#define PORTA_CPU_GEMM_KERNEL_H

#include <stdbool.h>
#include <stdint.h>

#include "backends/cpu/cpu_isa.h"

/* The largest tile any kernel uses, for stack buffers sized at compile time. */
#define GEMM_MAX_MR 32
#define GEMM_MAX_NR 16

/* Computes an m x n tile (m <= mr, n <= nr) of C = A B + beta C from packed
 * operands: `a` holds k columns of mr floats, `b` holds k rows of nr floats,
 * both zero-padded past m and n. C has unit row stride and column stride
 * ldc. beta == 0 must not read C, whose old contents may be NaN. */
typedef void (*gemm_microkernel_fn)(int64_t k, const float *a, const float *b, float beta,
                                    float *c, int64_t ldc, int m, int n);

typedef struct gemm_kernel {
    const char *name;
    int mr, nr;
    gemm_microkernel_fn run;
} gemm_kernel;

/* Defined in files built with the matching compiler flags; only take
 * `run` from one the CPU supports (cpu_isa_supported). */
extern const gemm_kernel gemm_kernel_generic;
extern const gemm_kernel gemm_kernel_avx2;
extern const gemm_kernel gemm_kernel_avx512;

/* The kernel cpu_sgemm uses: the best the CPU supports, or the one named by
 * PORTA_GEMM_ISA (generic, avx2, avx512) when that is supported. */
const gemm_kernel *gemm_kernel_active(void);
/* Overrides the choice for tests and benchmarks; false (and no change)
 * when the CPU lacks the instruction set. */
bool gemm_isa_force(cpu_isa isa);
/* Drops any override: back to the CPU's best or PORTA_GEMM_ISA. */
void gemm_isa_reset(void);

#endif
