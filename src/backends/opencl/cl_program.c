/* OpenCL's driver calls behind the shared program cache
 * (backends/clc/clk_program_cache.h): builds from source, binaries for the
 * disk cache and back, kernels of a program; kernel arguments and
 * launches. Build logs go into the error of a failed build. */
#include <stdlib.h>

#include "backends/clc/clk_prelude.h"
#include "backends/opencl/cl_runtime.h"
#include "core/fault.h"
#include "core/status.h"

/* No fast-math: kernels keep IEEE semantics, as the CPU's do; no FMA
 * contraction, so a * b + c rounds twice there too. */
static const char build_options[] = "-cl-std=CL1.2 -cl-fp32-correctly-rounded-divide-sqrt";

porta_status *cl_error(cl_int code, const char *call) {
    return porta_error(PORTA_ERR_DEVICE, "OpenCL: %s failed with error %d", call, (int)code);
}

static char *build_log(cl_state *s, cl_program program) {
    size_t size = 0;
    s->cl->clGetProgramBuildInfo(program, s->id, CL_PROGRAM_BUILD_LOG, 0, NULL, &size);
    char *log = malloc(size + 1);
    if (!log) return NULL;
    if (s->cl->clGetProgramBuildInfo(program, s->id, CL_PROGRAM_BUILD_LOG, size, log, NULL))
        size = 0;
    log[size] = '\0';
    return log;
}

static porta_status *build(cl_state *s, cl_program program, const char *what) {
    cl_int err = s->cl->clBuildProgram(program, 1, &s->id, build_options, NULL, NULL);
    if (err == CL_SUCCESS) return NULL;
    char *log = build_log(s, program);
    porta_status *status = porta_error(PORTA_ERR_DEVICE,
                                       "OpenCL: building %s for %s failed (error %d):\n%s", what,
                                       s->name, (int)err, log ? log : "(no build log)");
    free(log);
    return status;
}

/* The program's binary, malloc'd; NULL when the driver gives none. */
static void *program_binary(cl_state *s, cl_program program, size_t *size) {
    *size = 0;
    if (s->cl->clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof *size, size, NULL) ||
        !*size)
        return NULL;
    unsigned char *binary = malloc(*size);
    unsigned char *binaries[1] = {binary};
    if (binary &&
        s->cl->clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof binaries, binaries, NULL)) {
        free(binary);
        binary = NULL;
    }
    return binary;
}

static porta_status *cl_build_source(porta_device *device, const char *full, void **out,
                                     void **binary, size_t *size) {
    cl_state *s = cl_of(device);
    PORTA_TRY(CORE_FAULT_CHECK(CORE_FAULT_BUILD, PORTA_ERR_DEVICE,
                               "OpenCL: building a kernel for %s", s->name));
    cl_int err;
    cl_program program = s->cl->clCreateProgramWithSource(s->context, 1, &full, NULL, &err);
    if (!program) return cl_error(err, "clCreateProgramWithSource");
    porta_status *status = build(s, program, "a kernel");
    if (status) {
        s->cl->clReleaseProgram(program);
        return status;
    }
    *out = program;
    *binary = program_binary(s, program, size);
    return NULL;
}

static void *cl_load_binary(porta_device *device, const void *binary, size_t size) {
    cl_state *s = cl_of(device);
    const unsigned char *binaries[1] = {binary};
    cl_int err, binary_status;
    cl_program program = s->cl->clCreateProgramWithBinary(s->context, 1, &s->id, &size,
                                                          binaries, &binary_status, &err);
    if (program && (err || binary_status || s->cl->clBuildProgram(program, 1, &s->id,
                                                                  build_options, NULL, NULL))) {
        s->cl->clReleaseProgram(program);
        program = NULL;
    }
    return program;
}

static porta_status *cl_program_kernel(porta_device *device, void *program, const char *name,
                                       void **kernel) {
    cl_int err;
    *kernel = cl_of(device)->cl->clCreateKernel(program, name, &err);
    return *kernel ? NULL : cl_error(err, "clCreateKernel");
}

static const clk_compiler cl_compiler = {
    .label = "OpenCL",
    .cache_dir = "opencl",
    .magic = {'P', 'C', 'L', 'B'},
    .extension = ".clbin",
    .build_name = "OpenCL program build",
    .prelude = clk_prelude,
    .build = cl_build_source,
    .load = cl_load_binary,
    .kernel = cl_program_kernel,
};

void cl_programs_init(cl_state *s) {
    const char *options[] = {build_options, NULL};
    clk_program_cache_init(&s->programs, &cl_compiler, options, s->cache_identity);
}

porta_status *cl_kernel_get(porta_device *device, const char *source, const char *name,
                            cl_kernel *out) {
    void *kernel;
    PORTA_TRY(clk_program_kernel(&cl_of(device)->programs, device, source, name, &kernel));
    *out = kernel;
    return NULL;
}

void cl_arg(cl_args *args, size_t size, const void *value) {
    if (args->error) return;
    args->error = args->state->cl->clSetKernelArg(args->kernel, args->next++, size, value);
}

void cl_arg_long(cl_args *args, int64_t value) { cl_arg(args, sizeof value, &value); }

#define GROUP_SIZE 64

porta_status *cl_launch(cl_args *args, int64_t work) {
    if (args->error) return cl_error(args->error, "clSetKernelArg");
    if (work <= 0) return NULL;
    size_t local = GROUP_SIZE < args->state->max_work_group ? GROUP_SIZE
                                                            : args->state->max_work_group;
    size_t global = ((size_t)work + local - 1) / local * local;
    PORTA_TRY(CORE_FAULT_CHECK(CORE_FAULT_DRIVER, PORTA_ERR_DEVICE,
                               "OpenCL: clEnqueueNDRangeKernel"));
    cl_int err = args->state->cl->clEnqueueNDRangeKernel(args->state->queue, args->kernel, 1,
                                                         NULL, &global, &local, 0, NULL, NULL);
    return err ? cl_error(err, "clEnqueueNDRangeKernel") : NULL;
}

porta_status *cl_launch_2d(cl_args *args, const size_t global[2], const size_t local[2]) {
    if (args->error) return cl_error(args->error, "clSetKernelArg");
    if (!global[0] || !global[1]) return NULL;
    PORTA_TRY(CORE_FAULT_CHECK(CORE_FAULT_DRIVER, PORTA_ERR_DEVICE,
                               "OpenCL: clEnqueueNDRangeKernel"));
    cl_int err = args->state->cl->clEnqueueNDRangeKernel(args->state->queue, args->kernel, 2,
                                                         NULL, global, local, 0, NULL, NULL);
    return err ? cl_error(err, "clEnqueueNDRangeKernel") : NULL;
}
