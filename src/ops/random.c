/* Eager random fills: the public entry points and the runner for
 * PRIM_RANDOM, which has no inputs and so takes its device from the
 * destination. */
#include <string.h>

#include "core/status.h"
#include "ops/run.h"
#include "runtime/tensor.h"

porta_status *ops_run_random(const ir_prim *prim, const porta_tensor *const *inputs,
                               int input_count, porta_tensor **out) {
    ir_prim local = *prim; /* inference may normalize it */
    ir_meta meta;
    PORTA_TRY(ir_infer(&local, NULL, input_count, &meta));
    /* Without a destination the result goes to the default device, porta:0. */
    porta_device *device;
    if (*out)
        device = (*out)->buffer->device;
    else
        PORTA_TRY(porta_device_get(0, &device));
    return ops_execute_out(&local, device, &meta, NULL, 0, out);
}

static porta_status *random_fill(porta_tensor *dst, bool normal, uint64_t seed, uint64_t offset,
                                 double value, double value2) {
    if (!dst)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "random.%s: dst is NULL",
                           normal ? "normal" : "uniform");
    ir_prim prim;
    memset(&prim, 0, sizeof prim);
    prim.kind = PRIM_RANDOM;
    prim.normal = normal;
    prim.dtype = dst->dtype;
    prim.rank = dst->rank;
    if (dst->rank) memcpy(prim.sizes, dst->sizes, (size_t)dst->rank * sizeof prim.sizes[0]);
    prim.seed = seed;
    prim.offset = offset;
    prim.value = value;
    prim.value2 = value2;
    porta_tensor *target = dst;
    return ops_prim_run(&prim, NULL, 0, &target);
}

porta_status *porta_random_uniform(porta_tensor *dst, uint64_t seed, uint64_t offset, double low,
                                   double high) {
    return random_fill(dst, false, seed, offset, low, high);
}

porta_status *porta_random_normal(porta_tensor *dst, uint64_t seed, uint64_t offset, double mean,
                                  double std) {
    return random_fill(dst, true, seed, offset, mean, std);
}
