/* Shape aten ops. */
#include "aten/aten.h"

const aten_op aten_shape_ops[] = {
    {NULL, NULL, NULL},
};
