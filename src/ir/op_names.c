/* The names of the ops a primitive descriptor carries, for messages,
 * kernel names and explain output. */
#include "porta.h"

const char *porta_unary_op_name(porta_unary_op op) {
    static const char *const names[PORTA_UNARY_OP_COUNT] = {
        [PORTA_NEG] = "neg",           [PORTA_ABS] = "abs",
        [PORTA_SIGN] = "sign",         [PORTA_EXP] = "exp",
        [PORTA_EXP2] = "exp2",         [PORTA_EXPM1] = "expm1",
        [PORTA_LOG] = "log",           [PORTA_LOG2] = "log2",
        [PORTA_LOG1P] = "log1p",       [PORTA_SQRT] = "sqrt",
        [PORTA_RSQRT] = "rsqrt",       [PORTA_RECIPROCAL] = "reciprocal",
        [PORTA_SIN] = "sin",           [PORTA_COS] = "cos",
        [PORTA_TAN] = "tan",           [PORTA_ASIN] = "asin",
        [PORTA_ACOS] = "acos",         [PORTA_ATAN] = "atan",
        [PORTA_SINH] = "sinh",         [PORTA_COSH] = "cosh",
        [PORTA_TANH] = "tanh",         [PORTA_ASINH] = "asinh",
        [PORTA_ACOSH] = "acosh",       [PORTA_ATANH] = "atanh",
        [PORTA_SIGMOID] = "sigmoid",   [PORTA_ERF] = "erf",
        [PORTA_ERFC] = "erfc",         [PORTA_ERFINV] = "erfinv",
        [PORTA_LGAMMA] = "lgamma",     [PORTA_FLOOR] = "floor",
        [PORTA_CEIL] = "ceil",         [PORTA_ROUND] = "round",
        [PORTA_TRUNC] = "trunc",       [PORTA_ISNAN] = "isnan",
        [PORTA_ISINF] = "isinf",       [PORTA_ISFINITE] = "isfinite",
        [PORTA_LOGICAL_NOT] = "logical_not", [PORTA_BITWISE_NOT] = "bitwise_not",
        [PORTA_DIGAMMA] = "digamma",   [PORTA_I0] = "i0",
        [PORTA_I0E] = "i0e",           [PORTA_I1] = "i1",
        [PORTA_I1E] = "i1e",           [PORTA_ERFCX] = "erfcx",
        [PORTA_LOG_NDTR] = "log_ndtr", [PORTA_NDTRI] = "ndtri",
        [PORTA_BESSEL_J0] = "bessel_j0", [PORTA_BESSEL_J1] = "bessel_j1",
        [PORTA_BESSEL_Y0] = "bessel_y0", [PORTA_BESSEL_Y1] = "bessel_y1",
        [PORTA_MODIFIED_BESSEL_K0] = "modified_bessel_k0",
        [PORTA_MODIFIED_BESSEL_K1] = "modified_bessel_k1",
        [PORTA_SCALED_MODIFIED_BESSEL_K0] = "scaled_modified_bessel_k0",
        [PORTA_SCALED_MODIFIED_BESSEL_K1] = "scaled_modified_bessel_k1",
        [PORTA_SPHERICAL_BESSEL_J0] = "spherical_bessel_j0", [PORTA_AIRY_AI] = "airy_ai",
    };
    return (unsigned)op < PORTA_UNARY_OP_COUNT ? names[op] : "invalid unary op";
}

const char *porta_binary_op_name(porta_binary_op op) {
    static const char *const names[PORTA_BINARY_OP_COUNT] = {
        [PORTA_ADD] = "add",
        [PORTA_SUB] = "sub",
        [PORTA_MUL] = "mul",
        [PORTA_DIV] = "div",
        [PORTA_FLOOR_DIVIDE] = "floor_divide",
        [PORTA_REMAINDER] = "remainder",
        [PORTA_FMOD] = "fmod",
        [PORTA_POW] = "pow",
        [PORTA_ATAN2] = "atan2",
        [PORTA_MAXIMUM] = "maximum",
        [PORTA_MINIMUM] = "minimum",
        [PORTA_BITWISE_AND] = "bitwise_and",
        [PORTA_BITWISE_OR] = "bitwise_or",
        [PORTA_BITWISE_XOR] = "bitwise_xor",
        [PORTA_SHIFT_LEFT] = "shift_left",
        [PORTA_SHIFT_RIGHT] = "shift_right",
        [PORTA_LOGICAL_AND] = "logical_and",
        [PORTA_LOGICAL_OR] = "logical_or",
        [PORTA_LOGICAL_XOR] = "logical_xor",
        [PORTA_EQ] = "eq",
        [PORTA_NE] = "ne",
        [PORTA_LT] = "lt",
        [PORTA_LE] = "le",
        [PORTA_GT] = "gt",
        [PORTA_GE] = "ge",
        [PORTA_IGAMMA] = "igamma",
        [PORTA_IGAMMAC] = "igammac",
        [PORTA_ZETA] = "zeta",
        [PORTA_CHEBYSHEV_T] = "chebyshev_polynomial_t",
        [PORTA_CHEBYSHEV_U] = "chebyshev_polynomial_u",
        [PORTA_CHEBYSHEV_V] = "chebyshev_polynomial_v",
        [PORTA_CHEBYSHEV_W] = "chebyshev_polynomial_w",
        [PORTA_SHIFTED_CHEBYSHEV_T] = "shifted_chebyshev_polynomial_t",
        [PORTA_SHIFTED_CHEBYSHEV_U] = "shifted_chebyshev_polynomial_u",
        [PORTA_SHIFTED_CHEBYSHEV_V] = "shifted_chebyshev_polynomial_v",
        [PORTA_SHIFTED_CHEBYSHEV_W] = "shifted_chebyshev_polynomial_w",
        [PORTA_HERMITE_H] = "hermite_polynomial_h",
        [PORTA_HERMITE_HE] = "hermite_polynomial_he",
        [PORTA_LAGUERRE_L] = "laguerre_polynomial_l",
        [PORTA_LEGENDRE_P] = "legendre_polynomial_p",
    };
    return (unsigned)op < PORTA_BINARY_OP_COUNT ? names[op] : "invalid binary op";
}

const char *porta_ternary_op_name(porta_ternary_op op) {
    static const char *const names[PORTA_TERNARY_OP_COUNT] = {[PORTA_WHERE] = "where",
                                                              [PORTA_FMA] = "fma"};
    return (unsigned)op < PORTA_TERNARY_OP_COUNT ? names[op] : "invalid ternary op";
}

const char *porta_reduce_op_name(porta_reduce_op op) {
    switch (op) {
    case PORTA_REDUCE_SUM: return "sum";
    case PORTA_REDUCE_PROD: return "prod";
    case PORTA_REDUCE_MAX: return "max";
    case PORTA_REDUCE_MIN: return "min";
    case PORTA_REDUCE_ARGMAX: return "argmax";
    case PORTA_REDUCE_ARGMIN: return "argmin";
    case PORTA_REDUCE_ANY: return "any";
    case PORTA_REDUCE_ALL: return "all";
    case PORTA_REDUCE_OP_COUNT: break;
    }
    return "invalid reduce op";
}

const char *porta_factor_op_name(porta_factor_op op) {
    static const char *const names[PORTA_FACTOR_OP_COUNT] = {
        [PORTA_FACTOR_CHOLESKY] = "cholesky", [PORTA_FACTOR_LU] = "lu",
        [PORTA_FACTOR_TRIANGULAR_SOLVE] = "triangular_solve", [PORTA_FACTOR_QR] = "qr",
        [PORTA_FACTOR_EIGH] = "eigh", [PORTA_FACTOR_SVD] = "svd",
        [PORTA_FACTOR_LDL] = "ldl", [PORTA_FACTOR_LDL_SOLVE] = "ldl_solve",
    };
    return (unsigned)op < PORTA_FACTOR_OP_COUNT ? names[op] : "invalid factor op";
}
