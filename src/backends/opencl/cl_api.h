/* The part of the OpenCL 1.2 C API the backend uses, declared here (types,
 * constants, function signatures from the Khronos specification) so that
 * building Porta needs no OpenCL headers; the functions are looked up at run
 * time from the ICD loader (cl_loader.c). */
#ifndef PORTA_BACKENDS_OPENCL_CL_API_H
#define PORTA_BACKENDS_OPENCL_CL_API_H

#include <stddef.h>
#include <stdint.h>

typedef int32_t cl_int;
typedef uint32_t cl_uint;
typedef uint64_t cl_ulong;
typedef uint64_t cl_bitfield;
typedef cl_bitfield cl_device_type;
typedef cl_bitfield cl_mem_flags;
typedef cl_bitfield cl_command_queue_properties;
typedef cl_uint cl_bool;
typedef cl_uint cl_platform_info;
typedef cl_uint cl_device_info;
typedef cl_uint cl_program_info;
typedef cl_uint cl_program_build_info;
typedef cl_uint cl_mem_info;
typedef intptr_t cl_context_properties;
typedef struct _cl_platform_id *cl_platform_id;
typedef struct _cl_device_id *cl_device_id;
typedef struct _cl_context *cl_context;
typedef struct _cl_command_queue *cl_command_queue;
typedef struct _cl_mem *cl_mem;
typedef struct _cl_program *cl_program;
typedef struct _cl_kernel *cl_kernel;
typedef struct _cl_event *cl_event;

#define CL_SUCCESS 0
#define CL_TRUE 1
#define CL_DEVICE_TYPE_GPU (1 << 2)
#define CL_DEVICE_TYPE_ACCELERATOR (1 << 3)
#define CL_DEVICE_TYPE_ALL 0xFFFFFFFF
#define CL_PLATFORM_NAME 0x0902
#define CL_DEVICE_TYPE 0x1000
#define CL_DEVICE_MAX_COMPUTE_UNITS 0x1002
#define CL_DEVICE_MAX_WORK_GROUP_SIZE 0x1004
#define CL_DEVICE_GLOBAL_MEM_SIZE 0x101F
#define CL_DEVICE_LOCAL_MEM_SIZE 0x1023
#define CL_DEVICE_NAME 0x102B
#define CL_DEVICE_EXTENSIONS 0x1030
#define CL_DRIVER_VERSION 0x102D
#define CL_MEM_READ_WRITE (1 << 0)
#define CL_MEM_SIZE 0x1102
#define CL_PROGRAM_BINARY_SIZES 0x1165
#define CL_PROGRAM_BINARIES 0x1166
#define CL_PROGRAM_BUILD_LOG 0x1183

/* Every function the backend calls, as X(return type, name, parameters). */
#define CL_FUNCTIONS(X)                                                                      \
    X(cl_int, clGetPlatformIDs, (cl_uint, cl_platform_id *, cl_uint *))                     \
    X(cl_int, clGetPlatformInfo, (cl_platform_id, cl_platform_info, size_t, void *, size_t *)) \
    X(cl_int, clGetDeviceIDs, (cl_platform_id, cl_device_type, cl_uint, cl_device_id *,     \
                               cl_uint *))                                                   \
    X(cl_int, clGetDeviceInfo, (cl_device_id, cl_device_info, size_t, void *, size_t *))    \
    X(cl_context, clCreateContext, (const cl_context_properties *, cl_uint,                 \
                                    const cl_device_id *, void *, void *, cl_int *))         \
    X(cl_command_queue, clCreateCommandQueue, (cl_context, cl_device_id,                    \
                                               cl_command_queue_properties, cl_int *))       \
    X(cl_mem, clCreateBuffer, (cl_context, cl_mem_flags, size_t, void *, cl_int *))         \
    X(cl_int, clReleaseMemObject, (cl_mem))                                                  \
    X(cl_int, clGetMemObjectInfo, (cl_mem, cl_mem_info, size_t, void *, size_t *))          \
    X(cl_int, clEnqueueReadBuffer, (cl_command_queue, cl_mem, cl_bool, size_t, size_t,      \
                                    void *, cl_uint, const cl_event *, cl_event *))          \
    X(cl_int, clEnqueueWriteBuffer, (cl_command_queue, cl_mem, cl_bool, size_t, size_t,     \
                                     const void *, cl_uint, const cl_event *, cl_event *))   \
    X(cl_program, clCreateProgramWithSource, (cl_context, cl_uint, const char **,           \
                                              const size_t *, cl_int *))                     \
    X(cl_program, clCreateProgramWithBinary, (cl_context, cl_uint, const cl_device_id *,    \
                                              const size_t *, const unsigned char **,        \
                                              cl_int *, cl_int *))                           \
    X(cl_int, clBuildProgram, (cl_program, cl_uint, const cl_device_id *, const char *,     \
                               void *, void *))                                              \
    X(cl_int, clGetProgramInfo, (cl_program, cl_program_info, size_t, void *, size_t *))    \
    X(cl_int, clGetProgramBuildInfo, (cl_program, cl_device_id, cl_program_build_info,      \
                                      size_t, void *, size_t *))                             \
    X(cl_int, clReleaseProgram, (cl_program))                                                \
    X(cl_kernel, clCreateKernel, (cl_program, const char *, cl_int *))                      \
    X(cl_int, clSetKernelArg, (cl_kernel, cl_uint, size_t, const void *))                   \
    X(cl_int, clEnqueueNDRangeKernel, (cl_command_queue, cl_kernel, cl_uint, const size_t *, \
                                       const size_t *, const size_t *, cl_uint,              \
                                       const cl_event *, cl_event *))                        \
    X(cl_int, clFinish, (cl_command_queue))

#define CL_DECLARE_POINTER(ret, name, params) ret (*name) params;
typedef struct cl_api {
    CL_FUNCTIONS(CL_DECLARE_POINTER)
} cl_api;
#undef CL_DECLARE_POINTER

/* The loaded API, or NULL with *why set when no ICD loader could be
 * loaded or it lacks a function. Loaded once per process. */
const cl_api *cl_api_load(const char **why);

#endif
