/* The CPU device's compiler entries: prepare_kernel builds a program with
 * the JIT; run_kernel splits its work items over the thread pool. Also the
 * runtime table compiled kernels call back into. */
#include "backends/cpu/cpu_jit.h"
#include "backends/cpu/kernels_elementwise.h"
#include "backends/cpu/special_math.h"
#include "backends/cpu/threadpool.h"
#include "backends/cpu/vmath.h"
#include "core/fault.h"
#include "core/status.h"

/* ---- the runtime table ----
 * vmath_f32() is asked on every call, as the eager kernels do, so a forced
 * ISA (tests, benchmarks) applies to fused kernels alike. */
#define VMATH_WRAPPER(op) \
    static void rt_##op(const float *x, float *y, int64_t n) { vmath_f32()->op(x, y, n); }
VMATH_OPS(VMATH_WRAPPER)

static void rt_f16_to_f32(const uint16_t *x, float *y, int64_t n) {
    ew_widen_half(PORTA_F16, x, y, n);
}
static void rt_bf16_to_f32(const uint16_t *x, float *y, int64_t n) {
    ew_widen_half(PORTA_BF16, x, y, n);
}
static void rt_f32_to_f16(const float *x, uint16_t *y, int64_t n) {
    ew_narrow_half(PORTA_F16, x, y, n);
}
static void rt_f32_to_bf16(const float *x, uint16_t *y, int64_t n) {
    ew_narrow_half(PORTA_BF16, x, y, n);
}

static void round_through(porta_dtype dtype, float *x, int64_t n) {
    uint16_t stage[256];
    for (int64_t at = 0; at < n; at += 256) {
        int64_t m = n - at < 256 ? n - at : 256;
        ew_narrow_half(dtype, x + at, stage, m);
        ew_widen_half(dtype, stage, x + at, m);
    }
}
static void rt_round_f16(float *x, int64_t n) { round_through(PORTA_F16, x, n); }
static void rt_round_bf16(float *x, int64_t n) { round_through(PORTA_BF16, x, n); }

_Static_assert(PORTA_UNARY_OP_COUNT - PORTA_DIGAMMA == KIR_UNARY_SPECIALS,
               "kir_runtime's unary special functions: one per op from PORTA_DIGAMMA");
_Static_assert(PORTA_BINARY_OP_COUNT - PORTA_IGAMMA == KIR_BINARY_SPECIALS,
               "kir_runtime's binary special functions: one per op from PORTA_IGAMMA");

static const kir_runtime runtime = {
    .exp = rt_exp, .expm1 = rt_expm1, .log = rt_log, .log1p = rt_log1p,
    .tanh = rt_tanh, .sigmoid = rt_sigmoid, .erf = rt_erf,
    .f16_to_f32 = rt_f16_to_f32, .bf16_to_f32 = rt_bf16_to_f32,
    .f32_to_f16 = rt_f32_to_f16, .f32_to_bf16 = rt_f32_to_bf16,
    .round_f16 = rt_round_f16, .round_bf16 = rt_round_bf16,
    .unary_special = {
        [PORTA_DIGAMMA - PORTA_DIGAMMA] = sp_digamma,
        [PORTA_I0 - PORTA_DIGAMMA] = sp_i0,
        [PORTA_I0E - PORTA_DIGAMMA] = sp_i0e,
        [PORTA_I1 - PORTA_DIGAMMA] = sp_i1,
        [PORTA_I1E - PORTA_DIGAMMA] = sp_i1e,
        [PORTA_ERFCX - PORTA_DIGAMMA] = sp_erfcx,
        [PORTA_LOG_NDTR - PORTA_DIGAMMA] = sp_log_ndtr,
        [PORTA_NDTRI - PORTA_DIGAMMA] = sp_ndtri,
        [PORTA_BESSEL_J0 - PORTA_DIGAMMA] = sp_bessel_j0,
        [PORTA_BESSEL_J1 - PORTA_DIGAMMA] = sp_bessel_j1,
        [PORTA_BESSEL_Y0 - PORTA_DIGAMMA] = sp_bessel_y0,
        [PORTA_BESSEL_Y1 - PORTA_DIGAMMA] = sp_bessel_y1,
        [PORTA_MODIFIED_BESSEL_K0 - PORTA_DIGAMMA] = sp_k0,
        [PORTA_MODIFIED_BESSEL_K1 - PORTA_DIGAMMA] = sp_k1,
        [PORTA_SCALED_MODIFIED_BESSEL_K0 - PORTA_DIGAMMA] = sp_k0e,
        [PORTA_SCALED_MODIFIED_BESSEL_K1 - PORTA_DIGAMMA] = sp_k1e,
        [PORTA_SPHERICAL_BESSEL_J0 - PORTA_DIGAMMA] = sp_spherical_bessel_j0,
        [PORTA_AIRY_AI - PORTA_DIGAMMA] = sp_airy_ai,
    },
    .binary_special = {
        [PORTA_IGAMMA - PORTA_IGAMMA] = sp_igamma,
        [PORTA_IGAMMAC - PORTA_IGAMMA] = sp_igammac,
        [PORTA_ZETA - PORTA_IGAMMA] = sp_zeta,
        [PORTA_CHEBYSHEV_T - PORTA_IGAMMA] = sp_chebyshev_t,
        [PORTA_CHEBYSHEV_U - PORTA_IGAMMA] = sp_chebyshev_u,
        [PORTA_CHEBYSHEV_V - PORTA_IGAMMA] = sp_chebyshev_v,
        [PORTA_CHEBYSHEV_W - PORTA_IGAMMA] = sp_chebyshev_w,
        [PORTA_SHIFTED_CHEBYSHEV_T - PORTA_IGAMMA] = sp_shifted_chebyshev_t,
        [PORTA_SHIFTED_CHEBYSHEV_U - PORTA_IGAMMA] = sp_shifted_chebyshev_u,
        [PORTA_SHIFTED_CHEBYSHEV_V - PORTA_IGAMMA] = sp_shifted_chebyshev_v,
        [PORTA_SHIFTED_CHEBYSHEV_W - PORTA_IGAMMA] = sp_shifted_chebyshev_w,
        [PORTA_HERMITE_H - PORTA_IGAMMA] = sp_hermite_h,
        [PORTA_HERMITE_HE - PORTA_IGAMMA] = sp_hermite_he,
        [PORTA_LAGUERRE_L - PORTA_IGAMMA] = sp_laguerre_l,
        [PORTA_LEGENDRE_P - PORTA_IGAMMA] = sp_legendre_p,
    },
};

const kir_runtime *cpu_kir_runtime(void) { return &runtime; }

/* ---- the device entries ---- */

porta_status *cpu_prepare_kernel(porta_device *device, const kir_kernel *kernel, void **program) {
    if (!program) return porta_error(PORTA_ERR_INVALID_ARGUMENT, "program is NULL");
    const cpu_program *built;
    PORTA_TRY(cpu_jit_program(kernel, &built));
    *program = (void *)built;
    return NULL;
}

typedef struct run_ctx {
    const cpu_program *program;
    const kir_args *args;
} run_ctx;

static void run_range(void *ctx, int64_t begin, int64_t end, int thread) {
    const run_ctx *c = ctx;
    c->program->main(c->args, &runtime, begin, end);
}

/* Work items per pool task: about 32K element-values of work (a few
 * microseconds), as the eager kernels' grain, so small kernels run inline. */
#define WORK_PER_TASK 32768

porta_status *cpu_run_kernel(porta_device *device, void *program, const kir_args *args,
                             int64_t work) {
    const cpu_program *p = program;
    if (!p || !args) return porta_error(PORTA_ERR_INVALID_ARGUMENT, "program or args is NULL");
    if (work < 0)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "work %lld; expected >= 0",
                           (long long)work);
    if (work == 0) return NULL;
    int64_t per_item = p->cost;
    if (p->outer_rank < p->rank) { /* items are rows: their reduced elements count */
        int64_t reduced = 1;
        for (int d = p->outer_rank; d < p->rank; d++) reduced *= args->sizes[d];
        per_item *= reduced > 0 ? reduced : 1;
    }
    int64_t grain = WORK_PER_TASK / (per_item > 0 ? per_item : 1);
    if (grain < 1) grain = 1;
    PORTA_TRY(CORE_FAULT_CHECK(CORE_FAULT_DRIVER, PORTA_ERR_DEVICE, "cpu: running a fused kernel"));
    PORTA_TRY(CORE_FAULT_DEVICE_CHECK(device->info.index, "cpu: running a fused kernel"));
    run_ctx ctx = {p, args};
    cpu_parallel_for(work, grain, run_range, &ctx);
    return NULL;
}
