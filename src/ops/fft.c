/* Eager Fourier transforms: porta_fft's parameters as the FFT primitive
 * (run through ops_run_one_input; inference checks them). */
#include "core/status.h"
#include "ir/infer.h"
#include "ops/run.h"
#include "runtime/tensor.h"

porta_status *porta_fft(const porta_tensor *x, const porta_fft_params *params,
                        porta_tensor **out) {
    PORTA_TRY(core_check_tensor(x, "x"));
    if (!out) return porta_error(PORTA_ERR_INVALID_ARGUMENT, "fft: out is NULL");
    ir_prim prim;
    PORTA_TRY(ir_fft_prim(params, &prim));
    return ops_prim_run(&prim, &x, 1, out);
}
