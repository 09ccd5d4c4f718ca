/* Eager sort: the runner of the sort primitive (the sorting permutation) and
 * porta_sort, which gathers the values with it. */
#include <string.h>

#include "core/status.h"
#include "ops/run.h"
#include "runtime/tensor.h"

porta_status *ops_run_sort(const ir_prim *prim, const porta_tensor *const *inputs,
                             int input_count, porta_tensor **out) {
    const char *op = ir_prim_name(prim);
    if (!inputs || input_count != 1)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "%s: expected 1 input, got %d", op,
                           inputs ? input_count : 0);
    porta_device *device;
    PORTA_TRY(ops_common_device(op, inputs, 1, &device));
    ir_meta x_meta, meta;
    ir_meta_of(inputs[0], &x_meta);
    ir_prim local = *prim; /* inference normalizes the axis */
    PORTA_TRY(ir_infer(&local, &x_meta, 1, &meta));
    return ops_execute_out(&local, device, &meta, inputs, 1, out);
}

porta_status *porta_sort(const porta_tensor *x, int axis, porta_sort_order order,
                         porta_tensor **values, porta_tensor **indices) {
    PORTA_TRY(core_check_tensor(x, "x"));
    if (!values && !indices)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "sort: values and indices are both NULL; expected at least one");
    ir_prim prim;
    memset(&prim, 0, sizeof prim); /* prims are hashed and compared bytewise */
    prim.kind = PRIM_SORT;
    prim.op = (int)order;
    prim.axis = axis;
    porta_tensor *permutation = indices ? *indices : NULL;
    PORTA_TRY(ops_prim_run(&prim, &x, 1, &permutation));
    if (values) {
        porta_status *status = porta_gather(x, axis, permutation, values);
        if (status) {
            if (!indices || !*indices) porta_tensor_release(permutation);
            return status;
        }
    }
    if (!indices) {
        porta_tensor_release(permutation);
    } else if (!*indices) {
        *indices = permutation;
    }
    return NULL;
}
