/* nn activations composed from primitives that PyTorch has no
 * decomposition for: glu, hardshrink and softshrink, with their out=
 * variants and the backward ops autograd calls. */
#include "aten/dispatch/scope.h"
#include "aten/dispatch/op_reuse.h"
#include "aten/reduce/common.h"
#include "core/status.h"
#include "runtime/tensor.h"

/* ---- glu ---- */

/* The axis glu halves, which must have an even size. */
static porta_status *glu_axis(const char *op, const porta_tensor *x, int64_t dim, int *axis) {
    if (x->rank == 0)
        return porta_error(PORTA_ERR_SHAPE,
                           "%s: glu does not support scalars because halving size must be even",
                           op);
    PORTA_TRY(core_normalize_axis(op, (int)dim, x->rank, axis));
    if (x->sizes[*axis] % 2)
        return porta_error(PORTA_ERR_SHAPE,
                           "%s: Halving dimension must be even, but dimension %d is size %lld",
                           op, *axis, (long long)x->sizes[*axis]);
    return aten_check_float(op, x);
}

/* glu(self, dim) = a * sigmoid(b), a and b the halves of self along dim. */
static porta_status *glu(const porta_value *args, aten_results *results) {
    const porta_tensor *x = args[0].tensor;
    int axis;
    PORTA_TRY(glu_axis("glu", x, args[1].i, &axis));
    int64_t half = x->sizes[axis] / 2;
    aten_scope s;
    scope_begin(&s);
    porta_tensor *a = scope_slice(&s, x, axis, 0, half, 1);
    porta_tensor *b = scope_slice(&s, x, axis, half, 2 * half, 1);
    scope_push(&s, results, scope_binary(&s, PORTA_MUL, a, scope_unary(&s, PORTA_SIGMOID, b)));
    return scope_end(&s);
}

/* glu_backward(grad, self, dim): the gradient of a is grad * sigmoid(b),
 * of b grad * a * sigmoid(b) * (1 - sigmoid(b)); the two halves are placed
 * side by side by padding each with zeros where the other goes. */
static porta_status *glu_backward(const porta_value *args, aten_results *results) {
    const porta_tensor *gy = args[0].tensor, *x = args[1].tensor;
    int axis;
    PORTA_TRY(glu_axis("glu_backward", x, args[2].i, &axis));
    int64_t half = x->sizes[axis] / 2;
    int64_t before[2 * PORTA_MAX_RANK] = {0}, after[2 * PORTA_MAX_RANK] = {0};
    after[2 * axis + 1] = half;
    before[2 * axis] = half;
    aten_scope s;
    scope_begin(&s);
    porta_tensor *a = scope_slice(&s, x, axis, 0, half, 1);
    porta_tensor *gate = scope_unary(&s, PORTA_SIGMOID, scope_slice(&s, x, axis, half, 2 * half, 1));
    porta_tensor *grad_a = scope_binary(&s, PORTA_MUL, gy, gate);
    porta_tensor *grad_b = scope_binary(&s, PORTA_MUL, scope_binary(&s, PORTA_MUL, grad_a, a),
                                     scope_unary(&s, PORTA_NEG, scope_binary_number(&s, PORTA_SUB, gate, 1)));
    porta_tensor *both = scope_binary(&s, PORTA_ADD, scope_pad(&s, grad_a, after, 0),
                                      scope_pad(&s, grad_b, before, 0));
    scope_push(&s, results, both);
    return scope_end(&s);
}

/* ---- hardshrink, softshrink ---- */

/* -lambd <= x <= lambd: the band both shrinks zero (NaN is outside it). */
static porta_tensor *in_band(aten_scope *s, const porta_tensor *x, double lambd) {
    return scope_binary(s, PORTA_LOGICAL_AND, scope_binary_number(s, PORTA_GE, x, -lambd),
                        scope_binary_number(s, PORTA_LE, x, lambd));
}

/* x, or 0 (x * 0, keeping x's dtype) inside the band. */
static porta_tensor *zero_in_band(aten_scope *s, const porta_tensor *x, const porta_tensor *kept,
                                  double lambd) {
    return scope_ternary(s, PORTA_WHERE, in_band(s, x, lambd), scope_binary_number(s, PORTA_MUL, kept, 0),
                         kept);
}

/* hardshrink(self, lambd): 0 inside the band, self outside. */
static porta_status *hardshrink(const porta_value *args, aten_results *results) {
    const porta_tensor *x = args[0].tensor;
    PORTA_TRY(aten_check_float("hardshrink_cpu", x));
    aten_scope s;
    scope_begin(&s);
    scope_push(&s, results, zero_in_band(&s, x, x, aten_number(&args[1])));
    return scope_end(&s);
}

/* hardshrink_backward(grad, self, lambd) and softshrink_backward alike:
 * the gradient passes outside the band. */
static porta_status *shrink_backward(const porta_value *args, aten_results *results) {
    const porta_tensor *gy = args[0].tensor, *x = args[1].tensor;
    PORTA_TRY(aten_check_float("shrink_backward_cpu", x));
    aten_scope s;
    scope_begin(&s);
    scope_push(&s, results, zero_in_band(&s, x, gy, aten_number(&args[2])));
    return scope_end(&s);
}

/* softshrink(self, lambd): self moved lambd toward 0, 0 inside the band
 * (self * 0 there, so NaN stays NaN). */
static porta_status *softshrink(const porta_value *args, aten_results *results) {
    const porta_tensor *x = args[0].tensor;
    double lambd = aten_number(&args[1]);
    PORTA_TRY(aten_check_float("softshrink_cpu", x));
    if (lambd < 0)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "softshrink: lambda must be greater or equal to 0, but found to be "
                           "%g.", lambd);
    aten_scope s;
    scope_begin(&s);
    porta_tensor *moved = scope_binary(&s, PORTA_SUB, x,
                                    scope_binary_number(&s, PORTA_MUL, scope_unary(&s, PORTA_SIGN, x), lambd));
    scope_push(&s, results, zero_in_band(&s, x, moved, lambd));
    return scope_end(&s);
}

/* The out= variants. */
ATEN_OUT_KERNEL(glu_out, glu, 2)
ATEN_OUT_KERNEL(glu_backward_out, glu_backward, 3)
ATEN_OUT_KERNEL(hardshrink_out, hardshrink, 2)
ATEN_OUT_KERNEL(softshrink_out, softshrink, 2)
ATEN_OUT_KERNEL(shrink_backward_out, shrink_backward, 3)

const aten_op aten_nn_glu_shrink_ops[] = {
    {"glu", "Ti", glu},
    {"glu.out", "TiT", glu_out},
    {"glu_backward", "TTi", glu_backward},
    {"glu_backward.grad_input", "TTiT", glu_backward_out},
    {"hardshrink", "Ts", hardshrink},
    {"hardshrink.out", "TsT", hardshrink_out},
    {"hardshrink_backward", "TTs", shrink_backward},
    {"hardshrink_backward.grad_input", "TTsT", shrink_backward_out},
    {"softshrink", "Ts", softshrink},
    {"softshrink.out", "TsT", softshrink_out},
    {"softshrink_backward", "TTs", shrink_backward},
    {"softshrink_backward.grad_input", "TTsT", shrink_backward_out},
    {NULL, NULL, NULL},
};
