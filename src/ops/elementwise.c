/* The public elementwise ops (unary, binary, ternary, cast, copy, fill) and
 * their eager runner: inference, conversion of inputs to the dtypes the
 * backend contract names, broadcasting, PyTorch's out= rules, and writes into
 * tensors that share memory with an input. */
#include <string.h>

#include "core/dtype.h"
#include "core/status.h"
#include "ir/infer_elementwise.h"
#include "ops/complex_copy.h"
#include "ops/run.h"
#include "runtime/device.h"
#include "runtime/tensor.h"

/* ---- writing into tensors the caller gave ---- */

/* PyTorch refuses to write through a view where several elements share one
 * address (an expanded tensor): the result would depend on the order. */
static porta_status *check_writable(const char *name, const porta_tensor *out) {
    if (porta_tensor_numel(out) == 0) return NULL;
    for (int d = 0; d < out->rank; d++)
        if (out->strides[d] == 0 && out->sizes[d] > 1)
            return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                               "%s: the out tensor has stride 0 on axis %d of size %lld, so "
                               "several of its elements share memory; write into a tensor "
                               "without repeated elements",
                               name, d, (long long)out->sizes[d]);
    return NULL;
}

/* Byte range [*low, *high) that a non-empty tensor's elements cover. */
static void byte_extent(const porta_tensor *t, int64_t *low, int64_t *high) {
    int64_t first = t->offset, last = t->offset;
    for (int d = 0; d < t->rank; d++) {
        int64_t span = (t->sizes[d] - 1) * t->strides[d];
        if (span < 0)
            first += span;
        else
            last += span;
    }
    int64_t elem = (int64_t)porta_dtype_size(t->dtype);
    *low = first * elem;
    *high = (last + 1) * elem;
}

/* Whether writing `out` elementwise could overwrite elements of `in` (of
 * out's shape) before they are read. Exactly the same layout is safe: each
 * element is read just before it is overwritten. */
static bool overlaps_partially(const porta_tensor *out, const porta_tensor *in) {
    if (out->buffer != in->buffer || porta_tensor_numel(out) == 0) return false;
    bool same_layout = porta_dtype_size(out->dtype) == porta_dtype_size(in->dtype) &&
                       out->offset == in->offset && out->rank == in->rank;
    for (int d = 0; d < out->rank && same_layout; d++)
        same_layout = out->sizes[d] == 1 || out->strides[d] == in->strides[d];
    if (same_layout) return false;
    int64_t out_low, out_high, in_low, in_high;
    byte_extent(out, &out_low, &out_high);
    byte_extent(in, &in_low, &in_high);
    return out_low < in_high && in_low < out_high;
}

/* Executes into dst, through a temporary when dst overlaps an input. */
static porta_status *execute_into(const ir_prim *prim, const porta_tensor *const *operands,
                                  int input_count, porta_tensor *dst) {
    bool overlap = false;
    for (int i = 0; i < input_count; i++) overlap = overlap || overlaps_partially(dst, operands[i]);
    if (!overlap) return ops_device_execute(prim, operands, input_count, dst);

    ir_meta meta;
    ir_meta_of(dst, &meta);
    porta_tensor *temp;
    PORTA_TRY(ops_alloc_meta(dst->buffer->device, &meta, &temp));
    porta_status *status = ops_device_execute(prim, operands, input_count, temp);
    if (!status) {
        ir_prim copy;
        memset(&copy, 0, sizeof copy);
        copy.kind = PRIM_CAST;
        copy.dtype = dst->dtype;
        const porta_tensor *source = temp;
        status = ops_device_execute(&copy, &source, 1, dst);
    }
    porta_tensor_release(temp);
    return status;
}

/* ---- the runner ---- */

/* An input as the backend gets it (`ready`): the caller's tensor itself,
 * `owned` (a conversion, released after the call) or a broadcast view of
 * either in `view`. The view lives in the caller's frame: execute keeps no
 * input past its return (conversions are released right after it too), so
 * a view needs no heap handle nor a reference of its own while the tensor
 * it views holds the buffer. Most inputs need no step at all. On failure
 * nothing is left to release. */
typedef struct ew_input {
    const porta_tensor *ready;
    porta_tensor *owned;
    porta_tensor view;
} ew_input;

static porta_status *prepare_input(const porta_tensor *x, porta_dtype dtype,
                                   const ir_meta *meta, ew_input *in) {
    bool same_shape = x->rank == meta->rank &&
                      (meta->rank == 0 ||
                       !memcmp(x->sizes, meta->sizes, (size_t)meta->rank * sizeof meta->sizes[0]));
    in->ready = x;
    in->owned = NULL;
    if (x->dtype != dtype) {
        PORTA_TRY(ops_to_dtype(x, dtype, &in->owned));
        in->ready = in->owned;
    }
    if (same_shape) return NULL;
    const porta_tensor *source = in->ready;
    porta_status *status =
        ops_broadcast_strides(source, meta->rank, meta->sizes, in->view.strides);
    if (status) {
        porta_tensor_release(in->owned);
        in->owned = NULL;
        return status;
    }
    /* the tail as in every tensor handle: sizes copy meta's zeros */
    for (int d = meta->rank; d < PORTA_MAX_RANK; d++) in->view.strides[d] = 0;
    atomic_init(&in->view.refcount, 1);
    in->view.buffer = source->buffer;
    in->view.dtype = source->dtype;
    in->view.rank = meta->rank;
    memcpy(in->view.sizes, meta->sizes, sizeof in->view.sizes);
    in->view.offset = source->offset;
    in->ready = &in->view;
    return NULL;
}

/* Fill has no inputs to take a device from: the out tensor's, or the CPU. */
static porta_status *run_device(const char *name, const porta_tensor *const *inputs,
                                int input_count, const porta_tensor *out,
                                porta_device **device) {
    PORTA_TRY(ops_common_device(name, inputs, input_count, device));
    if (*device) return NULL;
    if (out) {
        *device = out->buffer->device;
        return NULL;
    }
    return porta_device_get(0, device);
}

/* The runner on a prim it may normalize in place (the public entry copies
 * the caller's const prim first; the public ops build their own). */
static porta_status *run_elementwise(ir_prim *prim, const porta_tensor *const *inputs,
                                     int input_count, porta_tensor **out) {
    const char *name = ir_prim_name(prim);
    porta_device *device;
    PORTA_TRY(run_device(name, inputs, input_count, *out, &device));
    ir_meta metas[3], meta;
    for (int i = 0; i < input_count; i++) ir_meta_of(inputs[i], &metas[i]);
    /* straight to the family's inference: ir_infer's checks of the
     * metas hold for any tensor's */
    PORTA_TRY(ir_infer_elementwise(prim, metas, input_count, &meta));
    if (*out) PORTA_TRY(check_writable(name, *out));

    porta_status *status = NULL;
    ew_input prepared[3];
    const porta_tensor *ready[3];
    int count = 0;
    for (; count < input_count; count++) {
        CORE_TRY_GOTO(status,
                       prepare_input(inputs[count],
                                     ir_elementwise_input_dtype(prim, metas, count, &meta),
                                     &meta, &prepared[count]),
                       done);
        ready[count] = prepared[count].ready;
    }
    porta_tensor *dst;
    bool needs_copy;
    CORE_TRY_GOTO(status, ops_prepare_out(name, device, &meta, out, &dst, &needs_copy), done);
    status = execute_into(prim, ready, input_count, dst);
    if (status) {
        if (dst != *out) porta_tensor_release(dst);
        goto done;
    }
    status = ops_finish_out(dst, needs_copy, out);
done:
    for (int i = 0; i < count; i++) porta_tensor_release(prepared[i].owned);
    return status;
}

static bool valid_call(const ir_prim *prim, const porta_tensor *const *inputs,
                       int input_count, porta_tensor **out) {
    return prim && out && input_count >= 0 && input_count <= 3 && (input_count == 0 || inputs);
}

static porta_status *invalid_call(int input_count) {
    return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                       "elementwise: expected a primitive, up to 3 inputs and an out "
                       "pointer, got NULL or %d inputs",
                       input_count);
}

porta_status *ops_run_elementwise(const ir_prim *prim, const porta_tensor *const *inputs,
                                    int input_count, porta_tensor **out) {
    if (!valid_call(prim, inputs, input_count, out)) return invalid_call(input_count);
    ir_prim inferred = *prim;
    return run_elementwise(&inferred, inputs, input_count, out);
}

/* ---- public ops ---- */

/* Fills *prim in place: returning the ~1 KiB struct by value would copy it. */
static void init_prim(ir_prim *prim, ir_prim_kind kind, int op) {
    memset(prim, 0, sizeof *prim);
    prim->kind = kind;
    prim->op = op;
}

static porta_status *run_op(ir_prim *prim, const porta_tensor *const *inputs,
                            int input_count, porta_tensor **out) {
    if (!out)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "%s: the out pointer is NULL",
                           ir_prim_name(prim));
    if (!valid_call(prim, inputs, input_count, out)) return invalid_call(input_count);
    return run_elementwise(prim, inputs, input_count, out);
}

porta_status *porta_unary(porta_unary_op op, const porta_tensor *x, porta_tensor **out) {
    ir_prim prim;
    init_prim(&prim, PRIM_UNARY, (int)op);
    return run_op(&prim, &x, 1, out);
}

porta_status *porta_binary(porta_binary_op op, const porta_tensor *a, const porta_tensor *b,
                           porta_tensor **out) {
    ir_prim prim;
    init_prim(&prim, PRIM_BINARY, (int)op);
    const porta_tensor *inputs[2] = {a, b};
    return run_op(&prim, inputs, 2, out);
}

porta_status *porta_ternary(porta_ternary_op op, const porta_tensor *a, const porta_tensor *b,
                            const porta_tensor *c, porta_tensor **out) {
    ir_prim prim;
    init_prim(&prim, PRIM_TERNARY, (int)op);
    const porta_tensor *inputs[3] = {a, b, c};
    return run_op(&prim, inputs, 3, out);
}

porta_status *porta_cast(const porta_tensor *x, porta_dtype dtype, porta_tensor **out) {
    if (x && out && (porta_dtype_is_complex(x->dtype) || porta_dtype_is_complex(dtype)))
        return ops_complex_cast(x, dtype, out);
    ir_prim prim;
    init_prim(&prim, PRIM_CAST, 0);
    prim.dtype = dtype;
    return run_op(&prim, &x, 1, out);
}

porta_status *porta_copy(const porta_tensor *src, porta_tensor *dst) {
    if (src && dst && src->buffer->device != dst->buffer->device) {
        PORTA_TRY(check_writable("copy", dst));
        return ops_copy_between_devices(src, dst);
    }
    const porta_tensor *both[2] = {src, dst};
    porta_device *device;
    PORTA_TRY(ops_common_device("copy", both, 2, &device));
    PORTA_TRY(check_writable("copy", dst));
    if (porta_dtype_is_complex(src->dtype) || porta_dtype_is_complex(dst->dtype))
        return ops_complex_copy(src, dst);
    porta_tensor *view;
    porta_status *status = ops_broadcast_to(src, dst->rank, dst->sizes, &view);
    if (status) return porta_error_context(status, "copy");
    ir_prim prim;
    init_prim(&prim, PRIM_CAST, 0);
    prim.dtype = dst->dtype;
    status = execute_into(&prim, (const porta_tensor *const *)&view, 1, dst);
    porta_tensor_release(view);
    return status;
}

porta_status *porta_fill(porta_tensor *dst, double value) {
    PORTA_TRY(core_check_tensor(dst, "dst"));
    PORTA_TRY(check_writable("fill", dst));
    if (porta_dtype_is_complex(dst->dtype)) return ops_complex_fill(dst, value);
    ir_prim prim;
    init_prim(&prim, PRIM_FILL, 0);
    prim.dtype = dst->dtype;
    prim.value = value;
    prim.rank = dst->rank;
    if (dst->rank) memcpy(prim.sizes, dst->sizes, (size_t)dst->rank * sizeof dst->sizes[0]);
    return ops_device_execute(&prim, NULL, 0, dst);
}
