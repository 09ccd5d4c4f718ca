/* (being written) */
#include "aten/aten.h"

const aten_op aten_nn_pool3d_ops[] = {
    {NULL, NULL, NULL},
};
