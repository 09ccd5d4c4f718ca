/* Eager execution of one primitive, and the building blocks every family's
 * runner shares. */
#include "ops/run.h"

#include <string.h>

#include "compiler/trace.h"
#include "core/status.h"
#include "devices/placement.h"
#include "ops/complex_copy.h"
#include "runtime/device.h"
#include "runtime/profiler.h"
#include "runtime/tensor.h"

porta_status *ops_prim_run(const ir_prim *prim, const porta_tensor *const *inputs,
                             int input_count, porta_tensor **out) {
    if (!prim || !out) return porta_error(PORTA_ERR_INVALID_ARGUMENT, "prim_run: NULL argument");
    switch (prim->kind) {
    case PRIM_UNARY:
    case PRIM_BINARY:
    case PRIM_TERNARY:
    case PRIM_CAST:
    case PRIM_FILL: return ops_run_elementwise(prim, inputs, input_count, out);
    case PRIM_REDUCE: return ops_run_reduce(prim, inputs, input_count, out);
    case PRIM_PAD:
    case PRIM_RESHAPE:
    case PRIM_PERMUTE:
    case PRIM_EXPAND:
    case PRIM_SLICE:
    case PRIM_FLIP: return ops_run_movement(prim, inputs, input_count, out);
    case PRIM_GATHER:
    case PRIM_SCATTER:
    case PRIM_INDEX_SELECT: return ops_run_index(prim, inputs, input_count, out);
    case PRIM_MATMUL:
    case PRIM_CONV:
    case PRIM_CONV_WEIGHT_GRAD:
    case PRIM_CONV_INPUT_GRAD:
    case PRIM_FACTOR: return ops_run_linalg(prim, inputs, input_count, out);
    case PRIM_SOFTMAX: return ops_run_softmax(prim, inputs, input_count, out);
    case PRIM_RANDOM: return ops_run_random(prim, inputs, input_count, out);
    case PRIM_SORT:
    case PRIM_POOL_MAX:
    case PRIM_FFT: return ops_run_one_input(prim, inputs, input_count, out);
    case PRIM_INPUT:
    case PRIM_CONSTANT:
    case PRIM_KIND_COUNT: break;
    }
    return porta_error(PORTA_ERR_INVALID_ARGUMENT, "prim_run: %s is not an executable primitive",
                       ir_prim_kind_name(prim->kind));
}

porta_status *ops_run_one_input(const ir_prim *prim, const porta_tensor *const *inputs,
                                int input_count, porta_tensor **out) {
    const char *op = ir_prim_name(prim);
    if (!inputs || input_count != 1)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "%s: expected 1 input, got %d", op,
                           inputs ? input_count : 0);
    porta_device *device;
    PORTA_TRY(ops_common_device(op, inputs, 1, &device));
    ir_meta x_meta, meta;
    ir_meta_of(inputs[0], &x_meta);
    ir_prim local = *prim; /* inference may normalize fields (sort's axis) */
    PORTA_TRY(ir_infer(&local, &x_meta, 1, &meta));
    return ops_execute_out(&local, device, &meta, inputs, 1, out);
}

porta_status *ops_common_device(const char *op, const porta_tensor *const *inputs,
                                  int input_count, porta_device **out) {
    porta_device *device = NULL;
    for (int i = 0; i < input_count; i++) {
        if (!inputs[i])
            return porta_error(PORTA_ERR_INVALID_ARGUMENT, "%s: input %d is NULL", op, i);
        porta_device *d = inputs[i]->buffer->device;
        if (device && d != device)
            return porta_error(PORTA_ERR_DEVICE,
                               "%s: expected all tensors on the same device, but input 0 is on "
                               "porta:%d (%s) and input %d on porta:%d (%s)",
                               op, device->info.index, device->info.backend, i, d->info.index,
                               d->info.backend);
        device = d;
    }
    *out = device;
    return NULL;
}

porta_status *ops_alloc_meta(porta_device *device, const ir_meta *meta, porta_tensor **out) {
    return porta_tensor_empty(device, meta->dtype, meta->rank, meta->sizes, out);
}

porta_status *ops_to_dtype(const porta_tensor *x, porta_dtype dtype, porta_tensor **out) {
    if (x->dtype == dtype) {
        porta_tensor_retain((porta_tensor *)x);
        *out = (porta_tensor *)x;
        return NULL;
    }
    porta_tensor *converted;
    PORTA_TRY(porta_tensor_empty(x->buffer->device, dtype, x->rank, x->sizes, &converted));
    ir_prim cast;
    memset(&cast, 0, sizeof cast);
    cast.kind = PRIM_CAST;
    cast.dtype = dtype;
    porta_status *status = ops_device_execute(&cast, &x, 1, converted);
    if (status) {
        porta_tensor_release(converted);
        return status;
    }
    *out = converted;
    return NULL;
}

porta_status *ops_broadcast_strides(const porta_tensor *x, int rank, const int64_t *sizes,
                                      int64_t *strides) {
    if (rank < x->rank)
        return porta_error(PORTA_ERR_SHAPE, "broadcast: cannot lower rank %d to %d", x->rank, rank);
    int lead = rank - x->rank;
    for (int i = 0; i < rank; i++) {
        int src = i - lead;
        if (src < 0) {
            strides[i] = 0;
        } else if (x->sizes[src] == sizes[i]) {
            strides[i] = x->strides[src];
        } else if (x->sizes[src] == 1) {
            strides[i] = 0;
        } else {
            char bx[CORE_SHAPE_STR_CAP], bt[CORE_SHAPE_STR_CAP];
            return porta_error(PORTA_ERR_SHAPE, "broadcast: shape %s cannot be broadcast to %s",
                               core_format_shape(bx, sizeof bx, x->rank, x->sizes),
                               core_format_shape(bt, sizeof bt, rank, sizes));
        }
    }
    return NULL;
}

porta_status *ops_broadcast_to(const porta_tensor *x, int rank, const int64_t *sizes,
                                 porta_tensor **out) {
    int64_t strides[PORTA_MAX_RANK];
    PORTA_TRY(ops_broadcast_strides(x, rank, sizes, strides));
    return rt_tensor_restride(x, rank, sizes, strides, x->offset, out);
}

porta_status *ops_prepare_out(const char *op, porta_device *device, const ir_meta *meta,
                                porta_tensor **out, porta_tensor **dst, bool *needs_copy) {
    *needs_copy = false;
    porta_tensor *given = *out;
    if (!given) return ops_alloc_meta(device, meta, dst);
    bool same_shape = given->rank == meta->rank &&
                      (meta->rank == 0 ||
                       !memcmp(given->sizes, meta->sizes, (size_t)meta->rank * sizeof meta->sizes[0]));
    if (!same_shape) {
        char bg[CORE_SHAPE_STR_CAP], bm[CORE_SHAPE_STR_CAP];
        return porta_error(PORTA_ERR_SHAPE, "%s: the out tensor has shape %s, expected %s", op,
                           core_format_shape(bg, sizeof bg, given->rank, given->sizes),
                           core_format_shape(bm, sizeof bm, meta->rank, meta->sizes));
    }
    if (given->buffer->device != device)
        return porta_error(PORTA_ERR_DEVICE, "%s: the out tensor is on porta:%d, the inputs on porta:%d",
                           op, given->buffer->device->info.index, device->info.index);
    if (given->dtype == meta->dtype) {
        *dst = given;
        return NULL;
    }
    if (!porta_dtype_can_cast(meta->dtype, given->dtype))
        return porta_error(PORTA_ERR_DTYPE, "%s: result type %s can't be cast to the out tensor's dtype %s",
                           op, porta_dtype_name(meta->dtype), porta_dtype_name(given->dtype));
    *needs_copy = true;
    return ops_alloc_meta(device, meta, dst);
}

porta_status *ops_finish_out(porta_tensor *dst, bool needs_copy, porta_tensor **out) {
    if (!*out) {
        *out = dst;
        return NULL;
    }
    if (!needs_copy) return NULL; /* computed in place into *out */
    ir_prim cast;
    memset(&cast, 0, sizeof cast);
    cast.kind = PRIM_CAST;
    cast.dtype = (*out)->dtype;
    const porta_tensor *src = dst;
    porta_status *status = ops_device_execute(&cast, &src, 1, *out);
    porta_tensor_release(dst);
    return status;
}

porta_status *ops_device_execute(const ir_prim *prim, const porta_tensor *const *inputs,
                                   int input_count, porta_tensor *out) {
    porta_device *device = out->buffer->device;
    PORTA_TRY(ops_check_not_complex(ir_prim_name(prim), inputs, input_count, out));
    /* What the device cannot run runs on another device (devices/placement.h);
     * only a primitive no device runs fails, here, where it was issued. */
    bool native = dev_runs(device, prim, inputs, input_count);
    if (!native && !dev_placement_find(device, prim, inputs, input_count))
        return porta_error(PORTA_ERR_UNSUPPORTED, "%s is not supported on porta:%d (%s)",
                           ir_prim_name(prim), device->info.index, device->info.backend);
    if (trace_recording()) return trace_record_prim(prim, inputs, input_count, out);
    /* Buffers made while fusion was on may have no memory yet. */
    for (int i = 0; i < input_count; i++) PORTA_TRY(rt_buffer_materialize(inputs[i]->buffer));
    PORTA_TRY(rt_buffer_materialize(out->buffer));
    if (!native) return dev_placement_run(prim, inputs, input_count, out);
    uint64_t begin = prof_begin();
    porta_status *status = device->ops->execute(device, prim, inputs, input_count, out);
    prof_end(PROF_KERNEL, device, ir_prim_name(prim), NULL, -1, begin);
    return status;
}

porta_status *ops_execute_out(const ir_prim *prim, porta_device *device,
                                const ir_meta *meta, const porta_tensor *const *operands,
                                int operand_count, porta_tensor **out) {
    porta_tensor *dst;
    bool needs_copy;
    PORTA_TRY(ops_prepare_out(ir_prim_name(prim), device, meta, out, &dst, &needs_copy));
    porta_status *status = ops_device_execute(prim, operands, operand_count, dst);
    if (status) {
        if (dst != *out) porta_tensor_release(dst); /* *out's own tensor stays the caller's */
        return status;
    }
    return ops_finish_out(dst, needs_copy, out);
}
