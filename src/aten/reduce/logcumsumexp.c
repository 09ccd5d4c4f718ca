/* logcumsumexp along one dim, composed of primitives as cumsum is (see
 * reduce/scan.c): log2(n) rounds in which every element is combined with
 * the one `step` places before it (a shifted copy padded with -inf), here
 * by logaddexp, so no running sum of exponentials can overflow or
 * underflow. Float only, accumulated as the CPU kernel does (its acc_type):
 * the half types in float32, float32 in float64, so that results agree to
 * the last bit even where large values make an ulp count (the gradient
 * exponentiates differences of results). */
#include <math.h>

#include "aten/dispatch/scope.h"
#include "aten/dispatch/op_reuse.h"
#include "aten/reduce/common.h"
#include "core/status.h"
#include "runtime/tensor.h"

/* log(e^a + e^b) = max + log1p(e^-|a - b|); equal operands give a +
 * log(2), which also keeps a == b == +-inf (where a - b is NaN) at a. */
static porta_tensor *log_add_exp(aten_scope *s, const porta_tensor *a, const porta_tensor *b) {
    porta_tensor *distance = scope_unary(s, PORTA_ABS, scope_binary(s, PORTA_SUB, a, b));
    porta_tensor *excess = scope_unary(s, PORTA_LOG1P,
                                    scope_unary(s, PORTA_EXP, scope_unary(s, PORTA_NEG, distance)));
    porta_tensor *general = scope_binary(s, PORTA_ADD, scope_binary(s, PORTA_MAXIMUM, a, b), excess);
    return scope_ternary(s, PORTA_WHERE, scope_binary(s, PORTA_EQ, a, b),
                         scope_binary_number(s, PORTA_ADD, a, M_LN2), general);
}

static porta_dtype accumulation_dtype(porta_dtype dtype) {
    return dtype == PORTA_F32 ? PORTA_F64 : aten_compute_dtype(dtype);
}

static porta_status *logcumsumexp(const porta_value *args, aten_results *results) {
    const porta_tensor *x = args[0].tensor;
    int axis;
    PORTA_TRY(core_normalize_axis("logcumsumexp", (int)args[1].i, x->rank ? x->rank : 1, &axis));
    if (!porta_dtype_is_float(x->dtype))
        return porta_error(PORTA_ERR_DTYPE, "\"logcumsumexp_out_cpu\" not implemented for '%s'",
                           aten_dtype_label(x->dtype));
    porta_tensor *y = NULL;
    PORTA_TRY(aten_cast(x, accumulation_dtype(x->dtype), &y));
    porta_status *status = NULL;
    int64_t length = x->rank ? x->sizes[axis] : 1;
    /* each round in its own scope, so long scans hold few tensors */
    for (int64_t step = 1; step < length && !status; step *= 2) {
        int64_t pads[2 * PORTA_MAX_RANK] = {0};
        pads[2 * axis] = step;
        pads[2 * axis + 1] = -step;
        aten_scope s;
        scope_begin(&s);
        porta_tensor *next = log_add_exp(&s, y, scope_pad(&s, y, pads, -INFINITY));
        if (next) porta_tensor_retain(next);
        status = scope_end(&s);
        porta_tensor_release(y);
        y = next;
    }
    if (!status) {
        aten_scope s;
        scope_begin(&s);
        scope_push(&s, results, scope_cast(&s, y, x->dtype));
        status = scope_end(&s);
    }
    porta_tensor_release(y);
    return status;
}

ATEN_OUT_KERNEL(logcumsumexp_out, logcumsumexp, 2)

const aten_op aten_reduce_logcumsumexp_ops[] = {
    {"logcumsumexp", "Ti", logcumsumexp},
    {"logcumsumexp.out", "TiT", logcumsumexp_out},
    {"_logcumsumexp", "Ti", logcumsumexp},
    {"_logcumsumexp.out", "TiT", logcumsumexp_out},
    {NULL, NULL, NULL},
};
