/* Factory aten ops. */
#include "aten/aten.h"

const aten_op aten_factory_ops[] = {
    {NULL, NULL, NULL},
};
