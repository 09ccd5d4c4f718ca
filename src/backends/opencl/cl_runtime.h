/* The OpenCL backend's internal interface: one porta device per OpenCL
 * device, each with its context and in-order queue; programs built from
 * source once and cached (memory and disk, backends/clc's program cache);
 * kernels launched on the queue. The kernel library (backends/clc) reaches
 * the device through cl_launcher. */
#ifndef PORTA_BACKENDS_OPENCL_CL_RUNTIME_H
#define PORTA_BACKENDS_OPENCL_CL_RUNTIME_H

#include <pthread.h>
#include <stdbool.h>

#include "backends/clc/clk_launch.h"
#include "backends/clc/clk_program_cache.h"
#include "backends/opencl/cl_api.h"
#include "runtime/device.h"

typedef struct cl_state {
    const cl_api *cl;
    cl_device_id id;
    cl_context context;
    cl_command_queue queue;
    char name[128];
    char driver[64];
    char cache_identity[256]; /* name, driver and platform: part of every disk-cache key */
    bool fp64;
    size_t max_work_group;
    uint64_t local_memory;
    /* a kernel's arguments until its launch is queued (clSetKernelArg is
     * not thread-safe) */
    pthread_mutex_t lock;
    clk_program_cache programs; /* built programs and their kernels */
} cl_state;

static inline cl_state *cl_of(porta_device *device) { return device->impl; }

/* A status for a failed OpenCL call: names the call and the error code. */
porta_status *cl_error(cl_int code, const char *call);

/* Refuses float64 where the device has no cl_khr_fp64 or hides it
 * (PORTA_OPENCL_FP64=0, cl_device.c); other dtypes run everywhere. */
porta_status *cl_check_dtype(porta_device *device, porta_dtype dtype);

/* Readies the device's program cache (its name, driver and platform in
 * cache_identity). */
void cl_programs_init(cl_state *s);

/* The kernel `name` of `source` built with the backend's options, from the
 * device's program cache (memory, then disk, then a build whose log is
 * in the error when it fails). Thread-safe; the kernel stays valid for the
 * process. */
porta_status *cl_kernel_get(porta_device *device, const char *source, const char *name,
                            cl_kernel *out);

/* Kernel arguments, set in order from index 0, then the launch (the lock
 * held throughout). */
typedef struct cl_args {
    cl_state *state;
    cl_kernel kernel;
    cl_uint next;
    cl_int error;
} cl_args;
void cl_arg(cl_args *args, size_t size, const void *value);
void cl_arg_long(cl_args *args, int64_t value);
/* Enqueues the kernel over `work` items in one dimension (rounded up to
 * whole work groups: kernels check their index against the count). */
porta_status *cl_launch(cl_args *args, int64_t work);
/* Over a 2-D range of global[0] x global[1] items in groups of local
 * (NULL: the driver's choice); global must be multiples of local. */
porta_status *cl_launch_2d(cl_args *args, const size_t global[2], const size_t local[2]);

/* How the kernel library (backends/clc) gets and launches its kernels on
 * an OpenCL device (cl_launcher.c). */
extern const clk_launcher cl_launcher;

#endif
