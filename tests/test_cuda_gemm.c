/* The tensor-core GEMM's CUDA C (backends/cuda/cu_gemm.c) compiles with
 * NVRTC behind the prelude for sm_80 and sm_90, as the CUDA device builds
 * it, into a cubin with both entries; mma.sync m16n8k16 does not exist
 * before sm_80, so a compile for sm_75 must fail (the kernel really uses
 * it), and the device only picks it for float16/bfloat16 on 8.0 and later.
 * Needs NVRTC, not a GPU (PORTA_REQUIRE_NVRTC makes a missing NVRTC a
 * failure). Launches are checked against the stand-in driver in
 * test_cuda_device.c (cuda_gemm_runs_on_tensor_cores). */
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/cu_gemm.h"
#include "backends/cuda/cu_runtime.h"
#include "core/status.h"
#include "test.h"

static bool nvrtc_here(const char *test) {
    const char *why = NULL;
    if (cu_nvrtc_load(&why)) return true;
    if (getenv("PORTA_REQUIRE_NVRTC"))
        test_fail(__FILE__, __LINE__, "%s: PORTA_REQUIRE_NVRTC is set but %s", test, why);
    else
        fprintf(stderr, "%s: not run: %s\n", test, why);
    return false;
}

/* Whether `name` occurs in the cubin (its symbol table holds the entries). */
static bool cubin_has(const char *cubin, size_t size, const char *name) {
    size_t length = strlen(name);
    for (size_t i = 0; i + length <= size; i++)
        if (!memcmp(cubin + i, name, length) && (i + length == size || !cubin[i + length]))
            return true;
    return false;
}

TEST(cuda_gemm_compiles_for_sm80_and_sm90) {
    if (!nvrtc_here("cuda_gemm_compiles_for_sm80_and_sm90")) return;
    static const int archs[][2] = {{8, 0}, {9, 0}};
    for (size_t a = 0; a < sizeof archs / sizeof archs[0]; a++) {
        char *cubin = NULL;
        size_t size = 0;
        porta_status *status = cu_compile(cu_gemm_source(), archs[a][0], archs[a][1], &cubin,
                                          &size);
        CHECK_MSG(!status && cubin && size > 4 && !memcmp(cubin, "\177ELF", 4),
                  "the tensor-core GEMM for sm_%d%d: %s", archs[a][0], archs[a][1],
                  status ? porta_status_message(status) : "no cubin");
        if (cubin) {
            CHECK_MSG(cubin_has(cubin, size, "gemm_tc_f16") &&
                          cubin_has(cubin, size, "gemm_tc_bf16"),
                      "the sm_%d%d cubin lacks gemm_tc_f16 or gemm_tc_bf16", archs[a][0],
                      archs[a][1]);
        }
        porta_status_free(status);
        free(cubin);
    }
}

TEST(cuda_gemm_needs_sm80) {
    if (!nvrtc_here("cuda_gemm_needs_sm80")) return;
    char *cubin = NULL;
    size_t size = 0;
    porta_status *status = cu_compile(cu_gemm_source(), 7, 5, &cubin, &size);
    CHECK_MSG(status != NULL, "the tensor-core GEMM compiled for sm_75, which has no "
                              "mma.sync m16n8k16 for bfloat16");
    if (status) {
        const char *message = porta_status_message(status);
        CHECK_MSG(strstr(message, "m16n8k16") != NULL,
                  "the sm_75 failure does not name m16n8k16: %s", message);
    }
    porta_status_free(status);
    free(cubin);
}

TEST(cuda_gemm_chosen_for_halves_on_sm80_and_later) {
    int64_t sizes[2] = {3, 3};
    porta_tensor *t[4][3] = {{0}};
    static const porta_dtype dtypes[4] = {PORTA_F16, PORTA_BF16, PORTA_F32, PORTA_F64};
    for (int d = 0; d < 4; d++)
        for (int i = 0; i < 3; i++)
            CHECK_OK(porta_tensor_full(test_cpu(), dtypes[d], 2, sizes, 0.0, &t[d][i]));
    for (int d = 0; d < 4; d++) {
        if (!t[d][0] || !t[d][1] || !t[d][2]) continue;
        const porta_tensor *in[2] = {t[d][0], t[d][1]};
        bool half = d < 2;
        CHECK_MSG(cu_gemm_applies(8, in, 2, t[d][2]) == half &&
                      cu_gemm_applies(9, in, 2, t[d][2]) == half,
                  "%s on sm_80/sm_90: tensor cores %s", porta_dtype_name(dtypes[d]),
                  half ? "expected" : "not expected");
        CHECK_MSG(!cu_gemm_applies(7, in, 2, t[d][2]), "%s on sm_75 took the tensor cores",
                  porta_dtype_name(dtypes[d]));
    }
    if (t[0][0] && t[1][1] && t[0][2]) {
        const porta_tensor *mixed[2] = {t[0][0], t[1][1]};
        CHECK_MSG(!cu_gemm_applies(9, mixed, 2, t[0][2]), "f16 @ bf16 took the tensor cores");
    }
    for (int d = 0; d < 4; d++)
        for (int i = 0; i < 3; i++) porta_tensor_release(t[d][i]);
}
