/* Elementwise ops composed from primitives that PyTorch has no
 * decomposition for: logaddexp, logaddexp2, xlogy, angle (of real
 * numbers) and frexp, with their in-place and out= variants. */
#include <math.h>

#include "aten/elementwise/elementwise.h"
#include "aten/factory/factory.h"
#include "aten/dispatch/op_reuse.h"
#include "aten/reduce/common.h"
#include "core/status.h"
#include "runtime/tensor.h"
#include "ir/infer.h"

/* log(e^a + e^b) = max + log1p(e^-|a - b|) (base 2 likewise, the log1p
 * scaled by 1 / ln 2). Equal operands give a + log(2) exactly: that also
 * keeps a == b == +-inf at inf where |a - b| would be NaN, as the CPU
 * kernel does. Float only, as PyTorch's. */
static porta_tensor *logaddexp_of(aten_scope *s, const porta_value *args, bool base2) {
    const char *name = base2 ? "logaddexp2" : "logaddexp";
    porta_dtype dtype = ew_result_type(&args[0], &args[1], NULL);
    if (!porta_dtype_is_float(dtype))
        return scope_fail(s, porta_error(PORTA_ERR_DTYPE, "\"%s_cpu\" not implemented for '%s'",
                                         name, aten_dtype_label(dtype)));
    porta_dtype compute = aten_compute_dtype(dtype);
    porta_tensor *a = scope_operand(s, &args[0], compute), *b = scope_operand(s, &args[1], compute);
    porta_tensor *distance = scope_unary(s, PORTA_ABS, scope_binary(s, PORTA_SUB, a, b));
    porta_tensor *smaller = scope_unary(s, base2 ? PORTA_EXP2 : PORTA_EXP, scope_unary(s, PORTA_NEG, distance));
    porta_tensor *excess = scope_unary(s, PORTA_LOG1P, smaller);
    if (base2) excess = scope_binary_number(s, PORTA_MUL, excess, 1.0 / M_LN2);
    porta_tensor *general = scope_binary(s, PORTA_ADD, scope_binary(s, PORTA_MAXIMUM, a, b), excess);
    porta_tensor *doubled = scope_binary_number(s, PORTA_ADD, a, base2 ? 1.0 : M_LN2);
    return scope_cast(s, scope_where(s, scope_binary(s, PORTA_EQ, a, b), doubled, general), dtype);
}

COMPOSED_KERNEL(op_logaddexp, logaddexp_of(&s, args, false), EW_NEW, 2)
COMPOSED_KERNEL(op_logaddexp2, logaddexp_of(&s, args, true), EW_NEW, 2)

/* xlogy(x, y) = x * log(y), 0 where x == 0 unless y is NaN (then NaN).
 * Integer and bool operands compute in the default float dtype. */
static porta_tensor *xlogy_of(aten_scope *s, const porta_value *args) {
    porta_dtype dtype = ew_result_type(&args[0], &args[1], NULL);
    if (!porta_dtype_is_float(dtype)) dtype = aten_default_dtype();
    porta_dtype compute = aten_compute_dtype(dtype);
    porta_tensor *x = scope_operand(s, &args[0], compute), *y = scope_operand(s, &args[1], compute);
    porta_tensor *product = scope_binary(s, PORTA_MUL, x, scope_unary(s, PORTA_LOG, y));
    porta_tensor *zeroed = scope_where_number(s, scope_binary_number(s, PORTA_EQ, x, 0), 0, product);
    return scope_cast(s, scope_where(s, scope_unary(s, PORTA_ISNAN, y), y, zeroed), dtype);
}

COMPOSED_KERNEL(op_xlogy, xlogy_of(&s, args), EW_NEW, 2)
COMPOSED_KERNEL(op_xlogy_inplace, xlogy_of(&s, args), EW_INPLACE, 2)

/* angle of a real number: pi below zero, 0 otherwise, NaN kept; integers
 * and bool give the default float dtype. */
static porta_tensor *angle_of(aten_scope *s, const porta_value *x) {
    porta_dtype dtype = x->kind == PORTA_VALUE_TENSOR ? x->tensor->dtype : aten_number_dtype(x);
    if (!porta_dtype_is_float(dtype)) dtype = aten_default_dtype();
    porta_tensor *v = scope_operand(s, x, aten_compute_dtype(dtype));
    porta_tensor *sign = scope_where_number(s, scope_binary_number(s, PORTA_LT, v, 0), M_PI,
                                            scope_binary_number(s, PORTA_MUL, v, 0));
    return scope_cast(s, scope_where(s, scope_unary(s, PORTA_ISNAN, v), v, sign), dtype);
}

COMPOSED_KERNEL(op_angle, angle_of(&s, &args[0]), EW_NEW, 1)

/* frexp(self): mantissa in [0.5, 1) with self's sign and an int32
 * exponent, self = mantissa * 2^exponent; zeros, infinities and NaN are
 * their own mantissa with exponent 0. The exponent from log2 is corrected
 * by one where rounding put the mantissa outside [0.5, 1), and 2^-e is
 * applied in two halves so subnormal inputs do not overflow it. */
static porta_status *frexp_of(const porta_value *a, aten_results *results) {
    const porta_tensor *x = a[0].tensor;
    if (!porta_dtype_is_float(x->dtype))
        return porta_error(PORTA_ERR_DTYPE, "torch.frexp() only supports floating-point dtypes");
    aten_scope s;
    scope_begin(&s);
    porta_dtype compute = aten_compute_dtype(x->dtype);
    porta_device *device = x->buffer->device;
    porta_tensor *v = scope_cast(&s, x, compute), *one = scope_full(&s, device, compute, 0, NULL, 1);
    porta_tensor *special = scope_binary(&s, PORTA_LOGICAL_OR, scope_binary_number(&s, PORTA_EQ, v, 0),
                                      scope_unary(&s, PORTA_LOGICAL_NOT, scope_unary(&s, PORTA_ISFINITE, v)));
    porta_tensor *safe = scope_ternary(&s, PORTA_WHERE, special, one, v);
    porta_tensor *e = scope_binary_number(
        &s, PORTA_ADD, scope_unary(&s, PORTA_FLOOR, scope_unary(&s, PORTA_LOG2, scope_unary(&s, PORTA_ABS, safe))), 1);
    porta_tensor *first = scope_unary(&s, PORTA_FLOOR, scope_binary_number(&s, PORTA_MUL, e, 0.5));
    porta_tensor *second = scope_binary(&s, PORTA_SUB, e, first);
    porta_tensor *m = scope_binary(&s, PORTA_MUL, safe, scope_unary(&s, PORTA_EXP2, scope_unary(&s, PORTA_NEG, first)));
    m = scope_binary(&s, PORTA_MUL, m, scope_unary(&s, PORTA_EXP2, scope_unary(&s, PORTA_NEG, second)));
    porta_tensor *big = scope_binary_number(&s, PORTA_GE, scope_unary(&s, PORTA_ABS, m), 1);
    m = scope_ternary(&s, PORTA_WHERE, big, scope_binary_number(&s, PORTA_MUL, m, 0.5), m);
    e = scope_ternary(&s, PORTA_WHERE, big, scope_binary_number(&s, PORTA_ADD, e, 1), e);
    porta_tensor *small = scope_binary_number(&s, PORTA_LT, scope_unary(&s, PORTA_ABS, m), 0.5);
    m = scope_ternary(&s, PORTA_WHERE, small, scope_binary_number(&s, PORTA_MUL, m, 2), m);
    e = scope_ternary(&s, PORTA_WHERE, small, scope_binary_number(&s, PORTA_SUB, e, 1), e);
    porta_tensor *zero = scope_full(&s, device, compute, 0, NULL, 0);
    scope_push(&s, results, scope_cast(&s, scope_ternary(&s, PORTA_WHERE, special, v, m), x->dtype));
    scope_push(&s, results, scope_cast(&s, scope_ternary(&s, PORTA_WHERE, special, zero, e), PORTA_I32));
    return scope_end(&s);
}

static porta_status *frexp_out(const porta_value *a, aten_results *results) {
    const porta_tensor *x = a[0].tensor, *mantissa = a[1].tensor, *exponent = a[2].tensor;
    if (porta_dtype_is_float(x->dtype) && mantissa->dtype != x->dtype)
        return porta_error(PORTA_ERR_DTYPE,
                           "torch.frexp() expects mantissa to have dtype %s but got %s",
                           porta_dtype_name(x->dtype), porta_dtype_name(mantissa->dtype));
    if (exponent->dtype != PORTA_I32)
        return porta_error(PORTA_ERR_DTYPE,
                           "torch.frexp() expects exponent to have int dtype but got %s",
                           porta_dtype_name(exponent->dtype));
    return aten_into_outs(frexp_of, a, 1, 2, results);
}

/* The out= variants. */
ATEN_OUT_KERNEL(op_logaddexp_out, op_logaddexp, 2)
ATEN_OUT_KERNEL(op_logaddexp2_out, op_logaddexp2, 2)
ATEN_OUT_KERNEL(op_xlogy_out, op_xlogy, 2)
ATEN_OUT_KERNEL(op_angle_out, op_angle, 1)

const aten_op aten_elementwise_logaddexp_xlogy_angle_frexp_ops[] = {
    {"logaddexp", "NN", op_logaddexp},
    {"logaddexp.out", "NNN", op_logaddexp_out},
    {"logaddexp2", "NN", op_logaddexp2},
    {"logaddexp2.out", "NNN", op_logaddexp2_out},
    {"xlogy.Tensor", "NN", op_xlogy},
    {"xlogy.Scalar_Self", "sN", op_xlogy},
    {"xlogy.Scalar_Other", "Ns", op_xlogy},
    {"xlogy.OutTensor", "NNN", op_xlogy_out},
    {"xlogy.OutScalar_Self", "sNN", op_xlogy_out},
    {"xlogy.OutScalar_Other", "NsN", op_xlogy_out},
    {"xlogy_.Tensor", "NN", op_xlogy_inplace},
    {"xlogy_.Scalar_Other", "Ns", op_xlogy_inplace},
    {"angle", "N", op_angle},
    {"angle.out", "NN", op_angle_out},
    {"frexp.Tensor", "T", frexp_of},
    {"frexp.Tensor_out", "TTT", frexp_out},
    {NULL, NULL, NULL},
};
