/* The part of the CUDA driver API and of NVRTC the backend uses, declared
 * here (types, constants and signatures from NVIDIA's documentation) so
 * that building Porta needs nothing from CUDA; the functions are looked up
 * at run time (cu_loader.c). Driver entry points that were revised keep
 * their revision in the exported symbol (cuMemAlloc_v2): the table pairs
 * each field with the symbol it is loaded from. */
#ifndef PORTA_BACKENDS_CUDA_CU_API_H
#define PORTA_BACKENDS_CUDA_CU_API_H

#include <stddef.h>

typedef int CUresult; /* CUDA_SUCCESS is 0 */
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;

#define CUDA_SUCCESS 0
#define CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK 1
#define CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT 16
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR 75
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR 76
#define CU_STREAM_NON_BLOCKING 1
#define CU_EVENT_DEFAULT 0
#define CU_EVENT_DISABLE_TIMING 2
#define CU_MEMHOSTALLOC_PORTABLE 1

/* X(return type, field, exported symbol, parameters) */
#define CU_DRIVER_FUNCTIONS(X)                                                               \
    X(CUresult, cuInit, "cuInit", (unsigned))                                                \
    X(CUresult, cuDriverGetVersion, "cuDriverGetVersion", (int *))                           \
    X(CUresult, cuGetErrorName, "cuGetErrorName", (CUresult, const char **))                 \
    X(CUresult, cuDeviceGetCount, "cuDeviceGetCount", (int *))                               \
    X(CUresult, cuDeviceGet, "cuDeviceGet", (CUdevice *, int))                               \
    X(CUresult, cuDeviceGetName, "cuDeviceGetName", (char *, int, CUdevice))                 \
    X(CUresult, cuDeviceGetAttribute, "cuDeviceGetAttribute", (int *, int, CUdevice))        \
    X(CUresult, cuDeviceTotalMem, "cuDeviceTotalMem_v2", (size_t *, CUdevice))               \
    X(CUresult, cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", (CUcontext *, CUdevice)) \
    X(CUresult, cuCtxSetCurrent, "cuCtxSetCurrent", (CUcontext))                             \
    X(CUresult, cuStreamCreate, "cuStreamCreate", (CUstream *, unsigned))                    \
    X(CUresult, cuStreamSynchronize, "cuStreamSynchronize", (CUstream))                      \
    X(CUresult, cuMemAlloc, "cuMemAlloc_v2", (CUdeviceptr *, size_t))                        \
    X(CUresult, cuMemFree, "cuMemFree_v2", (CUdeviceptr))                                    \
    X(CUresult, cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2",                                   \
      (CUdeviceptr, const void *, size_t, CUstream))                                         \
    X(CUresult, cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2",                                   \
      (void *, CUdeviceptr, size_t, CUstream))                                               \
    X(CUresult, cuModuleLoadData, "cuModuleLoadData", (CUmodule *, const void *))            \
    X(CUresult, cuModuleGetFunction, "cuModuleGetFunction",                                  \
      (CUfunction *, CUmodule, const char *))                                                \
    X(CUresult, cuLaunchKernel, "cuLaunchKernel",                                            \
      (CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,     \
       CUstream, void **, void **))

/* Entry points the backend can do without (NULL when the library lacks
 * them): events and pinned host memory. Without them, copies from the host
 * wait for the stream instead of going through pinned staging buffers. */
#define CU_DRIVER_OPTIONAL_FUNCTIONS(X)                                                      \
    X(CUresult, cuEventCreate, "cuEventCreate", (CUevent *, unsigned))                       \
    X(CUresult, cuEventRecord, "cuEventRecord", (CUevent, CUstream))                         \
    X(CUresult, cuEventSynchronize, "cuEventSynchronize", (CUevent))                         \
    X(CUresult, cuEventElapsedTime, "cuEventElapsedTime", (float *, CUevent, CUevent))       \
    X(CUresult, cuEventDestroy, "cuEventDestroy_v2", (CUevent))                              \
    X(CUresult, cuMemHostAlloc, "cuMemHostAlloc", (void **, size_t, unsigned))               \
    X(CUresult, cuMemFreeHost, "cuMemFreeHost", (void *))

typedef int nvrtcResult; /* NVRTC_SUCCESS is 0 */
typedef struct _nvrtcProgram *nvrtcProgram;
#define NVRTC_SUCCESS 0

#define CU_NVRTC_FUNCTIONS(X)                                                                \
    X(nvrtcResult, nvrtcVersion, "nvrtcVersion", (int *, int *))                             \
    X(const char *, nvrtcGetErrorString, "nvrtcGetErrorString", (nvrtcResult))               \
    X(nvrtcResult, nvrtcCreateProgram, "nvrtcCreateProgram",                                 \
      (nvrtcProgram *, const char *, const char *, int, const char *const *,                 \
       const char *const *))                                                                 \
    X(nvrtcResult, nvrtcDestroyProgram, "nvrtcDestroyProgram", (nvrtcProgram *))             \
    X(nvrtcResult, nvrtcCompileProgram, "nvrtcCompileProgram",                               \
      (nvrtcProgram, int, const char *const *))                                              \
    X(nvrtcResult, nvrtcGetProgramLogSize, "nvrtcGetProgramLogSize", (nvrtcProgram, size_t *)) \
    X(nvrtcResult, nvrtcGetProgramLog, "nvrtcGetProgramLog", (nvrtcProgram, char *))         \
    X(nvrtcResult, nvrtcGetCUBINSize, "nvrtcGetCUBINSize", (nvrtcProgram, size_t *))         \
    X(nvrtcResult, nvrtcGetCUBIN, "nvrtcGetCUBIN", (nvrtcProgram, char *))

#define CU_DECLARE_POINTER(ret, field, symbol, params) ret (*field) params;
typedef struct cu_driver_api {
    CU_DRIVER_FUNCTIONS(CU_DECLARE_POINTER)
    CU_DRIVER_OPTIONAL_FUNCTIONS(CU_DECLARE_POINTER)
} cu_driver_api;
typedef struct cu_nvrtc_api {
    CU_NVRTC_FUNCTIONS(CU_DECLARE_POINTER)
} cu_nvrtc_api;
#undef CU_DECLARE_POINTER

/* The loaded driver API (PORTA_CUDA_LIBRARY, else libcuda.so.1) or NVRTC (PORTA_NVRTC_LIBRARY, else
 * libnvrtc.so.12, .13, or libnvrtc.so), or NULL with *why set (a string that
 * lives for the process) when the library cannot be loaded or lacks a
 * function. Each is loaded once per process, independently: kernels can be
 * compiled on a machine without a GPU. */
const cu_driver_api *cu_driver_load(const char **why);
const cu_nvrtc_api *cu_nvrtc_load(const char **why);

#endif
