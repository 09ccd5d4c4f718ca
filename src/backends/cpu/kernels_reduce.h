/* The typed inner loops of the CPU reductions (kernels_reduce_fold.h, built
 * once per instruction set) and the interface the strided, threaded driver
 * (kernels_reduce.c) calls.
 *
 * Every inner loop works on a tile: w outputs whose inputs start `ks`
 * elements apart, each folding n elements that lie `rs` elements apart. The
 * loops pick their own order from the strides: a contiguous run per output
 * (rs == 1), or whole rows of contiguous outputs at a time (ks == 1). */
#ifndef PORTA_CPU_KERNELS_REDUCE_H
#define PORTA_CPU_KERNELS_REDUCE_H

#include <stdint.h>

#include "porta.h"
#include "backends/cpu/cpu_isa.h"

/* A running result. Which member is live depends on the op and the dtype:
 * f for float sums, products, max and min; u for int64 sums and products
 * (they wrap like PyTorch's) and for any/all flags; i for integer and bool
 * max and min. */
typedef union reduce_total {
    double f;
    uint64_t u;
    int64_t i;
} reduce_total;

/* totals[j] op= x[j*ks + i*rs] for i < n, j < w. `lanes` is scratch with
 * room for w 8-byte values: the row order keeps a lane per output there. */
typedef void (*reduce_fold_fn)(const char *x, int64_t w, int64_t ks, int64_t n, int64_t rs,
                               reduce_total *totals, void *lanes);
/* For each j with idx[j] < 0: idx[j] = base + the first i < n whose element
 * equals targets[j], a NaN target matching the first NaN. Returns how many
 * idx[j] are still negative. */
typedef int64_t (*reduce_find_fn)(const char *x, int64_t w, int64_t ks, int64_t n,
                                  int64_t rs, const reduce_total *targets, int64_t *idx,
                                  int64_t base);

typedef struct reduce_kernel {
    reduce_total identity;
    reduce_fold_fn fold;
    /* Combines two partial results of the same reduction. */
    void (*merge)(reduce_total *into, reduce_total from);
    /* Writes w final results as elements of the output dtype, `stride`
     * elements apart. */
    void (*store)(const reduce_total *totals, int64_t w, char *out, int64_t stride);
    /* Arg ops only: fold, merge and identity are then those of max or min,
     * and find locates the first element equal to that extreme. */
    reduce_find_fn find;
} reduce_kernel;

/* The kernel for op on an input of `dtype`, for the instruction set in use,
 * or NULL when the pair is outside the backend contract (ir/prim.h). */
const reduce_kernel *cpu_reduce_kernel(porta_reduce_op op, porta_dtype dtype);

/* The same loops compiled for each instruction set (kernels_reduce_fold*.c). */
extern const reduce_kernel cpu_reduce_kernels_baseline[PORTA_REDUCE_OP_COUNT][PORTA_DTYPE_COUNT];
extern const reduce_kernel cpu_reduce_kernels_avx2[PORTA_REDUCE_OP_COUNT][PORTA_DTYPE_COUNT];
extern const reduce_kernel cpu_reduce_kernels_avx512[PORTA_REDUCE_OP_COUNT][PORTA_DTYPE_COUNT];

/* For tests: use `isa` (false when this CPU lacks it), or go back to the
 * best one the CPU has. */
bool cpu_reduce_isa_force(cpu_isa isa);
void cpu_reduce_isa_reset(void);

#endif
