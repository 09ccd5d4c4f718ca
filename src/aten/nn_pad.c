/* (being written) */
#include "aten/aten.h"

const aten_op aten_nn_pad_ops[] = {
    {NULL, NULL, NULL},
};
