/* Inference for the sort primitive: one input of any dtype, an int64
 * permutation of its shape. A rank-0 input is a row of one element (it takes
 * axis 0 or -1, as in PyTorch). */
#include "core/status.h"
#include "core/tensor_layout.h"
#include "ir/infer.h"

porta_status *ir_infer_sort(ir_prim *prim, const ir_meta *inputs, int input_count,
                               ir_meta *out) {
    const char *op = ir_prim_name(prim);
    if (input_count != 1)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "%s: expected 1 input, got %d", op,
                           input_count);
    if (prim->op != PORTA_SORT_ASCENDING && prim->op != PORTA_SORT_DESCENDING)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "sort: expected order 0 (ascending) or 1 (descending), got %d",
                           prim->op);
    const ir_meta *x = &inputs[0];
    PORTA_TRY(core_normalize_axis(op, prim->axis, x->rank, &prim->axis));
    *out = *x;
    out->dtype = PORTA_I64;
    return NULL;
}
