/* Eager movement ops: reshape, permute, expand, slice and flip give views that
 * share x's buffer (reshape copies only when no view can express the result),
 * and pad, the one movement op that computes, allocates its result. */
#include <string.h>

#include "core/status.h"
#include "ops/complex_copy.h"
#include "ops/run.h"
#include "runtime/tensor.h"

/* PyTorch's computeStride: the new shape is a view of x when every run of
 * x's dims that it merges or splits is contiguous within itself. Products
 * cannot overflow: each is bounded by the span x already addresses. */
static bool reshape_view_strides(const porta_tensor *x, const ir_meta *meta,
                                 int64_t *strides) {
    if (x->rank == 0 || porta_tensor_numel(x) == 0) {
        core_contiguous_strides(meta->rank, meta->sizes, strides);
        return true;
    }
    int view_d = meta->rank - 1;
    int64_t chunk_base_stride = x->strides[x->rank - 1];
    int64_t tensor_numel = 1, view_numel = 1;
    for (int tensor_d = x->rank - 1; tensor_d >= 0; tensor_d--) {
        tensor_numel *= x->sizes[tensor_d];
        bool chunk_ends = tensor_d == 0 || (x->sizes[tensor_d - 1] != 1 &&
                                            x->strides[tensor_d - 1] !=
                                                tensor_numel * chunk_base_stride);
        if (!chunk_ends) continue;
        while (view_d >= 0 && (view_numel < tensor_numel || meta->sizes[view_d] == 1)) {
            strides[view_d] = view_numel * chunk_base_stride;
            view_numel *= meta->sizes[view_d];
            view_d--;
        }
        if (view_numel != tensor_numel) return false;
        if (tensor_d > 0) {
            chunk_base_stride = x->strides[tensor_d - 1];
            tensor_numel = 1;
            view_numel = 1;
        }
    }
    return view_d == -1;
}

static porta_status *reshape(const porta_tensor *x, porta_device *device, const ir_meta *meta,
                             porta_tensor **out) {
    int64_t strides[PORTA_MAX_RANK];
    if (reshape_view_strides(x, meta, strides))
        return rt_tensor_restride(x, meta->rank, meta->sizes, strides, x->offset, out);
    /* Copy x into a contiguous buffer in its own shape, then view that. */
    ir_meta packed_meta;
    ir_meta_of(x, &packed_meta);
    porta_tensor *packed;
    PORTA_TRY(ops_alloc_meta(device, &packed_meta, &packed));
    ir_prim copy;
    memset(&copy, 0, sizeof copy);
    copy.kind = PRIM_CAST;
    copy.dtype = x->dtype;
    /* complex pairs are copied as their components: no kernel has them */
    porta_status *status = porta_dtype_is_complex(x->dtype)
                               ? ops_complex_copy(x, packed)
                               : ops_device_execute(&copy, &x, 1, packed);
    if (!status) {
        core_contiguous_strides(meta->rank, meta->sizes, strides);
        status = rt_tensor_restride(packed, meta->rank, meta->sizes, strides, 0, out);
    }
    porta_tensor_release(packed);
    return status;
}

static porta_status *permute(const porta_tensor *x, const ir_prim *prim, porta_tensor **out) {
    int64_t sizes[PORTA_MAX_RANK], strides[PORTA_MAX_RANK];
    for (int i = 0; i < x->rank; i++) {
        sizes[i] = x->sizes[prim->axes[i]];
        strides[i] = x->strides[prim->axes[i]];
    }
    return rt_tensor_restride(x, x->rank, sizes, strides, x->offset, out);
}

/* The bounds in prim are normalized: start is the first element taken. An
 * empty result keeps x's layout, which addresses nothing; otherwise every
 * product below stays inside the span x addresses, so none overflows. */
static porta_status *slice(const porta_tensor *x, const ir_prim *prim, const ir_meta *meta,
                           porta_tensor **out) {
    int axis = prim->axis;
    int64_t strides[PORTA_MAX_RANK];
    memcpy(strides, x->strides, (size_t)x->rank * sizeof *strides);
    int64_t offset = x->offset;
    if (core_shape_numel(meta->rank, meta->sizes) > 0) {
        offset += prim->start * x->strides[axis];
        /* A single element needs no step, and a huge step would overflow. */
        if (meta->sizes[axis] > 1) strides[axis] *= prim->step;
    }
    return rt_tensor_restride(x, meta->rank, meta->sizes, strides, offset, out);
}

static porta_status *flip(const porta_tensor *x, const ir_prim *prim, porta_tensor **out) {
    int64_t strides[PORTA_MAX_RANK];
    memcpy(strides, x->strides, (size_t)x->rank * sizeof *strides);
    int64_t offset = x->offset;
    bool empty = porta_tensor_numel(x) == 0;
    for (int i = 0; i < prim->axis_count; i++) {
        int axis = prim->axes[i];
        if (!empty) offset += (x->sizes[axis] - 1) * x->strides[axis];
        strides[axis] = -strides[axis];
    }
    return rt_tensor_restride(x, x->rank, x->sizes, strides, offset, out);
}

static porta_status *pad(const ir_prim *prim, const porta_tensor *x, porta_device *device,
                         const ir_meta *meta, porta_tensor **out) {
    porta_tensor *dst;
    bool needs_copy;
    PORTA_TRY(ops_prepare_out("pad", device, meta, out, &dst, &needs_copy));
    porta_status *status = ops_device_execute(prim, &x, 1, dst);
    if (status) {
        if (dst != *out) porta_tensor_release(dst);
        return status;
    }
    return ops_finish_out(dst, needs_copy, out);
}

porta_status *ops_run_movement(const ir_prim *prim, const porta_tensor *const *inputs,
                                 int input_count, porta_tensor **out) {
    const char *op = ir_prim_name(prim);
    if (input_count != 1 || !inputs)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "%s: expected 1 input, got %d", op,
                           inputs ? input_count : 0);
    porta_device *device;
    PORTA_TRY(ops_common_device(op, inputs, 1, &device));
    if (prim->kind != PRIM_PAD && *out)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "%s: returns a view of its input, so *out must be NULL", op);
    const porta_tensor *x = inputs[0];
    ir_prim local = *prim; /* inference normalizes it */
    ir_meta in, meta;
    ir_meta_of(x, &in);
    PORTA_TRY(ir_infer(&local, &in, 1, &meta));
    switch (local.kind) {
    case PRIM_RESHAPE: return reshape(x, device, &meta, out);
    case PRIM_PERMUTE: return permute(x, &local, out);
    case PRIM_EXPAND: return ops_broadcast_to(x, meta.rank, meta.sizes, out);
    case PRIM_SLICE: return slice(x, &local, &meta, out);
    case PRIM_FLIP: return flip(x, &local, out);
    case PRIM_PAD: return pad(&local, x, device, &meta, out);
    default: break;
    }
    return porta_error(PORTA_ERR_INTERNAL, "%s is not a movement primitive", op);
}

/* ---- public entry points ---- */

static void init_prim(ir_prim *prim, ir_prim_kind kind) {
    memset(prim, 0, sizeof *prim); /* prims are hashed and compared bytewise */
    prim->kind = kind;
}

/* Checks an argument array of `count` entries (count limited to `max`). */
static porta_status *check_array(const char *op, const char *name, const void *array, int count,
                                 int max) {
    if (count < 0 || count > max)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "%s: expected 0..%d %s, got %d", op, max,
                           name, count);
    if (count > 0 && !array)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "%s: %s is NULL", op, name);
    return NULL;
}

static porta_status *run_on(const ir_prim *prim, const porta_tensor *x, porta_tensor **out) {
    if (!out)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "%s: out is NULL", ir_prim_name(prim));
    return ops_prim_run(prim, &x, 1, out);
}

/* Reshape and expand: x and the shape it becomes. */
static porta_status *run_shape_op(ir_prim_kind kind, const porta_tensor *x, int rank,
                                  const int64_t *sizes, porta_tensor **out) {
    ir_prim prim;
    init_prim(&prim, kind);
    PORTA_TRY(check_array(ir_prim_name(&prim), "sizes", sizes, rank, PORTA_MAX_RANK));
    prim.rank = rank;
    if (rank) memcpy(prim.sizes, sizes, (size_t)rank * sizeof *sizes);
    return run_on(&prim, x, out);
}

porta_status *porta_reshape(const porta_tensor *x, int rank, const int64_t *sizes,
                            porta_tensor **out) {
    return run_shape_op(PRIM_RESHAPE, x, rank, sizes, out);
}

porta_status *porta_permute(const porta_tensor *x, const int *dims, porta_tensor **out) {
    ir_prim prim;
    init_prim(&prim, PRIM_PERMUTE);
    PORTA_TRY(core_check_tensor(x, "x"));
    PORTA_TRY(check_array("permute", "dims", dims, x->rank, PORTA_MAX_RANK));
    prim.axis_count = x->rank;
    if (x->rank) memcpy(prim.axes, dims, (size_t)x->rank * sizeof *dims);
    return run_on(&prim, x, out);
}

porta_status *porta_expand(const porta_tensor *x, int rank, const int64_t *sizes,
                           porta_tensor **out) {
    return run_shape_op(PRIM_EXPAND, x, rank, sizes, out);
}

porta_status *porta_slice(const porta_tensor *x, int axis, int64_t start, int64_t stop,
                          int64_t step, porta_tensor **out) {
    ir_prim prim;
    init_prim(&prim, PRIM_SLICE);
    prim.axis = axis;
    prim.start = start;
    prim.stop = stop;
    prim.step = step;
    return run_on(&prim, x, out);
}

porta_status *porta_flip(const porta_tensor *x, const int *axes, int axis_count,
                         porta_tensor **out) {
    ir_prim prim;
    init_prim(&prim, PRIM_FLIP);
    PORTA_TRY(check_array("flip", "axes", axes, axis_count, PORTA_MAX_RANK));
    prim.axis_count = axis_count;
    if (axis_count) memcpy(prim.axes, axes, (size_t)axis_count * sizeof *axes);
    return run_on(&prim, x, out);
}

porta_status *porta_pad(const porta_tensor *x, const int64_t *pads, double value,
                        porta_tensor **out) {
    ir_prim prim;
    init_prim(&prim, PRIM_PAD);
    PORTA_TRY(core_check_tensor(x, "x"));
    PORTA_TRY(check_array("pad", "pads", pads, 2 * x->rank, 2 * PORTA_MAX_RANK));
    if (x->rank) memcpy(prim.pads, pads, 2 * (size_t)x->rank * sizeof *pads);
    prim.value = value;
    return run_on(&prim, x, out);
}
