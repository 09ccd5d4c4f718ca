/* Eager sort: porta_sort, which gathers the values with the sorting
 * permutation its primitive gives (run through ops_run_one_input). */
#include <string.h>

#include "core/status.h"
#include "ops/run.h"
#include "runtime/tensor.h"

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
