/* nonzero_static: nonzero's coordinates cut or padded to a fixed number of
 * rows, so the result's shape does not depend on the values. */
#include "aten/dispatch/op_reuse.h"
#include "aten/dispatch/scope.h"
#include "aten/index/common.h"
#include "core/status.h"
#include "runtime/tensor.h"

/* nonzero_static(self, size, fill_value): the first `size` rows of
 * nonzero(self), followed by rows of fill_value when there are fewer. */
static porta_status *nonzero_static(const porta_value *args, aten_results *results) {
    const porta_tensor *x = args[0].tensor;
    int64_t size = args[1].i;
    if (size < 0)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "nonzero_static: 'size' must be an non-negative integer, but got "
                           "size: %lld",
                           (long long)size);
    porta_tensor *found = NULL;
    PORTA_TRY(index_nonzero(x, &found));
    aten_scope s;
    scope_begin(&s);
    scope_hold(&s, NULL, found);
    int64_t count = found->sizes[0], columns = found->sizes[1];
    porta_tensor *rows = scope_slice(&s, found, 0, 0, count < size ? count : size, 1);
    if (count < size) {
        int64_t pads[2 * PORTA_MAX_RANK] = {0, size - count};
        rows = scope_pad(&s, rows, pads, (double)args[2].i);
    }
    int64_t shape[2] = {size, columns};
    scope_push(&s, results, scope_contiguous(&s, scope_reshape(&s, rows, 2, shape)));
    return scope_end(&s);
}

ATEN_OUT_KERNEL(nonzero_static_out, nonzero_static, 3)

const aten_op aten_index_nonzero_static_ops[] = {
    {"nonzero_static", "Tii", nonzero_static},
    {"nonzero_static.out", "TiiT", nonzero_static_out},
    {NULL, NULL, NULL},
};
