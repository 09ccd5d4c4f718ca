/* Loss aten ops: mse_loss and its gradient. */
#include "aten/nn_scope.h"

#include "core/status.h"
#include "core/tensor.h"

/* torch's Reduction enum */
enum { REDUCTION_NONE = 0, REDUCTION_MEAN = 1, REDUCTION_SUM = 2 };

static porta_status *check_reduction(const char *op, int64_t reduction) {
    if (reduction < REDUCTION_NONE || reduction > REDUCTION_SUM)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "%s: %lld is not a valid reduction", op,
                           (long long)reduction);
    return NULL;
}

/* mse_loss(self, target, reduction) */
static porta_status *mse_loss(const porta_value *args, aten_results *results) {
    const porta_tensor *x = args[0].tensor, *target = args[1].tensor;
    int64_t reduction = args[2].i;
    PORTA_TRY(check_reduction("mse_loss", reduction));
    nn_scope s = {0};
    porta_tensor *diff = nn_binary(&s, PORTA_SUB, x, target);
    porta_tensor *loss = nn_binary(&s, PORTA_MUL, diff, diff);
    if (reduction != REDUCTION_NONE) {
        double count = loss ? (double)porta_tensor_numel(loss) : 0;
        loss = nn_reduce(&s, PORTA_REDUCE_SUM, loss, NULL, 0, false);
        if (reduction == REDUCTION_MEAN) loss = nn_binary_num(&s, PORTA_DIV, loss, count);
    }
    nn_push(&s, results, loss);
    return nn_end(&s);
}

/* mse_loss_backward(grad_output, self, target, reduction):
 * grad * 2 (self - target), divided by the element count for a mean. */
static porta_status *mse_loss_backward(const porta_value *args, aten_results *results) {
    const porta_tensor *gy = args[0].tensor, *x = args[1].tensor, *target = args[2].tensor;
    int64_t reduction = args[3].i;
    PORTA_TRY(check_reduction("mse_loss_backward", reduction));
    double norm = reduction == REDUCTION_MEAN ? 2.0 / (double)porta_tensor_numel(x) : 2.0;
    nn_scope s = {0};
    porta_tensor *scaled = nn_binary_num(&s, PORTA_MUL, nn_binary(&s, PORTA_SUB, x, target), norm);
    nn_push(&s, results, nn_binary(&s, PORTA_MUL, scaled, gy));
    return nn_end(&s);
}

const aten_op aten_nn_loss_ops[] = {
    {"mse_loss", "TTi", mse_loss},
    {"mse_loss_backward", "TTTi", mse_loss_backward},
    {NULL, NULL, NULL},
};
