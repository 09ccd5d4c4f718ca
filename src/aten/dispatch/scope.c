/* The aten composition scope: every primitive call's result is held and
 * released at the end; the first failure stops the rest. */
#include "aten/dispatch/scope.h"

#include "aten/dispatch/op_reuse.h"
#include "core/status.h"
#include "runtime/tensor.h"

porta_tensor *scope_fail(aten_scope *s, porta_status *status) {
    if (!s->status) s->status = status;
    else porta_status_free(status);
    return NULL;
}

porta_tensor *scope_hold(aten_scope *s, porta_status *status, porta_tensor *t) {
    if (status) return scope_fail(s, status);
    if (s->count == ATEN_SCOPE_CAP) {
        porta_tensor_release(t);
        return scope_fail(s, porta_error(PORTA_ERR_INTERNAL,
                                         "aten: a composition holds more than %d tensors",
                                         ATEN_SCOPE_CAP));
    }
    s->held[s->count++] = t;
    return t;
}

porta_status *scope_end(aten_scope *s) {
    for (int i = 0; i < s->count; i++) porta_tensor_release(s->held[i]);
    s->count = 0;
    porta_status *status = s->status;
    s->status = NULL;
    return status;
}

void scope_push(aten_scope *s, aten_results *results, porta_tensor *t) {
    if (s->status) return;
    if (!t) {
        scope_fail(s, porta_error(PORTA_ERR_INTERNAL, "aten: missing result"));
        return;
    }
    porta_tensor_retain(t);
    porta_status *status = aten_push_tensor(results, t);
    if (status) scope_fail(s, status);
}

void scope_push_none(aten_scope *s, aten_results *results) {
    if (s->status) return;
    porta_status *status = aten_push_none(results);
    if (status) scope_fail(s, status);
}

void scope_push_into(aten_scope *s, aten_results *results, const porta_tensor *result,
                     porta_tensor *target) {
    scope_copy(s, result, target);
    scope_push(s, results, target);
}

porta_status *scope_run(aten_composition of, const porta_value *args, porta_tensor *into,
                        aten_results *results) {
    aten_scope s;
    scope_begin(&s);
    porta_tensor *result = of(&s, args);
    if (into) scope_push_into(&s, results, result, into);
    else scope_push(&s, results, result);
    return scope_end(&s);
}

int64_t scope_read_int(aten_scope *s, const porta_tensor *x) {
    int64_t value = 0;
    porta_tensor *wide = scope_cast(s, x, PORTA_I64);
    porta_status *status = wide ? porta_tensor_to_host(wide, &value, sizeof value) : NULL;
    if (status) scope_fail(s, status);
    return value;
}

/* One step: nothing when `guard` fails, else the call (which writes `out`)
 * and its outcome held. The call runs before `out` is read. */
#define STEP(guard, call)                         \
    do {                                          \
        if (!(guard)) return NULL;                \
        porta_tensor *out = NULL;                 \
        porta_status *step_status_ = (call);      \
        return scope_hold(s, step_status_, out);  \
    } while (0)

/* Guards the start of each step: false after a failure or for a NULL input
 * (which only a failed earlier step produces). */
static bool ready(aten_scope *s, const porta_tensor *a, const porta_tensor *b) {
    return !s->status && a && b;
}

porta_tensor *scope_unary(aten_scope *s, porta_unary_op op, const porta_tensor *x) {
    STEP(ready(s, x, x), porta_unary(op, x, &out));
}

porta_tensor *scope_binary(aten_scope *s, porta_binary_op op, const porta_tensor *a,
                           const porta_tensor *b) {
    STEP(ready(s, a, b), porta_binary(op, a, b, &out));
}

porta_tensor *scope_ternary(aten_scope *s, porta_ternary_op op, const porta_tensor *a,
                            const porta_tensor *b, const porta_tensor *c) {
    STEP(ready(s, a, b) && c, porta_ternary(op, a, b, c, &out));
}

porta_tensor *scope_binary_number(aten_scope *s, porta_binary_op op, const porta_tensor *x,
                                  double value) {
    if (!ready(s, x, x)) return NULL;
    return scope_binary(s, op, x, scope_full(s, x->buffer->device, x->dtype, 0, NULL, value));
}

porta_tensor *scope_binary_into(aten_scope *s, porta_binary_op op, const porta_tensor *a,
                                const porta_tensor *b, porta_tensor *into) {
    if (!into) return scope_binary(s, op, a, b);
    if (!ready(s, a, b)) return NULL;
    porta_status *status = porta_binary(op, a, b, &into);
    return status ? scope_fail(s, status) : into;
}

porta_tensor *scope_ternary_into(aten_scope *s, porta_ternary_op op, const porta_tensor *a,
                                 const porta_tensor *b, const porta_tensor *c, porta_tensor *into) {
    if (!into) return scope_ternary(s, op, a, b, c);
    if (!ready(s, a, b) || !c) return NULL;
    porta_status *status = porta_ternary(op, a, b, c, &into);
    return status ? scope_fail(s, status) : into;
}

porta_tensor *scope_where(aten_scope *s, const porta_tensor *cond, const porta_tensor *a,
                          const porta_tensor *b) {
    return scope_ternary(s, PORTA_WHERE, cond, a, b);
}

porta_tensor *scope_number_binary(aten_scope *s, porta_binary_op op, double value,
                                  const porta_tensor *x) {
    if (!ready(s, x, x)) return NULL;
    return scope_binary(s, op, scope_full(s, x->buffer->device, x->dtype, 0, NULL, value), x);
}

porta_tensor *scope_where_number(aten_scope *s, const porta_tensor *cond, double value,
                                 const porta_tensor *x) {
    if (!ready(s, cond, x)) return NULL;
    return scope_where(s, cond, scope_full(s, x->buffer->device, x->dtype, 0, NULL, value), x);
}

porta_tensor *scope_number(aten_scope *s, porta_dtype dtype, double value) {
    return scope_full(s, s->device, dtype, 0, NULL, value);
}

porta_tensor *scope_operand(aten_scope *s, const porta_value *v, porta_dtype dtype) {
    if (s->status) return NULL;
    if (v->kind == PORTA_VALUE_TENSOR && v->tensor->dtype == dtype) return v->tensor;
    if (v->kind == PORTA_VALUE_TENSOR) return scope_cast(s, v->tensor, dtype);
    return scope_number(s, dtype, aten_number(v));
}

porta_tensor *scope_cast(aten_scope *s, const porta_tensor *x, porta_dtype dtype) {
    STEP(ready(s, x, x), porta_cast(x, dtype, &out));
}

porta_tensor *scope_as_dtype(aten_scope *s, const porta_tensor *x, porta_dtype dtype) {
    if (!ready(s, x, x) || x->dtype != dtype) return scope_cast(s, x, dtype);
    porta_tensor_retain((porta_tensor *)x);
    return scope_hold(s, NULL, (porta_tensor *)x);
}

porta_tensor *scope_full(aten_scope *s, porta_device *device, porta_dtype dtype, int rank,
                         const int64_t *sizes, double value) {
    STEP(!s->status, porta_tensor_full(device, dtype, rank, sizes, value, &out));
}

porta_tensor *scope_reduce(aten_scope *s, porta_reduce_op op, const porta_tensor *x,
                           const int *axes,
                           int axis_count, bool keepdim) {
    STEP(ready(s, x, x), porta_reduce(op, x, axes, axis_count, keepdim, &out));
}

porta_tensor *scope_mean(aten_scope *s, const porta_tensor *x, const int *axes, int axis_count) {
    if (!ready(s, x, x)) return NULL;
    double count = 1;
    for (int i = 0; i < axis_count; i++) count *= (double)x->sizes[axes[i]];
    porta_tensor *sum = scope_reduce(s, PORTA_REDUCE_SUM, x, axes, axis_count, true);
    return scope_binary_number(s, PORTA_DIV, sum, count);
}

porta_tensor *scope_reshape(aten_scope *s, const porta_tensor *x, int rank, const int64_t *sizes) {
    STEP(ready(s, x, x), porta_reshape(x, rank, sizes, &out));
}

porta_tensor *scope_permute(aten_scope *s, const porta_tensor *x, const int *dims) {
    STEP(ready(s, x, x), porta_permute(x, dims, &out));
}

porta_tensor *scope_expand(aten_scope *s, const porta_tensor *x, int rank, const int64_t *sizes) {
    STEP(ready(s, x, x), porta_expand(x, rank, sizes, &out));
}

porta_tensor *scope_slice(aten_scope *s, const porta_tensor *x, int axis, int64_t start,
                          int64_t stop,
                          int64_t step) {
    STEP(ready(s, x, x), porta_slice(x, axis, start, stop, step, &out));
}

porta_tensor *scope_flip(aten_scope *s, const porta_tensor *x, const int *axes, int axis_count) {
    STEP(ready(s, x, x), porta_flip(x, axes, axis_count, &out));
}

porta_tensor *scope_pad(aten_scope *s, const porta_tensor *x, const int64_t *pads, double value) {
    STEP(ready(s, x, x), porta_pad(x, pads, value, &out));
}

porta_tensor *scope_matmul(aten_scope *s, const porta_tensor *a, const porta_tensor *b) {
    STEP(ready(s, a, b), porta_matmul(a, b, &out));
}

porta_tensor *scope_conv(aten_scope *s, const porta_tensor *x, const porta_tensor *w,
                         const porta_tensor *bias, const porta_conv_params *params) {
    STEP(ready(s, x, w), porta_conv(x, w, bias, params, &out));
}

porta_tensor *scope_conv_weight_grad(aten_scope *s, const porta_tensor *x, const porta_tensor *gy,
                                     const porta_conv_params *params, const int64_t *kernel) {
    STEP(ready(s, x, gy), porta_conv_weight_grad(x, gy, params, kernel, &out));
}

porta_tensor *scope_conv_input_grad(aten_scope *s, const porta_tensor *gy, const porta_tensor *w,
                                    const porta_conv_params *params, const int64_t *input_sizes) {
    STEP(ready(s, gy, w), porta_conv_input_grad(gy, w, params, input_sizes, &out));
}

porta_tensor *scope_gather(aten_scope *s, const porta_tensor *x, int axis,
                           const porta_tensor *index) {
    STEP(ready(s, x, index), porta_gather(x, axis, index, &out));
}

porta_tensor *scope_max_pool_indices(aten_scope *s, const porta_tensor *x, const int64_t *kernel,
                                     const int64_t *stride, const int64_t *padding,
                                     const int64_t *dilation, porta_pool_rounding rounding) {
    STEP(ready(s, x, x),
         porta_max_pool_indices(x, kernel, stride, padding, dilation, rounding, &out));
}

porta_tensor *scope_index_select(aten_scope *s, const porta_tensor *x, int axis,
                                 const porta_tensor *index) {
    STEP(ready(s, x, index), porta_index_select(x, axis, index, &out));
}

porta_tensor *scope_scatter(aten_scope *s, const porta_tensor *x, int axis,
                            const porta_tensor *index,
                            const porta_tensor *src, porta_scatter_reduce reduce) {
    STEP(ready(s, x, index) && src, porta_scatter(x, axis, index, src, reduce, &out));
}

porta_tensor *scope_restride(aten_scope *s, const porta_tensor *x, int rank, const int64_t *sizes,
                             const int64_t *strides) {
    STEP(ready(s, x, x), rt_tensor_restride(x, rank, sizes, strides, x->offset, &out));
}

porta_tensor *scope_arange(aten_scope *s, porta_device *device, int64_t n) {
    STEP(!s->status, porta_tensor_arange(device, PORTA_I64, 0, (double)n, 1, &out));
}

porta_tensor *scope_from_host(aten_scope *s, porta_device *device, int rank, const int64_t *sizes,
                              const double *values) {
    STEP(!s->status, porta_tensor_from_host(device, PORTA_F64, rank, sizes, values, &out));
}

porta_tensor *scope_contiguous(aten_scope *s, const porta_tensor *x) {
    if (!ready(s, x, x)) return NULL;
    porta_tensor *out = scope_full(s, x->buffer->device, x->dtype, x->rank, x->sizes, 0);
    scope_copy(s, x, out);
    return out;
}

void scope_copy(aten_scope *s, const porta_tensor *src, porta_tensor *dst) {
    if (ready(s, src, dst)) {
        porta_status *status = porta_copy(src, dst);
        if (status) scope_fail(s, status);
    }
}

porta_tensor *scope_call(aten_scope *s, const char *name, const porta_value *args,
                         int arg_count) {
    STEP(!s->status, aten_call_op(name, args, arg_count, &out));
}
