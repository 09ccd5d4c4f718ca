/* CUDA's driver and NVRTC calls behind the shared program cache
 * (backends/clc/clk_program_cache.h): compiles for the device's
 * architecture (the options and the driver's version key the disk cache,
 * so another driver or GPU generation never loads an old cubin), modules
 * from cubins, functions of a module; launches. A failed compile's error
 * holds NVRTC's log. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "backends/clc/clk_source.h"
#include "backends/cuda/cu_runtime.h"
#include "core/status.h"

porta_status *cu_error(const cu_state *s, CUresult code, const char *call) {
    const char *name = NULL;
    if (s && s->cu->cuGetErrorName(code, &name) != CUDA_SUCCESS) name = NULL;
    return porta_error(PORTA_ERR_DEVICE, "CUDA: %s failed with %s (%d)%s%s", call,
                       name ? name : "an unknown error", (int)code, s ? " on " : "",
                       s ? s->name : "");
}

void cu_compile_options(int major, int minor, char arch[32], const char *options[]) {
    snprintf(arch, 32, "--gpu-architecture=sm_%d%d", major, minor);
    int n = 0;
    options[n++] = arch;
    /* IEEE semantics as on the CPU: a * b + c rounds twice, divisions and
     * square roots are correctly rounded, denormals kept */
    options[n++] = "--fmad=false";
    options[n++] = "--prec-div=true";
    options[n++] = "--prec-sqrt=true";
    options[n++] = "--ftz=false";
    /* the renderer's helpers are plain `static inline` functions */
    options[n++] = "--device-as-default-execution-space";
    /* the prelude's helpers are there whether a kernel calls them or not
     * (177), and its OpenCL pragma means nothing to NVRTC (161) */
    options[n++] = "--diag-suppress=177,161";
    options[n] = NULL;
}

static porta_status *nvrtc_failed(const cu_nvrtc_api *nv, nvrtcResult code, const char *call) {
    return porta_error(PORTA_ERR_DEVICE, "CUDA: %s failed: %s", call,
                       nv->nvrtcGetErrorString(code));
}

static char *program_log(const cu_nvrtc_api *nv, nvrtcProgram program) {
    size_t size = 0;
    if (nv->nvrtcGetProgramLogSize(program, &size) != NVRTC_SUCCESS) size = 0;
    char *log = malloc(size + 1);
    if (!log) return NULL;
    if (!size || nv->nvrtcGetProgramLog(program, log) != NVRTC_SUCCESS) size = 0;
    log[size] = '\0';
    return log;
}

static porta_status *compile_full(const cu_nvrtc_api *nv, const char *full, int major,
                                  int minor, char **cubin, size_t *size) {
    char arch[32];
    const char *options[CU_OPTION_SLOTS];
    cu_compile_options(major, minor, arch, options);
    int option_count = 0;
    while (options[option_count]) option_count++;
    nvrtcProgram program;
    nvrtcResult r = nv->nvrtcCreateProgram(&program, full, "porta_kernel.cu", 0, NULL, NULL);
    if (r != NVRTC_SUCCESS) return nvrtc_failed(nv, r, "nvrtcCreateProgram");
    porta_status *status = NULL;
    r = nv->nvrtcCompileProgram(program, option_count, options);
    if (r != NVRTC_SUCCESS) {
        char *log = program_log(nv, program);
        status = porta_error(PORTA_ERR_DEVICE,
                             "CUDA: compiling a kernel for sm_%d%d failed (%s):\n%s", major, minor,
                             nv->nvrtcGetErrorString(r), log ? log : "(no log)");
        free(log);
    }
    if (!status && (r = nv->nvrtcGetCUBINSize(program, size)) != NVRTC_SUCCESS)
        status = nvrtc_failed(nv, r, "nvrtcGetCUBINSize");
    if (!status) {
        *cubin = malloc(*size ? *size : 1);
        if (!*cubin)
            status = porta_error(PORTA_ERR_OUT_OF_MEMORY, "CUDA: no memory for a cubin");
        else if ((r = nv->nvrtcGetCUBIN(program, *cubin)) != NVRTC_SUCCESS) {
            free(*cubin);
            status = nvrtc_failed(nv, r, "nvrtcGetCUBIN");
        }
    }
    nv->nvrtcDestroyProgram(&program);
    return status;
}

porta_status *cu_compile(const char *source, int major, int minor, char **cubin,
                         size_t *size) {
    const char *why = NULL;
    const cu_nvrtc_api *nv = cu_nvrtc_load(&why);
    if (!nv) return porta_error(PORTA_ERR_UNSUPPORTED, "CUDA: %s", why);
    char *full = clk_join(cu_prelude(), source);
    if (!full) return porta_error(PORTA_ERR_OUT_OF_MEMORY, "CUDA: no memory for a program");
    porta_status *status = compile_full(nv, full, major, minor, cubin, size);
    free(full);
    return status;
}

static porta_status *cu_build_source(porta_device *device, const char *full, void **program,
                                     void **binary, size_t *size) {
    cu_state *s = cu_of(device);
    const char *why = NULL;
    const cu_nvrtc_api *nv = cu_nvrtc_load(&why);
    if (!nv) return porta_error(PORTA_ERR_UNSUPPORTED, "CUDA: %s", why);
    char *cubin = NULL;
    PORTA_TRY(compile_full(nv, full, s->major, s->minor, &cubin, size));
    CUmodule module;
    CUresult r = s->cu->cuModuleLoadData(&module, cubin);
    if (r != CUDA_SUCCESS) {
        free(cubin);
        return cu_error(s, r, "cuModuleLoadData");
    }
    *program = module;
    *binary = cubin;
    return NULL;
}

static void *cu_load_binary(porta_device *device, const void *binary, size_t size) {
    (void)size; /* a cubin carries its own size */
    CUmodule module;
    return cu_of(device)->cu->cuModuleLoadData(&module, binary) == CUDA_SUCCESS ? module : NULL;
}

static porta_status *cu_program_function(porta_device *device, void *program, const char *name,
                                         void **kernel) {
    cu_state *s = cu_of(device);
    CUfunction function;
    CUresult r = s->cu->cuModuleGetFunction(&function, program, name);
    if (r != CUDA_SUCCESS) return cu_error(s, r, "cuModuleGetFunction");
    *kernel = function;
    return NULL;
}

static const clk_compiler cu_compiler = {
    .label = "CUDA",
    .cache_dir = "cuda",
    .magic = {'P', 'C', 'U', 'B'},
    .extension = ".cubin",
    .build_name = "NVRTC compile",
    .prelude = cu_prelude,
    .build = cu_build_source,
    .load = cu_load_binary,
    .kernel = cu_program_function,
};

void cu_programs_init(cu_state *s) {
    char identity[64];
    const char *options[CU_OPTION_SLOTS];
    cu_compile_options(s->major, s->minor, s->arch_option, options);
    snprintf(identity, sizeof identity, "driver %d", s->driver_version);
    clk_program_cache_init(&s->programs, &cu_compiler, options, identity);
}

porta_status *cu_function_get(porta_device *device, const char *source, const char *name,
                              CUfunction *out) {
    cu_state *s = cu_of(device);
    CUresult r = s->cu->cuCtxSetCurrent(s->context);
    if (r) return cu_error(s, r, "cuCtxSetCurrent");
    void *function;
    PORTA_TRY(clk_program_kernel(&s->programs, device, source, name, &function));
    *out = function;
    return NULL;
}

porta_status *cu_launch(cu_state *s, CUfunction function, void **params, int64_t work) {
    if (work <= 0) return NULL;
    unsigned threads = s->max_threads >= 256 ? 256 : (unsigned)s->max_threads;
    int64_t blocks = (work + threads - 1) / threads;
    if (blocks > 0x7fffffff)
        return porta_error(PORTA_ERR_UNSUPPORTED,
                           "CUDA: %" PRId64 " work items need more than 2^31-1 blocks", work);
    CUresult r = s->cu->cuLaunchKernel(function, (unsigned)blocks, 1, 1, threads, 1, 1, 0,
                                       s->stream, params, NULL);
    return r ? cu_error(s, r, "cuLaunchKernel") : NULL;
}
