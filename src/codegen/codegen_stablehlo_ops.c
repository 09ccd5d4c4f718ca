/* The StableHLO spelling of each op and cast, with the semantics of the C
 * renderer (codegen_c_ops.c), which are the eager CPU kernels': integers
 * wrap, maximum/minimum propagate NaN (a's first, ties keep a), floor
 * division and remainder take the divisor's sign, sign(NaN) is 0, float ->
 * integer conversion truncates and wraps through int64 with NaN -> 0 and
 * out-of-range -> INT64_MIN, shifts past the width give 0 or the sign
 * fill. The set of ops is the C renderer's: what it leaves out (integer
 * division, erfinv) is left out here too. Functions StableHLO lacks come
 * from CHLO (asin, lgamma, erf, ...), which every PJRT compiler lowers. */
#include <stdio.h>
#include <string.h>

#include "codegen/codegen_c.h"
#include "codegen/codegen_stablehlo_internal.h"
#include "core/dtype.h"
#include "ir/infer_elementwise.h"

/* The operands' context: the element dtype d over dims. */
typedef struct ctx {
    shlo_emit *e;
    const char *dims;
    porta_dtype d;
    shlo_type T, B; /* d's compute type, and i1, over dims */
} ctx;

static ctx ctx_of(shlo_emit *e, const char *dims, porta_dtype d) {
    return (ctx){e, dims, d, shlo_tensor(dims, shlo_compute_elt(d)),
                 shlo_tensor(dims, "i1")};
}

static int num(const ctx *c, double v) {
    char literal[40];
    shlo_literal(literal, sizeof literal, c->d, v);
    return shlo_constant(c->e, c->T, literal);
}
static int un(const ctx *c, const char *op, int a) { return shlo_op1(c->e, op, a, c->T, c->T); }
static int bin(const ctx *c, const char *op, int a, int b) {
    return shlo_op2(c->e, op, a, b, c->T, c->T);
}
static int cmp(const ctx *c, const char *dir, int a, int b) {
    return shlo_compare(c->e, dir, a, b, c->T, c->dims);
}
static int sel(const ctx *c, int p, int a, int b) { return shlo_select(c->e, p, a, b, c->dims, c->T); }
static int bool_op(const ctx *c, const char *op, int a, int b) {
    return shlo_op2(c->e, op, a, b, c->B, c->B);
}
static int is_nan(const ctx *c, int a) { return cmp(c, "NE", a, a); }
/* x != 0 as i1 */
static int nonzero(const ctx *c, int a) {
    if (c->d == PORTA_BOOL) return a;
    return cmp(c, "NE", a, num(c, 0));
}
static int bool_constant(const ctx *c, bool v) {
    return shlo_constant(c->e, c->B, v ? "true" : "false");
}

/* (x > 0) - (x < 0), computed by selects (0 for NaN and both zeros). */
static int sign_of(const ctx *c, int x) {
    int zero = num(c, 0);
    int positive = sel(c, cmp(c, "GT", x, zero), num(c, 1), zero);
    return sel(c, cmp(c, "LT", x, zero), num(c, -1), positive);
}

/* a / b correctly rounded, as the CPU divides. XLA rewrites a division by
 * a broadcast or a constant as a product with its reciprocal and
 * 1 / sqrt(x) as rsqrt(x), both off by an ulp or more (-2.578125 /
 * 0.322265625 gives -7.9999995); a barrier on the divisor hides what it
 * is. */
static int divide(const ctx *c, int a, int b) {
    return bin(c, "stablehlo.divide", a,
               shlo_op1(c->e, "stablehlo.optimization_barrier", b, c->T, c->T));
}

/* XLA's CPU compiler miscomputes atan2 fused with what produces its
 * operands (a bitcast of loaded bytes, a bfloat16 conversion): garbage once
 * the loop vectorizes. A barrier keeps them apart. */
static int atan2_operand(const ctx *c, int x) {
    return shlo_op1(c->e, "stablehlo.optimization_barrier", x, c->T, c->T);
}

static int atan2_of(const ctx *c, int y, int x) {
    return bin(c, "stablehlo.atan2", atan2_operand(c, y), atan2_operand(c, x));
}

static const char *float_function(int op) {
    switch (op) {
    case PORTA_NEG: return "stablehlo.negate";
    case PORTA_ABS: return "stablehlo.abs";
    case PORTA_EXP: return "stablehlo.exponential";
    case PORTA_EXPM1: return "stablehlo.exponential_minus_one";
    case PORTA_LOG: return "stablehlo.log";
    case PORTA_LOG1P: return "stablehlo.log_plus_one";
    case PORTA_SQRT: return "stablehlo.sqrt";
    case PORTA_SIN: return "stablehlo.sine";
    case PORTA_COS: return "stablehlo.cosine";
    case PORTA_TAN: return "stablehlo.tan";
    case PORTA_TANH: return "stablehlo.tanh";
    case PORTA_FLOOR: return "stablehlo.floor";
    case PORTA_CEIL: return "stablehlo.ceil";
    case PORTA_ROUND: return "stablehlo.round_nearest_even"; /* half to even, as eager */
    case PORTA_ASIN: return "chlo.asin";
    case PORTA_ACOS: return "chlo.acos";
    case PORTA_SINH: return "chlo.sinh";
    case PORTA_COSH: return "chlo.cosh";
    case PORTA_ASINH: return "chlo.asinh";
    case PORTA_ACOSH: return "chlo.acosh";
    case PORTA_ATANH: return "chlo.atanh";
    case PORTA_ERF: return "chlo.erf";
    case PORTA_ERFC: return "chlo.erfc";
    case PORTA_LGAMMA: return "chlo.lgamma";
    default: return NULL;
    }
}

static int float_unary(const ctx *c, int op, int x) {
    const char *fn = float_function(op);
    if (fn) return un(c, fn, x);
    switch (op) {
    case PORTA_SIGN: return sign_of(c, x);
    case PORTA_RSQRT: return divide(c, num(c, 1), un(c, "stablehlo.sqrt", x));
    case PORTA_RECIPROCAL: return divide(c, num(c, 1), x);
    case PORTA_SIGMOID: { /* 1 / (1 + exp(-x)) */
        int ex = un(c, "stablehlo.exponential", un(c, "stablehlo.negate", x));
        return divide(c, num(c, 1), bin(c, "stablehlo.add", num(c, 1), ex));
    }
    case PORTA_EXP2: return bin(c, "stablehlo.power", num(c, 2), x);
    case PORTA_LOG2:
        return divide(c, un(c, "stablehlo.log", x), num(c, 0.69314718055994530942));
    case PORTA_ATAN: return atan2_of(c, x, num(c, 1));
    case PORTA_TRUNC:
        return sel(c, cmp(c, "LT", x, num(c, 0)), un(c, "stablehlo.ceil", x),
                   un(c, "stablehlo.floor", x));
    default: return 0; /* erfinv, bitwise_not, ... */
    }
}

static int unary(shlo_emit *e, const kir_value *v, porta_dtype in, const char *dims, int x) {
    porta_dtype d = v->dtype;
    ctx c = ctx_of(e, dims, in);
    switch (v->op) {
    case PORTA_ISNAN: case PORTA_ISINF: case PORTA_ISFINITE: case PORTA_LOGICAL_NOT:
        if (d != PORTA_BOOL || !core_dtype_is_valid((int)in)) return 0;
        if (v->op == PORTA_LOGICAL_NOT) {
            if (in == PORTA_BOOL) return bool_op(&c, "stablehlo.xor", x, bool_constant(&c, true));
            return cmp(&c, "EQ", x, num(&c, 0));
        }
        if (!porta_dtype_is_float(in)) return bool_constant(&c, v->op == PORTA_ISFINITE);
        if (v->op == PORTA_ISNAN) return is_nan(&c, x);
        if (v->op == PORTA_ISFINITE)
            return shlo_op1(e, "stablehlo.is_finite", x, c.T, c.B);
        return cmp(&c, "EQ", un(&c, "stablehlo.abs", x), num(&c, 1.0 / 0.0));
    default: break;
    }
    if (in != d) return 0;
    if (porta_dtype_is_float(d)) return float_unary(&c, v->op, x);
    if (d == PORTA_BOOL) {
        switch (v->op) {
        case PORTA_SIGN: return x;
        case PORTA_BITWISE_NOT: return bool_op(&c, "stablehlo.xor", x, bool_constant(&c, true));
        default: return 0;
        }
    }
    if (!core_dtype_is_integral(d)) return 0;
    bool sign = d != PORTA_U8;
    switch (v->op) {
    case PORTA_NEG: return un(&c, "stablehlo.negate", x);
    case PORTA_ABS: return sign ? un(&c, "stablehlo.abs", x) : x;
    case PORTA_SIGN:
        if (sign) return sign_of(&c, x);
        return sel(&c, nonzero(&c, x), num(&c, 1), num(&c, 0));
    case PORTA_FLOOR: case PORTA_CEIL: case PORTA_ROUND: case PORTA_TRUNC: return x;
    case PORTA_BITWISE_NOT: return un(&c, "stablehlo.not", x);
    default: return 0;
    }
}

static const char *direction(int op) {
    switch (op) {
    case PORTA_EQ: return "EQ";
    case PORTA_NE: return "NE";
    case PORTA_LT: return "LT";
    case PORTA_LE: return "LE";
    case PORTA_GT: return "GT";
    default: return "GE";
    }
}

/* The eager rule: a NaN wins, a's first; ties keep a. */
static int maximum_or_minimum(const ctx *c, bool max, int a, int b) {
    int pick_b = max ? cmp(c, "LT", a, b) : cmp(c, "LT", b, a);
    int chosen = sel(c, pick_b, b, a);
    int or_b_nan = sel(c, is_nan(c, b), b, chosen);
    return sel(c, is_nan(c, a), a, or_b_nan);
}

/* Python's remainder: fmod, moved to the divisor's sign. */
static int float_remainder(const ctx *c, int a, int b) {
    int mod = bin(c, "stablehlo.remainder", a, b), zero = num(c, 0);
    int differ = bool_op(c, "stablehlo.xor", cmp(c, "LT", b, zero), cmp(c, "LT", mod, zero));
    int adjust = bool_op(c, "stablehlo.and", cmp(c, "NE", mod, zero), differ);
    return sel(c, adjust, bin(c, "stablehlo.add", mod, b), mod);
}

/* copysign(0, x): x's sign bit alone. */
static int signed_zero(const ctx *c, int x) {
    bool wide = c->d == PORTA_F64;
    shlo_type I = shlo_tensor(c->dims, wide ? "i64" : "i32");
    int bits = shlo_op1(c->e, "stablehlo.bitcast_convert", x, c->T, I);
    int mask = shlo_constant(c->e, I, wide ? "-9223372036854775808" : "-2147483648");
    int sign = shlo_op2(c->e, "stablehlo.and", bits, mask, I, I);
    return shlo_op1(c->e, "stablehlo.bitcast_convert", sign, I, c->T);
}

/* The eager floor division (kir_floor_divide in codegen_c_ops.c). */
static int float_floor_divide(const ctx *c, int a, int b) {
    int zero = num(c, 0), quotient = divide(c, a, b);
    int mod = bin(c, "stablehlo.remainder", a, b);
    int div = divide(c, bin(c, "stablehlo.subtract", a, mod), b);
    int differ = bool_op(c, "stablehlo.xor", cmp(c, "LT", b, zero), cmp(c, "LT", mod, zero));
    int adjust = bool_op(c, "stablehlo.and", cmp(c, "NE", mod, zero), differ);
    div = sel(c, adjust, bin(c, "stablehlo.subtract", div, num(c, 1)), div);
    int floored = un(c, "stablehlo.floor", div);
    int up = cmp(c, "GT", bin(c, "stablehlo.subtract", div, floored), num(c, 0.5));
    int rounded = sel(c, up, bin(c, "stablehlo.add", floored, num(c, 1)), floored);
    int result = sel(c, cmp(c, "EQ", div, zero), signed_zero(c, quotient), rounded);
    return sel(c, cmp(c, "EQ", b, zero), quotient, result);
}

static int float_binary(const ctx *c, int op, int a, int b) {
    switch (op) {
    case PORTA_ADD: return bin(c, "stablehlo.add", a, b);
    case PORTA_SUB: return bin(c, "stablehlo.subtract", a, b);
    case PORTA_MUL: return bin(c, "stablehlo.multiply", a, b);
    case PORTA_DIV: return divide(c, a, b);
    case PORTA_FMOD: return bin(c, "stablehlo.remainder", a, b); /* the dividend's sign */
    case PORTA_POW: return bin(c, "stablehlo.power", a, b);
    case PORTA_ATAN2: return atan2_of(c, a, b);
    case PORTA_MAXIMUM: return maximum_or_minimum(c, true, a, b);
    case PORTA_MINIMUM: return maximum_or_minimum(c, false, a, b);
    case PORTA_FLOOR_DIVIDE: return float_floor_divide(c, a, b);
    case PORTA_REMAINDER: return float_remainder(c, a, b);
    default: return 0;
    }
}

static int int_binary(const ctx *c, int op, int a, int b) {
    porta_dtype d = c->d;
    int bits = 8 * (int)porta_dtype_size(d);
    switch (op) {
    case PORTA_ADD: return bin(c, "stablehlo.add", a, b);
    case PORTA_SUB: return bin(c, "stablehlo.subtract", a, b);
    case PORTA_MUL: return bin(c, "stablehlo.multiply", a, b);
    case PORTA_MAXIMUM: return bin(c, "stablehlo.maximum", a, b);
    case PORTA_MINIMUM: return bin(c, "stablehlo.minimum", a, b);
    case PORTA_BITWISE_AND: return bin(c, "stablehlo.and", a, b);
    case PORTA_BITWISE_OR: return bin(c, "stablehlo.or", a, b);
    case PORTA_BITWISE_XOR: return bin(c, "stablehlo.xor", a, b);
    case PORTA_SHIFT_LEFT: {
        int past = cmp(c, "GE", b, num(c, bits));
        if (d != PORTA_U8) past = bool_op(c, "stablehlo.or", cmp(c, "LT", b, num(c, 0)), past);
        return sel(c, past, num(c, 0), bin(c, "stablehlo.shift_left", a, b));
    }
    case PORTA_SHIFT_RIGHT: {
        if (d == PORTA_U8)
            return sel(c, cmp(c, "GE", b, num(c, 8)), num(c, 0),
                       bin(c, "stablehlo.shift_right_logical", a, b));
        int widest = num(c, bits - 1);
        int past = bool_op(c, "stablehlo.or", cmp(c, "LT", b, num(c, 0)),
                           cmp(c, "GE", b, widest));
        return bin(c, "stablehlo.shift_right_arithmetic", a, sel(c, past, widest, b));
    }
    default: return 0;
    }
}

static int binary(shlo_emit *e, const kir_value *v, porta_dtype in, const char *dims, int a,
                  int b) {
    if (!core_dtype_is_valid((int)in)) return 0;
    ctx c = ctx_of(e, dims, in);
    if (ir_binary_gives_bool((porta_binary_op)v->op)) {
        if (v->dtype != PORTA_BOOL) return 0;
        switch (v->op) {
        case PORTA_LOGICAL_AND: return bool_op(&c, "stablehlo.and", nonzero(&c, a), nonzero(&c, b));
        case PORTA_LOGICAL_OR: return bool_op(&c, "stablehlo.or", nonzero(&c, a), nonzero(&c, b));
        case PORTA_LOGICAL_XOR: return bool_op(&c, "stablehlo.xor", nonzero(&c, a), nonzero(&c, b));
        default: break;
        }
        if (in == PORTA_BOOL) { /* compare 0/1 as unsigned bytes */
            ctx u = ctx_of(e, dims, PORTA_U8);
            a = shlo_op1(e, "stablehlo.convert", a, c.T, u.T);
            b = shlo_op1(e, "stablehlo.convert", b, c.T, u.T);
            return cmp(&u, direction(v->op), a, b);
        }
        return cmp(&c, direction(v->op), a, b);
    }
    if (in != v->dtype) return 0;
    if (porta_dtype_is_float(in)) return float_binary(&c, v->op, a, b);
    if (in == PORTA_BOOL) {
        switch (v->op) {
        case PORTA_ADD: case PORTA_MAXIMUM: case PORTA_BITWISE_OR: return bool_op(&c, "stablehlo.or", a, b);
        case PORTA_MUL: case PORTA_MINIMUM: case PORTA_BITWISE_AND: return bool_op(&c, "stablehlo.and", a, b);
        case PORTA_BITWISE_XOR: return bool_op(&c, "stablehlo.xor", a, b);
        default: return 0;
        }
    }
    return core_dtype_is_integral(in) ? int_binary(&c, v->op, a, b) : 0;
}

static int ternary(shlo_emit *e, const kir_value *v, porta_dtype in, const char *dims,
                   const int x[3]) {
    porta_dtype d = v->dtype;
    if (v->op == PORTA_WHERE) {
        if (in != PORTA_BOOL || !core_dtype_is_valid((int)d)) return 0;
        ctx c = ctx_of(e, dims, d);
        return sel(&c, x[0], x[1], x[2]);
    }
    if (v->op != PORTA_FMA || in != d || !(porta_dtype_is_float(d) || core_dtype_is_integral(d))) return 0;
    ctx c = ctx_of(e, dims, d);
    return bin(&c, "stablehlo.add", bin(&c, "stablehlo.multiply", x[0], x[1]), x[2]);
}

/* float64 x -> int64 as kir_double_to_i64: NaN -> 0, out of range ->
 * INT64_MIN, else truncated. */
static int double_to_i64(shlo_emit *e, int x, const char *dims) {
    ctx f = ctx_of(e, dims, PORTA_F64), i = ctx_of(e, dims, PORTA_I64);
    int high = cmp(&f, "GE", x, num(&f, 9223372036854775807.0));
    int low = cmp(&f, "LT", x, num(&f, -9223372036854775808.0));
    int outside = bool_op(&f, "stablehlo.or", high, low);
    int unusable = bool_op(&f, "stablehlo.or", outside, is_nan(&f, x));
    int safe = sel(&f, unusable, num(&f, 0), x);
    int truncated = shlo_op1(e, "stablehlo.convert", safe, f.T, i.T);
    int minimum = shlo_constant(e, i.T, "-9223372036854775808");
    return sel(&i, outside, minimum, truncated);
}

int shlo_from_double(shlo_emit *e, int x, porta_dtype dtype, const char *dims) {
    ctx f = ctx_of(e, dims, PORTA_F64);
    shlo_type out = shlo_tensor(dims, shlo_compute_elt(dtype));
    if (dtype == PORTA_BOOL) return nonzero(&f, x);
    if (dtype == PORTA_F64) return x;
    if (porta_dtype_is_float(dtype)) return shlo_op1(e, "stablehlo.convert", x, f.T, out);
    int wide = double_to_i64(e, x, dims);
    if (dtype == PORTA_I64) return wide;
    return shlo_op1(e, "stablehlo.convert", wide, shlo_tensor(dims, "i64"), out);
}

/* As the eager CAST kernel: integers and bool widen to int64 (exact here
 * whatever the path), floats go through double. */
static int cast(shlo_emit *e, const kir_value *v, porta_dtype from, const char *dims, int x) {
    porta_dtype to = v->dtype;
    if (!core_dtype_is_valid((int)from) || !core_dtype_is_valid((int)to)) return 0;
    ctx c = ctx_of(e, dims, from);
    shlo_type out = shlo_tensor(dims, shlo_compute_elt(to));
    if (to == PORTA_BOOL) return nonzero(&c, x);
    if (porta_dtype_is_float(from) && core_dtype_is_integral(to)) {
        int wide = from == PORTA_F64
                       ? x
                       : shlo_op1(e, "stablehlo.convert", x, c.T, shlo_tensor(dims, "f64"));
        return shlo_from_double(e, wide, to, dims);
    }
    if (strcmp(shlo_compute_elt(from), shlo_compute_elt(to)) == 0) return x;
    if (from == PORTA_BOOL && porta_dtype_is_float(to)) {
        /* through ui8: XLA rewrites convert(i1) * y as select(i1, y, 0) (and
         * a division by a broadcast as such a product), which turns
         * 0 * inf and 0 / 0 into 0 instead of NaN */
        shlo_type bytes = shlo_tensor(dims, "ui8");
        return shlo_op1(e, "stablehlo.convert", shlo_op1(e, "stablehlo.convert", x, c.T, bytes),
                        bytes, out);
    }
    return shlo_op1(e, "stablehlo.convert", x, c.T, out);
}

int shlo_value_op(shlo_emit *e, const kir_value *v, porta_dtype arg_dtype, const char *dims,
                  const int x[3]) {
    switch (v->kind) {
    case KIR_UNARY: return unary(e, v, arg_dtype, dims, x[0]);
    case KIR_BINARY: return binary(e, v, arg_dtype, dims, x[0], x[1]);
    case KIR_TERNARY: return ternary(e, v, arg_dtype, dims, x);
    case KIR_CAST: return cast(e, v, arg_dtype, dims, x[0]);
    default: return 0;
    }
}

bool shlo_supports(const kir_value *v, porta_dtype arg_dtype) {
    if (!v || !kir_c_supports(v, arg_dtype)) return false;
    switch (v->kind) {
    case KIR_LOAD: case KIR_CONST: case KIR_PARAM: case KIR_REDUCE: return true;
    default: break;
    }
    shlo_emit probe = {.t = NULL, .next = 4};
    const int x[3] = {1, 2, 3}; /* ids, which an identity returns as they are */
    return shlo_value_op(&probe, v, arg_dtype, "", x) != 0;
}
