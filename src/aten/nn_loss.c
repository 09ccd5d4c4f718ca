/* Nn loss aten ops. */
#include "aten/aten.h"

const aten_op aten_nn_loss_ops[] = {
    {NULL, NULL, NULL},
};
