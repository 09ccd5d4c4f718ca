/* Running registered ops by name, and out= results. */
#include "aten/dispatch/op_reuse.h"

#include "core/status.h"
#include "runtime/tensor.h"

porta_status *aten_call_op(const char *name, const porta_value *args, int arg_count,
                           porta_tensor **out) {
    int id = porta_aten_op_find(name);
    if (id < 0)
        return porta_error(PORTA_ERR_UNSUPPORTED, "aten::%s is not registered", name);
    porta_value *values = NULL;
    int count = 0;
    PORTA_TRY(porta_aten_call(id, args, arg_count, &values, &count));
    porta_status *status = NULL;
    if (count < 1 || values[0].kind != PORTA_VALUE_TENSOR) {
        status = porta_error(PORTA_ERR_INVALID_ARGUMENT,
                             "aten::%s: expected a tensor result, got %d results", name, count);
    } else {
        *out = values[0].tensor;
        values[0].kind = PORTA_VALUE_NONE; /* handed over, not freed below */
    }
    porta_aten_results_free(values, count);
    return status;
}

static bool same_sizes(const porta_tensor *a, const porta_tensor *b) {
    if (a->rank != b->rank) return false;
    for (int d = 0; d < a->rank; d++)
        if (a->sizes[d] != b->sizes[d]) return false;
    return true;
}

porta_status *aten_into_out(porta_tensor *result, porta_tensor *out, aten_results *results) {
    porta_status *status = NULL;
    porta_tensor *given = result;
    if (!porta_dtype_can_cast(result->dtype, out->dtype))
        status = porta_error(PORTA_ERR_DTYPE,
                             "result type %s can't be cast to the desired output type %s",
                             porta_dtype_name(result->dtype), porta_dtype_name(out->dtype));
    else if (same_sizes(result, out) && !(status = porta_copy(result, out)))
        given = out;
    if (given == out) {
        porta_tensor_release(result);
        porta_tensor_retain(out);
    }
    if (status) {
        porta_tensor_release(given);
        return status;
    }
    return aten_push_tensor(results, given);
}

porta_status *aten_into_outs(aten_fn fn, const porta_value *args, int first_out, int count,
                             aten_results *results) {
    for (int i = 0; i < count; i++)
        if (args[first_out + i].kind != PORTA_VALUE_TENSOR)
            return porta_error(PORTA_ERR_INVALID_ARGUMENT, "out= argument %d must be a tensor",
                               first_out + i);
    aten_results computed = {0};
    porta_status *status = fn(args, &computed);
    for (int i = 0; !status && i < count; i++) {
        porta_tensor *result = computed.items[i].tensor;
        computed.items[i].kind = PORTA_VALUE_NONE; /* its reference passes on */
        status = aten_into_out(result, args[first_out + i].tensor, results);
    }
    porta_aten_results_free(computed.items, computed.count);
    return status;
}
