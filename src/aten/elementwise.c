/* Elementwise aten ops: arithmetic, comparisons, logical and bitwise ops,
 * activations. Each computes PyTorch's result dtype across its tensor and
 * number operands, then runs one or two primitives. */
#include "aten/aten.h"
#include "core/status.h"
#include "core/tensor.h"

/* op(a, b) with PyTorch's promotion; `into` (or NULL) receives the result
 * in place, cast to its dtype (in-place and out= variants). */
static porta_status *binary(porta_binary_op op, const porta_value *a, const porta_value *b,
                            porta_tensor *into, aten_results *results) {
    const porta_value *operands[2] = {a, b};
    porta_dtype dtype = aten_result_type(operands, 2);
    porta_device *device = aten_device_of(operands, 2);
    porta_tensor *ta = NULL, *tb = NULL, *out = into;
    porta_status *status;
    PORTA_TRY_GOTO(status, aten_operand(a, device, dtype, &ta), done);
    PORTA_TRY_GOTO(status, aten_operand(b, device, dtype, &tb), done);
    PORTA_TRY_GOTO(status, porta_binary(op, ta, tb, &out), done);
    if (into) porta_tensor_retain(into);
    status = aten_push_tensor(results, out);
done:
    porta_tensor_release(ta);
    porta_tensor_release(tb);
    return status;
}

/* a + alpha * b (SUB: a - alpha * b) as PyTorch computes it: one multiply-
 * add when alpha is not 1. */
static porta_status *with_alpha(porta_binary_op op, const porta_value *a, const porta_value *b,
                                const porta_value *alpha, porta_tensor *into,
                                aten_results *results) {
    double scale = aten_number(alpha);
    if (scale == 1.0) return binary(op, a, b, into, results);
    const porta_value *operands[2] = {a, b};
    porta_dtype dtype = aten_result_type(operands, 2);
    porta_device *device = aten_device_of(operands, 2);
    porta_tensor *ta = NULL, *tb = NULL, *ts = NULL, *out = into;
    porta_status *status;
    PORTA_TRY_GOTO(status, aten_operand(a, device, dtype, &ta), done);
    PORTA_TRY_GOTO(status, aten_operand(b, device, dtype, &tb), done);
    PORTA_TRY_GOTO(status,
                   porta_tensor_full(device, dtype, 0, NULL, op == PORTA_SUB ? -scale : scale, &ts),
                   done);
    PORTA_TRY_GOTO(status, porta_ternary(PORTA_FMA, tb, ts, ta, &out), done);
    if (into) porta_tensor_retain(into);
    status = aten_push_tensor(results, out);
done:
    porta_tensor_release(ta);
    porta_tensor_release(tb);
    porta_tensor_release(ts);
    return status;
}

static porta_status *add(const porta_value *args, aten_results *r) {
    return with_alpha(PORTA_ADD, &args[0], &args[1], &args[2], NULL, r);
}
static porta_status *add_(const porta_value *args, aten_results *r) {
    return with_alpha(PORTA_ADD, &args[0], &args[1], &args[2], args[0].tensor, r);
}
static porta_status *sub(const porta_value *args, aten_results *r) {
    return with_alpha(PORTA_SUB, &args[0], &args[1], &args[2], NULL, r);
}
static porta_status *sub_(const porta_value *args, aten_results *r) {
    return with_alpha(PORTA_SUB, &args[0], &args[1], &args[2], args[0].tensor, r);
}
static porta_status *mul(const porta_value *args, aten_results *r) {
    return binary(PORTA_MUL, &args[0], &args[1], NULL, r);
}
static porta_status *mul_(const porta_value *args, aten_results *r) {
    return binary(PORTA_MUL, &args[0], &args[1], args[0].tensor, r);
}

const aten_op aten_elementwise_ops[] = {
    {"add.Tensor", "TTs", add},   {"add.Scalar", "Tss", add},
    {"add_.Tensor", "TTs", add_}, {"add_.Scalar", "Tss", add_},
    {"sub.Tensor", "TTs", sub},   {"sub.Scalar", "Tss", sub},
    {"sub_.Tensor", "TTs", sub_}, {"sub_.Scalar", "Tss", sub_},
    {"mul.Tensor", "TT", mul},    {"mul.Scalar", "Ts", mul},
    {"mul_.Tensor", "TT", mul_},  {"mul_.Scalar", "Ts", mul_},
    {NULL, NULL, NULL},
};
