/* Reduce aten ops. */
#include "aten/aten.h"

const aten_op aten_reduce_ops[] = {
    {NULL, NULL, NULL},
};
