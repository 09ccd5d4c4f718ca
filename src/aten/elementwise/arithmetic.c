/* Elementwise arithmetic aten ops: add, sub, mul, div (with rounding
 * modes), floor_divide, remainder, fmod, pow, atan2, maximum/minimum,
 * fmax/fmin, copysign, with their in-place and out= variants. Each computes
 * PyTorch's result dtype across its tensor and number operands. */
#include <string.h>

#include "aten/elementwise/elementwise.h"
#include "core/dtype.h"
#include "core/status.h"
#include "runtime/tensor.h"

static bool is_bool(const porta_value *v) {
    return v->kind == PORTA_VALUE_BOOL || (v->kind == PORTA_VALUE_TENSOR && v->tensor->dtype == PORTA_BOOL);
}

/* a + alpha * b (SUB: a - alpha * b) as PyTorch computes it: one multiply-
 * add when alpha is not 1. */
static porta_status *with_alpha(porta_binary_op op, const porta_value *a, const porta_value *b,
                                const porta_value *alpha, porta_tensor *into,
                                aten_results *results) {
    porta_dtype dtype = ew_result_type(a, b, NULL);
    if (op == PORTA_SUB && (is_bool(a) || is_bool(b)))
        return porta_error(PORTA_ERR_DTYPE,
                           "Subtraction, the `-` operator, with a bool tensor is not supported. "
                           "If you are trying to invert a mask, use the `~` or `logical_not()` "
                           "operator instead.");
    if (alpha->kind == PORTA_VALUE_FLOAT && !porta_dtype_is_float(dtype))
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "For integral input tensors, argument alpha must not be a floating "
                           "point number.");
    double scale = aten_number(alpha);
    if (scale == 1.0) return ew_promoted_binary_as(op, a, b, dtype, into, results);
    aten_scope s;
    scope_begin_on(&s, ew_device(a, b, NULL));
    porta_tensor *ta = scope_operand(&s, a, dtype), *tb = scope_operand(&s, b, dtype);
    porta_tensor *ts = scope_number(&s, dtype, op == PORTA_SUB ? -scale : scale);
    porta_tensor *out = scope_ternary_into(&s, PORTA_FMA, tb, ts, ta, into);
    return ew_finish(&s, out, into, results);
}

static porta_status *add(const porta_value *args, aten_results *r) {
    return with_alpha(PORTA_ADD, &args[0], &args[1], &args[2], NULL, r);
}
static porta_status *add_(const porta_value *args, aten_results *r) {
    return with_alpha(PORTA_ADD, &args[0], &args[1], &args[2], args[0].tensor, r);
}
static porta_status *add_out(const porta_value *args, aten_results *r) {
    return with_alpha(PORTA_ADD, &args[0], &args[1], &args[2], ew_out_target(args, 2, args[3].tensor), r);
}
static porta_status *sub(const porta_value *args, aten_results *r) {
    return with_alpha(PORTA_SUB, &args[0], &args[1], &args[2], NULL, r);
}
static porta_status *sub_(const porta_value *args, aten_results *r) {
    return with_alpha(PORTA_SUB, &args[0], &args[1], &args[2], args[0].tensor, r);
}
static porta_status *sub_out(const porta_value *args, aten_results *r) {
    return with_alpha(PORTA_SUB, &args[0], &args[1], &args[2], ew_out_target(args, 2, args[3].tensor), r);
}
/* rsub(a, b, alpha) = b - alpha * a */
static porta_status *rsub(const porta_value *args, aten_results *r) {
    return with_alpha(PORTA_SUB, &args[1], &args[0], &args[2], NULL, r);
}

/* a / b rounded toward zero: integers divide exactly after removing the
 * remainder (whose sign follows a); floats truncate the quotient, halves in
 * float32 as PyTorch does. */
static porta_tensor *divide_trunc(aten_scope *s, const porta_value *a, const porta_value *b,
                                  porta_dtype dtype) {
    if (dtype == PORTA_BOOL)
        return scope_fail(s, ew_refuse_dtype("div", "integer or float tensors", dtype));
    if (!porta_dtype_is_float(dtype)) {
        porta_tensor *ta = scope_operand(s, a, dtype), *tb = scope_operand(s, b, dtype);
        porta_tensor *exact = scope_binary(s, PORTA_SUB, ta, scope_binary(s, PORTA_FMOD, ta, tb));
        return scope_binary(s, PORTA_FLOOR_DIVIDE, exact, tb);
    }
    porta_dtype compute = aten_compute_dtype(dtype);
    porta_tensor *quotient =
        scope_binary(s, PORTA_DIV, scope_operand(s, a, compute), scope_operand(s, b, compute));
    return scope_cast(s, scope_unary(s, PORTA_TRUNC, quotient), dtype);
}

static porta_status *divide(const porta_value *a, const porta_value *b, const porta_value *mode,
                            porta_tensor *into, aten_results *results) {
    if (mode->kind == PORTA_VALUE_NONE) return ew_promoted_binary(PORTA_DIV, a, b, into, results);
    if (!strcmp(mode->string, "floor"))
        return ew_promoted_binary(PORTA_FLOOR_DIVIDE, a, b, into, results);
    if (strcmp(mode->string, "trunc"))
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "div expected rounding_mode to be one of None, 'trunc', or 'floor' "
                           "but found '%s'",
                           mode->string);
    aten_scope s;
    scope_begin_on(&s, ew_device(a, b, NULL));
    return ew_finish(&s, divide_trunc(&s, a, b, ew_result_type(a, b, NULL)), into, results);
}

static const porta_value no_mode = {.kind = PORTA_VALUE_NONE};

static porta_status *div_(const porta_value *args, aten_results *r) {
    return divide(&args[0], &args[1], &no_mode, NULL, r);
}
static porta_status *div_inplace(const porta_value *args, aten_results *r) {
    return divide(&args[0], &args[1], &no_mode, args[0].tensor, r);
}
static porta_status *div_out(const porta_value *args, aten_results *r) {
    return divide(&args[0], &args[1], &no_mode, ew_out_target(args, 2, args[2].tensor), r);
}
static porta_status *div_mode(const porta_value *args, aten_results *r) {
    return divide(&args[0], &args[1], &args[2], NULL, r);
}
static porta_status *div_mode_inplace(const porta_value *args, aten_results *r) {
    return divide(&args[0], &args[1], &args[2], args[0].tensor, r);
}
static porta_status *div_mode_out(const porta_value *args, aten_results *r) {
    return divide(&args[0], &args[1], &args[2], ew_out_target(args, 2, args[3].tensor), r);
}

/* fmax/fmin: like maximum/minimum, but a NaN loses to a number. */
static porta_status *nan_ignoring(porta_binary_op op, const porta_value *a, const porta_value *b,
                                  porta_tensor *into, aten_results *results) {
    porta_dtype dtype = ew_result_type(a, b, NULL);
    if (!porta_dtype_is_float(dtype)) return ew_promoted_binary_as(op, a, b, dtype, into, results);
    aten_scope s;
    scope_begin_on(&s, ew_device(a, b, NULL));
    porta_tensor *ta = scope_operand(&s, a, dtype), *tb = scope_operand(&s, b, dtype);
    porta_tensor *picked = scope_binary(&s, op, ta, tb);
    picked = scope_where(&s, scope_unary(&s, PORTA_ISNAN, tb), ta, picked);
    picked = scope_where(&s, scope_unary(&s, PORTA_ISNAN, ta), tb, picked);
    return ew_finish(&s, picked, into, results);
}

/* |a| with the sign bit of b (so -0.0 counts as negative), in float. */
static porta_status *copy_sign(const porta_value *a, const porta_value *b, porta_tensor *into,
                               aten_results *results) {
    porta_dtype dtype = ew_result_type(a, b, NULL);
    if (!porta_dtype_is_float(dtype)) dtype = PORTA_F32;
    aten_scope s;
    scope_begin_on(&s, ew_device(a, b, NULL));
    porta_tensor *ta = scope_operand(&s, a, dtype), *tb = scope_operand(&s, b, dtype);
    porta_tensor *negative_zero = scope_binary(
        &s, PORTA_LOGICAL_AND, scope_binary_number(&s, PORTA_EQ, tb, 0),
        scope_binary_number(&s, PORTA_LT, scope_unary(&s, PORTA_RECIPROCAL, tb), 0));
    porta_tensor *negative =
        scope_binary(&s, PORTA_LOGICAL_OR, scope_binary_number(&s, PORTA_LT, tb, 0), negative_zero);
    porta_tensor *magnitude = scope_unary(&s, PORTA_ABS, ta);
    porta_tensor *result = scope_where(&s, negative, scope_unary(&s, PORTA_NEG, magnitude), magnitude);
    return ew_finish(&s, result, into, results);
}

static porta_status *op_copysign(const porta_value *args, aten_results *r) {
    return copy_sign(&args[0], &args[1], NULL, r);
}
static porta_status *op_copysign_inplace(const porta_value *args, aten_results *r) {
    return copy_sign(&args[0], &args[1], args[0].tensor, r);
}
static porta_status *op_copysign_out(const porta_value *args, aten_results *r) {
    return copy_sign(&args[0], &args[1], ew_out_target(args, 2, args[2].tensor), r);
}

BINARY_KERNELS(mul, ew_promoted_binary, PORTA_MUL)
INPLACE_KERNEL(mul, ew_promoted_binary, PORTA_MUL)
BINARY_KERNELS(floor_divide, ew_promoted_binary, PORTA_FLOOR_DIVIDE)
INPLACE_KERNEL(floor_divide, ew_promoted_binary, PORTA_FLOOR_DIVIDE)
BINARY_KERNELS(remainder, ew_promoted_binary, PORTA_REMAINDER)
INPLACE_KERNEL(remainder, ew_promoted_binary, PORTA_REMAINDER)
BINARY_KERNELS(fmod, ew_promoted_binary, PORTA_FMOD)
INPLACE_KERNEL(fmod, ew_promoted_binary, PORTA_FMOD)
/* x ** c for the exponents PyTorch's CPU kernel computes without pow():
 * products, reciprocals and rsqrt are faster than pow() and give PyTorch's
 * bits (pow(x, 3) differs from x*x*x in the last places; 0.5 does go
 * through pow there). Only float32/float64: PyTorch's half-precision kernels
 * round differently. */
static porta_status *power_by_products(const porta_value *a, const porta_value *b,
                                       porta_dtype dtype, porta_tensor *into,
                                       aten_results *results) {
    double exponent = aten_number(b);
    aten_scope s;
    scope_begin_on(&s, ew_device(a, b, NULL));
    porta_tensor *x = scope_operand(&s, a, dtype), *result;
    if (exponent == 2.0) result = scope_binary(&s, PORTA_MUL, x, x);
    else if (exponent == 3.0) result = scope_binary(&s, PORTA_MUL, scope_binary(&s, PORTA_MUL, x, x), x);
    else if (exponent == -2.0) result = scope_unary(&s, PORTA_RECIPROCAL, scope_binary(&s, PORTA_MUL, x, x));
    else if (exponent == -0.5) result = scope_unary(&s, PORTA_RSQRT, x);
    else result = scope_unary(&s, PORTA_RECIPROCAL, x); /* -1 */
    return ew_finish(&s, result, into, results);
}

static bool has_product_form(double exponent) {
    return exponent == 2.0 || exponent == 3.0 || exponent == -2.0 || exponent == -0.5 ||
           exponent == -1.0;
}

/* A negative number exponent of an integer base is refused before it is
 * cast to the base's dtype (where -3 would become 253 for uint8). */
static porta_status *power(porta_binary_op op, const porta_value *a, const porta_value *b,
                           porta_tensor *into, aten_results *results) {
    porta_dtype dtype = ew_result_type(a, b, NULL);
    if (b->kind != PORTA_VALUE_TENSOR && aten_number(b) < 0 && core_dtype_is_integral(dtype))
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "Integers to negative integer powers are not allowed.");
    if (a->kind == PORTA_VALUE_TENSOR && b->kind != PORTA_VALUE_TENSOR &&
        (dtype == PORTA_F32 || dtype == PORTA_F64) && has_product_form(aten_number(b)))
        return power_by_products(a, b, dtype, into, results);
    return ew_promoted_binary(op, a, b, into, results);
}

BINARY_KERNELS(pow, power, PORTA_POW)
INPLACE_KERNEL(pow, power, PORTA_POW)
BINARY_KERNELS(atan2, ew_promoted_binary, PORTA_ATAN2)
INPLACE_KERNEL(atan2, ew_promoted_binary, PORTA_ATAN2)
BINARY_KERNELS(maximum, ew_promoted_binary, PORTA_MAXIMUM)
BINARY_KERNELS(minimum, ew_promoted_binary, PORTA_MINIMUM)
BINARY_KERNELS(fmax, nan_ignoring, PORTA_MAXIMUM)
BINARY_KERNELS(fmin, nan_ignoring, PORTA_MINIMUM)

/* The .Scalar overloads take their scalar as 'N' (a number, or a complex
 * number's rank-0 tensor: aten/complex/). */
const aten_op aten_elementwise_arithmetic_ops[] = {
    {"add.Tensor", "NNs", add},
    {"add.Scalar", "NNs", add},
    {"add_.Tensor", "NNs", add_},
    {"add_.Scalar", "NNs", add_},
    {"add.out", "NNsN", add_out},
    {"sub.Tensor", "NNs", sub},
    {"sub.Scalar", "NNs", sub},
    {"sub_.Tensor", "NNs", sub_},
    {"sub_.Scalar", "NNs", sub_},
    {"sub.out", "NNsN", sub_out},
    {"rsub.Tensor", "NNs", rsub},
    {"rsub.Scalar", "Nss", rsub},
    {"mul.Tensor", "NN", op_mul},
    {"mul.Scalar", "NN", op_mul},
    {"mul_.Tensor", "NN", op_mul_inplace},
    {"mul_.Scalar", "NN", op_mul_inplace},
    {"mul.out", "NNN", op_mul_out},
    {"div.Tensor", "NN", div_},
    {"div.Scalar", "NN", div_},
    {"div_.Tensor", "NN", div_inplace},
    {"div_.Scalar", "NN", div_inplace},
    {"div.out", "NNN", div_out},
    {"div.Tensor_mode", "NNr", div_mode},
    {"div.Scalar_mode", "Nsr", div_mode},
    {"div_.Tensor_mode", "NNr", div_mode_inplace},
    {"div_.Scalar_mode", "Nsr", div_mode_inplace},
    {"div.out_mode", "NNrN", div_mode_out},
    {"floor_divide", "NN", op_floor_divide},
    {"floor_divide.Scalar", "Ns", op_floor_divide},
    {"floor_divide_.Tensor", "NN", op_floor_divide_inplace},
    {"floor_divide_.Scalar", "Ns", op_floor_divide_inplace},
    {"floor_divide.out", "NNN", op_floor_divide_out},
    {"remainder.Tensor", "NN", op_remainder},
    {"remainder.Scalar", "Ns", op_remainder},
    {"remainder.Scalar_Tensor", "sN", op_remainder},
    {"remainder_.Tensor", "NN", op_remainder_inplace},
    {"remainder_.Scalar", "Ns", op_remainder_inplace},
    {"remainder.Tensor_out", "NNN", op_remainder_out},
    {"fmod.Tensor", "NN", op_fmod},
    {"fmod.Scalar", "Ns", op_fmod},
    {"fmod_.Tensor", "NN", op_fmod_inplace},
    {"fmod_.Scalar", "Ns", op_fmod_inplace},
    {"fmod.Tensor_out", "NNN", op_fmod_out},
    {"pow.Tensor_Tensor", "NN", op_pow},
    {"pow.Tensor_Scalar", "Ns", op_pow},
    {"pow.Scalar", "sN", op_pow},
    {"pow_.Tensor", "NN", op_pow_inplace},
    {"pow_.Scalar", "Ns", op_pow_inplace},
    {"pow.Tensor_Tensor_out", "NNN", op_pow_out},
    {"pow.Tensor_Scalar_out", "NsN", op_pow_out},
    {"atan2", "NN", op_atan2},
    {"atan2_", "NN", op_atan2_inplace},
    {"atan2.out", "NNN", op_atan2_out},
    {"maximum", "NN", op_maximum},
    {"maximum.out", "NNN", op_maximum_out},
    {"minimum", "NN", op_minimum},
    {"minimum.out", "NNN", op_minimum_out},
    {"fmax", "NN", op_fmax},
    {"fmax.out", "NNN", op_fmax_out},
    {"fmin", "NN", op_fmin},
    {"fmin.out", "NNN", op_fmin_out},
    {"copysign.Tensor", "NN", op_copysign},
    {"copysign.Scalar", "Ns", op_copysign},
    {"copysign_.Tensor", "NN", op_copysign_inplace},
    {"copysign_.Scalar", "Ns", op_copysign_inplace},
    {"copysign.out", "NNN", op_copysign_out},
    {NULL, NULL, NULL},
};
