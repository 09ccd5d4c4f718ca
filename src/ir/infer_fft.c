/* Inference for the Fourier transform primitive: float32 or float64, complex
 * values as pairs in a last axis of 2, the transformed axes normalized in
 * place (negative from the end) and each named once. */
#include <string.h>

#include "core/status.h"
#include "ir/infer.h"

static porta_status *check_pairs(const char *op, const ir_meta *x) {
    if (x->rank < 2 || x->sizes[x->rank - 1] != 2)
        return porta_error(PORTA_ERR_SHAPE,
                           "%s: expected complex values as a last axis of 2 (real, imaginary) "
                           "after at least one axis, got rank %d with last size %lld",
                           op, x->rank, x->rank ? (long long)x->sizes[x->rank - 1] : 0LL);
    return NULL;
}

/* Normalizes prim->axes against the `signal_rank` axes of the signal and
 * checks that each is named once and has at least one value. */
static porta_status *normalize_axes(const char *op, ir_prim *prim, const ir_meta *x,
                                    int signal_rank) {
    if (prim->axis_count < 1 || prim->axis_count > signal_rank)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "%s: expected 1 to %d axes to transform, got %d", op, signal_rank,
                           prim->axis_count);
    bool seen[PORTA_MAX_RANK] = {false};
    for (int i = 0; i < prim->axis_count; i++) {
        int axis = prim->axes[i];
        if (axis < -signal_rank || axis >= signal_rank)
            return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                               "%s: expected axes in [%d, %d], got %d", op, -signal_rank,
                               signal_rank - 1, axis);
        if (axis < 0) axis += signal_rank;
        if (seen[axis])
            return porta_error(PORTA_ERR_INVALID_ARGUMENT, "%s: axis %d is named twice", op,
                               axis);
        seen[axis] = true;
        prim->axes[i] = axis;
        if (x->sizes[axis] < 1 && prim->op != PORTA_FFT_C2R)
            return porta_error(PORTA_ERR_SHAPE,
                               "%s: Invalid number of data points (0) specified along axis %d",
                               op, axis);
    }
    return NULL;
}

porta_status *ir_fft_prim(const porta_fft_params *params, ir_prim *prim) {
    memset(prim, 0, sizeof *prim); /* padding too: prims are hashed bytewise */
    prim->kind = PRIM_FFT;
    if (!params) return porta_error(PORTA_ERR_INVALID_ARGUMENT, "fft: params is NULL");
    if (params->axis_count < 1 || params->axis_count >= PORTA_MAX_RANK)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "fft: expected 1 to %d axes, got %d",
                           PORTA_MAX_RANK - 1, params->axis_count);
    prim->op = (int)params->kind;
    prim->axis = (int)params->norm;
    prim->axis_count = params->axis_count;
    memcpy(prim->axes, params->axes, (size_t)params->axis_count * sizeof prim->axes[0]);
    bool backward =
        params->kind == PORTA_FFT_C2R || (params->kind == PORTA_FFT_C2C && params->inverse);
    prim->value = backward ? 1 : -1;
    prim->stop = params->kind == PORTA_FFT_C2R ? params->last_size : 0;
    return NULL;
}

porta_status *ir_infer_fft(ir_prim *prim, const ir_meta *inputs, int input_count, ir_meta *out) {
    const char *op = ir_prim_name(prim);
    if ((unsigned)prim->op >= PORTA_FFT_KIND_COUNT)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "fft: expected a kind below %d, got %d",
                           PORTA_FFT_KIND_COUNT, prim->op);
    if (input_count != 1)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "%s: expected 1 input, got %d", op,
                           input_count);
    if ((unsigned)prim->axis >= PORTA_FFT_NORM_COUNT)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "%s: expected a normalization below %d, got %d", op,
                           PORTA_FFT_NORM_COUNT, prim->axis);
    double sign = prim->op == PORTA_FFT_R2C ? -1 : prim->op == PORTA_FFT_C2R ? 1 : prim->value;
    if (prim->value != sign || (sign != 1 && sign != -1))
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "%s: expected the exponent's sign %s, got %g", op,
                           prim->op == PORTA_FFT_C2C ? "-1 or 1" : sign > 0 ? "1" : "-1",
                           prim->value);
    const ir_meta *x = &inputs[0];
    if (x->dtype != PORTA_F32 && x->dtype != PORTA_F64)
        return porta_error(PORTA_ERR_DTYPE, "%s: expected float32 or float64, got %s", op,
                           porta_dtype_name(x->dtype));
    *out = *x;
    switch ((porta_fft_kind)prim->op) {
    case PORTA_FFT_C2C:
        PORTA_TRY(check_pairs(op, x));
        return normalize_axes(op, prim, x, x->rank - 1);
    case PORTA_FFT_R2C: {
        if (x->rank + 1 > PORTA_MAX_RANK)
            return porta_error(PORTA_ERR_SHAPE, "%s: expected rank below %d, got %d", op,
                               PORTA_MAX_RANK, x->rank);
        PORTA_TRY(normalize_axes(op, prim, x, x->rank));
        int last = prim->axes[prim->axis_count - 1];
        out->sizes[last] = x->sizes[last] / 2 + 1;
        out->sizes[out->rank++] = 2;
        return NULL;
    }
    case PORTA_FFT_C2R: {
        PORTA_TRY(check_pairs(op, x));
        PORTA_TRY(normalize_axes(op, prim, x, x->rank - 1));
        int last = prim->axes[prim->axis_count - 1];
        if (prim->stop < 1 || x->sizes[last] < prim->stop / 2 + 1)
            return porta_error(PORTA_ERR_SHAPE,
                               "%s: expected a last length of at least 1 whose half plus one "
                               "(%lld) is at most the input's %lld along axis %d, got %lld",
                               op, (long long)(prim->stop / 2 + 1), (long long)x->sizes[last],
                               last, (long long)prim->stop);
        out->rank--;
        out->sizes[last] = prim->stop;
        return NULL;
    }
    case PORTA_FFT_KIND_COUNT: break;
    }
    return NULL;
}
