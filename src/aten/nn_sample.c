/* (being written) */
#include "aten/aten.h"

const aten_op aten_nn_sample_ops[] = {
    {NULL, NULL, NULL},
};
