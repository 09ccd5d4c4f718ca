/* linalg_cross: the cross product of 3-vectors along one dim, composed of
 * index_select and elementwise products, with its out= variant. */
#include "aten/elementwise/elementwise.h"
#include "aten/dispatch/op_reuse.h"
#include "aten/reduce/common.h"
#include "core/status.h"
#include "runtime/tensor.h"
#include "ir/infer.h"

/* linalg_cross(self, other, dim): with a' and a'' the 3-vectors rotated
 * by one and two places along dim, a' * b'' - a'' * b'. */
static porta_tensor *rotated(aten_scope *s, const porta_tensor *x, int dim, const int64_t *order) {
    if (s->status) return NULL;
    int64_t three = 3;
    porta_tensor *index = NULL;
    porta_status *status = porta_tensor_from_host(s->device, PORTA_I64, 1, &three, order, &index);
    return scope_index_select(s, x, dim, scope_hold(s, status, index));
}

static porta_tensor *cross_of(aten_scope *s, const porta_value *args) {
    const porta_tensor *x = args[0].tensor, *y = args[1].tensor;
    if (x->rank != y->rank)
        return scope_fail(s, porta_error(PORTA_ERR_SHAPE,
                                         "linalg.cross: inputs must have the same number of "
                                         "dimensions."));
    if (x->dtype != y->dtype)
        return scope_fail(s, porta_error(PORTA_ERR_DTYPE, "expected scalar type %s but found %s",
                                         aten_dtype_label(x->dtype), aten_dtype_label(y->dtype)));
    if (x->dtype == PORTA_BOOL)
        return scope_fail(s, porta_error(PORTA_ERR_DTYPE, "\"cross\" not implemented for 'Bool'"));
    int dim, rank;
    int64_t sizes[PORTA_MAX_RANK];
    porta_status *status = core_normalize_axis("linalg.cross", (int)args[2].i, x->rank, &dim);
    if (status) return scope_fail(s, status);
    if (x->sizes[dim] != 3 || y->sizes[dim] != 3)
        return scope_fail(s, porta_error(PORTA_ERR_SHAPE,
                                         "linalg.cross: inputs dimension %lld must have length 3. "
                                         "Got %lld and %lld",
                                         (long long)args[2].i, (long long)x->sizes[dim],
                                         (long long)y->sizes[dim]));
    status = ir_broadcast_shapes("linalg.cross", x->rank, x->sizes, y->rank, y->sizes, &rank,
                                    sizes);
    if (status) return scope_fail(s, status);
    static const int64_t once[3] = {1, 2, 0}, twice[3] = {2, 0, 1};
    porta_tensor *a = scope_expand(s, x, rank, sizes), *b = scope_expand(s, y, rank, sizes);
    porta_tensor *forward = scope_binary(s, PORTA_MUL, rotated(s, a, dim, once), rotated(s, b, dim, twice));
    porta_tensor *backward = scope_binary(s, PORTA_MUL, rotated(s, a, dim, twice), rotated(s, b, dim, once));
    return scope_binary(s, PORTA_SUB, forward, backward);
}

COMPOSED_KERNEL(op_linalg_cross, cross_of(&s, args), EW_NEW, 3)

ATEN_OUT_KERNEL(op_linalg_cross_out, op_linalg_cross, 3)

const aten_op aten_linalg_cross_ops[] = {
    {"linalg_cross", "TTi", op_linalg_cross},
    {"linalg_cross.out", "TTiT", op_linalg_cross_out},
    {NULL, NULL, NULL},
};
