/* Nn aten ops. */
#include "aten/aten.h"

const aten_op aten_nn_ops[] = {
    {NULL, NULL, NULL},
};
