/* The batch norm ops PyTorch's newer training path calls:
 * _batch_norm_with_update (training: statistics of the batch, running
 * statistics updated in place), _batch_norm_no_update (evaluation) and
 * batch_norm_backward. Each is native_batch_norm(_backward) with other
 * arguments, plus the empty `reserve` the CPU gives. */
#include "aten/dispatch/op_reuse.h"
#include "core/status.h"
#include "runtime/tensor.h"

/* Runs the registered op `name` and pushes all its results. */
static porta_status *forward_to(const char *name, const porta_value *args, int count,
                                aten_results *results) {
    porta_value *values = NULL;
    int produced = 0;
    PORTA_TRY(porta_aten_call(porta_aten_op_find(name), args, count, &values, &produced));
    porta_status *status = NULL;
    for (int i = 0; i < produced && !status; i++) {
        if (values[i].kind == PORTA_VALUE_TENSOR) {
            status = aten_push_tensor(results, values[i].tensor);
            values[i].kind = PORTA_VALUE_NONE; /* handed to results */
        } else {
            status = aten_push_none(results);
        }
    }
    porta_aten_results_free(values, produced);
    return status;
}

/* The empty uint8 reserve tensor, on input's device. */
static porta_status *push_reserve(const porta_tensor *input, aten_results *results) {
    int64_t zero = 0;
    porta_tensor *reserve = NULL;
    PORTA_TRY(porta_tensor_empty(input->buffer->device, PORTA_U8, 1, &zero, &reserve));
    return aten_push_tensor(results, reserve);
}

/* native_batch_norm(input, weight?, bias?, running_mean?, running_var?,
 * training, momentum, eps) and the reserve. */
static porta_status *batch_norm_with(const porta_value *args, bool training,
                                     aten_results *results) {
    porta_value call[8] = {args[0], args[1], args[2], args[3], args[4],
                           {.kind = PORTA_VALUE_BOOL, .b = training}, args[5], args[6]};
    PORTA_TRY(forward_to("native_batch_norm", call, 8, results));
    return push_reserve(args[0].tensor, results);
}

/* _batch_norm_with_update(input, weight?, bias?, running_mean!,
 * running_var!, momentum, eps) -> (out, save_mean, save_invstd, reserve) */
static porta_status *batch_norm_with_update(const porta_value *args, aten_results *results) {
    return batch_norm_with(args, true, results);
}

/* _batch_norm_no_update(input, weight?, bias?, running_mean?,
 * running_var?, momentum, eps) -> (out, save_mean, save_invstd, reserve) */
static porta_status *batch_norm_no_update(const porta_value *args, aten_results *results) {
    return batch_norm_with(args, false, results);
}

/* batch_norm_backward(grad_out, input, weight, running_mean?, running_var?,
 * save_mean?, save_var?, update, eps, output_mask, reserve) */
static porta_status *batch_norm_backward(const porta_value *args, aten_results *results) {
    return forward_to("native_batch_norm_backward", args, 10, results);
}

const aten_op aten_nn_batch_norm_update_ops[] = {
    {"_batch_norm_with_update", "TttTTff", batch_norm_with_update},
    {"_batch_norm_no_update", "Tttttff", batch_norm_no_update},
    {"batch_norm_backward", "TTtttttbfIT", batch_norm_backward},
    {NULL, NULL, NULL},
};
