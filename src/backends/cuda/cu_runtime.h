/* The CUDA backend's internal interface: one porta device per CUDA device,
 * each with its primary context and a stream every operation goes to;
 * programs compiled by NVRTC for the device's architecture and cached
 * (memory and disk, backends/clc's program cache); kernels launched on the
 * stream. The kernel library (backends/clc) reaches the device through
 * cu_launcher. */
#ifndef PORTA_BACKENDS_CUDA_CU_RUNTIME_H
#define PORTA_BACKENDS_CUDA_CU_RUNTIME_H

#include <stdbool.h>
#include <stdint.h>

#include "backends/clc/clk_launch.h"
#include "backends/clc/clk_program_cache.h"
#include "backends/cuda/cu_alloc.h"
#include "backends/cuda/cu_api.h"
#include "backends/cuda/cu_stream.h"
#include "porta.h"
#include "runtime/device.h"

typedef struct cu_state {
    const cu_driver_api *cu;
    CUdevice id;
    CUcontext context; /* the device's primary context, shared with other CUDA users */
    CUstream stream;
    char name[128];
    int major, minor; /* compute capability: NVRTC's sm_<major><minor> */
    int driver_version;
    int max_threads;
    char arch_option[32];       /* NVRTC's architecture option, a key of the program cache */
    clk_program_cache programs; /* loaded modules and their functions */
    cu_cache cache;             /* freed device memory kept for reuse (cu_alloc.c) */
    cu_staging staging;         /* pinned buffers for copies from the host (cu_stream.c) */
} cu_state;

static inline cu_state *cu_of(porta_device *device) { return device->impl; }

/* A device buffer: its address, the bytes it counts in
 * porta_memory_allocated() (those asked for, at least 1) and the size of
 * the allocator's block under it (its size class). */
typedef struct cu_buffer {
    CUdeviceptr pointer;
    size_t size;
    size_t block;
} cu_buffer;

/* A status for a failed driver call: names the call and the error. */
porta_status *cu_error(const cu_state *s, CUresult code, const char *call);

/* The text every program begins with (cu_prelude.c): the OpenCL dialect of
 * the rendered kernels spelled in CUDA C++, then the OpenCL prelude. NULL
 * when out of memory. */
const char *cu_prelude(void);

/* NVRTC's options for compute capability major.minor (no fast math, no
 * contraction into FMA, as the CPU's kernels), NULL-terminated, in
 * options[] (at least CU_OPTION_SLOTS); `arch` holds the architecture
 * option's text. */
#define CU_OPTION_SLOTS 8
void cu_compile_options(int major, int minor, char arch[32], const char *options[]);

/* Compiles `source` (the prelude prepended) with NVRTC for compute
 * capability major.minor into a cubin (malloc'd, in *cubin and *size).
 * A failed compile's error holds NVRTC's log. Needs no GPU. */
porta_status *cu_compile(const char *source, int major, int minor, char **cubin,
                         size_t *size);

/* Readies the device's program cache (compute capability and driver
 * version known). */
void cu_programs_init(cu_state *s);

/* The function `name` of `source`, from the device's modules (memory,
 * then the disk cache, then a compile). Thread-safe; valid for the
 * process. */
porta_status *cu_function_get(porta_device *device, const char *source, const char *name,
                              CUfunction *out);

/* Launches `function` over `work` items in one dimension on the device's
 * stream (blocks of up to 256 threads; kernels check their index against
 * the count); params as cuLaunchKernel takes them. */
porta_status *cu_launch(cu_state *s, CUfunction function, void **params, int64_t work);

/* How the kernel library (backends/clc) gets and launches its kernels on
 * a CUDA device (cu_launcher.c). */
extern const clk_launcher cu_launcher;

#endif
