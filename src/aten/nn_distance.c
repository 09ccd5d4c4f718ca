/* (being written) */
#include "aten/aten.h"

const aten_op aten_nn_distance_ops[] = {
    {NULL, NULL, NULL},
};
