/* Inference for the softmax primitive: float32 rows along the last axis, a
 * result of the first input's shape; the gradients take the gradient and
 * the forward result, of one shape. */
#include <string.h>

#include "core/status.h"
#include "core/tensor_layout.h"
#include "ir/infer.h"

porta_status *ir_infer_softmax(ir_prim *prim, const ir_meta *inputs, int input_count,
                               ir_meta *out) {
    if (prim->op < 0 || prim->op >= PORTA_SOFTMAX_OP_COUNT)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "softmax: expected an op from 0 to %d, got %d",
                           PORTA_SOFTMAX_OP_COUNT - 1, prim->op);
    const char *op = ir_prim_name(prim);
    int expected = ir_prim_input_count(prim);
    if (input_count != expected)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "%s: expected %d inputs, got %d", op,
                           expected, input_count);
    for (int i = 0; i < input_count; i++) {
        if (inputs[i].dtype != PORTA_F32)
            return porta_error(PORTA_ERR_DTYPE, "%s: expected float32 input %d, got %s", op, i,
                               porta_dtype_name(inputs[i].dtype));
        if (inputs[i].rank < 1)
            return porta_error(PORTA_ERR_SHAPE,
                               "%s: expected input %d of rank 1 or more (rows along the last "
                               "axis), got rank 0",
                               op, i);
    }
    if (input_count == 2 &&
        (inputs[0].rank != inputs[1].rank ||
         memcmp(inputs[0].sizes, inputs[1].sizes, (size_t)inputs[0].rank * sizeof(int64_t)))) {
        char a[CORE_SHAPE_STR_CAP], b[CORE_SHAPE_STR_CAP];
        return porta_error(PORTA_ERR_SHAPE,
                           "%s: expected the gradient and the result of one shape, got %s and %s",
                           op, core_format_shape(a, sizeof a, inputs[0].rank, inputs[0].sizes),
                           core_format_shape(b, sizeof b, inputs[1].rank, inputs[1].sizes));
    }
    *out = inputs[0];
    return NULL;
}
