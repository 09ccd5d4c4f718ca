/* Elementary functions of complex tensors from real primitives on the
 * components z = a + bi:
 *   sin z  = sin a cosh b + (cos a sinh b)i
 *   cos z  = cos a cosh b - (sin a sinh b)i
 *   tanh z = (sinh 2a + (sin 2b)i) / (cosh 2a + cos 2b)
 *   sqrt z, the principal root, from t = sqrt((|z| + |a|)/2)
 *   1/z    by Smith's scaling (cx_divide)
 * and tanh's gradient. */
#include "aten/complex/complex.h"
#include "aten/complex/parts.h"
#include "core/status.h"
#include "runtime/tensor.h"

/* Above this |a| cosh 2a overflows float32 (e^80 > FLT_MAX) while tanh z
 * is sign(a) to the last bit. */
static const double TANH_SATURATED = 40.0;

typedef enum cx_elementary { CX_SIN, CX_COS, CX_TANH, CX_SQRT, CX_RECIPROCAL } cx_elementary;

static porta_tensor *times(aten_scope *s, porta_tensor *x, porta_tensor *y) {
    return scope_binary(s, PORTA_MUL, x, y);
}

static porta_tensor *tanh_of(aten_scope *s, porta_tensor *a, porta_tensor *b, porta_dtype dtype) {
    porta_tensor *a2 = scope_binary_number(s, PORTA_MUL, a, 2.0);
    porta_tensor *b2 = scope_binary_number(s, PORTA_MUL, b, 2.0);
    porta_tensor *den = scope_binary(s, PORTA_ADD, scope_unary(s, PORTA_COSH, a2),
                                     scope_unary(s, PORTA_COS, b2));
    porta_tensor *re = scope_binary(s, PORTA_DIV, scope_unary(s, PORTA_SINH, a2), den);
    porta_tensor *im = scope_binary(s, PORTA_DIV, scope_unary(s, PORTA_SIN, b2), den);
    porta_tensor *saturated =
        scope_binary_number(s, PORTA_GT, scope_unary(s, PORTA_ABS, a), TANH_SATURATED);
    re = scope_where(s, saturated, scope_unary(s, PORTA_SIGN, a), re);
    im = scope_where(s, saturated, scope_binary_number(s, PORTA_MUL, b, 0.0), im);
    return cx_combine(s, re, im, dtype);
}

/* With t = sqrt((|z| + |a|)/2): a >= 0 gives t + (b/2t)i, a < 0 gives
 * |b|/2t + (sign(b) t)i; both avoid the cancellation of |z| - |a|. 0 at 0. */
static porta_tensor *sqrt_of(aten_scope *s, porta_tensor *a, porta_tensor *b, porta_dtype dtype) {
    porta_tensor *abs_a = scope_unary(s, PORTA_ABS, a), *abs_b = scope_unary(s, PORTA_ABS, b);
    porta_tensor *norm = scope_unary(s, PORTA_SQRT,
                                     scope_binary(s, PORTA_ADD, times(s, a, a), times(s, b, b)));
    porta_tensor *half = scope_binary_number(s, PORTA_MUL,
                                             scope_binary(s, PORTA_ADD, norm, abs_a), 0.5);
    porta_tensor *t = scope_unary(s, PORTA_SQRT, half);
    porta_tensor *zero = scope_binary_number(s, PORTA_EQ, t, 0.0);
    porta_tensor *twice_t =
        scope_where_number(s, zero, 1.0, scope_binary_number(s, PORTA_MUL, t, 2.0));
    porta_tensor *negative = scope_binary_number(s, PORTA_LT, a, 0.0);
    porta_tensor *b_negative = scope_binary_number(s, PORTA_LT, b, 0.0);
    porta_tensor *re = scope_where(s, negative, scope_binary(s, PORTA_DIV, abs_b, twice_t), t);
    porta_tensor *im = scope_where(s, negative,
                                   scope_where(s, b_negative, scope_unary(s, PORTA_NEG, t), t),
                                   scope_binary(s, PORTA_DIV, b, twice_t));
    return cx_combine(s, re, im, dtype);
}

static porta_tensor *elementary(aten_scope *s, cx_elementary op, const porta_tensor *x) {
    s->device = x->buffer->device;
    porta_tensor *a = cx_part(s, x, 0), *b = cx_part(s, x, 1);
    porta_dtype dtype = x->dtype;
    switch (op) {
    case CX_SIN:
        return cx_combine(s, times(s, scope_unary(s, PORTA_SIN, a), scope_unary(s, PORTA_COSH, b)),
                          times(s, scope_unary(s, PORTA_COS, a), scope_unary(s, PORTA_SINH, b)),
                          dtype);
    case CX_COS:
        return cx_combine(
            s, times(s, scope_unary(s, PORTA_COS, a), scope_unary(s, PORTA_COSH, b)),
            scope_unary(s, PORTA_NEG,
                        times(s, scope_unary(s, PORTA_SIN, a), scope_unary(s, PORTA_SINH, b))),
            dtype);
    case CX_TANH: return tanh_of(s, a, b, dtype);
    case CX_SQRT: return sqrt_of(s, a, b, dtype);
    case CX_RECIPROCAL: {
        porta_tensor *one = scope_number(s, porta_dtype_real(dtype), 1.0);
        porta_tensor *zero = scope_number(s, porta_dtype_real(dtype), 0.0);
        return cx_divide(s, one, zero, a, b, dtype);
    }
    }
    return NULL;
}

/* The result must keep an in-place self's complex dtype. */
static porta_status *run(cx_elementary op, const porta_value *args, porta_tensor *into,
                         aten_results *r) {
    aten_scope s;
    scope_begin(&s);
    porta_tensor *result = elementary(&s, op, args[0].tensor);
    if (into) scope_push_into(&s, r, result, into);
    else scope_push(&s, r, result);
    return scope_end(&s);
}

#define ELEMENTARY_KERNELS(name, OP)                                                       \
    static porta_status *name(const porta_value *args, aten_results *r) {                  \
        return run(OP, args, NULL, r);                                                     \
    }                                                                                      \
    static porta_status *name##_inplace(const porta_value *args, aten_results *r) {        \
        return run(OP, args, args[0].tensor, r);                                           \
    }

ELEMENTARY_KERNELS(sin_of, CX_SIN)
ELEMENTARY_KERNELS(cos_of, CX_COS)
ELEMENTARY_KERNELS(tanh_of_kernel, CX_TANH)
ELEMENTARY_KERNELS(sqrt_of_kernel, CX_SQRT)
ELEMENTARY_KERNELS(reciprocal, CX_RECIPROCAL)

/* tanh_backward(grad, y) = grad * conj(1 - y^2), as PyTorch's formula for
 * complex y = p + qi: conj(1 - y^2) = (1 - p^2 + q^2) + 2pqi. */
static porta_status *tanh_backward(const porta_value *args, aten_results *r) {
    aten_scope s;
    scope_begin(&s);
    const porta_tensor *grad = args[0].tensor, *y = args[1].tensor;
    s.device = y->buffer->device;
    porta_tensor *gr = cx_part(&s, grad, 0), *gi = cx_part(&s, grad, 1);
    porta_tensor *p = cx_part(&s, y, 0), *q = cx_part(&s, y, 1);
    porta_tensor *wr = scope_number_binary(
        &s, PORTA_SUB, 1.0, scope_binary(&s, PORTA_SUB, times(&s, p, p), times(&s, q, q)));
    porta_tensor *wi = scope_binary_number(&s, PORTA_MUL, times(&s, p, q), 2.0);
    porta_tensor *re = scope_binary(&s, PORTA_SUB, times(&s, gr, wr), times(&s, gi, wi));
    porta_tensor *im = scope_binary(&s, PORTA_ADD, times(&s, gr, wi), times(&s, gi, wr));
    scope_push(&s, r, cx_combine(&s, re, im, y->dtype));
    return scope_end(&s);
}

const aten_op aten_complex_elementary_ops[] = {
    {"tanh_backward", "NN", tanh_backward},
    {"sin", "N", sin_of},
    {"sin_", "N", sin_of_inplace},
    {"cos", "N", cos_of},
    {"cos_", "N", cos_of_inplace},
    {"tanh", "N", tanh_of_kernel},
    {"tanh_", "N", tanh_of_kernel_inplace},
    {"sqrt", "N", sqrt_of_kernel},
    {"sqrt_", "N", sqrt_of_kernel_inplace},
    {"reciprocal", "N", reciprocal},
    {"reciprocal_", "N", reciprocal_inplace},
    {NULL, NULL, NULL},
};
