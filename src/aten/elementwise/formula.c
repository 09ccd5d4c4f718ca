/* What the elementwise formulas add to the aten scope: where a result goes
 * (a new tensor, self, or an out= tensor) and PyTorch's type promotion of
 * two or three operands. */
#include <string.h>

#include "aten/elementwise/elementwise.h"
#include "core/status.h"
#include "runtime/tensor.h"
#include "ir/infer.h"

porta_tensor *ew_target(const porta_value *args, int arg_count, ew_variant variant) {
    if (variant == EW_INPLACE) return args[0].tensor;
    if (variant == EW_OUT) return ew_out_target(args, arg_count - 1, args[arg_count - 1].tensor);
    return NULL;
}

/* Whether `out` has the broadcast shape of the tensor operands; *broadcasts
 * is false when they do not broadcast (the op itself reports that). */
static bool has_broadcast_shape(const porta_value *operands, int count, const porta_tensor *out,
                                bool *broadcasts) {
    int rank = 0;
    int64_t shape[PORTA_MAX_RANK];
    *broadcasts = true;
    for (int i = 0; i < count; i++) {
        if (operands[i].kind != PORTA_VALUE_TENSOR) continue;
        const porta_tensor *t = operands[i].tensor;
        porta_status *status =
            ir_broadcast_shapes("out=", rank, shape, t->rank, t->sizes, &rank, shape);
        if (status) {
            porta_status_free(status);
            *broadcasts = false;
            return false;
        }
    }
    return rank == out->rank && (!rank || !memcmp(shape, out->sizes, (size_t)rank * sizeof shape[0]));
}

porta_tensor *ew_out_target(const porta_value *operands, int count, porta_tensor *out) {
    bool broadcasts;
    bool same = has_broadcast_shape(operands, count, out, &broadcasts);
    return same || !broadcasts ? out : NULL;
}

porta_tensor *ew_direct_target(porta_tensor *into, porta_dtype dtype, const porta_value *operands,
                               int count) {
    bool broadcasts;
    if (!into || into->dtype != dtype) return NULL;
    return has_broadcast_shape(operands, count, into, &broadcasts) ? into : NULL;
}

porta_status *ew_refuse_dtype(const char *op, const char *expected, porta_dtype given) {
    return porta_error(PORTA_ERR_DTYPE, "%s: expected %s, got %s", op, expected,
                       porta_dtype_name(given));
}

/* Takes t's reference out of the scope (NULL when the scope holds none),
 * so the result is handed on without a retain and a release. */
static porta_tensor *take_held(aten_scope *s, const porta_tensor *t) {
    for (int i = s->count - 1; i >= 0; i--)
        if (s->held[i] == t) {
            porta_tensor *taken = s->held[i];
            s->held[i] = NULL; /* scope_end releases NULL as nothing */
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
        char given[CORE_SHAPE_STR_CAP], needed[CORE_SHAPE_STR_CAP];
        return porta_error(PORTA_ERR_SHAPE, "output with shape %s doesn't match the broadcast shape %s",
                           core_format_shape(given, sizeof given, into->rank, into->sizes),
                           core_format_shape(needed, sizeof needed, result->rank, result->sizes));
    }
    if (!porta_dtype_can_cast(result->dtype, into->dtype))
        return porta_error(PORTA_ERR_DTYPE, "result type %s can't be cast to the desired output type %s",
                           porta_dtype_name(result->dtype), porta_dtype_name(into->dtype));
    return porta_copy(result, into);
}

porta_status *ew_finish(aten_scope *s, const porta_tensor *result, porta_tensor *into,
                        aten_results *results) {
    porta_status *status = s->status;
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
    s->status = NULL; /* taken as `status` above */
    scope_end(s);
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
    aten_scope s;
    scope_begin_on(&s, ew_device(a, b, NULL));
    /* true division computes in float: a number divisor like -3 must not
     * pass through an integer dtype first */
    if ((op == PORTA_DIV || op == PORTA_ATAN2) && !porta_dtype_is_float(dtype)) dtype = PORTA_F32;
    porta_tensor *ta = scope_operand(&s, a, dtype), *tb = scope_operand(&s, b, dtype);
    porta_tensor *result = scope_binary_into(&s, op, ta, tb, into);
    return ew_finish(&s, result, into, results);
}

porta_status *ew_promoted_binary(porta_binary_op op, const porta_value *a, const porta_value *b,
                                 porta_tensor *into, aten_results *results) {
    return ew_promoted_binary_as(op, a, b, ew_result_type(a, b, NULL), into, results);
}
