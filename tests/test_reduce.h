/* Helpers shared by the reduction tests: test data with the features
 * reductions care about, a double-precision reference, and a checker. */
#ifndef PORTA_TEST_REDUCE_H
#define PORTA_TEST_REDUCE_H

#include "backends/cpu/cpu_isa.h"
#include "test.h"

typedef enum reduce_fill {
    FILL_WIDE,     /* floats in [-1, 1), small integers */
    FILL_NEAR_ONE, /* floats in [0.97, 1.03): long products stay in range */
    FILL_SPARSE,   /* mostly zeros (some -0.0): any/all see both answers */
    FILL_FEW,      /* a handful of values: ties everywhere */
    FILL_NAN       /* FILL_WIDE with some NaNs in float dtypes */
} reduce_fill;

/* A contiguous tensor of `fill` data. */
porta_tensor *reduce_random_tensor(test_rng *rng, porta_dtype dtype, int rank,
                                   const int64_t *sizes, reduce_fill fill);
/* The same kind of data seen through a random layout: axes permuted in
 * memory, stepped with gaps and negative steps, and sometimes broadcast
 * (stride 0). */
porta_tensor *reduce_random_view(test_rng *rng, porta_dtype dtype, int rank,
                                 const int64_t *sizes, reduce_fill fill);

/* The dtype PyTorch gives op on x's dtype. It repeats the rule in
 * ir/infer_reduce.c on purpose: the tests check the library against it. */
porta_dtype reduce_expected_dtype(porta_reduce_op op, porta_dtype x);

/* Runs porta_reduce and compares dtype, shape and every value with a
 * reference computed in double (int64 wrapping for integer products), or
 * expects PORTA_ERR_SHAPE where PyTorch rejects an empty reduction. `out`
 * (may be NULL) is passed as the out= tensor. Returns whether all matched. */
bool reduce_check_out(porta_reduce_op op, const porta_tensor *x, const int *axes,
                      int axis_count, bool keepdim, porta_tensor *out, const char *what);
bool reduce_check(porta_reduce_op op, const porta_tensor *x, const int *axes, int axis_count,
                  bool keepdim, const char *what);

/* Steps through the instruction sets this CPU can run the reduction loops
 * with, forcing each in turn:
 *     for (int isa = -1; reduce_force_next_isa(&isa);) ...
 * After the last, the default choice is back. Loops must not be left early.
 * cpu_isa_name((cpu_isa)isa) names the one in force. */
bool reduce_force_next_isa(int *isa);

#endif
