/* (being written) */
#include "aten/aten.h"

const aten_op aten_shape_copy_ops[] = {
    {NULL, NULL, NULL},
};
