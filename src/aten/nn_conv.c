/* Nn conv aten ops. */
#include "aten/aten.h"

const aten_op aten_nn_conv_ops[] = {
    {NULL, NULL, NULL},
};
