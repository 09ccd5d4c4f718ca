/* Inference for the index primitives: gather, scatter and index_select, with
 * PyTorch's shape rules. Index tensors may be int64 or int32 (the runner
 * converts int32, as backends take int64 only). */
#include <string.h>

#include "core/status.h"
#include "core/tensor_layout.h"
#include "ir/infer.h"

static porta_status *check_inputs(const char *op, int input_count, int expected) {
    if (input_count != expected)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "%s: expected %d inputs, got %d", op,
                           expected, input_count);
    return NULL;
}

static porta_status *check_index_dtype(const char *op, porta_dtype dtype) {
    if (dtype != PORTA_I64 && dtype != PORTA_I32)
        return porta_error(PORTA_ERR_DTYPE, "%s: expected an int64 (or int32) index, got %s", op,
                           porta_dtype_name(dtype));
    return NULL;
}

static porta_status *check_same_rank(const char *op, const char *name, const ir_meta *t,
                                     const ir_meta *x) {
    if (t->rank != x->rank)
        return porta_error(PORTA_ERR_SHAPE,
                           "%s: %s must have the same rank as x; got %s of rank %d and x of "
                           "rank %d",
                           op, name, name, t->rank, x->rank);
    return NULL;
}

/* index.size(d) <= bound.size(d) for every d, except `free_axis` (-1: none). */
static porta_status *check_fits(const char *op, const ir_meta *index, const char *bound_name,
                                const ir_meta *bound, int free_axis) {
    for (int d = 0; d < index->rank; d++) {
        if (d == free_axis || index->sizes[d] <= bound->sizes[d]) continue;
        char bi[CORE_SHAPE_STR_CAP], bb[CORE_SHAPE_STR_CAP];
        core_format_shape(bi, sizeof bi, index->rank, index->sizes);
        core_format_shape(bb, sizeof bb, bound->rank, bound->sizes);
        if (free_axis >= 0)
            return porta_error(PORTA_ERR_SHAPE,
                               "%s: index %s must not be larger than %s %s apart from "
                               "dimension %d, but is at dimension %d",
                               op, bi, bound_name, bb, free_axis, d);
        return porta_error(PORTA_ERR_SHAPE,
                           "%s: index %s must not be larger than %s %s, but is at dimension %d",
                           op, bi, bound_name, bb, d);
    }
    return NULL;
}

static porta_status *infer_gather(ir_prim *prim, const ir_meta *inputs, int input_count,
                                  ir_meta *out) {
    PORTA_TRY(check_inputs("gather", input_count, 2));
    const ir_meta *x = &inputs[0], *index = &inputs[1];
    PORTA_TRY(check_index_dtype("gather", index->dtype));
    PORTA_TRY(check_same_rank("gather", "index", index, x));
    PORTA_TRY(core_normalize_axis("gather", prim->axis, x->rank, &prim->axis));
    PORTA_TRY(check_fits("gather", index, "x", x, prim->axis));
    *out = *index;
    out->dtype = x->dtype;
    return NULL;
}

static porta_status *infer_scatter(ir_prim *prim, const ir_meta *inputs, int input_count,
                                   ir_meta *out) {
    const char *op = ir_prim_name(prim);
    if (prim->op < PORTA_SCATTER_NONE || prim->op > PORTA_SCATTER_AMIN)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "scatter: invalid reduction %d", prim->op);
    PORTA_TRY(check_inputs(op, input_count, 3));
    const ir_meta *x = &inputs[0], *index = &inputs[1], *src = &inputs[2];
    PORTA_TRY(check_index_dtype(op, index->dtype));
    if (src->dtype != x->dtype)
        return porta_error(PORTA_ERR_DTYPE, "%s: expected src of x's dtype %s, got %s", op,
                           porta_dtype_name(x->dtype), porta_dtype_name(src->dtype));
    PORTA_TRY(check_same_rank(op, "index", index, x));
    PORTA_TRY(check_same_rank(op, "src", src, x));
    PORTA_TRY(core_normalize_axis(op, prim->axis, x->rank, &prim->axis));
    PORTA_TRY(check_fits(op, index, "x", x, prim->axis));
    PORTA_TRY(check_fits(op, index, "src", src, -1));
    *out = *x;
    return NULL;
}

static porta_status *infer_index_select(ir_prim *prim, const ir_meta *inputs,
                                        int input_count, ir_meta *out) {
    PORTA_TRY(check_inputs("index_select", input_count, 2));
    const ir_meta *x = &inputs[0], *index = &inputs[1];
    PORTA_TRY(check_index_dtype("index_select", index->dtype));
    if (index->rank > 1)
        return porta_error(PORTA_ERR_SHAPE, "index_select: expected a 0-D or 1-D index, got rank %d",
                           index->rank);
    PORTA_TRY(core_normalize_axis("index_select", prim->axis, x->rank, &prim->axis));
    int64_t count = index->rank ? index->sizes[0] : 1;
    *out = *x;
    if (x->rank > 0) {
        out->sizes[prim->axis] = count;
    } else if (count != 1) { /* a scalar's result is a scalar: one index only */
        return porta_error(PORTA_ERR_SHAPE,
                           "index_select: a rank-0 x takes exactly one index, got %lld",
                           (long long)count);
    }
    return NULL;
}

porta_status *ir_infer_index(ir_prim *prim, const ir_meta *inputs, int input_count,
                                ir_meta *out) {
    switch (prim->kind) {
    case PRIM_GATHER: return infer_gather(prim, inputs, input_count, out);
    case PRIM_SCATTER: return infer_scatter(prim, inputs, input_count, out);
    case PRIM_INDEX_SELECT: return infer_index_select(prim, inputs, input_count, out);
    default: break;
    }
    return porta_error(PORTA_ERR_INTERNAL, "%s is not an index primitive", ir_prim_name(prim));
}
