/* CUDA programs: compiled by NVRTC once per device and architecture, kept
 * in memory and on disk; launches.
 *
 * A disk entry's name hashes the full source, NVRTC's options (the
 * architecture among them) and the driver's version, so another driver or
 * GPU generation never loads an old cubin; the entry also stores the
 * source, compared on load. A failed compile's error holds NVRTC's log. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/cuda/cu_runtime.h"
#include "runtime/compile_stats.h"
#include "core/status.h"
#include "runtime/kernel_cache.h"
#include "runtime/profiler.h"

struct cu_program_entry {
    cu_program_entry *next;
    uint64_t hash; /* of source, compared before the source itself */
    char *source;
    CUmodule module;
};

static double seconds_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

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

/* The prelude and `source`, malloc'd. */
static char *with_prelude(const char *source) {
    const char *prelude = cu_prelude();
    if (!prelude) return NULL;
    size_t a = strlen(prelude), b = strlen(source);
    char *full = malloc(a + b + 1);
    if (!full) return NULL;
    memcpy(full, prelude, a);
    memcpy(full + a, source, b + 1);
    return full;
}

porta_status *cu_compile(const char *source, int major, int minor, char **cubin,
                         size_t *size) {
    const char *why = NULL;
    const cu_nvrtc_api *nv = cu_nvrtc_load(&why);
    if (!nv) return porta_error(PORTA_ERR_UNSUPPORTED, "CUDA: %s", why);
    char *full = with_prelude(source);
    if (!full) return porta_error(PORTA_ERR_OUT_OF_MEMORY, "CUDA: no memory for a program");
    porta_status *status = compile_full(nv, full, major, minor, cubin, size);
    free(full);
    return status;
}

/* ---- the disk cache ---- */

/* An entry: "PCUB", the source's length, the source, the cubin. */
static const char entry_magic[4] = {'P', 'C', 'U', 'B'};

static void entry_name(const cu_state *s, const char *full, char *name, size_t cap) {
    char arch[32], identity[64];
    const char *options[CU_OPTION_SLOTS];
    cu_compile_options(s->major, s->minor, arch, options);
    snprintf(identity, sizeof identity, "driver %d", s->driver_version);
    uint64_t a = porta_hash_text(PORTA_HASH_SEED, full);
    for (int i = 0; options[i]; i++) a = porta_hash_text(a, options[i]);
    uint64_t b = porta_hash_text(porta_hash_text(a ^ 0x9e3779b97f4a7c15ull, identity), full);
    snprintf(name, cap, "%016" PRIx64 "%016" PRIx64 ".cubin", a, b);
}

/* The cubin of dir/name when it holds `full`'s, else NULL. */
static char *load_from_disk(const char *dir, const char *name, const char *full) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char magic[4], *source = NULL, *cubin = NULL;
    uint64_t source_len = 0;
    size_t full_len = strlen(full);
    long start, end;
    bool ok = fread(magic, 1, 4, f) == 4 && memcmp(magic, entry_magic, 4) == 0 &&
              fread(&source_len, sizeof source_len, 1, f) == 1 && source_len == full_len &&
              (source = malloc(full_len + 1)) && fread(source, 1, full_len, f) == full_len &&
              memcmp(source, full, full_len) == 0 && (start = ftell(f)) > 0 &&
              fseek(f, 0, SEEK_END) == 0 && (end = ftell(f)) > start &&
              fseek(f, start, SEEK_SET) == 0 && (cubin = malloc((size_t)(end - start))) &&
              fread(cubin, 1, (size_t)(end - start), f) == (size_t)(end - start);
    free(source);
    fclose(f);
    if (!ok) {
        free(cubin);
        return NULL;
    }
    return cubin;
}

static void save_to_disk(const char *dir, const char *name, const char *full, const char *cubin,
                         size_t size) {
    uint64_t source_len = strlen(full);
    size_t header = 4 + sizeof source_len + source_len;
    char *entry = malloc(header + size);
    if (!entry) return;
    memcpy(entry, entry_magic, 4);
    memcpy(entry + 4, &source_len, sizeof source_len);
    memcpy(entry + 4 + sizeof source_len, full, source_len);
    memcpy(entry + header, cubin, size);
    porta_status_free(porta_kernel_cache_write(dir, name, entry, header + size));
    free(entry);
}

/* A module for `full`: its cubin from the disk cache (an entry the driver
 * rejects is recompiled and rewritten), else compiled. */
static porta_status *load_module(porta_device *device, const char *full, CUmodule *module) {
    cu_state *s = cu_of(device);
    char dir[768], name[64];
    entry_name(s, full, name, sizeof name);
    porta_status *dir_status = porta_kernel_cache_dir("cuda", dir, sizeof dir);
    char *cubin = dir_status ? NULL : load_from_disk(dir, name, full);
    if (cubin && s->cu->cuModuleLoadData(module, cubin) == CUDA_SUCCESS) {
        compiler_count(COUNTER_KERNEL_DISK_HITS, 1);
        free(cubin);
        porta_status_free(dir_status);
        return NULL;
    }
    free(cubin);
    cubin = NULL;
    const char *why = NULL;
    const cu_nvrtc_api *nv = cu_nvrtc_load(&why);
    porta_status *status = NULL;
    if (!nv) status = porta_error(PORTA_ERR_UNSUPPORTED, "CUDA: %s", why);
    size_t size = 0;
    double start = seconds_now();
    uint64_t begin = prof_begin();
    if (!status) status = compile_full(nv, full, s->major, s->minor, &cubin, &size);
    prof_end(PROF_COMPILE, device, "NVRTC compile", name, -1, begin);
    compiler_count_compile_seconds(seconds_now() - start);
    compiler_count(COUNTER_KERNELS_COMPILED, 1);
    if (!status) {
        CUresult r = s->cu->cuModuleLoadData(module, cubin);
        if (r != CUDA_SUCCESS)
            status = cu_error(s, r, "cuModuleLoadData");
        else if (!dir_status)
            save_to_disk(dir, name, full, cubin, size);
    }
    free(cubin);
    porta_status_free(dir_status);
    return status;
}

/* The module of `source`: memory, then load_module. Lock held. */
static porta_status *find_program(porta_device *device, const char *source,
                                  cu_program_entry **out) {
    cu_state *s = cu_of(device);
    uint64_t hash = porta_hash_text(PORTA_HASH_SEED, source);
    for (cu_program_entry *e = s->programs; e; e = e->next)
        if (e->hash == hash && strcmp(e->source, source) == 0) {
            *out = e;
            return NULL;
        }
    char *full = with_prelude(source);
    cu_program_entry *entry = calloc(1, sizeof *entry);
    char *copy = strdup(source);
    porta_status *status = NULL;
    if (!full || !entry || !copy)
        status = porta_error(PORTA_ERR_OUT_OF_MEMORY, "CUDA: no memory for a program");
    if (!status) status = load_module(device, full, &entry->module);
    free(full);
    if (status) {
        free(entry);
        free(copy);
        return status;
    }
    entry->hash = hash;
    entry->source = copy;
    entry->next = s->programs;
    s->programs = entry;
    *out = entry;
    return NULL;
}

porta_status *cu_function_get(porta_device *device, const char *source, const char *name,
                              CUfunction *out) {
    cu_state *s = cu_of(device);
    pthread_mutex_lock(&s->lock);
    CUresult r = s->cu->cuCtxSetCurrent(s->context);
    cu_program_entry *e = NULL;
    porta_status *status =
        r ? cu_error(s, r, "cuCtxSetCurrent") : find_program(device, source, &e);
    if (!status && (r = s->cu->cuModuleGetFunction(out, e->module, name)) != CUDA_SUCCESS)
        status = cu_error(s, r, "cuModuleGetFunction");
    pthread_mutex_unlock(&s->lock);
    return status;
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
