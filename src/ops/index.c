/* Eager gather, scatter and index_select: the public entry points and the
 * runner that brings their operands to the backend contract (int64 index). */
#include <string.h>

#include "core/status.h"
#include "ops/run.h"
#include "runtime/tensor.h"

#define INDEX_MAX_INPUTS 3
#define INDEX_INPUT 1 /* the index is the second input of every index op */

porta_status *ops_run_index(const ir_prim *prim, const porta_tensor *const *inputs,
                              int input_count, porta_tensor **out) {
    const char *op = ir_prim_name(prim);
    if (!inputs || input_count < 2 || input_count > INDEX_MAX_INPUTS)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "%s: got %d inputs", op,
                           inputs ? input_count : 0);
    porta_device *device;
    PORTA_TRY(ops_common_device(op, inputs, input_count, &device));

    ir_meta metas[INDEX_MAX_INPUTS], meta;
    for (int i = 0; i < input_count; i++) ir_meta_of(inputs[i], &metas[i]);
    ir_prim local = *prim; /* inference normalizes the axis */
    PORTA_TRY(ir_infer(&local, metas, input_count, &meta));

    const porta_tensor *operands[INDEX_MAX_INPUTS];
    memcpy(operands, inputs, (size_t)input_count * sizeof *inputs);
    porta_tensor *index;
    PORTA_TRY(ops_to_dtype(inputs[INDEX_INPUT], PORTA_I64, &index));
    operands[INDEX_INPUT] = index;

    porta_status *status = ops_execute_out(&local, device, &meta, operands, input_count, out);
    porta_tensor_release(index);
    return status;
}

/* ---- public entry points ---- */

static porta_status *run_index_prim(ir_prim_kind kind, int op, int axis,
                                    const porta_tensor *const *inputs, int input_count,
                                    porta_tensor **out) {
    ir_prim prim;
    memset(&prim, 0, sizeof prim); /* prims are hashed and compared bytewise */
    prim.kind = kind;
    prim.op = op;
    prim.axis = axis;
    if (!out)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "%s: out is NULL", ir_prim_name(&prim));
    return ops_prim_run(&prim, inputs, input_count, out);
}

porta_status *porta_gather(const porta_tensor *x, int axis, const porta_tensor *index,
                           porta_tensor **out) {
    const porta_tensor *inputs[] = {x, index};
    return run_index_prim(PRIM_GATHER, 0, axis, inputs, 2, out);
}

porta_status *porta_scatter(const porta_tensor *x, int axis, const porta_tensor *index,
                            const porta_tensor *src, porta_scatter_reduce reduce,
                            porta_tensor **out) {
    const porta_tensor *inputs[] = {x, index, src};
    return run_index_prim(PRIM_SCATTER, (int)reduce, axis, inputs, 3, out);
}

porta_status *porta_index_select(const porta_tensor *x, int axis, const porta_tensor *index,
                                 porta_tensor **out) {
    const porta_tensor *inputs[] = {x, index};
    return run_index_prim(PRIM_INDEX_SELECT, 0, axis, inputs, 2, out);
}
