/* (being written) */
#include "aten/aten.h"

const aten_op aten_sort_ops[] = {
    {NULL, NULL, NULL},
};
