/* Every reduction on every dtype it accepts, on random shapes (rank 0..5,
 * zero-size axes included), random axis subsets given in any order and
 * sign, keepdim both ways, and contiguous, permuted, stepped, reversed and
 * broadcast layouts, against a double-precision reference; once for each
 * instruction set the CPU can run the kernels with. */
#include <stdio.h>

#include "test_reduce.h"

static const porta_dtype all_dtypes[] = {PORTA_BOOL, PORTA_U8,  PORTA_I8,   PORTA_I16,
                                         PORTA_I32,  PORTA_I64, PORTA_F16,  PORTA_BF16,
                                         PORTA_F32,  PORTA_F64};
#define DTYPE_COUNT (int)(sizeof all_dtypes / sizeof all_dtypes[0])
#define CASES_PER_DTYPE 60

static reduce_fill pick_fill(test_rng *rng, porta_reduce_op op) {
    switch (op) {
    case PORTA_REDUCE_PROD: return FILL_NEAR_ONE;
    case PORTA_REDUCE_ANY:
    case PORTA_REDUCE_ALL: return test_int(rng, 0, 3) ? FILL_SPARSE : FILL_WIDE;
    case PORTA_REDUCE_SUM: return test_int(rng, 0, 5) ? FILL_WIDE : FILL_NAN;
    default: {
        static const reduce_fill order_fills[] = {FILL_WIDE, FILL_FEW, FILL_NAN};
        return order_fills[test_int(rng, 0, 2)];
    }
    }
}

/* Mostly small sizes, sometimes zero, and sometimes one long axis so the
 * kernels' vector lanes, blocks and partial tiles all see work. Products
 * stay short so a float product cannot leave the dtype's range. */
static void pick_shape(test_rng *rng, porta_reduce_op op, int *rank, int64_t *sizes) {
    *rank = (int)test_int(rng, 0, 5);
    int long_axis = op != PORTA_REDUCE_PROD && *rank > 0 && test_int(rng, 0, 3) == 0
                        ? (int)test_int(rng, 0, *rank - 1)
                        : -1;
    for (int d = 0; d < *rank; d++) {
        if (d == long_axis)
            sizes[d] = test_int(rng, 17, *rank <= 2 ? 700 : 70);
        else if (test_int(rng, 0, 15) == 0)
            sizes[d] = 0;
        else
            sizes[d] = test_int(rng, 1, 6);
    }
}

/* A random set of distinct axes, each written as positive or negative, in
 * random order; arg ops take at most one. */
static int pick_axes(test_rng *rng, porta_reduce_op op, int rank, int *axes) {
    bool arg = op == PORTA_REDUCE_ARGMAX || op == PORTA_REDUCE_ARGMIN;
    int extent = rank > 0 ? rank : 1; /* a scalar accepts axis 0 and -1 */
    int count = (int)test_int(rng, 0, arg || rank == 0 ? 1 : rank);
    int pool[PORTA_MAX_RANK];
    for (int d = 0; d < extent; d++) pool[d] = d;
    for (int i = 0; i < count; i++) {
        int pick = (int)test_int(rng, i, extent - 1);
        int axis = pool[pick];
        pool[pick] = pool[i];
        pool[i] = axis;
        axes[i] = test_int(rng, 0, 1) ? axis - extent : axis;
    }
    return count;
}

static void run_random_cases(porta_reduce_op op, uint64_t seed) {
    bool arg = op == PORTA_REDUCE_ARGMAX || op == PORTA_REDUCE_ARGMIN;
    for (int isa = -1; reduce_force_next_isa(&isa);) {
        for (int t = 0; t < DTYPE_COUNT; t++) {
            porta_dtype dtype = all_dtypes[t];
            if (arg && dtype == PORTA_BOOL) continue; /* refused, as in PyTorch */
            test_rng rng = test_rng_make(seed * 100 + (uint64_t)t);
            int failures = 0;
            for (int c = 0; c < CASES_PER_DTYPE && failures < 3; c++) {
                int rank, axes[PORTA_MAX_RANK];
                int64_t sizes[PORTA_MAX_RANK];
                pick_shape(&rng, op, &rank, sizes);
                int axis_count = pick_axes(&rng, op, rank, axes);
                bool keepdim = test_int(&rng, 0, 1);
                reduce_fill fill = pick_fill(&rng, op);
                bool strided = test_int(&rng, 0, 1);
                porta_tensor *x = strided ? reduce_random_view(&rng, dtype, rank, sizes, fill)
                                          : reduce_random_tensor(&rng, dtype, rank, sizes, fill);
                char what[160];
                snprintf(what, sizeof what, "%s %s %s case %d (rank %d, %d axes, keepdim %d, %s)",
                         cpu_isa_name((cpu_isa)isa), porta_reduce_op_name(op),
                         porta_dtype_name(dtype), c, rank, axis_count, keepdim,
                         strided ? "strided" : "contiguous");
                if (!x || !reduce_check(op, x, axes, axis_count, keepdim, what)) failures++;
                porta_tensor_release(x);
            }
        }
    }
}

TEST(test_reduce_sum_random) { run_random_cases(PORTA_REDUCE_SUM, 1); }
TEST(test_reduce_prod_random) { run_random_cases(PORTA_REDUCE_PROD, 2); }
TEST(test_reduce_max_random) { run_random_cases(PORTA_REDUCE_MAX, 3); }
TEST(test_reduce_min_random) { run_random_cases(PORTA_REDUCE_MIN, 4); }
TEST(test_reduce_argmax_random) { run_random_cases(PORTA_REDUCE_ARGMAX, 5); }
TEST(test_reduce_argmin_random) { run_random_cases(PORTA_REDUCE_ARGMIN, 6); }
TEST(test_reduce_any_random) { run_random_cases(PORTA_REDUCE_ANY, 7); }
TEST(test_reduce_all_random) { run_random_cases(PORTA_REDUCE_ALL, 8); }
