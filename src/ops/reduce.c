/* Reductions from the public API to a device: sum, prod, max, min, argmax,
 * argmin, any and all over a set of axes. */
#include <string.h>

#include "core/dtype.h"
#include "core/status.h"
#include "ops/run.h"
#include "runtime/tensor.h"

/* The dtype the backend contract wants the input in: sums and products of
 * bool or integers run in int64, as in PyTorch; everything else as given. */
static porta_dtype kernel_input_dtype(int op, porta_dtype x) {
    bool widens = op == PORTA_REDUCE_SUM || op == PORTA_REDUCE_PROD;
    return widens && !porta_dtype_is_float(x) ? PORTA_I64 : x;
}

/* The runner on a prim that inference normalizes in place (sorted axes):
 * porta_reduce passes its own, the generic entry a copy of the caller's. */
static porta_status *run_reduce(ir_prim *normalized, const porta_tensor *const *inputs,
                                int input_count, porta_tensor **out) {
    if (input_count != 1)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "reduce: expected 1 input, got %d",
                           input_count);
    porta_device *device;
    PORTA_TRY(ops_common_device("reduce", inputs, input_count, &device));
    ir_meta x_meta, out_meta;
    ir_meta_of(inputs[0], &x_meta);
    PORTA_TRY(ir_infer(normalized, &x_meta, 1, &out_meta));

    porta_dtype kernel_dtype = kernel_input_dtype(normalized->op, x_meta.dtype);
    if (kernel_dtype == x_meta.dtype) /* no conversion: the input is lent as it is */
        return ops_execute_out(normalized, device, &out_meta, inputs, 1, out);
    porta_tensor *x;
    PORTA_TRY(ops_to_dtype(inputs[0], kernel_dtype, &x));
    const porta_tensor *kernel_inputs[1] = {x};
    porta_status *status = ops_execute_out(normalized, device, &out_meta, kernel_inputs, 1, out);
    porta_tensor_release(x);
    return status;
}

porta_status *ops_run_reduce(const ir_prim *prim, const porta_tensor *const *inputs,
                               int input_count, porta_tensor **out) {
    ir_prim normalized = *prim;
    return run_reduce(&normalized, inputs, input_count, out);
}

porta_status *porta_reduce(porta_reduce_op op, const porta_tensor *x, const int *axes,
                           int axis_count, bool keepdim, porta_tensor **out) {
    if ((int)op < 0 || op >= PORTA_REDUCE_OP_COUNT)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "reduce: invalid op %d", (int)op);
    const char *name = porta_reduce_op_name(op);
    PORTA_TRY(core_check_tensor(x, "x"));
    if (!out)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "reduce.%s: out must not be NULL", name);
    if (axis_count < 0 || axis_count > PORTA_MAX_RANK)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "reduce.%s: axis_count must be 0..%d, got %d", name, PORTA_MAX_RANK,
                           axis_count);
    if (axis_count > 0 && !axes)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "reduce.%s: axes is NULL but axis_count is %d", name, axis_count);
    ir_prim prim;
    memset(&prim, 0, sizeof prim);
    prim.kind = PRIM_REDUCE;
    prim.op = (int)op;
    prim.axis_count = axis_count;
    prim.keepdim = keepdim;
    for (int i = 0; i < axis_count; i++) prim.axes[i] = axes[i];
    const porta_tensor *inputs[1] = {x};
    return run_reduce(&prim, inputs, 1, out);
}
