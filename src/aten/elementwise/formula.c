/* The formula scope of the elementwise aten files: each step runs one
 * primitive and keeps its result until ew_finish, and the first error
 * turns every later step into a no-op. */
#include <string.h>

#include "aten/elementwise/elementwise.h"
#include "core/status.h"
#include "core/tensor.h"
#include "graph/infer.h"

porta_tensor *ew_fail(ew_scope *s, porta_status *status) { return nn_fail(&s->held, status); }

/* Takes ownership of what a primitive returned through `made` (call the
 * primitive first: argument evaluation order is unspecified in C). */
static porta_tensor *hold(ew_scope *s, porta_status *status, porta_tensor *made) {
    return nn_hold(&s->held, status, made);
}

static bool ready(const ew_scope *s, const porta_tensor *a, const porta_tensor *b,
                  const porta_tensor *c) {
    return !s->held.status && a && b && c;
}

porta_tensor *ew_number(ew_scope *s, porta_dtype dtype, double value) {
    if (s->held.status) return NULL;
    porta_tensor *made = NULL;
    porta_status *status = porta_tensor_full(s->device, dtype, 0, NULL, value, &made);
    return hold(s, status, made);
}

porta_tensor *ew_unary(ew_scope *s, porta_unary_op op, const porta_tensor *x) {
    if (!ready(s, x, x, x)) return NULL;
    porta_tensor *made = NULL;
    porta_status *status = porta_unary(op, x, &made);
    return hold(s, status, made);
}

porta_tensor *ew_binary(ew_scope *s, porta_binary_op op, const porta_tensor *a,
                        const porta_tensor *b) {
    if (!ready(s, a, b, b)) return NULL;
    porta_tensor *made = NULL;
    porta_status *status = porta_binary(op, a, b, &made);
    return hold(s, status, made);
}

porta_tensor *ew_binary_into(ew_scope *s, porta_binary_op op, const porta_tensor *a,
                             const porta_tensor *b, porta_tensor *into) {
    if (!into) return ew_binary(s, op, a, b);
    if (!ready(s, a, b, b)) return NULL;
    porta_status *status = porta_binary(op, a, b, &into);
    return status ? ew_fail(s, status) : into;
}

porta_tensor *ew_ternary_into(ew_scope *s, porta_ternary_op op, const porta_tensor *a,
                              const porta_tensor *b, const porta_tensor *c, porta_tensor *into) {
    if (!ready(s, a, b, c)) return NULL;
    porta_tensor *made = into;
    porta_status *status = porta_ternary(op, a, b, c, &made);
    if (status) return ew_fail(s, status);
    return into ? into : hold(s, NULL, made);
}

porta_tensor *ew_binary_number(ew_scope *s, porta_binary_op op, const porta_tensor *a, double b) {
    if (!ready(s, a, a, a)) return NULL;
    return ew_binary(s, op, a, ew_number(s, a->dtype, b));
}

porta_tensor *ew_number_binary(ew_scope *s, porta_binary_op op, double a, const porta_tensor *b) {
    if (!ready(s, b, b, b)) return NULL;
    return ew_binary(s, op, ew_number(s, b->dtype, a), b);
}

porta_tensor *ew_where(ew_scope *s, const porta_tensor *cond, const porta_tensor *a,
                       const porta_tensor *b) {
    return ew_ternary_into(s, PORTA_WHERE, cond, a, b, NULL);
}

porta_tensor *ew_where_number(ew_scope *s, const porta_tensor *cond, double a,
                              const porta_tensor *b) {
    if (!ready(s, cond, b, b)) return NULL;
    return ew_where(s, cond, ew_number(s, b->dtype, a), b);
}

porta_tensor *ew_cast(ew_scope *s, const porta_tensor *x, porta_dtype dtype) {
    if (!ready(s, x, x, x)) return NULL;
    porta_tensor *made = NULL;
    porta_status *status = porta_cast(x, dtype, &made);
    return hold(s, status, made);
}

porta_tensor *ew_operand(ew_scope *s, const porta_value *v, porta_dtype dtype) {
    if (s->held.status) return NULL;
    if (v->kind == PORTA_VALUE_TENSOR && v->tensor->dtype == dtype) return v->tensor;
    if (v->kind == PORTA_VALUE_TENSOR) return ew_cast(s, v->tensor, dtype);
    return ew_number(s, dtype, aten_number(v));
}

porta_dtype ew_compute_dtype(porta_dtype dtype) {
    return dtype == PORTA_F16 || dtype == PORTA_BF16 ? PORTA_F32 : dtype;
}

porta_tensor *ew_target(const porta_value *args, int arg_count, ew_variant variant) {
    if (variant == EW_INPLACE) return args[0].tensor;
    if (variant == EW_OUT) return ew_out_target(args, arg_count - 1, args[arg_count - 1].tensor);
    return NULL;
}

porta_tensor *ew_out_target(const porta_value *operands, int count, porta_tensor *out) {
    int rank = 0;
    int64_t shape[PORTA_MAX_RANK];
    for (int i = 0; i < count; i++) {
        if (operands[i].kind != PORTA_VALUE_TENSOR) continue;
        const porta_tensor *t = operands[i].tensor;
        porta_status *status =
            porta_broadcast_shapes("out=", rank, shape, t->rank, t->sizes, &rank, shape);
        if (status) { /* the op itself reports operands that do not broadcast */
            porta_status_free(status);
            return out;
        }
    }
    bool same = rank == out->rank && (!rank || !memcmp(shape, out->sizes, (size_t)rank * sizeof shape[0]));
    return same ? out : NULL;
}

porta_status *ew_refuse_dtype(const char *op, const char *expected, porta_dtype given) {
    return porta_error(PORTA_ERR_DTYPE, "%s: expected %s, got %s", op, expected,
                       porta_dtype_name(given));
}

/* Takes t's reference out of the scope (NULL when the scope holds none),
 * so the result is handed on without a retain and a release. */
static porta_tensor *take_held(ew_scope *s, const porta_tensor *t) {
    for (int i = s->held.count - 1; i >= 0; i--)
        if (s->held.held[i] == t) {
            porta_tensor *taken = s->held.held[i];
            s->held.held[i] = NULL; /* nn_end releases NULL as nothing */
            return taken;
        }
    return NULL;
}

/* Writes result into `into`, which PyTorch requires to have the result's
 * shape and a dtype the result's can be cast to. */
static porta_status *write_into(const porta_tensor *result, porta_tensor *into) {
    bool same_shape = result->rank == into->rank &&
                      (!into->rank || !memcmp(result->sizes, into->sizes,
                                              (size_t)into->rank * sizeof into->sizes[0]));
    if (!same_shape) {
        char given[PORTA_SHAPE_STR_CAP], needed[PORTA_SHAPE_STR_CAP];
        return porta_error(PORTA_ERR_SHAPE, "output with shape %s doesn't match the broadcast shape %s",
                           porta_format_shape(given, sizeof given, into->rank, into->sizes),
                           porta_format_shape(needed, sizeof needed, result->rank, result->sizes));
    }
    if (!porta_dtype_can_cast(result->dtype, into->dtype))
        return porta_error(PORTA_ERR_DTYPE, "result type %s can't be cast to the desired output type %s",
                           porta_dtype_name(result->dtype), porta_dtype_name(into->dtype));
    return porta_copy(result, into);
}

porta_status *ew_finish(ew_scope *s, const porta_tensor *result, porta_tensor *into,
                        aten_results *results) {
    porta_status *status = s->held.status;
    porta_tensor *pushed = NULL;
    if (!status && into) {
        if (result != into) status = write_into(result, into);
        pushed = into;
        if (!status) porta_tensor_retain(into);
    } else if (!status) {
        /* a tensor the formula made moves to the results; an input returned
         * unchanged is copied: the op's result is still a new tensor */
        pushed = take_held(s, result);
        if (!pushed) status = porta_cast(result, result->dtype, &pushed);
    }
    s->held.status = NULL; /* taken as `status` above */
    nn_end(&s->held);
    return status ? status : aten_push_tensor(results, pushed);
}

porta_dtype ew_result_type(const porta_value *a, const porta_value *b, const porta_value *c) {
    const porta_value *operands[3] = {a, b, c};
    return aten_result_type(operands, c ? 3 : 2);
}

porta_device *ew_device(const porta_value *a, const porta_value *b, const porta_value *c) {
    const porta_value *operands[3] = {a, b, c};
    return aten_device_of(operands, c ? 3 : 2);
}

porta_status *ew_promoted_binary_as(porta_binary_op op, const porta_value *a,
                                    const porta_value *b, porta_dtype dtype, porta_tensor *into,
                                    aten_results *results) {
    ew_scope s;
    ew_begin(&s, ew_device(a, b, NULL));
    /* true division computes in float: a number divisor like -3 must not
     * pass through an integer dtype first */
    if ((op == PORTA_DIV || op == PORTA_ATAN2) && !porta_dtype_is_float(dtype)) dtype = PORTA_F32;
    porta_tensor *ta = ew_operand(&s, a, dtype), *tb = ew_operand(&s, b, dtype);
    porta_tensor *result = ew_binary_into(&s, op, ta, tb, into);
    return ew_finish(&s, result, into, results);
}

porta_status *ew_promoted_binary(porta_binary_op op, const porta_value *a, const porta_value *b,
                                 porta_tensor *into, aten_results *results) {
    return ew_promoted_binary_as(op, a, b, ew_result_type(a, b, NULL), into, results);
}
