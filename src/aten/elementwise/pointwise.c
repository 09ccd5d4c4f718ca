/* Pointwise aten ops of several operands: clamp (numbers or tensors as
 * bounds), lerp, addcmul and addcdiv (the optimizers' update steps), with
 * in-place and out= variants. */
#include <math.h>

#include "aten/elementwise/elementwise.h"
#include "core/status.h"
#include "runtime/tensor.h"

/* min(max(x, low), high) in the result type of all three; NaN in x stays
 * NaN, and low > high gives high, as in PyTorch. The last step writes into
 * `into` (or NULL) when ew_direct_target allows. */
static porta_tensor *clamp_of(aten_scope *s, const porta_value *x, const porta_value *low,
                              const porta_value *high, porta_tensor *into) {
    bool has_low = low->kind != PORTA_VALUE_NONE, has_high = high->kind != PORTA_VALUE_NONE;
    if (!has_low && !has_high)
        return scope_fail(s, porta_error(PORTA_ERR_INVALID_ARGUMENT,
                                      "torch.clamp: At least one of 'min' or 'max' must not be None"));
    porta_dtype dtype = ew_result_type(x, low, high);
    /* PyTorch's kernel with both bounds has no bool loop; one bound does */
    if (dtype == PORTA_BOOL && has_low && has_high)
        return scope_fail(s, ew_refuse_dtype("clamp", "a number tensor", dtype));
    const porta_value operands[3] = {*x, *low, *high};
    porta_tensor *direct = ew_direct_target(into, dtype, operands, 3);
    porta_tensor *result = scope_operand(s, x, dtype);
    if (has_low)
        result = scope_binary_into(s, PORTA_MAXIMUM, result, scope_operand(s, low, dtype),
                                   has_high ? NULL : direct);
    if (has_high)
        result = scope_binary_into(s, PORTA_MINIMUM, result, scope_operand(s, high, dtype), direct);
    return result;
}

static const porta_value none = {.kind = PORTA_VALUE_NONE};

COMPOSED_KERNEL(op_clamp, clamp_of(&s, &args[0], &args[1], &args[2], target), EW_NEW, 3)
COMPOSED_KERNEL(op_clamp_inplace, clamp_of(&s, &args[0], &args[1], &args[2], target), EW_INPLACE, 3)
COMPOSED_KERNEL(op_clamp_out, clamp_of(&s, &args[0], &args[1], &args[2], target), EW_OUT, 4)
COMPOSED_KERNEL(op_clamp_min, clamp_of(&s, &args[0], &args[1], &none, target), EW_NEW, 2)
COMPOSED_KERNEL(op_clamp_min_inplace, clamp_of(&s, &args[0], &args[1], &none, target), EW_INPLACE, 2)
COMPOSED_KERNEL(op_clamp_min_out, clamp_of(&s, &args[0], &args[1], &none, target), EW_OUT, 3)
COMPOSED_KERNEL(op_clamp_max, clamp_of(&s, &args[0], &none, &args[1], target), EW_NEW, 2)
COMPOSED_KERNEL(op_clamp_max_inplace, clamp_of(&s, &args[0], &none, &args[1], target), EW_INPLACE, 2)
COMPOSED_KERNEL(op_clamp_max_out, clamp_of(&s, &args[0], &none, &args[1], target), EW_OUT, 3)

/* lerp(self, end, weight): self + weight * (end - self) for |weight| < 0.5,
 * else end - (end - self) * (1 - weight), so both ends are exact; PyTorch
 * requires self and end (and a weight tensor) to share a float dtype. The
 * last step writes into `into` (or NULL) when ew_direct_target allows. */
static porta_tensor *lerp_of(aten_scope *s, const porta_value *args, porta_tensor *into) {
    const porta_value *start = &args[0], *end = &args[1], *weight = &args[2];
    porta_dtype dtype = start->kind == PORTA_VALUE_TENSOR ? start->tensor->dtype : PORTA_F32;
    if (!porta_dtype_is_float(dtype)) return scope_fail(s, ew_refuse_dtype("lerp", "a float tensor", dtype));
    for (int i = 1; i <= 2; i++)
        if (args[i].kind == PORTA_VALUE_TENSOR && args[i].tensor->dtype != dtype)
            return scope_fail(s, porta_error(PORTA_ERR_DTYPE, "expected dtype %s for `%s` but got dtype %s",
                                             porta_dtype_name(dtype), i == 1 ? "end" : "weight",
                                             porta_dtype_name(args[i].tensor->dtype)));
    porta_dtype compute = aten_compute_dtype(dtype);
    porta_tensor *a = scope_operand(s, start, compute), *b = scope_operand(s, end, compute);
    porta_tensor *w = scope_operand(s, weight, compute), *diff = scope_binary(s, PORTA_SUB, b, a);
    porta_tensor *direct = compute == dtype ? ew_direct_target(into, dtype, args, 3) : NULL;
    /* a number weight picks its formula here, so only that one runs */
    bool tensor_weight = weight->kind == PORTA_VALUE_TENSOR;
    bool near_start_only = !tensor_weight && fabs(aten_number(weight)) < 0.5;
    porta_tensor *near_start = NULL, *near_end = NULL;
    if (tensor_weight || near_start_only)
        near_start = scope_ternary_into(s, PORTA_FMA, w, diff, a, tensor_weight ? NULL : direct);
    if (!near_start_only) /* (w - 1) diff + b */
        near_end = scope_ternary_into(s, PORTA_FMA, scope_binary_number(s, PORTA_SUB, w, 1), diff,
                                      b, tensor_weight ? NULL : direct);
    porta_tensor *result = near_start_only ? near_start : near_end;
    if (tensor_weight) {
        porta_tensor *small = scope_binary_number(s, PORTA_LT, scope_unary(s, PORTA_ABS, w), 0.5);
        result = scope_ternary_into(s, PORTA_WHERE, small, near_start, near_end, direct);
    }
    /* the result is a tensor this formula made: no copy when in dtype */
    return scope_as_dtype(s, result, dtype);
}

COMPOSED_KERNEL(op_lerp, lerp_of(&s, args, target), EW_NEW, 3)
COMPOSED_KERNEL(op_lerp_inplace, lerp_of(&s, args, target), EW_INPLACE, 3)
COMPOSED_KERNEL(op_lerp_out, lerp_of(&s, args, target), EW_OUT, 4)

/* self + value * t1 * t2 (addcmul) or self + value * t1 / t2 (addcdiv), in
 * the order PyTorch's CPU kernel rounds: (value * t1) first. The last step
 * writes into `into` (or NULL) when ew_direct_target allows. */
static porta_tensor *addc_of(aten_scope *s, porta_binary_op op, const porta_value *args,
                             porta_tensor *into) {
    const char *name = op == PORTA_MUL ? "addcmul" : "addcdiv";
    porta_dtype dtype = ew_result_type(&args[0], &args[1], &args[2]);
    if (dtype == PORTA_BOOL) return scope_fail(s, ew_refuse_dtype(name, "a number tensor", dtype));
    if (op == PORTA_DIV && !porta_dtype_is_float(dtype))
        return scope_fail(s, porta_error(PORTA_ERR_DTYPE,
                                      "Integer division with addcdiv is no longer supported, and "
                                      "in a future release addcdiv will perform a true division "
                                      "of tensor1 and tensor2."));
    porta_dtype compute = aten_compute_dtype(dtype);
    porta_tensor *t1 = scope_operand(s, &args[1], compute), *t2 = scope_operand(s, &args[2], compute);
    porta_tensor *term = scope_binary(s, op, scope_binary_number(s, PORTA_MUL, t1, aten_number(&args[3])), t2);
    porta_tensor *direct = compute == dtype ? ew_direct_target(into, dtype, args, 3) : NULL;
    porta_tensor *sum = scope_binary_into(s, PORTA_ADD, scope_operand(s, &args[0], compute), term, direct);
    /* the sum is a tensor this formula made (or `into`): no copy when in dtype */
    return scope_as_dtype(s, sum, dtype);
}

COMPOSED_KERNEL(op_addcmul, addc_of(&s, PORTA_MUL, args, target), EW_NEW, 4)
COMPOSED_KERNEL(op_addcmul_inplace, addc_of(&s, PORTA_MUL, args, target), EW_INPLACE, 4)
COMPOSED_KERNEL(op_addcmul_out, addc_of(&s, PORTA_MUL, args, target), EW_OUT, 5)
COMPOSED_KERNEL(op_addcdiv, addc_of(&s, PORTA_DIV, args, target), EW_NEW, 4)
COMPOSED_KERNEL(op_addcdiv_inplace, addc_of(&s, PORTA_DIV, args, target), EW_INPLACE, 4)
COMPOSED_KERNEL(op_addcdiv_out, addc_of(&s, PORTA_DIV, args, target), EW_OUT, 5)

const aten_op aten_elementwise_pointwise_ops[] = {
    {"clamp", "NSS", op_clamp},
    {"clamp.Tensor", "Nnn", op_clamp},
    {"clamp_", "NSS", op_clamp_inplace},
    {"clamp_.Tensor", "Nnn", op_clamp_inplace},
    {"clamp.out", "NSSN", op_clamp_out},
    {"clamp.Tensor_out", "NnnN", op_clamp_out},
    {"clamp_min", "Ns", op_clamp_min},
    {"clamp_min.Tensor", "NN", op_clamp_min},
    {"clamp_min_", "Ns", op_clamp_min_inplace},
    {"clamp_min_.Tensor", "NN", op_clamp_min_inplace},
    {"clamp_min.out", "NsN", op_clamp_min_out},
    {"clamp_min.Tensor_out", "NNN", op_clamp_min_out},
    {"clamp_max", "Ns", op_clamp_max},
    {"clamp_max.Tensor", "NN", op_clamp_max},
    {"clamp_max_", "Ns", op_clamp_max_inplace},
    {"clamp_max_.Tensor", "NN", op_clamp_max_inplace},
    {"clamp_max.out", "NsN", op_clamp_max_out},
    {"clamp_max.Tensor_out", "NNN", op_clamp_max_out},
    {"lerp.Scalar", "NNs", op_lerp},
    {"lerp.Tensor", "NNN", op_lerp},
    {"lerp_.Scalar", "NNs", op_lerp_inplace},
    {"lerp_.Tensor", "NNN", op_lerp_inplace},
    {"lerp.Scalar_out", "NNsN", op_lerp_out},
    {"lerp.Tensor_out", "NNNN", op_lerp_out},
    {"addcmul", "NNNs", op_addcmul},
    {"addcmul_", "NNNs", op_addcmul_inplace},
    {"addcmul.out", "NNNsN", op_addcmul_out},
    {"addcdiv", "NNNs", op_addcdiv},
    {"addcdiv_", "NNNs", op_addcdiv_inplace},
    {"addcdiv.out", "NNNsN", op_addcdiv_out},
    {NULL, NULL, NULL},
};
