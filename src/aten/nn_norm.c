/* Nn norm aten ops. */
#include "aten/aten.h"

const aten_op aten_nn_norm_ops[] = {
    {NULL, NULL, NULL},
};
