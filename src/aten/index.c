/* Index aten ops. */
#include "aten/aten.h"

const aten_op aten_index_ops[] = {
    {NULL, NULL, NULL},
};
