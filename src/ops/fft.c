/* Eager Fourier transforms: porta_fft's parameters as the FFT primitive
 * (run through ops_run_one_input; inference checks them). */
#include <string.h>

#include "core/status.h"
#include "ops/run.h"
#include "runtime/tensor.h"

porta_status *porta_fft(const porta_tensor *x, const porta_fft_params *params,
                        porta_tensor **out) {
    PORTA_TRY(core_check_tensor(x, "x"));
    if (!params || !out)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "fft: params and out must not be NULL");
    if (params->axis_count < 1 || params->axis_count >= PORTA_MAX_RANK)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "fft: expected 1 to %d axes, got %d",
                           PORTA_MAX_RANK - 1, params->axis_count);
    ir_prim prim;
    memset(&prim, 0, sizeof prim); /* prims are hashed and compared bytewise */
    prim.kind = PRIM_FFT;
    prim.op = (int)params->kind;
    prim.axis = (int)params->norm;
    prim.axis_count = params->axis_count;
    memcpy(prim.axes, params->axes, (size_t)params->axis_count * sizeof prim.axes[0]);
    prim.value = params->kind == PORTA_FFT_C2R || (params->kind == PORTA_FFT_C2C && params->inverse)
                     ? 1
                     : -1;
    prim.stop = params->kind == PORTA_FFT_C2R ? params->last_size : 0;
    return ops_prim_run(&prim, &x, 1, out);
}
