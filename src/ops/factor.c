/* Eager factorisations: porta_factor and the runner that brings operands to
 * the backend contract (one float dtype; triangular solve's batch axes
 * broadcast to the result's). */
#include <string.h>

#include "core/status.h"
#include "core/tensor_layout.h"
#include "ops/run.h"
#include "runtime/tensor.h"

/* A view of x [..., r, c] with the result's batch axes (stride 0 where
 * broadcast), or a new reference to x when it has them already (every
 * factorisation of one input). */
static porta_status *with_batch_of(porta_tensor *x, const ir_meta *meta, porta_tensor **out) {
    int batch = meta->rank - 2;
    int64_t sizes[PORTA_MAX_RANK];
    memcpy(sizes, meta->sizes, (size_t)batch * sizeof sizes[0]);
    sizes[batch] = x->sizes[x->rank - 2];
    sizes[batch + 1] = x->sizes[x->rank - 1];
    if (x->rank == meta->rank && !memcmp(x->sizes, sizes, (size_t)x->rank * sizeof sizes[0])) {
        porta_tensor_retain(x);
        *out = x;
        return NULL;
    }
    return ops_broadcast_to(x, meta->rank, sizes, out);
}

porta_status *ops_run_factor(const ir_prim *prim, const porta_tensor *const *inputs,
                             int input_count, porta_tensor **out) {
    ir_prim local = *prim;
    const char *op = ir_prim_name(&local);
    if (!inputs || input_count < 1 || input_count > 2)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "%s: expected 1 or 2 inputs, got %d", op,
                           inputs ? input_count : 0);
    porta_device *device;
    PORTA_TRY(ops_common_device(op, inputs, input_count, &device));
    ir_meta metas[2], meta;
    for (int i = 0; i < input_count; i++) ir_meta_of(inputs[i], &metas[i]);
    PORTA_TRY(ir_infer(&local, metas, input_count, &meta));

    porta_tensor *operands[2] = {NULL, NULL};
    porta_status *status = NULL;
    for (int i = 0; i < input_count && !status; i++)
        status = with_batch_of((porta_tensor *)inputs[i], &meta, &operands[i]);
    bool aliased = false;
    for (int i = 0; i < input_count && !status && out && *out; i++)
        aliased |= operands[i]->buffer == (*out)->buffer;
    if (!status && aliased) {
        /* a result written over its operand would be read after it is
         * written: compute into a new tensor and copy it over */
        porta_tensor *fresh = NULL;
        status = ops_execute_out(&local, device, &meta, (const porta_tensor *const *)operands,
                                 input_count, &fresh);
        if (!status) status = porta_copy(fresh, *out);
        porta_tensor_release(fresh);
    } else if (!status) {
        status = ops_execute_out(&local, device, &meta, (const porta_tensor *const *)operands,
                                 input_count, out);
    }
    for (int i = 0; i < input_count; i++) porta_tensor_release(operands[i]);
    return status;
}

porta_status *porta_factor(porta_factor_op op, int flags, const porta_tensor *a,
                           const porta_tensor *b, porta_tensor **out) {
    if (!out) return porta_error(PORTA_ERR_INVALID_ARGUMENT, "factor: out is NULL");
    ir_prim prim;
    memset(&prim, 0, sizeof prim); /* prims are hashed and compared bytewise */
    prim.kind = PRIM_FACTOR;
    prim.op = (int)op;
    prim.axis = flags;
    const porta_tensor *inputs[2] = {a, b};
    int count = ir_prim_input_count(&prim);
    for (int i = 0; i < count; i++) PORTA_TRY(core_check_tensor(inputs[i], i ? "b" : "a"));
    return ops_run_factor(&prim, inputs, count, out);
}
