/* Unary elementwise aten ops: the math functions libporta has as unary
 * primitives, and those composed from them (log10, frac, round with
 * decimals, nan_to_num), with their in-place and out= variants. */
#include <float.h>
#include <math.h>
#include <stdint.h>

#include "aten/elementwise/elementwise.h"
#include "core/status.h"
#include "runtime/tensor.h"

/* op(x) as one primitive; porta_unary applies PyTorch's dtype rules (and
 * out= rules with `into`). */
static porta_status *unary(porta_unary_op op, const porta_value *x, porta_tensor *into,
                           aten_results *results) {
    aten_scope s = {.device = ew_device(x, x, NULL)};
    porta_tensor *tx = scope_operand(&s, x, ew_result_type(x, x, NULL));
    porta_tensor *result = NULL;
    if (tx && !into) result = scope_unary(&s, op, tx);
    if (tx && into) {
        porta_status *status = porta_unary(op, tx, &into);
        result = status ? scope_fail(&s, status) : into;
    }
    return ew_finish(&s, result, into, results);
}

/* The function and out= kernels of a unary op (self[, out]); predicates
 * (isnan, isinf) and torch.special's functions have no in-place form, the
 * others do. */
#define NO_INPLACE_KERNELS(name, OP)                                                 \
    static porta_status *op_##name(const porta_value *args, aten_results *r) {       \
        return unary(OP, &args[0], NULL, r);                                         \
    }                                                                                \
    static porta_status *op_##name##_out(const porta_value *args, aten_results *r) { \
        return unary(OP, &args[0], ew_out_target(args, 1, args[1].tensor), r);      \
    }
#define UNARY_KERNELS(name, OP)                                                         \
    NO_INPLACE_KERNELS(name, OP)                                                        \
    static porta_status *op_##name##_inplace(const porta_value *args, aten_results *r) { \
        return unary(OP, &args[0], args[0].tensor, r);                                  \
    }

/* torch.special's functions that PyTorch's CPU has for float32 and
 * float64 (integers promote to float32) but not for float16 and bfloat16:
 * those are refused as there. */
static porta_status *full_precision_unary(const char *name, porta_unary_op op,
                                          const porta_value *x, porta_tensor *into,
                                          aten_results *results) {
    porta_dtype dtype = ew_result_type(x, x, NULL);
    if (dtype == PORTA_F16 || dtype == PORTA_BF16)
        return ew_refuse_dtype(name, "a float32, float64, integer or bool tensor", dtype);
    return unary(op, x, into, results);
}
#define FULL_PRECISION_KERNELS(name, OP)                                                  \
    static porta_status *op_##name(const porta_value *args, aten_results *r) {            \
        return full_precision_unary(#name, OP, &args[0], NULL, r);                        \
    }                                                                                     \
    static porta_status *op_##name##_out(const porta_value *args, aten_results *r) {      \
        return full_precision_unary(#name, OP, &args[0], ew_out_target(args, 1, args[1].tensor), \
                                    r);                                                   \
    }

UNARY_KERNELS(neg, PORTA_NEG)
UNARY_KERNELS(abs, PORTA_ABS)
UNARY_KERNELS(sign, PORTA_SIGN)
UNARY_KERNELS(exp, PORTA_EXP)
UNARY_KERNELS(exp2, PORTA_EXP2)
UNARY_KERNELS(expm1, PORTA_EXPM1)
UNARY_KERNELS(log, PORTA_LOG)
UNARY_KERNELS(log2, PORTA_LOG2)
UNARY_KERNELS(log1p, PORTA_LOG1P)
UNARY_KERNELS(sqrt, PORTA_SQRT)
UNARY_KERNELS(rsqrt, PORTA_RSQRT)
UNARY_KERNELS(reciprocal, PORTA_RECIPROCAL)
UNARY_KERNELS(sin, PORTA_SIN)
UNARY_KERNELS(cos, PORTA_COS)
UNARY_KERNELS(tan, PORTA_TAN)
UNARY_KERNELS(asin, PORTA_ASIN)
UNARY_KERNELS(acos, PORTA_ACOS)
UNARY_KERNELS(atan, PORTA_ATAN)
UNARY_KERNELS(sinh, PORTA_SINH)
UNARY_KERNELS(cosh, PORTA_COSH)
UNARY_KERNELS(tanh, PORTA_TANH)
UNARY_KERNELS(asinh, PORTA_ASINH)
UNARY_KERNELS(acosh, PORTA_ACOSH)
UNARY_KERNELS(atanh, PORTA_ATANH)
UNARY_KERNELS(sigmoid, PORTA_SIGMOID)
UNARY_KERNELS(erf, PORTA_ERF)
UNARY_KERNELS(erfc, PORTA_ERFC)
UNARY_KERNELS(erfinv, PORTA_ERFINV)
UNARY_KERNELS(lgamma, PORTA_LGAMMA)
UNARY_KERNELS(digamma, PORTA_DIGAMMA)
UNARY_KERNELS(i0, PORTA_I0)
/* the modified Bessel functions of the first kind are i0 and i1, without
 * their half kernels */
FULL_PRECISION_KERNELS(modified_bessel_i0, PORTA_I0)
FULL_PRECISION_KERNELS(modified_bessel_i1, PORTA_I1)
NO_INPLACE_KERNELS(i0e, PORTA_I0E)
NO_INPLACE_KERNELS(i1, PORTA_I1)
NO_INPLACE_KERNELS(i1e, PORTA_I1E)
FULL_PRECISION_KERNELS(erfcx, PORTA_ERFCX)
FULL_PRECISION_KERNELS(log_ndtr, PORTA_LOG_NDTR)
FULL_PRECISION_KERNELS(ndtri, PORTA_NDTRI)
FULL_PRECISION_KERNELS(bessel_j0, PORTA_BESSEL_J0)
FULL_PRECISION_KERNELS(bessel_j1, PORTA_BESSEL_J1)
FULL_PRECISION_KERNELS(bessel_y0, PORTA_BESSEL_Y0)
FULL_PRECISION_KERNELS(bessel_y1, PORTA_BESSEL_Y1)
FULL_PRECISION_KERNELS(modified_bessel_k0, PORTA_MODIFIED_BESSEL_K0)
FULL_PRECISION_KERNELS(modified_bessel_k1, PORTA_MODIFIED_BESSEL_K1)
FULL_PRECISION_KERNELS(scaled_modified_bessel_k0, PORTA_SCALED_MODIFIED_BESSEL_K0)
FULL_PRECISION_KERNELS(scaled_modified_bessel_k1, PORTA_SCALED_MODIFIED_BESSEL_K1)
FULL_PRECISION_KERNELS(spherical_bessel_j0, PORTA_SPHERICAL_BESSEL_J0)
FULL_PRECISION_KERNELS(airy_ai, PORTA_AIRY_AI)
UNARY_KERNELS(floor, PORTA_FLOOR)
UNARY_KERNELS(ceil, PORTA_CEIL)
UNARY_KERNELS(round, PORTA_ROUND)
UNARY_KERNELS(trunc, PORTA_TRUNC)
NO_INPLACE_KERNELS(isnan, PORTA_ISNAN)
NO_INPLACE_KERNELS(isinf, PORTA_ISINF)
UNARY_KERNELS(logical_not, PORTA_LOGICAL_NOT)
UNARY_KERNELS(bitwise_not, PORTA_BITWISE_NOT)

/* The dtype a float function gives: integers and bool compute in float32. */
static porta_dtype floating(porta_dtype dtype) {
    return porta_dtype_is_float(dtype) ? dtype : PORTA_F32;
}

/* log10(x) = log(x) / ln 10, in float32 for halves so it rounds once. */
static porta_tensor *log10_of(aten_scope *s, const porta_value *x) {
    porta_dtype dtype = floating(ew_result_type(x, x, NULL)), compute = aten_compute_dtype(dtype);
    porta_tensor *ln = scope_unary(s, PORTA_LOG, scope_operand(s, x, compute));
    return scope_cast(s, scope_binary_number(s, PORTA_DIV, ln, M_LN10), dtype);
}

/* x - trunc(x); integers and bool are refused, as in PyTorch. */
static porta_tensor *frac_of(aten_scope *s, const porta_value *x) {
    porta_dtype dtype = ew_result_type(x, x, NULL);
    if (!porta_dtype_is_float(dtype)) return scope_fail(s, ew_refuse_dtype("frac", "a float tensor", dtype));
    porta_tensor *tx = scope_operand(s, x, dtype);
    return scope_binary(s, PORTA_SUB, tx, scope_unary(s, PORTA_TRUNC, tx));
}

/* round(x * 10^d) / 10^d half to even, or round(x / 10^-d) * 10^-d for
 * negative d, in float32 for halves, as PyTorch's kernel computes it. */
static porta_tensor *round_decimals_of(aten_scope *s, const porta_value *x, int64_t decimals) {
    porta_dtype dtype = ew_result_type(x, x, NULL);
    if (!porta_dtype_is_float(dtype))
        return scope_fail(s, ew_refuse_dtype("round", "a float tensor", dtype));
    porta_dtype compute = aten_compute_dtype(dtype);
    porta_tensor *tx = scope_operand(s, x, compute);
    if (decimals == 0) return scope_cast(s, scope_unary(s, PORTA_ROUND, tx), dtype);
    bool negative = decimals < 0;
    double ten_pow = pow(10.0, (double)(negative ? -decimals : decimals));
    porta_tensor *scaled = scope_binary_number(s, negative ? PORTA_DIV : PORTA_MUL, tx, ten_pow);
    porta_tensor *rounded = scope_unary(s, PORTA_ROUND, scaled);
    return scope_cast(s, scope_binary_number(s, negative ? PORTA_MUL : PORTA_DIV, rounded, ten_pow),
                      dtype);
}

/* The largest finite value of a float dtype. */
static double float_max(porta_dtype dtype) {
    switch (dtype) {
    case PORTA_F16: return 65504.0;
    case PORTA_BF16: return 3.3895313892515355e38;
    case PORTA_F32: return FLT_MAX;
    default: return DBL_MAX;
    }
}

/* NaN, +inf and -inf replaced (by default with 0 and the dtype's extremes);
 * integers and bool have none of them, so they come back unchanged. */
static porta_tensor *nan_to_num_of(aten_scope *s, const porta_value *args) {
    const porta_value *x = &args[0];
    porta_dtype dtype = ew_result_type(x, x, NULL);
    porta_tensor *tx = scope_operand(s, x, dtype);
    if (!porta_dtype_is_float(dtype)) return tx;
    double nan = args[1].kind == PORTA_VALUE_NONE ? 0.0 : aten_number(&args[1]);
    double posinf = args[2].kind == PORTA_VALUE_NONE ? float_max(dtype) : aten_number(&args[2]);
    double neginf = args[3].kind == PORTA_VALUE_NONE ? -float_max(dtype) : aten_number(&args[3]);
    porta_tensor *result = scope_where_number(s, scope_unary(s, PORTA_ISNAN, tx), nan, tx);
    result = scope_where_number(s, scope_binary_number(s, PORTA_EQ, tx, INFINITY), posinf, result);
    return scope_where_number(s, scope_binary_number(s, PORTA_EQ, tx, -INFINITY), neginf, result);
}

COMPOSED_KERNEL(op_log10, log10_of(&s, &args[0]), EW_NEW, 1)
COMPOSED_KERNEL(op_log10_inplace, log10_of(&s, &args[0]), EW_INPLACE, 1)
COMPOSED_KERNEL(op_log10_out, log10_of(&s, &args[0]), EW_OUT, 2)
COMPOSED_KERNEL(op_frac, frac_of(&s, &args[0]), EW_NEW, 1)
COMPOSED_KERNEL(op_frac_inplace, frac_of(&s, &args[0]), EW_INPLACE, 1)
COMPOSED_KERNEL(op_frac_out, frac_of(&s, &args[0]), EW_OUT, 2)
COMPOSED_KERNEL(op_round_decimals, round_decimals_of(&s, &args[0], args[1].i), EW_NEW, 2)
COMPOSED_KERNEL(op_round_decimals_inplace, round_decimals_of(&s, &args[0], args[1].i), EW_INPLACE, 2)
COMPOSED_KERNEL(op_round_decimals_out, round_decimals_of(&s, &args[0], args[1].i), EW_OUT, 3)
COMPOSED_KERNEL(op_nan_to_num, nan_to_num_of(&s, args), EW_NEW, 4)
COMPOSED_KERNEL(op_nan_to_num_inplace, nan_to_num_of(&s, args), EW_INPLACE, 4)
COMPOSED_KERNEL(op_nan_to_num_out, nan_to_num_of(&s, args), EW_OUT, 5)

/* Table rows of a unary op with its in-place and out= overloads. */
#define UNARY_ROWS(name)                                                     \
    {#name, "N", op_##name}, {#name "_", "N", op_##name##_inplace},          \
    {#name ".out", "NN", op_##name##_out}

/* Table rows of torch.special's function and out= overloads. */
#define SPECIAL_ROWS(name) \
    {"special_" #name, "N", op_##name}, {"special_" #name ".out", "NN", op_##name##_out}

const aten_op aten_elementwise_unary_ops[] = {
    UNARY_ROWS(neg),
    UNARY_ROWS(abs),
    UNARY_ROWS(sign),
    {"sgn", "N", op_sign},
    {"sgn_", "N", op_sign_inplace},
    {"sgn.out", "NN", op_sign_out},
    UNARY_ROWS(exp),
    UNARY_ROWS(exp2),
    UNARY_ROWS(expm1),
    UNARY_ROWS(log),
    UNARY_ROWS(log2),
    UNARY_ROWS(log10),
    UNARY_ROWS(log1p),
    UNARY_ROWS(sqrt),
    UNARY_ROWS(rsqrt),
    UNARY_ROWS(reciprocal),
    UNARY_ROWS(sin),
    UNARY_ROWS(cos),
    UNARY_ROWS(tan),
    UNARY_ROWS(asin),
    UNARY_ROWS(acos),
    UNARY_ROWS(atan),
    UNARY_ROWS(sinh),
    UNARY_ROWS(cosh),
    UNARY_ROWS(tanh),
    UNARY_ROWS(asinh),
    UNARY_ROWS(acosh),
    UNARY_ROWS(atanh),
    UNARY_ROWS(sigmoid),
    UNARY_ROWS(erf),
    UNARY_ROWS(erfc),
    UNARY_ROWS(erfinv),
    UNARY_ROWS(lgamma),
    UNARY_ROWS(digamma),
    UNARY_ROWS(i0),
    SPECIAL_ROWS(i0e),
    SPECIAL_ROWS(i1),
    SPECIAL_ROWS(i1e),
    SPECIAL_ROWS(modified_bessel_i0),
    SPECIAL_ROWS(modified_bessel_i1),
    SPECIAL_ROWS(erfcx),
    SPECIAL_ROWS(log_ndtr),
    SPECIAL_ROWS(ndtri),
    SPECIAL_ROWS(bessel_j0),
    SPECIAL_ROWS(bessel_j1),
    SPECIAL_ROWS(bessel_y0),
    SPECIAL_ROWS(bessel_y1),
    SPECIAL_ROWS(modified_bessel_k0),
    SPECIAL_ROWS(modified_bessel_k1),
    SPECIAL_ROWS(scaled_modified_bessel_k0),
    SPECIAL_ROWS(scaled_modified_bessel_k1),
    SPECIAL_ROWS(spherical_bessel_j0),
    SPECIAL_ROWS(airy_ai),
    UNARY_ROWS(floor),
    UNARY_ROWS(ceil),
    UNARY_ROWS(round),
    UNARY_ROWS(trunc),
    UNARY_ROWS(frac),
    UNARY_ROWS(logical_not),
    UNARY_ROWS(bitwise_not),
    {"isnan", "N", op_isnan},
    {"isnan.out", "NN", op_isnan_out},
    {"isinf", "N", op_isinf},
    {"isinf.out", "NN", op_isinf_out},
    {"round.decimals", "Ni", op_round_decimals},
    {"round_.decimals", "Ni", op_round_decimals_inplace},
    {"round.decimals_out", "NiN", op_round_decimals_out},
    {"nan_to_num", "Nggg", op_nan_to_num},
    {"nan_to_num_", "Nggg", op_nan_to_num_inplace},
    {"nan_to_num.out", "NgggN", op_nan_to_num_out},
    {NULL, NULL, NULL},
};
