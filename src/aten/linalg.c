/* Linalg aten ops. */
#include "aten/aten.h"

const aten_op aten_linalg_ops[] = {
    {NULL, NULL, NULL},
};
