/* Pointwise aten ops of several operands: clamp (numbers or tensors as
 * bounds), lerp, addcmul and addcdiv (the optimizers' update steps), with
 * in-place and out= variants. */
#include <math.h>

#include "aten/elementwise/elementwise.h"
#include "core/status.h"
#include "runtime/tensor.h"

/* min(max(x, low), high) in the result type of all three; NaN in x stays
 * NaN, and low > high gives high, as in PyTorch. */
static porta_tensor *clamp_of(aten_scope *s, const porta_value *x, const porta_value *low,
                              const porta_value *high) {
    bool has_low = low->kind != PORTA_VALUE_NONE, has_high = high->kind != PORTA_VALUE_NONE;
    if (!has_low && !has_high)
        return scope_fail(s, porta_error(PORTA_ERR_INVALID_ARGUMENT,
                                      "torch.clamp: At least one of 'min' or 'max' must not be None"));
    porta_dtype dtype = ew_result_type(x, low, high);
    /* PyTorch's kernel with both bounds has no bool loop; one bound does */
    if (dtype == PORTA_BOOL && has_low && has_high)
        return scope_fail(s, ew_refuse_dtype("clamp", "a number tensor", dtype));
    porta_tensor *result = scope_operand(s, x, dtype);
    if (has_low) result = scope_binary(s, PORTA_MAXIMUM, result, scope_operand(s, low, dtype));
    if (has_high) result = scope_binary(s, PORTA_MINIMUM, result, scope_operand(s, high, dtype));
    return result;
}

static const porta_value none = {.kind = PORTA_VALUE_NONE};

COMPOSED_KERNEL(op_clamp, clamp_of(&s, &args[0], &args[1], &args[2]), EW_NEW, 3)
COMPOSED_KERNEL(op_clamp_inplace, clamp_of(&s, &args[0], &args[1], &args[2]), EW_INPLACE, 3)
COMPOSED_KERNEL(op_clamp_out, clamp_of(&s, &args[0], &args[1], &args[2]), EW_OUT, 4)
COMPOSED_KERNEL(op_clamp_min, clamp_of(&s, &args[0], &args[1], &none), EW_NEW, 2)
COMPOSED_KERNEL(op_clamp_min_inplace, clamp_of(&s, &args[0], &args[1], &none), EW_INPLACE, 2)
COMPOSED_KERNEL(op_clamp_min_out, clamp_of(&s, &args[0], &args[1], &none), EW_OUT, 3)
COMPOSED_KERNEL(op_clamp_max, clamp_of(&s, &args[0], &none, &args[1]), EW_NEW, 2)
COMPOSED_KERNEL(op_clamp_max_inplace, clamp_of(&s, &args[0], &none, &args[1]), EW_INPLACE, 2)
COMPOSED_KERNEL(op_clamp_max_out, clamp_of(&s, &args[0], &none, &args[1]), EW_OUT, 3)

/* lerp(self, end, weight): self + weight * (end - self) for |weight| < 0.5,
 * else end - (end - self) * (1 - weight), so both ends are exact; PyTorch
 * requires self and end (and a weight tensor) to share a float dtype. */
static porta_tensor *lerp_of(aten_scope *s, const porta_value *args) {
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
    porta_tensor *near_start = scope_ternary_into(s, PORTA_FMA, w, diff, a, NULL);
    porta_tensor *near_end = scope_ternary_into(
        s, PORTA_FMA, scope_binary_number(s, PORTA_SUB, w, 1), diff, b, NULL); /* (w - 1) diff + b */
    porta_tensor *result;
    if (weight->kind == PORTA_VALUE_TENSOR) {
        porta_tensor *small = scope_binary_number(s, PORTA_LT, scope_unary(s, PORTA_ABS, w), 0.5);
        result = scope_where(s, small, near_start, near_end);
    } else {
        result = fabs(aten_number(weight)) < 0.5 ? near_start : near_end;
    }
    return scope_cast(s, result, dtype);
}

COMPOSED_KERNEL(op_lerp, lerp_of(&s, args), EW_NEW, 3)
COMPOSED_KERNEL(op_lerp_inplace, lerp_of(&s, args), EW_INPLACE, 3)
COMPOSED_KERNEL(op_lerp_out, lerp_of(&s, args), EW_OUT, 4)

/* self + value * t1 * t2 (addcmul) or self + value * t1 / t2 (addcdiv), in
 * the order PyTorch's CPU kernel rounds: (value * t1) first. */
static porta_tensor *addc_of(aten_scope *s, porta_binary_op op, const porta_value *args) {
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
    return scope_cast(s, scope_binary(s, PORTA_ADD, scope_operand(s, &args[0], compute), term), dtype);
}

COMPOSED_KERNEL(op_addcmul, addc_of(&s, PORTA_MUL, args), EW_NEW, 4)
COMPOSED_KERNEL(op_addcmul_inplace, addc_of(&s, PORTA_MUL, args), EW_INPLACE, 4)
COMPOSED_KERNEL(op_addcmul_out, addc_of(&s, PORTA_MUL, args), EW_OUT, 5)
COMPOSED_KERNEL(op_addcdiv, addc_of(&s, PORTA_DIV, args), EW_NEW, 4)
COMPOSED_KERNEL(op_addcdiv_inplace, addc_of(&s, PORTA_DIV, args), EW_INPLACE, 4)
COMPOSED_KERNEL(op_addcdiv_out, addc_of(&s, PORTA_DIV, args), EW_OUT, 5)

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
