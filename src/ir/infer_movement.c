/* Inference for the movement primitives (reshape, permute, expand, slice,
 * flip: views of their input) and pad. Each normalizes its prim (inferred
 * sizes, non-negative axes, clamped slice bounds) so that equal requests hash
 * equal and the runner can read the view's layout straight from the prim. */
#include <stdbool.h>
#include <string.h>

#include "core/status.h"
#include "core/tensor_layout.h"
#include "ir/infer.h"

static porta_status *check_rank(const char *op, int rank) {
    if (rank < 0 || rank > PORTA_MAX_RANK)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "%s: rank must be 0..%d, got %d", op,
                           PORTA_MAX_RANK, rank);
    return NULL;
}

static void set_out(ir_meta *out, porta_dtype dtype, int rank, const int64_t *sizes) {
    memset(out, 0, sizeof *out);
    out->dtype = dtype;
    out->rank = rank;
    if (rank) memcpy(out->sizes, sizes, (size_t)rank * sizeof *sizes);
}

/* torch.reshape's size rules: one -1 is inferred from the element count. */
static porta_status *infer_reshape(ir_prim *prim, const ir_meta *x, ir_meta *out) {
    PORTA_TRY(check_rank("reshape", prim->rank));
    char shape[CORE_SHAPE_STR_CAP];
    core_format_shape(shape, sizeof shape, prim->rank, prim->sizes);
    int inferred = -1;
    int64_t known = 1;
    for (int i = 0; i < prim->rank; i++) {
        int64_t size = prim->sizes[i];
        if (size == -1) {
            if (inferred >= 0)
                return porta_error(PORTA_ERR_SHAPE,
                                   "reshape: only one dimension can be inferred, but shape "
                                   "'%s' has -1 at dimensions %d and %d",
                                   shape, inferred, i);
            inferred = i;
        } else if (size < 0) {
            return porta_error(PORTA_ERR_SHAPE,
                               "reshape: invalid size %lld at dimension %d of shape '%s'",
                               (long long)size, i, shape);
        } else if (__builtin_mul_overflow(known, size, &known)) {
            return porta_error(PORTA_ERR_SHAPE,
                               "reshape: shape '%s' has more elements than fit in int64", shape);
        }
    }
    int64_t numel = core_shape_numel(x->rank, x->sizes);
    if (inferred >= 0) {
        if (known == 0)
            return porta_error(PORTA_ERR_SHAPE,
                               "reshape: cannot reshape a tensor of %lld elements into shape "
                               "'%s' because the unspecified dimension size -1 can be any "
                               "value and is ambiguous",
                               (long long)numel, shape);
        if (numel % known == 0) {
            prim->sizes[inferred] = numel / known;
            known = numel;
        }
    }
    if (known != numel)
        return porta_error(PORTA_ERR_SHAPE, "reshape: shape '%s' is invalid for input of size %lld",
                           shape, (long long)numel);
    for (int i = prim->rank; i < PORTA_MAX_RANK; i++) prim->sizes[i] = 0;
    set_out(out, x->dtype, prim->rank, prim->sizes);
    return NULL;
}

static porta_status *infer_permute(ir_prim *prim, const ir_meta *x, ir_meta *out) {
    if (prim->axis_count != x->rank)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "permute: expected %d dims for a rank-%d tensor, got %d", x->rank,
                           x->rank, prim->axis_count);
    bool seen[PORTA_MAX_RANK] = {false};
    int64_t sizes[PORTA_MAX_RANK];
    for (int i = 0; i < x->rank; i++) {
        int axis;
        PORTA_TRY(core_normalize_axis("permute", prim->axes[i], x->rank, &axis));
        if (seen[axis])
            return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                               "permute: dim %d appears twice; dims must be a permutation of "
                               "0..%d",
                               axis, x->rank - 1);
        seen[axis] = true;
        prim->axes[i] = axis;
        sizes[i] = x->sizes[axis];
    }
    for (int i = x->rank; i < PORTA_MAX_RANK; i++) prim->axes[i] = 0;
    set_out(out, x->dtype, x->rank, sizes);
    return NULL;
}

/* torch.expand: new leading dims, -1 keeps a size, only size-1 dims grow. */
static porta_status *infer_expand(ir_prim *prim, const ir_meta *x, ir_meta *out) {
    PORTA_TRY(check_rank("expand", prim->rank));
    char target[CORE_SHAPE_STR_CAP], given[CORE_SHAPE_STR_CAP];
    core_format_shape(target, sizeof target, prim->rank, prim->sizes);
    core_format_shape(given, sizeof given, x->rank, x->sizes);
    if (prim->rank < x->rank)
        return porta_error(PORTA_ERR_SHAPE,
                           "expand: the number of sizes provided (%d) must be greater or equal "
                           "to the number of dimensions in the tensor (%d); target sizes %s, "
                           "tensor sizes %s",
                           prim->rank, x->rank, target, given);
    int lead = prim->rank - x->rank;
    for (int i = 0; i < prim->rank; i++) {
        int64_t want = prim->sizes[i];
        if (i < lead) {
            if (want < 0)
                return porta_error(PORTA_ERR_SHAPE,
                                   "expand: size %lld is not allowed in the new leading "
                                   "dimension %d (target sizes %s)",
                                   (long long)want, i, target);
            continue;
        }
        int64_t have = x->sizes[i - lead];
        if (want == -1) {
            prim->sizes[i] = have;
        } else if (want != have && (have != 1 || want < 0)) {
            return porta_error(PORTA_ERR_SHAPE,
                               "expand: the expanded size of the tensor (%lld) must match the "
                               "existing size (%lld) at non-singleton dimension %d; target "
                               "sizes %s, tensor sizes %s",
                               (long long)want, (long long)have, i, target, given);
        }
    }
    if (core_shape_numel(prim->rank, prim->sizes) < 0)
        return porta_error(PORTA_ERR_SHAPE, "expand: sizes %s have more elements than fit in int64",
                           target);
    for (int i = prim->rank; i < PORTA_MAX_RANK; i++) prim->sizes[i] = 0;
    set_out(out, x->dtype, prim->rank, prim->sizes);
    return NULL;
}

/* Python's slice.indices: a negative bound counts from the end, then bounds
 * clamp to [0, n] for positive steps and to [-1, n - 1] for negative ones
 * (-1 meaning "before element 0"). Written to avoid overflow for any int64. */
static int64_t clamp_bound(int64_t bound, int64_t n, bool forward) {
    int64_t low = forward ? 0 : -1, high = forward ? n : n - 1;
    if (bound < 0) bound = bound < -n ? low : bound + n;
    if (bound > high) bound = high;
    return bound;
}

static porta_status *infer_slice(ir_prim *prim, const ir_meta *x, ir_meta *out) {
    if (x->rank == 0) return porta_error(PORTA_ERR_SHAPE, "slice: cannot slice a rank-0 tensor");
    int axis;
    PORTA_TRY(core_normalize_axis("slice", prim->axis, x->rank, &axis));
    int64_t step = prim->step;
    if (step == 0) return porta_error(PORTA_ERR_INVALID_ARGUMENT, "slice: step must be non-zero");
    int64_t n = x->sizes[axis];
    bool forward = step > 0;
    int64_t start = clamp_bound(prim->start, n, forward);
    int64_t stop = clamp_bound(prim->stop, n, forward);
    /* Counted in unsigned arithmetic: with |step| near INT64_MAX the distance
     * plus |step| - 1 does not fit in int64, though it fits in uint64. */
    uint64_t distance = forward ? (uint64_t)stop - (uint64_t)start
                                : (uint64_t)start - (uint64_t)stop;
    uint64_t stride = forward ? (uint64_t)step : 0 - (uint64_t)step;
    int64_t length = (forward ? stop > start : start > stop)
                         ? (int64_t)((distance - 1) / stride + 1)
                         : 0;
    /* Store bounds that re-inference maps to themselves: the tightest stop,
     * with "before element 0" as -(n + 1), which Python also clamps to -1. */
    if (length == 0) {
        start = stop = 0;
    } else {
        int64_t last = start + (length - 1) * step;
        stop = forward ? last + 1 : (last == 0 ? -(n + 1) : last - 1);
    }
    prim->axis = axis;
    prim->start = start;
    prim->stop = stop;
    int64_t sizes[PORTA_MAX_RANK];
    memcpy(sizes, x->sizes, (size_t)x->rank * sizeof *sizes);
    sizes[axis] = length;
    set_out(out, x->dtype, x->rank, sizes);
    return NULL;
}

static porta_status *infer_flip(ir_prim *prim, const ir_meta *x, ir_meta *out) {
    if (prim->axis_count < 0 || prim->axis_count > PORTA_MAX_RANK)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "flip: axis_count must be 0..%d, got %d",
                           PORTA_MAX_RANK, prim->axis_count);
    bool flipped[PORTA_MAX_RANK] = {false};
    for (int i = 0; i < prim->axis_count; i++) {
        int axis;
        PORTA_TRY(core_normalize_axis("flip", prim->axes[i], x->rank, &axis));
        if (flipped[axis])
            return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                               "flip: dim %d appears multiple times in the list of dims", axis);
        flipped[axis] = true;
    }
    /* Sorted, so that flips of the same axes in any order hash equal. A
     * scalar's axis 0 (accepted as in PyTorch) has nothing to flip. */
    int count = 0;
    for (int axis = 0; axis < x->rank; axis++)
        if (flipped[axis]) prim->axes[count++] = axis;
    for (int i = count; i < PORTA_MAX_RANK; i++) prim->axes[i] = 0;
    prim->axis_count = count;
    set_out(out, x->dtype, x->rank, x->sizes);
    return NULL;
}

static porta_status *infer_pad(ir_prim *prim, const ir_meta *x, ir_meta *out) {
    int64_t sizes[PORTA_MAX_RANK];
    for (int i = 0; i < x->rank; i++) {
        int64_t before = prim->pads[2 * i], after = prim->pads[2 * i + 1];
        int64_t size;
        if (__builtin_add_overflow(x->sizes[i], before, &size) ||
            __builtin_add_overflow(size, after, &size) || size < 0) {
            char shape[CORE_SHAPE_STR_CAP];
            return porta_error(PORTA_ERR_SHAPE,
                               "pad: padding (%lld, %lld) on axis %d of a tensor of shape %s "
                               "gives an invalid size",
                               (long long)before, (long long)after, i,
                               core_format_shape(shape, sizeof shape, x->rank, x->sizes));
        }
        sizes[i] = size;
    }
    if (core_shape_numel(x->rank, sizes) < 0)
        return porta_error(PORTA_ERR_SHAPE, "pad: the padded shape has more elements than fit in "
                           "int64");
    for (int i = 2 * x->rank; i < 2 * PORTA_MAX_RANK; i++) prim->pads[i] = 0;
    set_out(out, x->dtype, x->rank, sizes);
    return NULL;
}

porta_status *ir_infer_movement(ir_prim *prim, const ir_meta *inputs, int input_count,
                                   ir_meta *out) {
    const char *op = ir_prim_name(prim);
    if (input_count != 1)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "%s: expected 1 input, got %d", op,
                           input_count);
    switch (prim->kind) {
    case PRIM_RESHAPE: return infer_reshape(prim, &inputs[0], out);
    case PRIM_PERMUTE: return infer_permute(prim, &inputs[0], out);
    case PRIM_EXPAND: return infer_expand(prim, &inputs[0], out);
    case PRIM_SLICE: return infer_slice(prim, &inputs[0], out);
    case PRIM_FLIP: return infer_flip(prim, &inputs[0], out);
    case PRIM_PAD: return infer_pad(prim, &inputs[0], out);
    default: break;
    }
    return porta_error(PORTA_ERR_INTERNAL, "%s is not a movement primitive", op);
}
