/* Activation aten ops and their backward ops, composed from elementwise
 * primitives with the formulas of PyTorch's CPU kernels. Float16 and
 * bfloat16 inputs compute in float32 and round once, as PyTorch does. */
#include <math.h>
#include <string.h>

#include "aten/elementwise/elementwise.h"
#include "core/status.h"
#include "runtime/tensor.h"

/* The operands' float dtype, or an error (PyTorch's "not implemented for
 * 'Long'") when integers or bool would reach a float-only activation. */
static porta_dtype float_dtype(aten_scope *s, const char *op, const porta_value *a,
                               const porta_value *b) {
    porta_dtype dtype = ew_result_type(a, b, NULL);
    if (!porta_dtype_is_float(dtype)) scope_fail(s, ew_refuse_dtype(op, "a float tensor", dtype));
    return dtype;
}

/* The result in the op's dtype: a cast only for float16/bfloat16, since
 * scope_cast copies even to the dtype a tensor already has. */
static porta_tensor *as_dtype(aten_scope *s, porta_tensor *y, porta_dtype dtype) {
    return y && y->dtype == dtype ? y : scope_cast(s, y, dtype);
}

/* An argument in the dtype its formula computes in. */
static porta_tensor *in(aten_scope *s, const porta_value *v, porta_dtype dtype) {
    return scope_operand(s, v, aten_compute_dtype(dtype));
}

static porta_tensor *mul(aten_scope *s, const porta_tensor *a, const porta_tensor *b) {
    return scope_binary(s, PORTA_MUL, a, b);
}
static porta_tensor *scale(aten_scope *s, const porta_tensor *a, double b) {
    return scope_binary_number(s, PORTA_MUL, a, b);
}
static porta_tensor *plus(aten_scope *s, const porta_tensor *a, double b) {
    return scope_binary_number(s, PORTA_ADD, a, b);
}
/* b - a */
static porta_tensor *minus_from(aten_scope *s, double b, const porta_tensor *a) {
    return scope_number_binary(s, PORTA_SUB, b, a);
}

/* ---- relu, threshold, hardtanh: exact in the input's own dtype ---- */

static porta_tensor *relu_of(aten_scope *s, const porta_value *x) {
    porta_dtype dtype = ew_result_type(x, x, NULL);
    if (dtype == PORTA_BOOL)
        return scope_fail(s, porta_error(PORTA_ERR_DTYPE, "Boolean inputs not supported for relu"));
    return scope_binary_number(s, PORTA_MAXIMUM, scope_operand(s, x, dtype), 0);
}

/* x <= threshold ? value : x, the threshold compared in x's dtype. */
static porta_tensor *threshold_of(aten_scope *s, const porta_value *args) {
    porta_dtype dtype = ew_result_type(&args[0], &args[0], NULL);
    if (dtype == PORTA_BOOL) return scope_fail(s, ew_refuse_dtype("threshold", "a number tensor", dtype));
    porta_tensor *x = scope_operand(s, &args[0], dtype);
    return scope_where_number(s, scope_binary_number(s, PORTA_LE, x, aten_number(&args[1])),
                              aten_number(&args[2]), x);
}

/* grad where self > threshold, else 0 (relu's gradient for threshold 0). */
static porta_tensor *threshold_backward_of(aten_scope *s, const porta_value *args) {
    porta_dtype dtype = ew_result_type(&args[0], &args[1], NULL);
    porta_tensor *grad = scope_operand(s, &args[0], dtype), *x = scope_operand(s, &args[1], dtype);
    return scope_where_number(s, scope_binary_number(s, PORTA_LE, x, aten_number(&args[2])), 0, grad);
}

static porta_tensor *hardtanh_of(aten_scope *s, const porta_value *args) {
    porta_dtype dtype = ew_result_type(&args[0], &args[0], NULL);
    if (dtype == PORTA_BOOL) return scope_fail(s, ew_refuse_dtype("hardtanh", "a number tensor", dtype));
    porta_tensor *low = scope_binary_number(s, PORTA_MAXIMUM, scope_operand(s, &args[0], dtype),
                                            aten_number(&args[1]));
    return scope_binary_number(s, PORTA_MINIMUM, low, aten_number(&args[2]));
}

static porta_tensor *hardtanh_backward_of(aten_scope *s, const porta_value *args) {
    porta_dtype dtype = ew_result_type(&args[0], &args[1], NULL);
    porta_tensor *grad = scope_operand(s, &args[0], dtype), *x = scope_operand(s, &args[1], dtype);
    porta_tensor *outside =
        scope_binary(s, PORTA_LOGICAL_OR, scope_binary_number(s, PORTA_LE, x, aten_number(&args[2])),
                     scope_binary_number(s, PORTA_GE, x, aten_number(&args[3])));
    return scope_where_number(s, outside, 0, grad);
}

/* ---- float activations ---- */

static porta_tensor *leaky_relu_of(aten_scope *s, const porta_value *args) {
    porta_dtype dtype = float_dtype(s, "leaky_relu", &args[0], &args[0]);
    porta_tensor *x = in(s, &args[0], dtype);
    porta_tensor *y = scope_where(s, scope_binary_number(s, PORTA_GT, x, 0), x,
                                  scale(s, x, aten_number(&args[1])));
    return as_dtype(s, y, dtype);
}

static porta_tensor *leaky_relu_backward_of(aten_scope *s, const porta_value *args) {
    porta_dtype dtype = float_dtype(s, "leaky_relu_backward", &args[0], &args[1]);
    porta_tensor *grad = in(s, &args[0], dtype), *x = in(s, &args[1], dtype);
    porta_tensor *g = scope_where(s, scope_binary_number(s, PORTA_GT, x, 0), grad,
                                  scale(s, grad, aten_number(&args[2])));
    return as_dtype(s, g, dtype);
}

/* elu: x > 0 ? x * scale : expm1(x * input_scale) * alpha * scale. */
static porta_tensor *elu_of(aten_scope *s, const porta_value *args) {
    porta_dtype dtype = float_dtype(s, "elu", &args[0], &args[0]);
    double alpha = aten_number(&args[1]), scale_ = aten_number(&args[2]);
    double input_scale = aten_number(&args[3]);
    porta_tensor *x = in(s, &args[0], dtype);
    porta_tensor *negative =
        scale(s, scope_unary(s, PORTA_EXPM1, scale(s, x, input_scale)), alpha * scale_);
    porta_tensor *y = scope_where(s, scope_binary_number(s, PORTA_LE, x, 0), negative, scale(s, x, scale_));
    return as_dtype(s, y, dtype);
}

/* elu_backward(grad, alpha, scale, input_scale, is_result, self_or_result):
 * from the output y the negative side is grad * input_scale * (y + alpha *
 * scale); from the input x it is grad * input_scale * alpha * scale *
 * exp(x * input_scale). */
static porta_tensor *elu_backward_of(aten_scope *s, const porta_value *args) {
    porta_dtype dtype = float_dtype(s, "elu_backward", &args[0], &args[5]);
    double alpha = aten_number(&args[1]), scale_ = aten_number(&args[2]);
    double input_scale = aten_number(&args[3]), negcoef = alpha * scale_;
    porta_tensor *grad = in(s, &args[0], dtype), *b = in(s, &args[5], dtype);
    porta_tensor *negative =
        args[4].b ? mul(s, scale(s, grad, input_scale), plus(s, b, negcoef))
                  : mul(s, scale(s, grad, input_scale * negcoef),
                        scope_unary(s, PORTA_EXP, scale(s, b, input_scale)));
    porta_tensor *g = scope_where(s, scope_binary_number(s, PORTA_LE, b, 0), negative, scale(s, grad, scale_));
    return as_dtype(s, g, dtype);
}

static bool gelu_tanh(aten_scope *s, const porta_value *approximate) {
    const char *mode = approximate->kind == PORTA_VALUE_STRING ? approximate->string : "none";
    if (strcmp(mode, "none") && strcmp(mode, "tanh"))
        scope_fail(s, porta_error(PORTA_ERR_INVALID_ARGUMENT,
                               "approximate argument must be either none or tanh, got %s", mode));
    return !strcmp(mode, "tanh");
}

#define GELU_BETA (M_SQRT2 * M_2_SQRTPI * 0.5) /* sqrt(2 / pi) */
#define GELU_KAPPA 0.044715

/* op(t) written over t, a tensor the formula made and reads no more: a
 * large formula then touches fewer new pages (each first touch faults). */
static porta_tensor *unary_over(aten_scope *s, porta_unary_op op, porta_tensor *t) {
    if (!t) return NULL;
    porta_tensor *out = t;
    porta_status *status = porta_unary(op, t, &out);
    return status ? scope_fail(s, status) : t;
}

/* a op b written over a, a tensor the formula made. */
static porta_tensor *binary_number_over(aten_scope *s, porta_binary_op op, porta_tensor *a,
                                        double b) {
    if (!a) return NULL;
    return scope_binary_into(s, op, a, scope_number(s, a->dtype, b), a);
}

/* tanh(sqrt(2/pi) * (x + 0.044715 x^3)) = tanh(x (beta + beta kappa x^2)) */
static porta_tensor *gelu_inner_tanh(aten_scope *s, const porta_tensor *x) {
    porta_tensor *inner = binary_number_over(s, PORTA_MUL, mul(s, x, x), GELU_BETA * GELU_KAPPA);
    inner = binary_number_over(s, PORTA_ADD, inner, GELU_BETA);
    return unary_over(s, PORTA_TANH, scope_binary_into(s, PORTA_MUL, inner, x, inner));
}

/* 0.5 (1 + erf(x / sqrt 2)), the normal CDF */
static porta_tensor *normal_cdf(aten_scope *s, const porta_tensor *x) {
    return scale(s, plus(s, scope_unary(s, PORTA_ERF, scale(s, x, M_SQRT1_2)), 1), 0.5);
}

/* (x + x f(x)) / 2, f being erf(x / sqrt 2) or the tanh form, every step
 * after the first written over its result: the erf form passes over memory
 * four times and allocates once. */
static porta_tensor *gelu_of(aten_scope *s, const porta_value *args) {
    porta_dtype dtype = float_dtype(s, "gelu", &args[0], &args[0]);
    bool tanh_form = gelu_tanh(s, &args[1]);
    porta_tensor *x = in(s, &args[0], dtype);
    porta_tensor *f = tanh_form ? gelu_inner_tanh(s, x)
                                : unary_over(s, PORTA_ERF, scale(s, x, M_SQRT1_2));
    porta_tensor *twice = scope_ternary_into(s, PORTA_FMA, f, x, x, f);
    return as_dtype(s, binary_number_over(s, PORTA_MUL, twice, 0.5), dtype);
}

static porta_tensor *gelu_backward_of(aten_scope *s, const porta_value *args) {
    porta_dtype dtype = float_dtype(s, "gelu_backward", &args[0], &args[1]);
    bool tanh_form = gelu_tanh(s, &args[2]);
    porta_tensor *grad = in(s, &args[0], dtype), *x = in(s, &args[1], dtype), *derivative;
    if (tanh_form) {
        porta_tensor *t = gelu_inner_tanh(s, x);
        porta_tensor *left_derivative = scale(s, plus(s, t, 1), 0.5);
        porta_tensor *tanh_derivative = minus_from(s, 1, mul(s, t, t));
        porta_tensor *inner_derivative =
            scale(s, plus(s, scale(s, mul(s, x, x), 3 * GELU_KAPPA), 1), GELU_BETA);
        porta_tensor *right_derivative =
            mul(s, mul(s, scale(s, x, 0.5), tanh_derivative), inner_derivative);
        derivative = scope_binary(s, PORTA_ADD, left_derivative, right_derivative);
    } else {
        /* cdf(x) + x * pdf(x) */
        porta_tensor *pdf = scale(s, scope_unary(s, PORTA_EXP, scale(s, mul(s, x, x), -0.5)),
                                  M_2_SQRTPI * M_SQRT1_2 * 0.5);
        derivative = scope_binary(s, PORTA_ADD, normal_cdf(s, x), mul(s, x, pdf));
    }
    return as_dtype(s, mul(s, grad, derivative), dtype);
}

static porta_tensor *logistic(aten_scope *s, const porta_tensor *x) {
    return scope_unary(s, PORTA_SIGMOID, x);
}

/* x sigmoid(x), the product written over the sigmoid */
static porta_tensor *silu_of(aten_scope *s, const porta_value *args) {
    porta_dtype dtype = float_dtype(s, "silu", &args[0], &args[0]);
    porta_tensor *x = in(s, &args[0], dtype), *sig = logistic(s, x);
    return as_dtype(s, scope_binary_into(s, PORTA_MUL, x, sig, sig), dtype);
}

/* grad * sigmoid(x) * (1 + x * (1 - sigmoid(x))) */
static porta_tensor *silu_backward_of(aten_scope *s, const porta_value *args) {
    porta_dtype dtype = float_dtype(s, "silu_backward", &args[0], &args[1]);
    porta_tensor *grad = in(s, &args[0], dtype), *x = in(s, &args[1], dtype);
    porta_tensor *sig = logistic(s, x);
    porta_tensor *factor = plus(s, mul(s, x, minus_from(s, 1, sig)), 1);
    return as_dtype(s, mul(s, mul(s, grad, sig), factor), dtype);
}

/* grad * (1 - y) * y from the output y = sigmoid(x) */
static porta_tensor *sigmoid_backward_of(aten_scope *s, const porta_value *args) {
    porta_dtype dtype = float_dtype(s, "sigmoid_backward", &args[0], &args[1]);
    porta_tensor *grad = in(s, &args[0], dtype), *y = in(s, &args[1], dtype);
    return as_dtype(s, mul(s, mul(s, grad, minus_from(s, 1, y)), y), dtype);
}

/* grad * (1 - y^2) from the output y = tanh(x) */
static porta_tensor *tanh_backward_of(aten_scope *s, const porta_value *args) {
    porta_dtype dtype = float_dtype(s, "tanh_backward", &args[0], &args[1]);
    porta_tensor *grad = in(s, &args[0], dtype), *y = in(s, &args[1], dtype);
    return as_dtype(s, mul(s, grad, minus_from(s, 1, mul(s, y, y))), dtype);
}

/* x * beta > threshold ? x : log1p(exp(x * beta)) / beta */
static porta_tensor *softplus_of(aten_scope *s, const porta_value *args) {
    porta_dtype dtype = float_dtype(s, "softplus", &args[0], &args[0]);
    double beta = aten_number(&args[1]), threshold = aten_number(&args[2]);
    porta_tensor *x = in(s, &args[0], dtype), *scaled = scale(s, x, beta);
    porta_tensor *soft = scope_binary_number(
        s, PORTA_DIV, scope_unary(s, PORTA_LOG1P, scope_unary(s, PORTA_EXP, scaled)), beta);
    porta_tensor *y = scope_where(s, scope_binary_number(s, PORTA_GT, scaled, threshold), x, soft);
    return as_dtype(s, y, dtype);
}

/* grad * z / (z + 1) with z = exp(x * beta), or grad past the threshold */
static porta_tensor *softplus_backward_of(aten_scope *s, const porta_value *args) {
    porta_dtype dtype = float_dtype(s, "softplus_backward", &args[0], &args[1]);
    double beta = aten_number(&args[2]), threshold = aten_number(&args[3]);
    porta_tensor *grad = in(s, &args[0], dtype), *scaled = scale(s, in(s, &args[1], dtype), beta);
    porta_tensor *z = scope_unary(s, PORTA_EXP, scaled);
    porta_tensor *soft = scope_binary(s, PORTA_DIV, mul(s, grad, z), plus(s, z, 1));
    porta_tensor *g = scope_where(s, scope_binary_number(s, PORTA_GT, scaled, threshold), grad, soft);
    return as_dtype(s, g, dtype);
}

/* min(max(x + 3, 0), 6) */
static porta_tensor *relu6_shifted(aten_scope *s, const porta_tensor *x) {
    porta_tensor *low = scope_binary_number(s, PORTA_MAXIMUM, plus(s, x, 3), 0);
    return scope_binary_number(s, PORTA_MINIMUM, low, 6);
}

static porta_tensor *hardsigmoid_of(aten_scope *s, const porta_value *args) {
    porta_dtype dtype = float_dtype(s, "hardsigmoid", &args[0], &args[0]);
    porta_tensor *x = in(s, &args[0], dtype);
    return as_dtype(s, scope_binary_number(s, PORTA_DIV, relu6_shifted(s, x), 6), dtype);
}

/* grad / 6 on (-3, 3), else 0 */
static porta_tensor *hardsigmoid_backward_of(aten_scope *s, const porta_value *args) {
    porta_dtype dtype = float_dtype(s, "hardsigmoid_backward", &args[0], &args[1]);
    porta_tensor *grad = in(s, &args[0], dtype), *x = in(s, &args[1], dtype);
    porta_tensor *inside = scope_binary(s, PORTA_LOGICAL_AND, scope_binary_number(s, PORTA_GT, x, -3),
                                        scope_binary_number(s, PORTA_LT, x, 3));
    porta_tensor *g = scope_where(s, inside, scope_binary_number(s, PORTA_DIV, grad, 6),
                                  scope_number(s, aten_compute_dtype(dtype), 0));
    return as_dtype(s, g, dtype);
}

static porta_tensor *hardswish_of(aten_scope *s, const porta_value *args) {
    porta_dtype dtype = float_dtype(s, "hardswish", &args[0], &args[0]);
    porta_tensor *x = in(s, &args[0], dtype);
    porta_tensor *y = scope_binary_number(s, PORTA_DIV, mul(s, x, relu6_shifted(s, x)), 6);
    return as_dtype(s, y, dtype);
}

/* 0 below -3, grad * (x / 3 + 0.5) up to 3, grad above */
static porta_tensor *hardswish_backward_of(aten_scope *s, const porta_value *args) {
    porta_dtype dtype = float_dtype(s, "hardswish_backward", &args[0], &args[1]);
    porta_tensor *grad = in(s, &args[0], dtype), *x = in(s, &args[1], dtype);
    porta_tensor *middle = mul(s, grad, plus(s, scope_binary_number(s, PORTA_DIV, x, 3), 0.5));
    porta_tensor *g = scope_where(s, scope_binary_number(s, PORTA_LE, x, 3), middle, grad);
    g = scope_where_number(s, scope_binary_number(s, PORTA_LT, x, -3), 0, g);
    return as_dtype(s, g, dtype);
}

/* tanh(log1p(exp(x))) */
static porta_tensor *tanh_softplus(aten_scope *s, const porta_tensor *x) {
    return scope_unary(s, PORTA_TANH, scope_unary(s, PORTA_LOG1P, scope_unary(s, PORTA_EXP, x)));
}

static porta_tensor *mish_of(aten_scope *s, const porta_value *args) {
    porta_dtype dtype = float_dtype(s, "mish", &args[0], &args[0]);
    porta_tensor *x = in(s, &args[0], dtype);
    return as_dtype(s, mul(s, x, tanh_softplus(s, x)), dtype);
}

/* grad * (t + x * sigmoid(x) * (1 - t^2)) with t = tanh(softplus(x)) */
static porta_tensor *mish_backward_of(aten_scope *s, const porta_value *args) {
    porta_dtype dtype = float_dtype(s, "mish_backward", &args[0], &args[1]);
    porta_tensor *grad = in(s, &args[0], dtype), *x = in(s, &args[1], dtype);
    porta_tensor *t = tanh_softplus(s, x);
    porta_tensor *slope = mul(s, mul(s, x, logistic(s, x)), minus_from(s, 1, mul(s, t, t)));
    return as_dtype(s, mul(s, grad, scope_binary(s, PORTA_ADD, t, slope)), dtype);
}

/* log(z / (1 - z)) with z = x clamped to [eps, 1 - eps] when eps is given;
 * integers compute in float32. PyTorch rounds the odds to the input's dtype
 * before the log, so halves compute in their own dtype here. */
static porta_tensor *logit_of(aten_scope *s, const porta_value *args) {
    porta_dtype dtype = ew_result_type(&args[0], &args[0], NULL);
    if (!porta_dtype_is_float(dtype)) dtype = PORTA_F32;
    porta_tensor *z = scope_operand(s, &args[0], dtype);
    if (args[1].kind != PORTA_VALUE_NONE) {
        double eps = aten_number(&args[1]);
        z = scope_binary_number(s, PORTA_MINIMUM, scope_binary_number(s, PORTA_MAXIMUM, z, eps), 1 - eps);
    }
    return scope_unary(s, PORTA_LOG, scope_binary(s, PORTA_DIV, z, minus_from(s, 1, z)));
}

/* grad / (x (1 - x)); outside [eps, 1 - eps] 0, or NaN outside [0, 1]
 * without eps */
static porta_tensor *logit_backward_of(aten_scope *s, const porta_value *args) {
    porta_dtype dtype = float_dtype(s, "logit_backward", &args[0], &args[1]);
    porta_tensor *grad = in(s, &args[0], dtype), *x = in(s, &args[1], dtype);
    bool has_eps = args[2].kind != PORTA_VALUE_NONE;
    double low = has_eps ? aten_number(&args[2]) : 0, high = 1 - low;
    porta_tensor *outside = scope_binary(s, PORTA_LOGICAL_OR, scope_binary_number(s, PORTA_LT, x, low),
                                         scope_binary_number(s, PORTA_GT, x, high));
    porta_tensor *g = scope_binary(s, PORTA_DIV, grad, mul(s, x, minus_from(s, 1, x)));
    g = scope_where_number(s, outside, has_eps ? 0 : NAN, g);
    return as_dtype(s, g, dtype);
}

/* ---- log_sigmoid: output min(x, 0) - log1p(z) and buffer z = exp(-|x|),
 * both in x's dtype, as PyTorch's CPU kernel returns them ---- */

static porta_tensor *log_sigmoid_buffer(aten_scope *s, const porta_tensor *x) {
    return scope_unary(s, PORTA_EXP, scope_unary(s, PORTA_NEG, scope_unary(s, PORTA_ABS, x)));
}

static porta_tensor *log_sigmoid_output_of(aten_scope *s, const porta_value *self) {
    porta_dtype dtype = float_dtype(s, "log_sigmoid_forward", self, self);
    porta_tensor *x = in(s, self, dtype);
    porta_tensor *y = scope_binary(s, PORTA_SUB, scope_binary_number(s, PORTA_MINIMUM, x, 0),
                                   scope_unary(s, PORTA_LOG1P, log_sigmoid_buffer(s, x)));
    return as_dtype(s, y, dtype);
}

static porta_tensor *log_sigmoid_buffer_of(aten_scope *s, const porta_value *self) {
    porta_dtype dtype = float_dtype(s, "log_sigmoid_forward", self, self);
    return as_dtype(s, log_sigmoid_buffer(s, in(s, self, dtype)), dtype);
}

/* (output, buffer), each new or written into the given output and buffer */
static porta_status *log_sigmoid_forward(const porta_value *self, porta_tensor *output,
                                         porta_tensor *buffer, aten_results *r) {
    aten_scope s = {.device = ew_device(self, self, NULL)};
    porta_status *status = ew_finish(&s, log_sigmoid_output_of(&s, self), output, r);
    if (status) return status;
    aten_scope b = {.device = s.device};
    return ew_finish(&b, log_sigmoid_buffer_of(&b, self), buffer, r);
}

static porta_status *op_log_sigmoid_forward(const porta_value *args, aten_results *r) {
    return log_sigmoid_forward(&args[0], NULL, NULL, r);
}
static porta_status *op_log_sigmoid_forward_output(const porta_value *args, aten_results *r) {
    return log_sigmoid_forward(&args[0], args[1].tensor, args[2].tensor, r);
}

/* grad * (x < 0 ? 1 - z / (1 + z) : z / (1 + z)) with z the buffer
 * exp(-|x|), in PyTorch's CPU order of operations */
static porta_tensor *log_sigmoid_backward_of(aten_scope *s, const porta_value *args) {
    porta_dtype dtype = float_dtype(s, "log_sigmoid_backward", &args[0], &args[1]);
    porta_tensor *grad = in(s, &args[0], dtype), *x = in(s, &args[1], dtype);
    porta_tensor *z = in(s, &args[2], dtype);
    porta_tensor *q = scope_binary(s, PORTA_DIV, z, plus(s, z, 1));
    porta_tensor *derivative = scope_where(s, scope_binary_number(s, PORTA_LT, x, 0), minus_from(s, 1, q), q);
    return as_dtype(s, mul(s, derivative, grad), dtype);
}

/* x == -inf (isneginf) or x == inf (isposinf); never for integers or bool */
static porta_tensor *is_infinity_of(aten_scope *s, const porta_value *args, double infinity,
                                    porta_tensor *out) {
    if (out && out->dtype != PORTA_BOOL)
        return scope_fail(s, porta_error(PORTA_ERR_DTYPE, "%s does not support non-boolean outputs.",
                                         infinity < 0 ? "isneginf" : "isposinf"));
    porta_dtype dtype = ew_result_type(&args[0], &args[0], NULL);
    porta_tensor *x = scope_operand(s, &args[0], dtype);
    if (!porta_dtype_is_float(dtype)) return scope_binary(s, PORTA_NE, x, x);
    return scope_binary_number(s, PORTA_EQ, x, infinity);
}

COMPOSED_KERNEL(op_log_sigmoid_backward, log_sigmoid_backward_of(&s, args), EW_NEW, 3)
COMPOSED_KERNEL(op_log_sigmoid_backward_grad_input, log_sigmoid_backward_of(&s, args), EW_OUT, 4)
COMPOSED_KERNEL(op_isneginf, is_infinity_of(&s, args, -INFINITY, NULL), EW_NEW, 1)
COMPOSED_KERNEL(op_isneginf_out, is_infinity_of(&s, args, -INFINITY, args[1].tensor), EW_OUT, 2)
COMPOSED_KERNEL(op_isposinf, is_infinity_of(&s, args, INFINITY, NULL), EW_NEW, 1)
COMPOSED_KERNEL(op_isposinf_out, is_infinity_of(&s, args, INFINITY, args[1].tensor), EW_OUT, 2)
COMPOSED_KERNEL(op_relu, relu_of(&s, &args[0]), EW_NEW, 1)
COMPOSED_KERNEL(op_relu_inplace, relu_of(&s, &args[0]), EW_INPLACE, 1)
COMPOSED_KERNEL(op_threshold, threshold_of(&s, args), EW_NEW, 3)
COMPOSED_KERNEL(op_threshold_inplace, threshold_of(&s, args), EW_INPLACE, 3)
COMPOSED_KERNEL(op_threshold_backward, threshold_backward_of(&s, args), EW_NEW, 3)
COMPOSED_KERNEL(op_hardtanh, hardtanh_of(&s, args), EW_NEW, 3)
COMPOSED_KERNEL(op_hardtanh_inplace, hardtanh_of(&s, args), EW_INPLACE, 3)
COMPOSED_KERNEL(op_hardtanh_backward, hardtanh_backward_of(&s, args), EW_NEW, 4)
COMPOSED_KERNEL(op_leaky_relu, leaky_relu_of(&s, args), EW_NEW, 2)
COMPOSED_KERNEL(op_leaky_relu_inplace, leaky_relu_of(&s, args), EW_INPLACE, 2)
COMPOSED_KERNEL(op_leaky_relu_backward, leaky_relu_backward_of(&s, args), EW_NEW, 4)
COMPOSED_KERNEL(op_elu, elu_of(&s, args), EW_NEW, 4)
COMPOSED_KERNEL(op_elu_inplace, elu_of(&s, args), EW_INPLACE, 4)
COMPOSED_KERNEL(op_elu_backward, elu_backward_of(&s, args), EW_NEW, 6)
COMPOSED_KERNEL(op_gelu, gelu_of(&s, args), EW_NEW, 2)
COMPOSED_KERNEL(op_gelu_inplace, gelu_of(&s, args), EW_INPLACE, 2)
COMPOSED_KERNEL(op_gelu_backward, gelu_backward_of(&s, args), EW_NEW, 3)
COMPOSED_KERNEL(op_silu, silu_of(&s, args), EW_NEW, 1)
COMPOSED_KERNEL(op_silu_inplace, silu_of(&s, args), EW_INPLACE, 1)
COMPOSED_KERNEL(op_silu_backward, silu_backward_of(&s, args), EW_NEW, 2)
COMPOSED_KERNEL(op_sigmoid_backward, sigmoid_backward_of(&s, args), EW_NEW, 2)
COMPOSED_KERNEL(op_tanh_backward, tanh_backward_of(&s, args), EW_NEW, 2)
COMPOSED_KERNEL(op_softplus, softplus_of(&s, args), EW_NEW, 3)
COMPOSED_KERNEL(op_softplus_backward, softplus_backward_of(&s, args), EW_NEW, 4)
COMPOSED_KERNEL(op_hardsigmoid, hardsigmoid_of(&s, args), EW_NEW, 1)
COMPOSED_KERNEL(op_hardsigmoid_inplace, hardsigmoid_of(&s, args), EW_INPLACE, 1)
COMPOSED_KERNEL(op_hardsigmoid_backward, hardsigmoid_backward_of(&s, args), EW_NEW, 2)
COMPOSED_KERNEL(op_hardswish, hardswish_of(&s, args), EW_NEW, 1)
COMPOSED_KERNEL(op_hardswish_inplace, hardswish_of(&s, args), EW_INPLACE, 1)
COMPOSED_KERNEL(op_hardswish_backward, hardswish_backward_of(&s, args), EW_NEW, 2)
COMPOSED_KERNEL(op_mish, mish_of(&s, args), EW_NEW, 1)
COMPOSED_KERNEL(op_mish_inplace, mish_of(&s, args), EW_INPLACE, 1)
COMPOSED_KERNEL(op_mish_backward, mish_backward_of(&s, args), EW_NEW, 2)
COMPOSED_KERNEL(op_logit, logit_of(&s, args), EW_NEW, 2)
COMPOSED_KERNEL(op_logit_inplace, logit_of(&s, args), EW_INPLACE, 2)
COMPOSED_KERNEL(op_logit_backward, logit_backward_of(&s, args), EW_NEW, 3)

const aten_op aten_elementwise_activation_ops[] = {
    {"relu", "N", op_relu},
    {"relu_", "N", op_relu_inplace},
    {"threshold", "Nss", op_threshold},
    {"threshold_", "Nss", op_threshold_inplace},
    {"threshold_backward", "NNs", op_threshold_backward},
    {"hardtanh", "Nss", op_hardtanh},
    {"hardtanh_", "Nss", op_hardtanh_inplace},
    {"hardtanh_backward", "NNss", op_hardtanh_backward},
    {"leaky_relu", "Ns", op_leaky_relu},
    {"leaky_relu_", "Ns", op_leaky_relu_inplace},
    {"leaky_relu_backward", "NNsb", op_leaky_relu_backward},
    {"elu", "Nsss", op_elu},
    {"elu_", "Nsss", op_elu_inplace},
    {"elu_backward", "NsssbN", op_elu_backward},
    {"gelu", "Nr", op_gelu},
    {"gelu_", "Nr", op_gelu_inplace},
    {"gelu_backward", "NNr", op_gelu_backward},
    {"silu", "N", op_silu},
    {"silu_", "N", op_silu_inplace},
    {"silu_backward", "NN", op_silu_backward},
    {"sigmoid_backward", "NN", op_sigmoid_backward},
    {"tanh_backward", "NN", op_tanh_backward},
    {"softplus", "Nss", op_softplus},
    {"softplus_backward", "NNss", op_softplus_backward},
    {"hardsigmoid", "N", op_hardsigmoid},
    {"hardsigmoid_", "N", op_hardsigmoid_inplace},
    {"hardsigmoid_backward", "NN", op_hardsigmoid_backward},
    {"hardswish", "N", op_hardswish},
    {"hardswish_", "N", op_hardswish_inplace},
    {"hardswish_backward", "NN", op_hardswish_backward},
    {"mish", "N", op_mish},
    {"mish_", "N", op_mish_inplace},
    {"mish_backward", "NN", op_mish_backward},
    {"logit", "Ng", op_logit},
    {"logit_", "Ng", op_logit_inplace},
    {"logit_backward", "NNg", op_logit_backward},
    {"log_sigmoid_forward", "N", op_log_sigmoid_forward},
    {"log_sigmoid_forward.output", "NTT", op_log_sigmoid_forward_output},
    {"log_sigmoid_backward", "NNN", op_log_sigmoid_backward},
    {"log_sigmoid_backward.grad_input", "NNNT", op_log_sigmoid_backward_grad_input},
    {"isneginf", "N", op_isneginf},
    {"isneginf.out", "NT", op_isneginf_out},
    {"isposinf", "N", op_isposinf},
    {"isposinf.out", "NT", op_isposinf_out},
    {NULL, NULL, NULL},
};
