/* Eager softmax rows: porta_softmax runs the row normalizations (and their
 * gradients) over the last axis in one primitive where the backend has the
 * kernel; porta_softmax_runs tells the caller when to compose them instead. */
#include <string.h>

#include "core/status.h"
#include "core/tensor_layout.h"
#include "devices/placement.h"
#include "ops/run.h"
#include "runtime/tensor.h"

static void softmax_prim(porta_softmax_op op, ir_prim *prim) {
    memset(prim, 0, sizeof *prim); /* prims are hashed and compared bytewise */
    prim->kind = PRIM_SOFTMAX;
    prim->op = (int)op;
}

static bool is_backward(porta_softmax_op op) {
    return op == PORTA_SOFTMAX_BACKWARD || op == PORTA_LOG_SOFTMAX_BACKWARD;
}

porta_status *ops_run_softmax(const ir_prim *prim, const porta_tensor *const *inputs,
                              int input_count, porta_tensor **out) {
    const char *op = ir_prim_name(prim);
    if (!inputs)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "%s: inputs must not be NULL", op);
    porta_device *device;
    PORTA_TRY(ops_common_device(op, inputs, input_count, &device));
    ir_meta metas[2], meta;
    if (input_count < 1 || input_count > 2)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "%s: expected 1 or 2 inputs, got %d", op,
                           input_count);
    for (int i = 0; i < input_count; i++) {
        if (!porta_tensor_is_contiguous(inputs[i]))
            return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                               "%s: expected contiguous input %d (rows along the last axis), "
                               "got a strided view",
                               op, i);
        ir_meta_of(inputs[i], &metas[i]);
    }
    ir_prim local = *prim;
    PORTA_TRY(ir_infer(&local, metas, input_count, &meta));
    return ops_execute_out(&local, device, &meta, inputs, input_count, out);
}

porta_status *porta_softmax(porta_softmax_op op, const porta_tensor *a, const porta_tensor *b,
                            porta_tensor **out) {
    PORTA_TRY(core_check_tensor(a, "a"));
    if (!out) return porta_error(PORTA_ERR_INVALID_ARGUMENT, "softmax: out must not be NULL");
    if (is_backward(op)) PORTA_TRY(core_check_tensor(b, "b"));
    ir_prim prim;
    softmax_prim(op, &prim);
    const porta_tensor *inputs[2] = {a, b};
    *out = NULL;
    return ops_prim_run(&prim, inputs, is_backward(op) ? 2 : 1, out);
}

bool porta_softmax_runs(porta_softmax_op op, const porta_tensor *a, const porta_tensor *b) {
    if (op < 0 || op >= PORTA_SOFTMAX_OP_COUNT || !a || (is_backward(op) && !b)) return false;
    const porta_tensor *inputs[2] = {a, b};
    int count = is_backward(op) ? 2 : 1;
    for (int i = 0; i < count; i++)
        if (inputs[i]->dtype != PORTA_F32 || inputs[i]->rank < 1 ||
            !porta_tensor_is_contiguous(inputs[i]) ||
            inputs[i]->buffer->device != a->buffer->device)
            return false;
    ir_prim prim;
    softmax_prim(op, &prim);
    return dev_runs(a->buffer->device, &prim, inputs, count);
}
