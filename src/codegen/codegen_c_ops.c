/* The C spelling of each op and dtype, with the eager CPU kernels'
 * semantics (backends/cpu/kernels_elementwise_*.c): integers wrap through
 * an unsigned type, maximum/minimum propagate NaN, float -> integer
 * conversion truncates and wraps through int64 with NaN -> 0, shifts past
 * the width give 0 or the sign fill. Integer division, remainder and power
 * are left out: the eager kernels report division by zero and negative
 * powers, which a fused kernel cannot. */
#include <stdio.h>
#include <string.h>

#include "codegen/codegen_c_internal.h"
#include "core/dtype.h"
#include "ir/infer_elementwise.h"

const char *kir_c_storage_type(porta_dtype dtype) {
    switch (dtype) {
    case PORTA_BOOL: case PORTA_U8: return "uint8_t";
    case PORTA_I8: return "int8_t";
    case PORTA_I16: return "int16_t";
    case PORTA_I32: return "int32_t";
    case PORTA_I64: return "int64_t";
    case PORTA_F16: case PORTA_BF16: return "uint16_t";
    case PORTA_F32: return "float";
    default: return "double";
    }
}

const char *kir_c_compute_type(porta_dtype dtype) {
    return dtype == PORTA_F16 || dtype == PORTA_BF16 ? "float" : kir_c_storage_type(dtype);
}

/* libm suffix of the compute type: float functions end in f. */
static const char *libm_suffix(porta_dtype d) { return d == PORTA_F64 ? "" : "f"; }
/* Unsigned type at least as wide as d and int: wrapping arithmetic. */
static const char *wide_unsigned(porta_dtype d) { return d == PORTA_I64 ? "uint64_t" : "uint32_t"; }

const char *kir_c_array_function(const kir_value *v) {
    if (v->kind != KIR_UNARY || !porta_dtype_is_float(v->dtype) || v->dtype == PORTA_F64) return NULL;
    switch (v->op) {
    case PORTA_EXP: return "exp";
    case PORTA_EXPM1: return "expm1";
    case PORTA_LOG: return "log";
    case PORTA_LOG1P: return "log1p";
    case PORTA_TANH: return "tanh";
    case PORTA_SIGMOID: return "sigmoid";
    case PORTA_ERF: return "erf";
    default: return NULL;
    }
}

bool kir_c_calls_runtime(const kir_value *v) {
    if (!porta_dtype_is_float(v->dtype)) return false;
    return (v->kind == KIR_UNARY && v->op >= PORTA_DIGAMMA) ||
           (v->kind == KIR_BINARY && v->op >= PORTA_IGAMMA);
}

/* Float unary ops that are one libm call of the same name. */
static const char *libm_unary(int op) {
    switch (op) {
    case PORTA_EXP2: return "exp2";
    case PORTA_LOG2: return "log2";
    case PORTA_SQRT: return "sqrt";
    case PORTA_SIN: return "sin";
    case PORTA_COS: return "cos";
    case PORTA_TAN: return "tan";
    case PORTA_ASIN: return "asin";
    case PORTA_ACOS: return "acos";
    case PORTA_ATAN: return "atan";
    case PORTA_SINH: return "sinh";
    case PORTA_COSH: return "cosh";
    case PORTA_ASINH: return "asinh";
    case PORTA_ACOSH: return "acosh";
    case PORTA_ATANH: return "atanh";
    case PORTA_ERFC: return "erfc";
    case PORTA_FLOOR: return "floor";
    case PORTA_CEIL: return "ceil";
    case PORTA_ROUND: return "nearbyint"; /* half to even, as the eager kernel */
    case PORTA_TRUNC: return "trunc";
    /* float64 only: float32 and halves go through vmath arrays */
    case PORTA_EXP: return "exp";
    case PORTA_EXPM1: return "expm1";
    case PORTA_LOG: return "log";
    case PORTA_LOG1P: return "log1p";
    case PORTA_TANH: return "tanh";
    case PORTA_ERF: return "erf";
    default: return NULL;
    }
}

static bool unary_expression(core_text *t, const kir_value *v, porta_dtype in, const char *x) {
    porta_dtype d = v->dtype;
    const char *T = kir_c_compute_type(d);
    switch (v->op) {
    case PORTA_ISNAN: case PORTA_ISINF: case PORTA_ISFINITE: case PORTA_LOGICAL_NOT:
        if (d != PORTA_BOOL || !core_dtype_is_valid((int)in)) return false;
        if (v->op == PORTA_LOGICAL_NOT)
            text_printf(t, "(uint8_t)(%s == 0)", x);
        else if (!porta_dtype_is_float(in))
            text_printf(t, "(uint8_t)%d", v->op == PORTA_ISFINITE);
        else
            text_printf(t, "(uint8_t)(%s(%s) != 0)",
                        v->op == PORTA_ISNAN ? "isnan" : v->op == PORTA_ISINF ? "isinf"
                                                                              : "isfinite",
                        x);
        return true;
    default:
        break;
    }
    if (in != d) return false;
    if (porta_dtype_is_float(d)) {
        const char *F = libm_suffix(d);
        if (kir_c_array_function(v)) return false; /* an array call, not an expression */
        switch (v->op) {
        case PORTA_NEG: text_printf(t, "(-%s)", x); return true;
        case PORTA_ABS: text_printf(t, "fabs%s(%s)", F, x); return true;
        case PORTA_SIGN: text_printf(t, "(%s)((%s > 0) - (%s < 0))", T, x, x); return true;
        case PORTA_RSQRT: text_printf(t, "(1 / sqrt%s(%s))", F, x); return true;
        case PORTA_RECIPROCAL: text_printf(t, "(1 / %s)", x); return true;
        case PORTA_SIGMOID: text_printf(t, "(1 / (1 + exp(-%s)))", x); return true;
        case PORTA_LGAMMA: text_printf(t, "kir_lgamma_%s(%s)", T, x); return true;
        default: break;
        }
        if (kir_c_calls_runtime(v)) {
            text_printf(t, "(%s)rt->unary_special[%d]((double)%s)", T, v->op - PORTA_DIGAMMA, x);
            return true;
        }
        const char *fn = libm_unary(v->op);
        if (!fn) return false; /* erfinv, bitwise_not, ... */
        text_printf(t, "%s%s(%s)", fn, F, x);
        return true;
    }
    const char *W = wide_unsigned(d);
    if (d == PORTA_BOOL) {
        switch (v->op) {
        case PORTA_SIGN: text_printf(t, "%s", x); return true;
        case PORTA_BITWISE_NOT: text_printf(t, "(uint8_t)!%s", x); return true;
        default: return false;
        }
    }
    if (!core_dtype_is_integral(d)) return false;
    bool sign = d != PORTA_U8;
    switch (v->op) {
    case PORTA_NEG: text_printf(t, "(%s)(0 - (%s)%s)", T, W, x); return true;
    case PORTA_ABS:
        if (sign)
            text_printf(t, "(%s)(%s < 0 ? 0 - (%s)%s : (%s)%s)", T, x, W, x, W, x);
        else
            text_printf(t, "%s", x);
        return true;
    case PORTA_SIGN:
        if (sign)
            text_printf(t, "(%s)((%s > 0) - (%s < 0))", T, x, x);
        else
            text_printf(t, "(%s)(%s != 0)", T, x);
        return true;
    case PORTA_FLOOR: case PORTA_CEIL: case PORTA_ROUND: case PORTA_TRUNC:
        text_printf(t, "%s", x);
        return true;
    case PORTA_BITWISE_NOT: text_printf(t, "(%s)~(%s)%s", T, W, x); return true;
    default: return false;
    }
}

static const char *comparison_operator(int op) {
    switch (op) {
    case PORTA_EQ: return "==";
    case PORTA_NE: return "!=";
    case PORTA_LT: return "<";
    case PORTA_LE: return "<=";
    case PORTA_GT: return ">";
    default: return ">=";
    }
}

static bool binary_expression(core_text *t, const kir_value *v, porta_dtype in, const char *a,
                              const char *b) {
    if (!core_dtype_is_valid((int)in)) return false;
    if (ir_binary_gives_bool((porta_binary_op)v->op)) {
        if (v->dtype != PORTA_BOOL) return false;
        switch (v->op) {
        case PORTA_LOGICAL_AND: text_printf(t, "(uint8_t)(%s != 0 && %s != 0)", a, b); break;
        case PORTA_LOGICAL_OR: text_printf(t, "(uint8_t)(%s != 0 || %s != 0)", a, b); break;
        case PORTA_LOGICAL_XOR: text_printf(t, "(uint8_t)((%s != 0) != (%s != 0))", a, b); break;
        default: text_printf(t, "(uint8_t)(%s %s %s)", a, comparison_operator(v->op), b);
        }
        return true;
    }
    porta_dtype d = v->dtype;
    if (in != d) return false;
    const char *T = kir_c_compute_type(d);
    if (porta_dtype_is_float(d)) {
        const char *F = libm_suffix(d);
        switch (v->op) {
        case PORTA_ADD: text_printf(t, "(%s + %s)", a, b); return true;
        case PORTA_SUB: text_printf(t, "(%s - %s)", a, b); return true;
        case PORTA_MUL: text_printf(t, "(%s * %s)", a, b); return true;
        case PORTA_DIV: text_printf(t, "(%s / %s)", a, b); return true;
        case PORTA_FLOOR_DIVIDE: text_printf(t, "kir_floor_divide_%s(%s, %s)", T, a, b); return true;
        case PORTA_REMAINDER: text_printf(t, "kir_remainder_%s(%s, %s)", T, a, b); return true;
        case PORTA_FMOD: text_printf(t, "fmod%s(%s, %s)", F, a, b); return true;
        case PORTA_POW: text_printf(t, "pow%s(%s, %s)", F, a, b); return true;
        case PORTA_ATAN2: text_printf(t, "atan2%s(%s, %s)", F, a, b); return true;
        case PORTA_MAXIMUM: text_printf(t, "kir_maximum_%s(%s, %s)", T, a, b); return true;
        case PORTA_MINIMUM: text_printf(t, "kir_minimum_%s(%s, %s)", T, a, b); return true;
        default: break;
        }
        if (!kir_c_calls_runtime(v)) return false;
        text_printf(t, "(%s)rt->binary_special[%d]((double)%s, (double)%s)", T,
                    v->op - PORTA_IGAMMA, a, b);
        return true;
    }
    if (d == PORTA_BOOL) {
        switch (v->op) {
        case PORTA_ADD: case PORTA_MAXIMUM: case PORTA_BITWISE_OR:
            text_printf(t, "(uint8_t)(%s | %s)", a, b);
            return true;
        case PORTA_MUL: case PORTA_MINIMUM: case PORTA_BITWISE_AND:
            text_printf(t, "(uint8_t)(%s & %s)", a, b);
            return true;
        case PORTA_BITWISE_XOR: text_printf(t, "(uint8_t)(%s ^ %s)", a, b); return true;
        default: return false;
        }
    }
    if (!core_dtype_is_integral(d)) return false;
    const char *W = wide_unsigned(d);
    int bits = 8 * (int)porta_dtype_size(d), widest = bits - (d != PORTA_U8);
    /* "b < 0" on uint8_t draws a warning in the generated source */
    char neg[64] = "0";
    if (d != PORTA_U8) snprintf(neg, sizeof neg, "(%s < 0)", b);
    switch (v->op) {
    case PORTA_ADD: text_printf(t, "(%s)((%s)%s + (%s)%s)", T, W, a, W, b); return true;
    case PORTA_SUB: text_printf(t, "(%s)((%s)%s - (%s)%s)", T, W, a, W, b); return true;
    case PORTA_MUL: text_printf(t, "(%s)((%s)%s * (%s)%s)", T, W, a, W, b); return true;
    case PORTA_MAXIMUM: text_printf(t, "(%s < %s ? %s : %s)", a, b, b, a); return true;
    case PORTA_MINIMUM: text_printf(t, "(%s < %s ? %s : %s)", b, a, b, a); return true;
    case PORTA_BITWISE_AND: text_printf(t, "(%s)(%s & %s)", T, a, b); return true;
    case PORTA_BITWISE_OR: text_printf(t, "(%s)(%s | %s)", T, a, b); return true;
    case PORTA_BITWISE_XOR: text_printf(t, "(%s)(%s ^ %s)", T, a, b); return true;
    case PORTA_SHIFT_LEFT:
        text_printf(t, "(%s)(%s || %s >= %d ? 0 : (%s)%s << %s)", T, neg, b, bits, W, a, b);
        return true;
    case PORTA_SHIFT_RIGHT:
        text_printf(t, "(%s)(%s >> (%s || %s >= %d ? %d : (int)%s))", T, a, neg, b, widest,
                    widest, b);
        return true;
    default: return false;
    }
}

static bool ternary_expression(core_text *t, const kir_value *v, porta_dtype in,
                               const char *const x[3]) {
    porta_dtype d = v->dtype;
    if (v->op == PORTA_WHERE) {
        if (in != PORTA_BOOL || !core_dtype_is_valid((int)d)) return false;
        text_printf(t, "(%s ? %s : %s)", x[0], x[1], x[2]);
        return true;
    }
    if (v->op != PORTA_FMA || in != d) return false;
    if (porta_dtype_is_float(d)) {
        text_printf(t, "(%s * %s + %s)", x[0], x[1], x[2]);
        return true;
    }
    if (!core_dtype_is_integral(d)) return false;
    const char *W = wide_unsigned(d);
    text_printf(t, "(%s)((%s)%s * (%s)%s + (%s)%s)", kir_c_compute_type(d), W, x[0], W,
                x[1], W, x[2]);
    return true;
}

/* The eager CAST kernel widens to int64 (bool, integers) or double (floats)
 * and narrows to the target; float16/bfloat16 targets go through float and
 * are rounded afterwards like every half value. */
static bool cast_expression(core_text *t, const kir_value *v, porta_dtype from, const char *x) {
    porta_dtype to = v->dtype;
    if (!core_dtype_is_valid((int)from) || !core_dtype_is_valid((int)to)) return false;
    const char *T = kir_c_compute_type(to);
    if (to == PORTA_BOOL)
        text_printf(t, "(uint8_t)(%s != 0)", x);
    else if (porta_dtype_is_float(from) && core_dtype_is_integral(to))
        text_printf(t, "(%s)kir_double_to_i64((double)%s)", T, x);
    else if (porta_dtype_is_float(from) && porta_dtype_is_float(to))
        text_printf(t, "(%s)%s", T, x);
    else /* from bool or an integer */
        text_printf(t, "(%s)(int64_t)%s", T, x);
    return true;
}

bool kir_c_expression(core_text *t, const kir_value *v, porta_dtype arg_dtype,
                      const char *const x[3]) {
    switch (v->kind) {
    case KIR_UNARY: return unary_expression(t, v, arg_dtype, x[0]);
    case KIR_BINARY: return binary_expression(t, v, arg_dtype, x[0], x[1]);
    case KIR_TERNARY: return ternary_expression(t, v, arg_dtype, x);
    case KIR_CAST: return cast_expression(t, v, arg_dtype, x[0]);
    default: return false;
    }
}

static void float_literal(core_text *t, double value, bool single) {
    if (value != value)
        text_printf(t, "%s", single ? "(float)NAN" : "(double)NAN");
    else if (isinf(value))
        text_printf(t, "%s(%s)INFINITY", value < 0 ? "-" : "", single ? "float" : "double");
    else
        text_printf(t, single ? "%af" : "%a", value);
}

void kir_c_constant(core_text *t, const kir_value *v) {
    double c = v->constant;
    switch (v->dtype) {
    case PORTA_BOOL: text_printf(t, "(uint8_t)%d", c != 0); return;
    case PORTA_F16: float_literal(t, core_f16_to_f32(core_f32_to_f16((float)c)), true); return;
    case PORTA_BF16: float_literal(t, core_bf16_to_f32(core_f32_to_bf16((float)c)), true); return;
    case PORTA_F32: float_literal(t, (float)c, true); return;
    case PORTA_F64: float_literal(t, c, false); return;
    default: break;
    }
    int64_t i = core_double_to_i64(c);
    switch (v->dtype) {
    case PORTA_U8: i = (uint8_t)i; break;
    case PORTA_I8: i = (int8_t)i; break;
    case PORTA_I16: i = (int16_t)i; break;
    case PORTA_I32: i = (int32_t)i; break;
    default: break;
    }
    if (i == INT64_MIN)
        text_printf(t, "(int64_t)(-9223372036854775807LL - 1)");
    else
        text_printf(t, "(%s)%lldLL", kir_c_compute_type(v->dtype), (long long)i);
}

void kir_c_param(core_text *t, const kir_value *v) {
    const char *T = kir_c_compute_type(v->dtype);
    if (v->dtype == PORTA_BOOL)
        text_printf(t, "(uint8_t)(args->params[%d] != 0)", v->param);
    else if (core_dtype_is_integral(v->dtype))
        text_printf(t, "(%s)kir_double_to_i64(args->params[%d])", T, v->param);
    else
        text_printf(t, "(%s)args->params[%d]", T, v->param);
}

/* Helpers per float compute type (T, libm suffix F). Floor division and
 * remainder follow the eager kernels' rules (Python's, signed zeros kept);
 * the fold steps keep a NaN once it appears. Maximum and minimum are the
 * eager rule (a NaN wins, a's first; ties keep a, so -0 and +0 keep their
 * order) written as a chain of selects, which vectorizes as compares and
 * blends. */
#define KIR_FLOAT_HELPERS(T, F)                                                              \
    "static inline " #T " kir_maximum_" #T "(" #T " a, " #T " b) {\n"                        \
    "    " #T " larger = a < b ? b : a, or_b_nan = b != b ? b : larger;\n"                     \
    "    return a != a ? a : or_b_nan;\n}\n"                                                  \
    "static inline " #T " kir_minimum_" #T "(" #T " a, " #T " b) {\n"                        \
    "    " #T " smaller = b < a ? b : a, or_b_nan = b != b ? b : smaller;\n"                   \
    "    return a != a ? a : or_b_nan;\n}\n"                                                  \
    "static inline " #T " kir_fold_max_" #T "(" #T " a, " #T " v) {\n"                       \
    "    " #T " larger = a < v ? v : a;\n    return v != v ? v : larger;\n}\n"               \
    "static inline " #T " kir_fold_min_" #T "(" #T " a, " #T " v) {\n"                       \
    "    " #T " smaller = v < a ? v : a;\n    return v != v ? v : smaller;\n}\n"             \
    "static inline " #T " kir_floor_divide_" #T "(" #T " a, " #T " b) {\n"                   \
    "    if (b == 0) return a / b;\n"                                                        \
    "    " #T " mod = fmod" F "(a, b), div = (a - mod) / b;\n"                               \
    "    if (mod != 0 && (b < 0) != (mod < 0)) div -= 1;\n"                                  \
    "    if (div == 0) return copysign" F "(0, a / b);\n"                                    \
    "    " #T " floored = floor" F "(div);\n"                                                \
    "    return div - floored > (" #T ")0.5 ? floored + 1 : floored;\n}\n"                   \
    "static inline " #T " kir_remainder_" #T "(" #T " a, " #T " b) {\n"                      \
    "    " #T " mod = fmod" F "(a, b);\n"                                                    \
    "    return mod != 0 && (b < 0) != (mod < 0) ? mod + b : mod;\n}\n"                      \
    "static inline " #T " kir_lgamma_" #T "(" #T " x) {\n"                                   \
    "    int sign;\n    return lgamma" F "_r(x, &sign);\n}\n"

const char kir_c_helpers[] =
    /* float -> integer: NaN -> 0, out of range -> INT64_MIN (as cvttsd2si) */
    "static inline int64_t kir_double_to_i64(double v) {\n"
    "    if (v != v) return 0;\n"
    "    if (v >= 9223372036854775807.0 || v < -9223372036854775808.0) return INT64_MIN;\n"
    "    return (int64_t)v;\n}\n"
    KIR_FLOAT_HELPERS(float, "f") KIR_FLOAT_HELPERS(double, "");
