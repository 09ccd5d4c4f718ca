/* Ops that torch.export leaves in the graphs of real models and that no
 * other family covers.
 *
 * _assert_tensor_metadata(a, size, stride, dtype, *, device, layout): the
 * check torch.export writes after a dtype conversion (`x.to(torch.bool)`),
 * so that a run with other inputs stops where the traced program assumed
 * otherwise. It returns nothing. Sizes, strides and dtype are checked as
 * PyTorch checks them. The device and layout are not: the device recorded
 * is the one the model was exported on (a run elsewhere is the point of
 * exporting), and every porta tensor is strided. */
#include <stdio.h>
#include <string.h>

#include "aten/aten.h"
#include "aten/reduce/common.h"
#include "core/status.h"
#include "runtime/tensor.h"

static bool same_ints(const porta_value *expected, int rank, const int64_t *got) {
    return expected->ints.count == rank &&
           (rank == 0 || !memcmp(expected->ints.items, got, (size_t)rank * sizeof *got));
}

static porta_status *mismatch(const char *what, const porta_value *expected, int rank,
                              const int64_t *got) {
    char want[CORE_SHAPE_STR_CAP], have[CORE_SHAPE_STR_CAP];
    core_format_shape(want, sizeof want, expected->ints.count, expected->ints.items);
    core_format_shape(have, sizeof have, rank, got);
    return porta_error(PORTA_ERR_SHAPE,
                       "_assert_tensor_metadata: tensor %s mismatch: expected %s, got %s", what,
                       want, have);
}

static porta_status *assert_tensor_metadata(const porta_value *args, aten_results *results) {
    (void)results; /* the op returns nothing */
    const porta_tensor *a = args[0].tensor;
    const porta_value *size = &args[1], *stride = &args[2], *dtype = &args[3];
    if (size->kind == PORTA_VALUE_INTS && !same_ints(size, a->rank, a->sizes))
        return mismatch("sizes", size, a->rank, a->sizes);
    if (stride->kind == PORTA_VALUE_INTS && !same_ints(stride, a->rank, a->strides))
        return mismatch("strides", stride, a->rank, a->strides);
    if (dtype->kind == PORTA_VALUE_DTYPE && dtype->dtype != a->dtype)
        return porta_error(PORTA_ERR_DTYPE,
                           "_assert_tensor_metadata: tensor dtype mismatch: expected %s, got %s",
                           aten_dtype_label(dtype->dtype), aten_dtype_label(a->dtype));
    return NULL;
}

const aten_op aten_export_tensor_metadata_ops[] = {
    {"_assert_tensor_metadata", "TJJdxx", assert_tensor_metadata},
    {NULL, NULL, NULL},
};
