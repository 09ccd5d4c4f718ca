/* What the loss ops share: PyTorch's Reduction argument. */
#ifndef PORTA_ATEN_NN_LOSS_H
#define PORTA_ATEN_NN_LOSS_H

#include "aten/dispatch/scope.h"

/* torch's Reduction enum */
enum { REDUCTION_NONE = 0, REDUCTION_MEAN = 1, REDUCTION_SUM = 2 };

/* An error naming `op` unless reduction is one of the three. */
porta_status *nn_check_reduction(const char *op, int64_t reduction);
/* The sum or mean of per-element losses, or them unreduced. */
porta_tensor *nn_reduce_loss(aten_scope *s, porta_tensor *losses, int64_t reduction);

#endif
