/* Loads the OpenCL ICD loader at run time: Porta builds and runs without
 * OpenCL installed, and the backend reports "unavailable" then. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "backends/opencl/cl_api.h"

static cl_api api;
static const cl_api *loaded;
static char failure[256];
static pthread_once_t load_once = PTHREAD_ONCE_INIT;

static void load(void) {
    /* PORTA_OPENCL_LIBRARY names the loader to use instead (a vendor's own
     * library; a name that does not load turns the backend off). */
    const char *chosen = getenv("PORTA_OPENCL_LIBRARY");
    const char *names[] = {"libOpenCL.so.1", "libOpenCL.so"};
    void *library = NULL;
    if (chosen && *chosen) {
        library = dlopen(chosen, RTLD_NOW | RTLD_LOCAL);
        if (!library) {
            snprintf(failure, sizeof failure, "PORTA_OPENCL_LIBRARY=%s could not be loaded",
                     chosen);
            return;
        }
    }
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !library; i++)
        library = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!library) {
        snprintf(failure, sizeof failure,
                 "no OpenCL ICD loader (libOpenCL.so.1) could be loaded: install one "
                 "(e.g. ocl-icd-libopencl1) and a driver");
        return;
    }
#define CL_RESOLVE(ret, name, params)                                                       \
    *(void **)&api.name = dlsym(library, #name);                                            \
    if (!api.name) {                                                                        \
        snprintf(failure, sizeof failure, "the OpenCL loader lacks %s", #name);             \
        return;                                                                             \
    }
    CL_FUNCTIONS(CL_RESOLVE)
#undef CL_RESOLVE
    loaded = &api;
}

const cl_api *cl_api_load(const char **why) {
    pthread_once(&load_once, load);
    if (!loaded && why) *why = failure;
    return loaded;
}
