/* The CPU backend's compiler: kernel IR -> C source (codegen/codegen_c.h)
 * -> the system C compiler -> a shared object, loaded with dlopen. Programs
 * are cached in memory for the process and on disk across processes. */
#ifndef PORTA_CPU_JIT_H
#define PORTA_CPU_JIT_H

#include "ir/kernel_abi.h"
#include "ir/kernel_ir.h"
#include "runtime/device.h"

/* The entry points a rendered kernel exports (see kernel_abi.h):
 * main runs work items [begin, end) (elements, or rows with reductions);
 * tile, only for kernels without reductions over a rank-2 domain, runs
 * the block rows [row0, row0 + rows) x cols [col0, col0 + cols). */
typedef void (*cpu_kernel_main)(const kir_args *args, const kir_runtime *rt, int64_t begin,
                                int64_t end);
typedef void (*cpu_kernel_tile)(const kir_args *args, const kir_runtime *rt, int64_t row0,
                                int64_t rows, int64_t col0, int64_t cols);

typedef struct cpu_program {
    cpu_kernel_main main;
    cpu_kernel_tile tile; /* NULL unless the kernel has one */
    uint64_t hash;
    /* What run_kernel needs to split the work: the domain's ranks and the
     * values computed per element (a rough cost). */
    int rank, outer_rank;
    int cost;
} cpu_program;

/* The program for `kernel`: from memory, the disk cache, or compiled now.
 * Valid for the life of the process. Fails with PORTA_ERR_UNAVAILABLE when
 * no C compiler works (warned about once on stderr) or nothing can be
 * written, PORTA_ERR_UNSUPPORTED when the kernel cannot be rendered or its
 * source does not compile or load (the compiler's output in the message;
 * warned about once). The compiler is $CC (words split at
 * spaces, no shell) or "cc"; the disk cache lives in $PORTA_CACHE_DIR,
 * else $XDG_CACHE_HOME/porta, else $HOME/.cache/porta, under kernels/. */
porta_status *cpu_jit_program(const kir_kernel *kernel, const cpu_program **out);

/* The math functions rendered kernels call (vectorized where libporta has them). */
const kir_runtime *cpu_kir_runtime(void);

/* For tests: forgets the programs loaded so far (they stay mapped and
 * valid), so the next request goes to the disk cache. */
void cpu_jit_forget_loaded(void);

/* The device entries (runtime/device.h): program is a cpu_program. */
porta_status *cpu_prepare_kernel(porta_device *device, const kir_kernel *kernel, void **program);
porta_status *cpu_run_kernel(porta_device *device, void *program, const kir_args *args,
                             int64_t work);

#endif
