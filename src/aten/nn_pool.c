/* Nn pool aten ops. */
#include "aten/aten.h"

const aten_op aten_nn_pool_ops[] = {
    {NULL, NULL, NULL},
};
