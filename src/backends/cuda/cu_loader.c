/* Loads the CUDA driver (libcuda.so.1, installed with NVIDIA's driver) and
 * NVRTC (the run-time compiler, from the CUDA toolkit or the
 * nvidia-cuda-nvrtc wheel) at run time: Porta builds and runs without
 * either, and the backend reports "unavailable" then. */
#include <dirent.h>
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/cu_api.h"

static cu_driver_api driver;
static const cu_driver_api *driver_loaded;
static char driver_failure[256];
static pthread_once_t driver_once = PTHREAD_ONCE_INIT;

static cu_nvrtc_api nvrtc;
static const cu_nvrtc_api *nvrtc_loaded;
static char nvrtc_failure[320];
static pthread_once_t nvrtc_once = PTHREAD_ONCE_INIT;

#define CU_RESOLVE(ret, field, symbol, params)                                              \
    *(void **)&table->field = dlsym(library, symbol);                                       \
    if (!table->field) {                                                                    \
        snprintf(failure, cap, "%s lacks %s", what, symbol);                               \
        return false;                                                                       \
    }

static bool resolve_driver(void *library, cu_driver_api *table, const char *what,
                           char *failure, size_t cap) {
    CU_DRIVER_FUNCTIONS(CU_RESOLVE)
    return true;
}

#define CU_RESOLVE_OPTIONAL(ret, field, symbol, params)                                     \
    *(void **)&table->field = dlsym(library, symbol);

static void resolve_optional(void *library, cu_driver_api *table) {
    CU_DRIVER_OPTIONAL_FUNCTIONS(CU_RESOLVE_OPTIONAL)
}
#undef CU_RESOLVE_OPTIONAL

static bool resolve_nvrtc(void *library, cu_nvrtc_api *table, const char *what, char *failure,
                          size_t cap) {
    CU_NVRTC_FUNCTIONS(CU_RESOLVE)
    return true;
}
#undef CU_RESOLVE

static void load_driver(void) {
    /* PORTA_CUDA_LIBRARY names the driver library to use instead (the tests'
     * stand-in for the host side; one that does not load turns CUDA off) */
    const char *chosen = getenv("PORTA_CUDA_LIBRARY");
    const char *name = chosen && *chosen ? chosen : "libcuda.so.1";
    void *library = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!library) {
        if (name == chosen)
            snprintf(driver_failure, sizeof driver_failure,
                     "PORTA_CUDA_LIBRARY=%.200s could not be loaded", chosen);
        else
            snprintf(driver_failure, sizeof driver_failure,
                     "no CUDA driver (libcuda.so.1) could be loaded: no NVIDIA driver is "
                     "installed or visible here");
        return;
    }
    if (resolve_driver(library, &driver, "the CUDA driver library", driver_failure,
                       sizeof driver_failure)) {
        resolve_optional(library, &driver);
        driver_loaded = &driver;
    }
}

/* NVRTC opens its builtins library (libnvrtc-builtins.so.<version>) by
 * name when it compiles, found through its own run path; a dlopen that an
 * interposer makes on its behalf (sanitizers do) loses that path. Loading
 * the builtins beside it first makes that later lookup find them by name. */
static void preload_builtins(void *library) {
    char dir[PATH_MAX];
    if (dlinfo(library, RTLD_DI_ORIGIN, dir) != 0) return;
    DIR *listing = opendir(dir);
    if (!listing) return;
    static const char prefix[] = "libnvrtc-builtins.so.";
    for (struct dirent *e; (e = readdir(listing));) {
        if (strncmp(e->d_name, prefix, sizeof prefix - 1) != 0) continue;
        char path[PATH_MAX + 256];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (dlopen(path, RTLD_NOW | RTLD_GLOBAL)) break;
    }
    closedir(listing);
}

static void load_nvrtc(void) {
    /* PORTA_NVRTC_LIBRARY names the library to use instead (a toolkit's or
     * a wheel's path); one that does not load turns compiling off. */
    const char *chosen = getenv("PORTA_NVRTC_LIBRARY");
    /* CUDA 12's first: its cubins load on CUDA 12 and 13 drivers alike */
    const char *names[] = {"libnvrtc.so.12", "libnvrtc.so.13", "libnvrtc.so"};
    void *library = NULL;
    const char *name = chosen;
    if (chosen && *chosen) {
        library = dlopen(chosen, RTLD_NOW | RTLD_LOCAL);
        if (!library) {
            snprintf(nvrtc_failure, sizeof nvrtc_failure,
                     "PORTA_NVRTC_LIBRARY=%.200s could not be loaded", chosen);
            return;
        }
    }
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !library; i++) {
        name = names[i];
        library = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    }
    if (!library) {
        snprintf(nvrtc_failure, sizeof nvrtc_failure,
                 "NVRTC (libnvrtc.so.12 or .13) could not be loaded: install the CUDA toolkit, "
                 "or pip's nvidia-cuda-nvrtc-cu12 and set PORTA_NVRTC_LIBRARY to its "
                 "libnvrtc.so.12");
        return;
    }
    preload_builtins(library);
    if (resolve_nvrtc(library, &nvrtc, name, nvrtc_failure, sizeof nvrtc_failure))
        nvrtc_loaded = &nvrtc;
}

const cu_driver_api *cu_driver_load(const char **why) {
    pthread_once(&driver_once, load_driver);
    if (!driver_loaded && why) *why = driver_failure;
    return driver_loaded;
}

const cu_nvrtc_api *cu_nvrtc_load(const char **why) {
    pthread_once(&nvrtc_once, load_nvrtc);
    if (!nvrtc_loaded && why) *why = nvrtc_failure;
    return nvrtc_loaded;
}
