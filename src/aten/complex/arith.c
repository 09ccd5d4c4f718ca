/* Complex arithmetic from real primitives on the components:
 *   (a + bi)(c + di) = (ac - bd) + (ad + bc)i
 *   (a + bi)/(c + di) by Smith's scaling (cx_divide)
 * and the complex forms of neg, abs (|z|), angle (atan2(b, a)), sgn
 * (z/|z|, 0 at 0), exp, log, eq and ne. */
#include <math.h>

#include "aten/complex/complex.h"
#include "aten/complex/parts.h"
#include "aten/elementwise/elementwise.h"
#include "core/status.h"
#include "runtime/tensor.h"

typedef enum cx_binary { CX_ADD, CX_SUB, CX_MUL, CX_DIV } cx_binary;

static porta_tensor *plus(aten_scope *s, porta_tensor *x, porta_tensor *y) {
    return scope_binary(s, PORTA_ADD, x, y);
}
static porta_tensor *minus(aten_scope *s, porta_tensor *x, porta_tensor *y) {
    return scope_binary(s, PORTA_SUB, x, y);
}
static porta_tensor *times(aten_scope *s, porta_tensor *x, porta_tensor *y) {
    return scope_binary(s, PORTA_MUL, x, y);
}

/* (a + bi)/(c + di) by Smith's scaling, as c10::complex divides (parts.h): with
 * |c| >= |d|, r = d/c and (a + bi)/(c + di) = ((a + br) + (b - ar)i)/(c + dr),
 * otherwise the same with the roles of c and d exchanged, so no square of a
 * large component overflows. Division by 0 + 0i gives a/|c| + (b/|d|)i
 * (infinities or NaN). */
porta_tensor *cx_divide(aten_scope *s, porta_tensor *a, porta_tensor *b, porta_tensor *c,
                        porta_tensor *d, porta_dtype dtype) {
    porta_tensor *abs_c = scope_unary(s, PORTA_ABS, c), *abs_d = scope_unary(s, PORTA_ABS, d);
    porta_tensor *c_larger = scope_binary(s, PORTA_GE, abs_c, abs_d);
    /* |c| >= |d|: r = d/c, ((a + br) + (b - ar)i)/(c + dr) */
    porta_tensor *r1 = scope_binary(s, PORTA_DIV, d, c);
    porta_tensor *den1 = plus(s, c, times(s, d, r1));
    porta_tensor *re1 = scope_binary(s, PORTA_DIV, plus(s, a, times(s, b, r1)), den1);
    porta_tensor *im1 = scope_binary(s, PORTA_DIV, minus(s, b, times(s, a, r1)), den1);
    /* |c| < |d|: r = c/d, ((ar + b) + (br - a)i)/(d + cr) */
    porta_tensor *r2 = scope_binary(s, PORTA_DIV, c, d);
    porta_tensor *den2 = plus(s, d, times(s, c, r2));
    porta_tensor *re2 = scope_binary(s, PORTA_DIV, plus(s, times(s, a, r2), b), den2);
    porta_tensor *im2 = scope_binary(s, PORTA_DIV, minus(s, times(s, b, r2), a), den2);
    /* 0 + 0i */
    porta_tensor *zero = scope_binary(s, PORTA_LOGICAL_AND,
                                      scope_binary_number(s, PORTA_EQ, abs_c, 0.0),
                                      scope_binary_number(s, PORTA_EQ, abs_d, 0.0));
    re1 = scope_where(s, zero, scope_binary(s, PORTA_DIV, a, abs_c), re1);
    im1 = scope_where(s, zero, scope_binary(s, PORTA_DIV, b, abs_d), im1);
    return cx_combine(s, scope_where(s, c_larger, re1, re2), scope_where(s, c_larger, im1, im2),
                      dtype);
}

/* a op b (b scaled by alpha for add and sub), both already complex of one
 * dtype, broadcast. */
static porta_tensor *binary(aten_scope *s, cx_binary op, const porta_tensor *a,
                            const porta_tensor *b, double alpha, porta_dtype dtype) {
    porta_tensor *ar = cx_part(s, a, 0), *ai = cx_part(s, a, 1);
    porta_tensor *br = cx_part(s, b, 0), *bi = cx_part(s, b, 1);
    porta_tensor *re = NULL, *im = NULL;
    switch (op) {
    case CX_ADD:
    case CX_SUB: {
        porta_binary_op add = op == CX_ADD ? PORTA_ADD : PORTA_SUB;
        if (alpha != 1.0) {
            br = scope_binary_number(s, PORTA_MUL, br, alpha);
            bi = scope_binary_number(s, PORTA_MUL, bi, alpha);
        }
        re = scope_binary(s, add, ar, br);
        im = scope_binary(s, add, ai, bi);
        break;
    }
    case CX_MUL:
        re = scope_binary(s, PORTA_SUB, scope_binary(s, PORTA_MUL, ar, br),
                          scope_binary(s, PORTA_MUL, ai, bi));
        im = scope_binary(s, PORTA_ADD, scope_binary(s, PORTA_MUL, ar, bi),
                          scope_binary(s, PORTA_MUL, ai, br));
        break;
    case CX_DIV: return cx_divide(s, ar, ai, br, bi, dtype);
    }
    return cx_combine(s, re, im, dtype);
}

/* The op on two arguments (tensors or numbers) promoted to their complex
 * result type. */
static porta_tensor *binary_of(aten_scope *s, cx_binary op, const porta_value *args,
                               double alpha) {
    const porta_value *operands[2] = {&args[0], &args[1]};
    porta_dtype dtype = cx_result_type(operands, 2);
    s->device = aten_device_of(operands, 2);
    return binary(s, op, scope_operand(s, &args[0], dtype), scope_operand(s, &args[1], dtype),
                  alpha, dtype);
}

/* An in-place result must keep self's complex dtype, as PyTorch requires. */
static porta_status *push_result(aten_scope *s, porta_tensor *result, porta_tensor *into,
                                 aten_results *r) {
    if (into && result && !porta_dtype_is_complex(into->dtype))
        scope_fail(s, porta_error(PORTA_ERR_DTYPE,
                                  "result type %s can't be cast to the desired output type %s",
                                  porta_dtype_name(result->dtype),
                                  porta_dtype_name(into->dtype)));
    if (into) scope_push_into(s, r, result, into);
    else scope_push(s, r, result);
    return scope_end(s);
}

static double alpha_of(const porta_value *v) { return aten_is_number(v) ? aten_number(v) : 1.0; }

#define CX_BINARY_KERNELS(name, OP, ALPHA)                                                    \
    static porta_status *name(const porta_value *args, aten_results *r) {                  \
        aten_scope s;                                                                      \
        scope_begin(&s);                                                                   \
        return push_result(&s, binary_of(&s, OP, args, ALPHA), NULL, r);                   \
    }                                                                                      \
    static porta_status *name##_inplace(const porta_value *args, aten_results *r) {        \
        aten_scope s;                                                                      \
        scope_begin(&s);                                                                   \
        return push_result(&s, binary_of(&s, OP, args, ALPHA), args[0].tensor, r);         \
    }

CX_BINARY_KERNELS(add, CX_ADD, alpha_of(&args[2]))
CX_BINARY_KERNELS(sub, CX_SUB, alpha_of(&args[2]))
CX_BINARY_KERNELS(mul, CX_MUL, 1.0)
CX_BINARY_KERNELS(div, CX_DIV, 1.0)

/* ---- unary ops ---- */

typedef enum cx_unary { CX_NEG, CX_ABS, CX_ANGLE, CX_SGN, CX_EXP, CX_LOG } cx_unary;

/* |z|, as std::abs of a complex (hypot of the parts, so inf beside NaN
 * is inf): for complex64 the
 * squares summed in float64, whose range holds them and whose rounded root
 * is the float hypot the CPU gives (so that results compared with a max of
 * |z|, as norms' gradients do, find their elements); for complex128 the
 * scaled form, which does not overflow the squares. */
static porta_tensor *magnitude(aten_scope *s, porta_tensor *re, porta_tensor *im) {
    if (re->dtype != PORTA_F32) return ew_hypot(s, re, im);
    porta_tensor *a = scope_cast(s, re, PORTA_F64), *b = scope_cast(s, im, PORTA_F64);
    porta_tensor *sum = scope_binary(s, PORTA_ADD, scope_binary(s, PORTA_MUL, a, a),
                                     scope_binary(s, PORTA_MUL, b, b));
    porta_tensor *infinite = scope_binary(s, PORTA_LOGICAL_OR, scope_unary(s, PORTA_ISINF, re),
                                          scope_unary(s, PORTA_ISINF, im));
    return scope_where_number(s, infinite, INFINITY,
                              scope_cast(s, scope_unary(s, PORTA_SQRT, sum), PORTA_F32));
}

static porta_tensor *unary(aten_scope *s, cx_unary op, const porta_tensor *x) {
    porta_tensor *re = cx_part(s, x, 0), *im = cx_part(s, x, 1);
    porta_dtype dtype = x->dtype;
    switch (op) {
    case CX_NEG:
        return cx_combine(s, scope_unary(s, PORTA_NEG, re), scope_unary(s, PORTA_NEG, im), dtype);
    case CX_ABS: return magnitude(s, re, im);
    case CX_ANGLE: return scope_binary(s, PORTA_ATAN2, im, re);
    case CX_SGN: {
        porta_tensor *norm = magnitude(s, re, im);
        porta_tensor *zero = scope_binary_number(s, PORTA_EQ, norm, 0.0);
        porta_tensor *safe = scope_where_number(s, zero, 1.0, norm);
        return cx_combine(s, scope_binary(s, PORTA_DIV, re, safe),
                          scope_binary(s, PORTA_DIV, im, safe), dtype);
    }
    case CX_EXP: {
        porta_tensor *scale = scope_unary(s, PORTA_EXP, re);
        return cx_combine(s, scope_binary(s, PORTA_MUL, scale, scope_unary(s, PORTA_COS, im)),
                          scope_binary(s, PORTA_MUL, scale, scope_unary(s, PORTA_SIN, im)), dtype);
    }
    case CX_LOG:
        return cx_combine(s, scope_unary(s, PORTA_LOG, magnitude(s, re, im)),
                          scope_binary(s, PORTA_ATAN2, im, re), dtype);
    }
    return NULL;
}

#define UNARY_KERNELS(name, OP)                                                            \
    static porta_status *name(const porta_value *args, aten_results *r) {                  \
        aten_scope s;                                                                      \
        scope_begin(&s);                                                                   \
        return push_result(&s, unary(&s, OP, args[0].tensor), NULL, r);                    \
    }                                                                                      \
    static porta_status *name##_inplace(const porta_value *args, aten_results *r) {        \
        aten_scope s;                                                                      \
        scope_begin(&s);                                                                   \
        return push_result(&s, unary(&s, OP, args[0].tensor), args[0].tensor, r);          \
    }

UNARY_KERNELS(neg, CX_NEG)
UNARY_KERNELS(sgn, CX_SGN)
UNARY_KERNELS(exp_of, CX_EXP)
UNARY_KERNELS(log_of, CX_LOG)

/* abs and angle: real results of the component dtype. */
static porta_status *abs_(const porta_value *args, aten_results *r) {
    aten_scope s;
    scope_begin(&s);
    return push_result(&s, unary(&s, CX_ABS, args[0].tensor), NULL, r);
}

static porta_status *angle(const porta_value *args, aten_results *r) {
    aten_scope s;
    scope_begin(&s);
    return push_result(&s, unary(&s, CX_ANGLE, args[0].tensor), NULL, r);
}

/* eq and ne: both components compared. */
static porta_tensor *equal(aten_scope *s, const porta_value *args, bool negate) {
    const porta_value *operands[2] = {&args[0], &args[1]};
    porta_dtype dtype = cx_result_type(operands, 2);
    s->device = aten_device_of(operands, 2);
    porta_tensor *a = scope_operand(s, &args[0], dtype), *b = scope_operand(s, &args[1], dtype);
    porta_tensor *same = scope_binary(s, PORTA_LOGICAL_AND,
                                      scope_binary(s, PORTA_EQ, cx_part(s, a, 0),
                                                   cx_part(s, b, 0)),
                                      scope_binary(s, PORTA_EQ, cx_part(s, a, 1),
                                                   cx_part(s, b, 1)));
    return negate ? scope_unary(s, PORTA_LOGICAL_NOT, same) : same;
}

static porta_status *eq(const porta_value *args, aten_results *r) {
    aten_scope s;
    scope_begin(&s);
    return push_result(&s, equal(&s, args, false), NULL, r);
}

static porta_status *ne(const porta_value *args, aten_results *r) {
    aten_scope s;
    scope_begin(&s);
    return push_result(&s, equal(&s, args, true), NULL, r);
}

/* where(condition, self, other): each component chosen apart. */
static porta_tensor *where_of(aten_scope *s, const porta_value *args) {
    const porta_value *operands[2] = {&args[1], &args[2]};
    porta_dtype dtype = cx_result_type(operands, 2);
    s->device = aten_device_of(operands, 2);
    porta_tensor *cond = scope_operand(s, &args[0], PORTA_BOOL);
    porta_tensor *a = scope_operand(s, &args[1], dtype), *b = scope_operand(s, &args[2], dtype);
    return cx_combine(s, scope_where(s, cond, cx_part(s, a, 0), cx_part(s, b, 0)),
                      scope_where(s, cond, cx_part(s, a, 1), cx_part(s, b, 1)), dtype);
}

static porta_status *where(const porta_value *args, aten_results *r) {
    aten_scope s;
    scope_begin(&s);
    return push_result(&s, where_of(&s, args), NULL, r);
}

const aten_op aten_complex_arith_ops[] = {
    {"where.self", "NNN", where},
    {"add.Tensor", "NNs", add},
    {"add.Scalar", "NNs", add},
    {"add_.Tensor", "NNs", add_inplace},
    {"add_.Scalar", "NNs", add_inplace},
    {"sub.Tensor", "NNs", sub},
    {"sub.Scalar", "NNs", sub},
    {"sub_.Tensor", "NNs", sub_inplace},
    {"sub_.Scalar", "NNs", sub_inplace},
    {"mul.Tensor", "NN", mul},
    {"mul.Scalar", "NN", mul},
    {"mul_.Tensor", "NN", mul_inplace},
    {"mul_.Scalar", "NN", mul_inplace},
    {"div.Tensor", "NN", div},
    {"div.Scalar", "NN", div},
    {"div_.Tensor", "NN", div_inplace},
    {"div_.Scalar", "NN", div_inplace},
    {"neg", "N", neg},
    {"neg_", "N", neg_inplace},
    {"sgn", "N", sgn},
    {"sgn_", "N", sgn_inplace},
    {"exp", "N", exp_of},
    {"exp_", "N", exp_of_inplace},
    {"log", "N", log_of},
    {"log_", "N", log_of_inplace},
    {"abs", "N", abs_},
    {"angle", "N", angle},
    {"eq.Tensor", "NN", eq},
    {"eq.Scalar", "Ns", eq},
    {"ne.Tensor", "NN", ne},
    {"ne.Scalar", "Ns", ne},
    {NULL, NULL, NULL},
};
