/* (being written) */
#include "aten/aten.h"

const aten_op aten_shape_layout_ops[] = {
    {NULL, NULL, NULL},
};
