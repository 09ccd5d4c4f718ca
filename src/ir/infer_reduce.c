/* Shape and dtype inference for reductions, with PyTorch's rules for axes
 * (negative, duplicated, out of range, rank 0) and result dtypes. */
#include "core/dtype.h"
#include "core/status.h"
#include "core/tensor_layout.h"
#include "ir/infer.h"

static bool is_arg_op(int op) { return op == PORTA_REDUCE_ARGMAX || op == PORTA_REDUCE_ARGMIN; }

static porta_dtype reduce_result_dtype(int op, porta_dtype x) {
    switch (op) {
    case PORTA_REDUCE_SUM:
    case PORTA_REDUCE_PROD: return porta_dtype_is_float(x) ? x : PORTA_I64;
    case PORTA_REDUCE_ARGMAX:
    case PORTA_REDUCE_ARGMIN: return PORTA_I64;
    case PORTA_REDUCE_ANY:
    case PORTA_REDUCE_ALL: return PORTA_BOOL;
    default: return x; /* MAX, MIN */
    }
}

/* Rewrites prim->axes as the sorted set of reduced axes. Every op but the
 * arg ops lists them all explicitly (axis_count 0 means every axis), so equal
 * reductions hash equally; an arg op keeps axis_count 0 for "flattened". A
 * rank-0 tensor accepts axis 0 and -1 as in PyTorch, which leaves no axis to
 * list: its single element is the reduction. */
static porta_status *normalize_axes(ir_prim *prim, const char *name, int rank) {
    if (prim->axis_count < 0 || prim->axis_count > PORTA_MAX_RANK)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "%s: axis_count must be 0..%d, got %d", name, PORTA_MAX_RANK,
                           prim->axis_count);
    if (is_arg_op(prim->op) && prim->axis_count > 1)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "%s: takes at most one axis, got %d", name, prim->axis_count);
    bool seen[PORTA_MAX_RANK] = {false};
    for (int i = 0; i < prim->axis_count; i++) {
        int axis;
        PORTA_TRY(core_normalize_axis(name, prim->axes[i], rank, &axis));
        if (seen[axis])
            return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                               "%s: dim %d appears multiple times in the list of dims", name,
                               axis);
        seen[axis] = true;
    }
    bool all_axes = prim->axis_count == 0 && !is_arg_op(prim->op);
    int count = 0;
    for (int axis = 0; axis < rank; axis++) {
        if (seen[axis] || all_axes) prim->axes[count++] = axis;
    }
    /* Unused slots are zeroed so bytewise hashing sees one canonical form. */
    for (int i = count; i < PORTA_MAX_RANK; i++) prim->axes[i] = 0;
    prim->axis_count = count;
    return NULL;
}

porta_status *ir_infer_reduce(ir_prim *prim, const ir_meta *inputs, int input_count,
                                 ir_meta *out) {
    if (prim->op < 0 || prim->op >= PORTA_REDUCE_OP_COUNT)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "reduce: invalid op %d", prim->op);
    const char *name = ir_prim_name(prim);
    if (input_count != 1)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "%s: expected 1 input, got %d", name,
                           input_count);
    const ir_meta *x = &inputs[0];
    if (is_arg_op(prim->op) && x->dtype == PORTA_BOOL)
        return porta_error(PORTA_ERR_DTYPE, "%s: expected a numeric input, got bool", name);
    PORTA_TRY(normalize_axes(prim, name, x->rank));

    bool reduced[PORTA_MAX_RANK] = {false};
    bool flattened = is_arg_op(prim->op) && prim->axis_count == 0;
    for (int axis = 0; axis < x->rank && flattened; axis++) reduced[axis] = true;
    for (int i = 0; i < prim->axis_count; i++) reduced[prim->axes[i]] = true;

    /* Max, min and the arg ops have no identity to give an empty reduction. */
    bool needs_elements = prim->op == PORTA_REDUCE_MAX || prim->op == PORTA_REDUCE_MIN ||
                          is_arg_op(prim->op);
    for (int axis = 0; axis < x->rank && needs_elements; axis++) {
        if (reduced[axis] && x->sizes[axis] == 0) {
            char shape[CORE_SHAPE_STR_CAP];
            return porta_error(PORTA_ERR_SHAPE,
                               "%s: expected reduction axis %d to have non-zero size, got "
                               "shape %s",
                               name, axis,
                               core_format_shape(shape, sizeof shape, x->rank, x->sizes));
        }
    }

    out->dtype = reduce_result_dtype(prim->op, x->dtype);
    out->rank = 0;
    for (int axis = 0; axis < x->rank; axis++) {
        if (!reduced[axis])
            out->sizes[out->rank++] = x->sizes[axis];
        else if (prim->keepdim)
            out->sizes[out->rank++] = 1;
    }
    return NULL;
}
