/* Elementwise ops composed from primitives that PyTorch has no
 * decomposition for: heaviside, hypot, signbit, sinc and nextafter, with their
 * in-place and out= variants. */
#include <math.h>

#include "aten/elementwise/elementwise.h"
#include "aten/factory/factory.h"
#include "aten/dispatch/op_reuse.h"
#include "aten/reduce/common.h"
#include "core/status.h"
#include "runtime/tensor.h"
#include "ir/infer.h"

/* heaviside(self, values): values where self == 0, else self > 0 (so 0 for
 * NaN, as the CPU kernel's comparison gives). Both operands must share a
 * dtype, as PyTorch requires. */
static porta_tensor *heaviside_of(aten_scope *s, const porta_value *args) {
    porta_dtype a = args[0].tensor->dtype, b = args[1].tensor->dtype;
    if (a != b)
        return scope_fail(s, porta_error(PORTA_ERR_DTYPE,
                                         "heaviside is not yet implemented for tensors with "
                                         "different dtypes (self: %s, values: %s)",
                                         porta_dtype_name(a), porta_dtype_name(b)));
    const porta_tensor *x = args[0].tensor, *values = args[1].tensor;
    porta_tensor *positive = scope_cast(s, scope_binary_number(s, PORTA_GT, x, 0), a);
    return scope_where(s, scope_binary_number(s, PORTA_EQ, x, 0), values, positive);
}

COMPOSED_KERNEL(op_heaviside, heaviside_of(&s, args), EW_NEW, 2)
COMPOSED_KERNEL(op_heaviside_inplace, heaviside_of(&s, args), EW_INPLACE, 2)

/* hypot(a, b) = m * sqrt(1 + (n / m)^2) with m = max(|a|, |b|), n the
 * other: no overflow or underflow of the squares (as std::hypot). m == 0
 * gives 0, an infinite operand gives inf even beside NaN. */
porta_tensor *ew_hypot(aten_scope *s, const porta_tensor *x, const porta_tensor *y) {
    porta_tensor *a = scope_unary(s, PORTA_ABS, x), *b = scope_unary(s, PORTA_ABS, y);
    porta_tensor *larger = scope_binary(s, PORTA_MAXIMUM, a, b);
    porta_tensor *smaller = scope_binary(s, PORTA_MINIMUM, a, b);
    porta_tensor *ratio = scope_binary(s, PORTA_DIV, smaller, larger);
    porta_tensor *root = scope_unary(s, PORTA_SQRT,
                                  scope_binary_number(s, PORTA_ADD, scope_binary(s, PORTA_MUL, ratio, ratio), 1));
    porta_tensor *general = scope_binary(s, PORTA_MUL, larger, root);
    porta_tensor *zeroed = scope_where_number(s, scope_binary_number(s, PORTA_EQ, larger, 0), 0, general);
    porta_tensor *infinite = scope_binary(s, PORTA_LOGICAL_OR, scope_unary(s, PORTA_ISINF, a),
                                          scope_unary(s, PORTA_ISINF, b));
    return scope_where_number(s, infinite, INFINITY, zeroed);
}

/* hypot of two tensors or numbers: float only, computed in the compute dtype. */
static porta_tensor *hypot_of(aten_scope *s, const porta_value *args) {
    porta_dtype dtype = ew_result_type(&args[0], &args[1], NULL);
    if (!porta_dtype_is_float(dtype))
        return scope_fail(s, porta_error(PORTA_ERR_DTYPE, "\"hypot_cpu\" not implemented for '%s'",
                                         aten_dtype_label(dtype)));
    porta_dtype compute = aten_compute_dtype(dtype);
    return scope_cast(s, ew_hypot(s, scope_operand(s, &args[0], compute),
                                  scope_operand(s, &args[1], compute)), dtype);
}

COMPOSED_KERNEL(op_hypot, hypot_of(&s, args), EW_NEW, 2)
COMPOSED_KERNEL(op_hypot_inplace, hypot_of(&s, args), EW_INPLACE, 2)

/* signbit: x < 0, and for floats also -0.0 (whose reciprocal is -inf).
 * Bool compares as never below false. (A NaN's sign bit is not visible to the primitives:
 * -NaN reads as positive.) */
static porta_tensor *signbit_of(aten_scope *s, const porta_tensor *x) {
    porta_tensor *negative = scope_binary_number(s, PORTA_LT, x, 0);
    if (!porta_dtype_is_float(x->dtype)) return negative;
    porta_tensor *negative_zero = scope_binary(
        s, PORTA_LOGICAL_AND, scope_binary_number(s, PORTA_EQ, x, 0),
        scope_binary_number(s, PORTA_LT, scope_unary(s, PORTA_RECIPROCAL, x), 0));
    return scope_binary(s, PORTA_LOGICAL_OR, negative, negative_zero);
}

COMPOSED_KERNEL(op_signbit, signbit_of(&s, args[0].tensor), EW_NEW, 1)

/* sinc(x) = sin(pi x) / (pi x), 1 at 0; integers and bool give the default
 * float dtype. */
static porta_tensor *sinc_of(aten_scope *s, const porta_tensor *x) {
    porta_dtype dtype = porta_dtype_is_float(x->dtype) ? x->dtype : aten_default_dtype();
    porta_tensor *v = scope_cast(s, x, aten_compute_dtype(dtype));
    porta_tensor *product = scope_binary_number(s, PORTA_MUL, v, M_PI);
    porta_tensor *ratio = scope_binary(s, PORTA_DIV, scope_unary(s, PORTA_SIN, product), product);
    return scope_cast(s, scope_where_number(s, scope_binary_number(s, PORTA_EQ, v, 0), 1, ratio), dtype);
}

COMPOSED_KERNEL(op_sinc, sinc_of(&s, args[0].tensor), EW_NEW, 1)
COMPOSED_KERNEL(op_sinc_inplace, sinc_of(&s, args[0].tensor), EW_INPLACE, 1)

/* x's elements read as `dtype` (a type of the same width): a view of its
 * buffer with its layout. */
static porta_tensor *reinterpreted(aten_scope *s, const porta_tensor *x, porta_dtype dtype) {
    if (s->status || !x) return NULL;
    porta_tensor *view = NULL;
    porta_status *status = porta_tensor_view(x->buffer, dtype, x->rank, x->sizes, x->strides,
                                             x->offset, &view);
    return scope_hold(s, status, view);
}

/* nextafter(self, other): the float after self toward other. Read as an
 * integer of its width, a float's bits (sign and magnitude) grow by one
 * one step away from zero, whatever the sign; from zero the step is the
 * smallest subnormal with other's sign. Equal operands give other, NaN
 * propagates. */
static porta_tensor *nextafter_of(aten_scope *s, const porta_value *args) {
    porta_dtype dtype = ew_result_type(&args[0], &args[1], NULL);
    if (!porta_dtype_is_float(dtype))
        return scope_fail(s, porta_error(PORTA_ERR_DTYPE, "\"nextafter_cpu\" not implemented for '%s'",
                                         aten_dtype_label(dtype)));
    porta_dtype bits_dtype = dtype == PORTA_F64 ? PORTA_I64 : dtype == PORTA_F32 ? PORTA_I32 : PORTA_I16;
    double smallest = dtype == PORTA_F64   ? 4.9406564584124654e-324
                      : dtype == PORTA_F32 ? 1.401298464324817e-45
                      : dtype == PORTA_F16 ? 5.960464477539063e-08
                                           : 9.183549615799121e-41;
    porta_tensor *a = scope_operand(s, &args[0], dtype), *b = scope_operand(s, &args[1], dtype);
    if (s->status) return NULL;
    int rank;
    int64_t sizes[PORTA_MAX_RANK];
    porta_status *status = ir_broadcast_shapes("nextafter", a->rank, a->sizes, b->rank, b->sizes,
                                                  &rank, sizes);
    if (status) return scope_fail(s, status);
    porta_tensor *x = scope_contiguous(s, scope_expand(s, a, rank, sizes));
    porta_tensor *y = scope_expand(s, b, rank, sizes);
    porta_tensor *away = scope_binary(s, PORTA_EQ, scope_binary(s, PORTA_GT, y, x),
                                      scope_binary_number(s, PORTA_GT, x, 0));
    porta_tensor *step = scope_where_number(s, away, 1, scope_number(s, bits_dtype, -1));
    porta_tensor *moved = scope_contiguous(s, scope_binary(s, PORTA_ADD, reinterpreted(s, x, bits_dtype), step));
    porta_tensor *general = reinterpreted(s, moved, dtype);
    porta_tensor *from_zero = scope_where_number(s, scope_binary_number(s, PORTA_GT, y, 0), smallest,
                                                 scope_number(s, dtype, -smallest));
    porta_tensor *result = scope_where(s, scope_binary_number(s, PORTA_EQ, x, 0), from_zero, general);
    result = scope_where(s, scope_binary(s, PORTA_EQ, x, y), y, result);
    porta_tensor *either_nan = scope_binary(s, PORTA_LOGICAL_OR, scope_unary(s, PORTA_ISNAN, x),
                                            scope_unary(s, PORTA_ISNAN, y));
    return scope_where(s, either_nan, scope_binary(s, PORTA_ADD, x, y), result);
}

COMPOSED_KERNEL(op_nextafter, nextafter_of(&s, args), EW_NEW, 2)
COMPOSED_KERNEL(op_nextafter_inplace, nextafter_of(&s, args), EW_INPLACE, 2)

/* The out= variants. */
ATEN_OUT_KERNEL(op_heaviside_out, op_heaviside, 2)
ATEN_OUT_KERNEL(op_hypot_out, op_hypot, 2)
ATEN_OUT_KERNEL(op_signbit_out, op_signbit, 1)
ATEN_OUT_KERNEL(op_sinc_out, op_sinc, 1)
ATEN_OUT_KERNEL(op_nextafter_out, op_nextafter, 2)

const aten_op aten_elementwise_heaviside_hypot_signbit_sinc_nextafter_ops[] = {
    {"heaviside", "TT", op_heaviside},
    {"heaviside.out", "TTT", op_heaviside_out},
    {"heaviside_", "TT", op_heaviside_inplace},
    {"hypot", "TT", op_hypot},
    {"hypot.out", "TTT", op_hypot_out},
    {"hypot_", "TT", op_hypot_inplace},
    {"signbit", "T", op_signbit},
    {"signbit.out", "TT", op_signbit_out},
    {"sinc", "T", op_sinc},
    {"sinc.out", "TT", op_sinc_out},
    {"sinc_", "T", op_sinc_inplace},
    {"nextafter", "TT", op_nextafter},
    {"nextafter.out", "TTT", op_nextafter_out},
    {"nextafter_", "TT", op_nextafter_inplace},
    {NULL, NULL, NULL},
};
