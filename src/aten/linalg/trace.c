/* trace: the sum of a matrix's diagonal, a strided view summed, with its
 * out= variant. */
#include "aten/dispatch/scope.h"
#include "aten/dispatch/op_reuse.h"
#include "aten/reduce/common.h"
#include "core/status.h"
#include "runtime/tensor.h"

/* trace(self): the sum of a matrix's diagonal (not of bool, which the CPU
 * refuses), integers summed in int64 and the half types in float32, as sum does. */
static porta_status *trace(const porta_value *args, aten_results *results) {
    const porta_tensor *x = args[0].tensor;
    if (x->rank != 2)
        return porta_error(PORTA_ERR_SHAPE, "trace: expected a matrix, but got tensor with dim %d",
                           x->rank);
    if (x->dtype == PORTA_BOOL)
        return porta_error(PORTA_ERR_DTYPE, "\"trace\" not implemented for 'Bool'");
    int64_t length = x->sizes[0] < x->sizes[1] ? x->sizes[0] : x->sizes[1];
    int64_t stride = x->strides[0] + x->strides[1];
    porta_dtype dtype = porta_dtype_is_float(x->dtype) ? x->dtype : PORTA_I64;
    aten_scope s;
    scope_begin(&s);
    porta_tensor *diagonal = scope_cast(&s, scope_restride(&s, x, 1, &length, &stride),
                                        aten_compute_dtype(dtype));
    porta_tensor *sum = scope_reduce(&s, PORTA_REDUCE_SUM, diagonal, NULL, 0, false);
    scope_push(&s, results, scope_cast(&s, sum, dtype));
    return scope_end(&s);
}

ATEN_OUT_KERNEL(trace_out, trace, 1)

const aten_op aten_linalg_trace_ops[] = {
    {"trace", "T", trace},
    {"trace.out", "TT", trace_out},
    {NULL, NULL, NULL},
};
