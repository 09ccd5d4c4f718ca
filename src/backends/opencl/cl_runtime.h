/* The OpenCL backend's internal interface: one porta device per OpenCL
 * device, each with its context and in-order queue; programs built from
 * source once and cached (memory and disk); kernels launched on the queue.
 * Shared by the device file and the kernel-IR runner; the hand-written
 * kernels (cl_kernels_common.h) reach the device through their launch
 * description, which the CUDA device launches too. */
#ifndef PORTA_BACKENDS_OPENCL_CL_RUNTIME_H
#define PORTA_BACKENDS_OPENCL_CL_RUNTIME_H

#include <pthread.h>
#include <stdbool.h>

#include "backends/opencl/cl_api.h"
#include "runtime/tensor.h"
#include "ir/prim.h"
#include "runtime/device.h"

typedef struct cl_program_entry cl_program_entry;

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
    pthread_mutex_t lock;       /* programs and kernels (clSetKernelArg is not thread-safe) */
    cl_program_entry *programs; /* built programs, most recent first */
} cl_state;

static inline cl_state *cl_of(porta_device *device) { return device->impl; }

/* The buffer of a tensor on an OpenCL device; its view starts at element
 * tensor->offset. */
static inline cl_mem cl_mem_of(const porta_tensor *tensor) { return tensor->buffer->handle; }

/* A status for a failed OpenCL call: names the call and the error code. */
porta_status *cl_error(cl_int code, const char *call);

/* The kernel `name` of `source` built with the backend's options, from the
 * device's program cache (memory, then disk, then a build whose log is
 * in the error when it fails). Call with the device's lock held; the kernel
 * stays valid for the process. */
porta_status *cl_kernel_get(porta_device *device, const char *source, const char *name,
                            cl_kernel *out);

/* Kernel arguments, set in order from index 0 (the lock held). */
typedef struct cl_args {
    cl_state *state;
    cl_kernel kernel;
    cl_uint next;
    cl_int error;
} cl_args;
void cl_arg(cl_args *args, size_t size, const void *value);
void cl_arg_mem(cl_args *args, const porta_tensor *tensor); /* the buffer, then its offset (long) */
void cl_arg_long(cl_args *args, int64_t value);
/* Enqueues the kernel over `work` items in one dimension (rounded up to
 * whole work groups: kernels check their index against the count). */
porta_status *cl_launch(cl_args *args, int64_t work);
/* Over a 2-D range of global[0] x global[1] items in groups of local
 * (NULL: the driver's choice); global must be multiples of local. */
porta_status *cl_launch_2d(cl_args *args, const size_t global[2], const size_t local[2]);

/* The text every program begins with (cl_prelude.c): fixed-width integer
 * names, double (float where the device has no fp64), float16/bfloat16
 * conversions kir_f16_to_f32, kir_f32_to_f16, kir_bf16_to_f32,
 * kir_f32_to_bf16 (ushort storage, the CPU's rounding), and the C
 * renderer's helpers. NULL when out of memory. */
const char *cl_prelude(void);

#endif
