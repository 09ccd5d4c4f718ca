/* The fused optimizer steps torch.optim runs with fused=True: Adam, AdamW
 * and SGD, each updating a list of parameters and their state in place,
 * with PyTorch's CPU kernels' arithmetic (half types in float32, rounded
 * once when stored). With grad_scale the gradients are first unscaled (and
 * stored unscaled); with found_inf set the step does nothing, as GradScaler
 * asks after a step with non-finite gradients. */
#include "aten/dispatch/scope.h"
#include "aten/reduce/common.h"
#include "core/status.h"
#include "runtime/tensor.h"

/* The value of a one-element tensor argument, read to the host: the
 * learning rate of the .tensor_lr variants and found_inf, which the CPU
 * kernels also read once per call. */
static porta_status *read_scalar(const porta_tensor *t, const char *name, double *out) {
    if (porta_tensor_numel(t) != 1)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "%s must be a 1-element tensor, but got %lld elements", name,
                           (long long)porta_tensor_numel(t));
    porta_tensor *wide = NULL;
    PORTA_TRY(porta_cast(t, PORTA_F64, &wide));
    porta_status *status = porta_tensor_to_host(wide, out, sizeof *out);
    porta_tensor_release(wide);
    return status;
}

/* Whether found_inf (an optional argument) says to skip the step. */
static porta_status *step_skipped(const porta_value *found_inf, bool *skipped) {
    *skipped = false;
    if (found_inf->kind != PORTA_VALUE_TENSOR) return NULL;
    double flag;
    PORTA_TRY(read_scalar(found_inf->tensor, "found_inf", &flag));
    *skipped = flag == 1.0;
    return NULL;
}

static bool same_shape(const porta_tensor *a, const porta_tensor *b) {
    if (a->rank != b->rank) return false;
    for (int d = 0; d < a->rank; d++)
        if (a->sizes[d] != b->sizes[d]) return false;
    return true;
}

/* Every list has one tensor per parameter, each of the parameter's shape
 * and a floating-point dtype. */
static porta_status *check_lists(const char *op, const porta_value *params,
                                 const porta_value *const *lists, const char *const *names,
                                 int list_count) {
    int count = params->tensors.count;
    for (int l = 0; l < list_count; l++)
        if (lists[l]->tensors.count != count)
            return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                               "%s: %s holds %d tensors, expected %d (one per parameter)", op,
                               names[l], lists[l]->tensors.count, count);
    for (int i = 0; i < count; i++) {
        const porta_tensor *p = params->tensors.items[i];
        if (!porta_dtype_is_float(p->dtype))
            return porta_error(PORTA_ERR_DTYPE,
                               "%s: parameter %d must be a floating-point tensor, but got %s", op,
                               i, porta_dtype_name(p->dtype));
        for (int l = 0; l < list_count; l++) {
            const porta_tensor *t = lists[l]->tensors.items[i];
            if (!same_shape(t, p))
                return porta_error(PORTA_ERR_SHAPE,
                                   "%s: %s[%d] must have the shape of parameter %d", op,
                                   names[l], i, i);
        }
    }
    return NULL;
}

/* Writes value into a state tensor and returns what the tensor now holds,
 * in value's dtype: the CPU kernels read a state back after storing it, so
 * a half-precision state enters the rest of the step rounded. */
static porta_tensor *store(aten_scope *s, porta_tensor *value, porta_tensor *state) {
    scope_copy(s, value, state);
    if (!value || value->dtype == state->dtype) return value;
    return scope_cast(s, scope_cast(s, value, state->dtype), value->dtype);
}

/* store(op(a, b), state), computed straight into the state when it has the
 * compute dtype (a's), with no temporary and no copy; a and b may be the
 * state itself (the same element in the same place). */
static porta_tensor *store_binary(aten_scope *s, porta_binary_op op, porta_tensor *a,
                                  porta_tensor *b, porta_tensor *state) {
    if (a && a->dtype == state->dtype) return scope_binary_into(s, op, a, b, state);
    return store(s, scope_binary(s, op, a, b), state);
}

/* The gradient in the compute dtype, unscaled (and stored unscaled) when
 * a grad_scale is given, negated for maximize. */
static porta_tensor *prepared_grad(aten_scope *s, porta_tensor *grad, const porta_value *grad_scale,
                                   porta_dtype compute, bool maximize) {
    porta_tensor *g = scope_as_dtype(s, grad, compute);
    if (grad_scale->kind == PORTA_VALUE_TENSOR) {
        porta_tensor *scale = scope_reshape(s, grad_scale->tensor, 0, NULL);
        g = store_binary(s, PORTA_DIV, g, scope_as_dtype(s, scale, compute), grad);
    }
    return maximize ? scope_unary(s, PORTA_NEG, g) : g;
}

typedef struct adam_args {
    double lr, beta1, beta2, weight_decay, eps;
    bool amsgrad, maximize, decoupled; /* decoupled: AdamW's weight decay */
} adam_args;

/* One parameter's Adam step; `step` is its state_steps tensor (already
 * advanced by the optimizer). The bias corrections 1 - beta^step are
 * computed on the device in float64, as the CPU kernel computes them in
 * double, so the step count is never read back. */
static porta_status *adam_one(const adam_args *o, porta_tensor *param, porta_tensor *grad,
                              porta_tensor *exp_avg, porta_tensor *exp_avg_sq,
                              porta_tensor *max_exp_avg_sq, const porta_tensor *step,
                              const porta_value *grad_scale) {
    porta_dtype compute = aten_compute_dtype(param->dtype);
    aten_scope s;
    scope_begin(&s);
    porta_tensor *g = prepared_grad(&s, grad, grad_scale, compute, o->maximize);
    porta_tensor *p = scope_as_dtype(&s, param, compute);
    if (o->weight_decay != 0) {
        if (o->decoupled)
            p = scope_binary_number(&s, PORTA_MUL, p, 1 - o->lr * o->weight_decay);
        else
            g = scope_binary(&s, PORTA_ADD, g, scope_binary_number(&s, PORTA_MUL, p, o->weight_decay));
    }
    porta_tensor *m = store_binary(
        &s, PORTA_ADD, scope_binary_number(&s, PORTA_MUL, scope_as_dtype(&s, exp_avg, compute), o->beta1),
        scope_binary_number(&s, PORTA_MUL, g, 1 - o->beta1), exp_avg);
    porta_tensor *v = store_binary(
        &s, PORTA_ADD, scope_binary_number(&s, PORTA_MUL, scope_as_dtype(&s, exp_avg_sq, compute), o->beta2),
        scope_binary_number(&s, PORTA_MUL, scope_binary(&s, PORTA_MUL, g, g), 1 - o->beta2), exp_avg_sq);
    porta_tensor *steps = scope_cast(&s, scope_reshape(&s, step, 0, NULL), PORTA_F64);
    porta_tensor *correction1 =
        scope_number_binary(&s, PORTA_SUB, 1, scope_number_binary(&s, PORTA_POW, o->beta1, steps));
    porta_tensor *correction2 =
        scope_number_binary(&s, PORTA_SUB, 1, scope_number_binary(&s, PORTA_POW, o->beta2, steps));
    porta_tensor *step_size = scope_cast(&s, scope_number_binary(&s, PORTA_DIV, o->lr, correction1), compute);
    porta_tensor *correction2_sqrt = scope_cast(&s, scope_unary(&s, PORTA_SQRT, correction2), compute);
    porta_tensor *second = v;
    if (o->amsgrad)
        second = store_binary(&s, PORTA_MAXIMUM, scope_as_dtype(&s, max_exp_avg_sq, compute), v,
                              max_exp_avg_sq);
    porta_tensor *denom = scope_binary_number(
        &s, PORTA_ADD, scope_binary(&s, PORTA_DIV, scope_unary(&s, PORTA_SQRT, second), correction2_sqrt),
        o->eps);
    porta_tensor *update = scope_binary(&s, PORTA_DIV, scope_binary(&s, PORTA_MUL, step_size, m), denom);
    store_binary(&s, PORTA_SUB, p, update, param);
    return scope_end(&s);
}

/* _fused_adam_ / _fused_adamw_ (self, grads, exp_avgs, exp_avg_sqs,
 * max_exp_avg_sqs, state_steps, lr, beta1, beta2, weight_decay, eps,
 * amsgrad, maximize, grad_scale, found_inf); lr a float or a tensor. */
static porta_status *fused_adam(const porta_value *a, bool decoupled) {
    const char *op = decoupled ? "_fused_adamw_" : "_fused_adam_";
    adam_args o = {.beta1 = a[7].f, .beta2 = a[8].f, .weight_decay = a[9].f, .eps = a[10].f,
                   .amsgrad = a[11].b, .maximize = a[12].b, .decoupled = decoupled};
    if (a[6].kind == PORTA_VALUE_TENSOR) PORTA_TRY(read_scalar(a[6].tensor, "lr", &o.lr));
    else o.lr = a[6].f;
    const porta_value *lists[4] = {&a[1], &a[2], &a[3], &a[4]};
    const char *const names[4] = {"grads", "exp_avgs", "exp_avg_sqs", "max_exp_avg_sqs"};
    PORTA_TRY(check_lists(op, &a[0], lists, names, o.amsgrad ? 4 : 3));
    if (a[5].tensors.count != a[0].tensors.count)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "%s: state_steps holds %d tensors, expected %d (one per parameter)",
                           op, a[5].tensors.count, a[0].tensors.count);
    for (int i = 0; i < a[5].tensors.count; i++)
        if (porta_tensor_numel(a[5].tensors.items[i]) != 1)
            return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                               "%s: state_steps[%d] must be a 1-element tensor, but got %lld "
                               "elements", op, i, (long long)porta_tensor_numel(a[5].tensors.items[i]));
    bool skipped;
    PORTA_TRY(step_skipped(&a[14], &skipped));
    for (int i = 0; i < a[0].tensors.count && !skipped; i++)
        PORTA_TRY(adam_one(&o, a[0].tensors.items[i], a[1].tensors.items[i], a[2].tensors.items[i],
                           a[3].tensors.items[i], o.amsgrad ? a[4].tensors.items[i] : NULL,
                           a[5].tensors.items[i], &a[13]));
    return NULL;
}

static porta_status *fused_adam_(const porta_value *a, aten_results *r) {
    (void)r; /* returns () */
    return fused_adam(a, false);
}

static porta_status *fused_adamw_(const porta_value *a, aten_results *r) {
    (void)r;
    return fused_adam(a, true);
}

typedef struct sgd_args {
    double weight_decay, momentum, lr, dampening;
    bool nesterov, maximize, first_step;
} sgd_args;

/* One parameter's SGD step; `buffer` is its momentum buffer, NULL when
 * momentum is 0. */
static porta_status *sgd_one(const sgd_args *o, porta_tensor *param, porta_tensor *grad,
                             porta_tensor *buffer, const porta_value *grad_scale) {
    porta_dtype compute = aten_compute_dtype(param->dtype);
    aten_scope s;
    scope_begin(&s);
    porta_tensor *g = prepared_grad(&s, grad, grad_scale, compute, o->maximize);
    porta_tensor *p = scope_as_dtype(&s, param, compute);
    if (o->weight_decay != 0)
        g = scope_binary(&s, PORTA_ADD, g, scope_binary_number(&s, PORTA_MUL, p, o->weight_decay));
    if (buffer) {
        porta_tensor *b = o->first_step
                              ? store(&s, g, buffer)
                              : store_binary(&s, PORTA_ADD,
                                             scope_binary_number(&s, PORTA_MUL, scope_as_dtype(&s, buffer, compute), o->momentum),
                                             scope_binary_number(&s, PORTA_MUL, g, 1 - o->dampening), buffer);
        g = o->nesterov ? scope_binary(&s, PORTA_ADD, g, scope_binary_number(&s, PORTA_MUL, b, o->momentum))
                        : b;
    }
    store_binary(&s, PORTA_SUB, p, scope_binary_number(&s, PORTA_MUL, g, o->lr), param);
    return scope_end(&s);
}

/* _fused_sgd_(self, grads, momentum_buffer_list, weight_decay, momentum,
 * lr, dampening, nesterov, maximize, is_first_step, grad_scale,
 * found_inf): momentum_buffer_list is empty when momentum is 0. */
static porta_status *fused_sgd_(const porta_value *a, aten_results *r) {
    (void)r; /* returns () */
    sgd_args o = {.weight_decay = a[3].f, .momentum = a[4].f, .dampening = a[6].f,
                  .nesterov = a[7].b, .maximize = a[8].b, .first_step = a[9].b};
    if (a[5].kind == PORTA_VALUE_TENSOR) PORTA_TRY(read_scalar(a[5].tensor, "lr", &o.lr));
    else o.lr = a[5].f;
    bool has_buffers = o.momentum != 0;
    const porta_value *lists[2] = {&a[1], &a[2]};
    const char *const names[2] = {"grads", "momentum_buffer_list"};
    PORTA_TRY(check_lists("_fused_sgd_", &a[0], lists, names, has_buffers ? 2 : 1));
    bool skipped;
    PORTA_TRY(step_skipped(&a[11], &skipped));
    for (int i = 0; i < a[0].tensors.count && !skipped; i++)
        PORTA_TRY(sgd_one(&o, a[0].tensors.items[i], a[1].tensors.items[i],
                          has_buffers ? a[2].tensors.items[i] : NULL, &a[10]));
    return NULL;
}

const aten_op aten_optim_fused_ops[] = {
    {"_fused_adam_", "LLLLLLfffffbbtt", fused_adam_},
    {"_fused_adam_.tensor_lr", "LLLLLLTffffbbtt", fused_adam_},
    {"_fused_adamw_", "LLLLLLfffffbbtt", fused_adamw_},
    {"_fused_adamw_.tensor_lr", "LLLLLLTffffbbtt", fused_adamw_},
    {"_fused_sgd_", "LLLffffbbbtt", fused_sgd_},
    {"_fused_sgd_.tensor_lr", "LLLffTfbbbtt", fused_sgd_},
    {NULL, NULL, NULL},
};
