/* Eager matmul, convolution and its gradients, and the factorisations: the
 * public entry points and the runner that brings their operands to the
 * backend contract (one dtype, cast to it for matmul and convolution;
 * matmul's and triangular solve's batch axes broadcast to the output's). A
 * factorisation's operands are never cast: inference requires them to be of
 * one float dtype already. */
#include <string.h>

#include "core/status.h"
#include "core/tensor_layout.h"
#include "ops/run.h"
#include "runtime/tensor.h"

#define LINALG_MAX_INPUTS 3

/* The views the backend gets: each operand [..., r, c] (matmul's a and b,
 * a factorisation's one or two) with the output's batch axes (stride 0 where
 * broadcast). */
static porta_status *broadcast_batch_axes(porta_tensor **operands, int count, const ir_meta *meta) {
    int batch = meta->rank - 2;
    for (int i = 0; i < count; i++) {
        porta_tensor *x = operands[i];
        int64_t sizes[PORTA_MAX_RANK];
        memcpy(sizes, meta->sizes, (size_t)batch * sizeof sizes[0]);
        sizes[batch] = x->sizes[x->rank - 2];
        sizes[batch + 1] = x->sizes[x->rank - 1];
        if (x->rank == meta->rank && !memcmp(x->sizes, sizes, (size_t)x->rank * sizeof sizes[0]))
            continue; /* already of that shape (plain 2-d products, one-input factorisations) */
        porta_tensor *view;
        PORTA_TRY(ops_broadcast_to(x, meta->rank, sizes, &view));
        porta_tensor_release(x);
        operands[i] = view;
    }
    return NULL;
}

static bool shares_storage(const porta_tensor *out, porta_tensor *const *operands, int count) {
    for (int i = 0; i < count; i++)
        if (operands[i]->buffer == out->buffer) return true;
    return false;
}

/* The runner on a prim that inference may normalize in place: the public
 * ops pass their own, the generic entry a copy of the caller's. */
static porta_status *run_linalg(ir_prim *local, const porta_tensor *const *inputs,
                                int input_count, porta_tensor **out) {
    const char *op = ir_prim_name(local);
    int min_inputs = local->kind == PRIM_FACTOR ? 1 : 2;
    int max_inputs = local->kind == PRIM_CONV ? 3 : 2;
    if (input_count < min_inputs || input_count > max_inputs)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "%s: got %d inputs", op, input_count);
    if (!inputs) return porta_error(PORTA_ERR_INVALID_ARGUMENT, "%s: inputs is NULL", op);
    porta_device *device;
    PORTA_TRY(ops_common_device(op, inputs, input_count, &device));

    ir_meta metas[LINALG_MAX_INPUTS], meta;
    for (int i = 0; i < input_count; i++) ir_meta_of(inputs[i], &metas[i]);
    PORTA_TRY(ir_infer(local, metas, input_count, &meta));

    porta_tensor *operands[LINALG_MAX_INPUTS] = {NULL};
    porta_tensor *dst = NULL;
    bool needs_copy = false;
    porta_status *status = NULL;
    for (int i = 0; i < input_count; i++)
        CORE_TRY_GOTO(status, ops_to_dtype(inputs[i], meta.dtype, &operands[i]), cleanup);
    if (local->kind == PRIM_MATMUL || local->kind == PRIM_FACTOR)
        CORE_TRY_GOTO(status, broadcast_batch_axes(operands, input_count, &meta), cleanup);
    CORE_TRY_GOTO(status, ops_prepare_out(op, device, &meta, out, &dst, &needs_copy), cleanup);
    if (dst == *out && shares_storage(dst, operands, input_count)) {
        /* out= aliasing an operand would be read after it is written:
         * compute into a temporary and copy it over. */
        CORE_TRY_GOTO(status, ops_alloc_meta(device, &meta, &dst), cleanup);
        needs_copy = true;
    }
    status = ops_device_execute(local, (const porta_tensor *const *)operands, input_count, dst);
    if (status) {
        if (dst != *out) porta_tensor_release(dst);
        goto cleanup;
    }
    status = ops_finish_out(dst, needs_copy, out);
cleanup:
    for (int i = 0; i < input_count; i++) porta_tensor_release(operands[i]);
    return status;
}

porta_status *ops_run_linalg(const ir_prim *prim, const porta_tensor *const *inputs,
                               int input_count, porta_tensor **out) {
    ir_prim local = *prim;
    return run_linalg(&local, inputs, input_count, out);
}

porta_status *porta_matmul(const porta_tensor *a, const porta_tensor *b, porta_tensor **out) {
    if (!out) return porta_error(PORTA_ERR_INVALID_ARGUMENT, "matmul: out is NULL");
    ir_prim prim;
    memset(&prim, 0, sizeof prim);
    prim.kind = PRIM_MATMUL;
    const porta_tensor *inputs[2] = {a, b};
    return run_linalg(&prim, inputs, 2, out);
}

porta_status *porta_factor(porta_factor_op op, int flags, const porta_tensor *a,
                           const porta_tensor *b, porta_tensor **out) {
    if (!out) return porta_error(PORTA_ERR_INVALID_ARGUMENT, "factor: out is NULL");
    ir_prim prim;
    memset(&prim, 0, sizeof prim); /* prims are hashed and compared bytewise */
    prim.kind = PRIM_FACTOR;
    prim.op = (int)op;
    prim.axis = flags;
    const porta_tensor *inputs[2] = {a, b};
    int count = ir_prim_input_count(&prim);
    for (int i = 0; i < count; i++) PORTA_TRY(core_check_tensor(inputs[i], i ? "b" : "a"));
    return run_linalg(&prim, inputs, count, out);
}

porta_status *porta_conv(const porta_tensor *x, const porta_tensor *w, const porta_tensor *bias,
                         const porta_conv_params *params, porta_tensor **out) {
    if (!out) return porta_error(PORTA_ERR_INVALID_ARGUMENT, "conv: out is NULL");
    if (!params) return porta_error(PORTA_ERR_INVALID_ARGUMENT, "conv: params is NULL");
    ir_prim prim;
    memset(&prim, 0, sizeof prim);
    prim.kind = PRIM_CONV;
    prim.conv = *params;
    const porta_tensor *inputs[3] = {x, w, bias};
    return run_linalg(&prim, inputs, bias ? 3 : 2, out);
}

/* A convolution gradient's primitive: `spatial_sizes` are the kernel's
 * (weight gradient) or the input's (input gradient) spatial sizes. */
static porta_status *run_conv_grad(ir_prim_kind kind, const porta_conv_params *params,
                                   int spatial, const int64_t *spatial_sizes,
                                   const porta_tensor *a, const porta_tensor *b,
                                   porta_tensor **out) {
    ir_prim prim;
    memset(&prim, 0, sizeof prim);
    prim.kind = kind;
    prim.conv = *params;
    prim.rank = spatial;
    for (int i = 0; i < spatial && i < PORTA_MAX_RANK; i++) prim.sizes[i] = spatial_sizes[i];
    const porta_tensor *inputs[2] = {a, b};
    return run_linalg(&prim, inputs, 2, out);
}

porta_status *porta_conv_weight_grad(const porta_tensor *x, const porta_tensor *grad_output,
                                     const porta_conv_params *params, const int64_t *kernel,
                                     porta_tensor **out) {
    if (!out) return porta_error(PORTA_ERR_INVALID_ARGUMENT, "conv_weight_grad: out is NULL");
    if (!params || !kernel)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "conv_weight_grad: params and kernel must not be NULL");
    if (!x) return porta_error(PORTA_ERR_INVALID_ARGUMENT, "conv_weight_grad: x is NULL");
    return run_conv_grad(PRIM_CONV_WEIGHT_GRAD, params, porta_tensor_rank(x) - 2, kernel, x,
                         grad_output, out);
}

porta_status *porta_conv_input_grad(const porta_tensor *grad_output, const porta_tensor *w,
                                    const porta_conv_params *params, const int64_t *input_sizes,
                                    porta_tensor **out) {
    if (!out) return porta_error(PORTA_ERR_INVALID_ARGUMENT, "conv_input_grad: out is NULL");
    if (!params || !input_sizes)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "conv_input_grad: params and input_sizes must not be NULL");
    if (!grad_output)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "conv_input_grad: grad_output is NULL");
    return run_conv_grad(PRIM_CONV_INPUT_GRAD, params, porta_tensor_rank(grad_output) - 2,
                         input_sizes, grad_output, w, out);
}
