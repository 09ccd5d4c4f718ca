/* OpenCL programs: built from source once per device and kept in memory
 * and on disk; kernel arguments and launches.
 *
 * A disk entry's name hashes the full source, the build options and the
 * device's identity (name, driver version, platform), so another driver
 * or device never loads an old binary; the entry also stores the source,
 * compared on load. Build logs go into the error of a failed build. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/opencl/cl_runtime.h"
#include "runtime/compile_stats.h"
#include "core/status.h"
#include "runtime/kernel_cache.h"
#include "runtime/profiler.h"

/* No fast-math: kernels keep IEEE semantics, as the CPU's do; no FMA
 * contraction, so a * b + c rounds twice there too. */
static const char build_options[] = "-cl-std=CL1.2 -cl-fp32-correctly-rounded-divide-sqrt";

struct cl_program_entry {
    cl_program_entry *next;
    uint64_t hash; /* of source, compared before the source itself */
    char *source;
    cl_program program;
    int kernel_count;
    char *kernel_names[16];
    cl_kernel kernels[16];
};

static double seconds_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

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

/* A disk entry: "PCLB", the source's length, the source, the binary. */
static const char entry_magic[4] = {'P', 'C', 'L', 'B'};

static void entry_name(const cl_state *s, const char *full, char *name, size_t cap) {
    uint64_t a = porta_hash_text(porta_hash_text(PORTA_HASH_SEED, full), build_options);
    uint64_t b = porta_hash_text(porta_hash_text(a ^ 0x9e3779b97f4a7c15ull, s->cache_identity),
                                 full);
    snprintf(name, cap, "%016" PRIx64 "%016" PRIx64 ".clbin", a, b);
}

static cl_program load_from_disk(cl_state *s, const char *dir, const char *name,
                                 const char *full) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    cl_program program = NULL;
    char magic[4];
    uint64_t source_len = 0;
    size_t full_len = strlen(full);
    char *source = NULL;
    unsigned char *binary = NULL;
    long end = 0;
    if (fread(magic, 1, 4, f) != 4 || memcmp(magic, entry_magic, 4) != 0 ||
        fread(&source_len, sizeof source_len, 1, f) != 1 || source_len != full_len)
        goto done;
    source = malloc(full_len + 1);
    if (!source || fread(source, 1, full_len, f) != full_len || memcmp(source, full, full_len))
        goto done;
    long start = ftell(f);
    if (fseek(f, 0, SEEK_END) != 0 || (end = ftell(f)) <= start || fseek(f, start, SEEK_SET))
        goto done;
    size_t size = (size_t)(end - start);
    binary = malloc(size);
    if (!binary || fread(binary, 1, size, f) != size) goto done;
    const unsigned char *binaries[1] = {binary};
    cl_int err, binary_status;
    program = s->cl->clCreateProgramWithBinary(s->context, 1, &s->id, &size, binaries,
                                               &binary_status, &err);
    if (program && (err || binary_status || s->cl->clBuildProgram(program, 1, &s->id,
                                                                  build_options, NULL, NULL))) {
        s->cl->clReleaseProgram(program);
        program = NULL; /* unusable: rebuilt from source and rewritten */
    }
done:
    free(source);
    free(binary);
    fclose(f);
    return program;
}

static void save_to_disk(cl_state *s, cl_program program, const char *dir, const char *name,
                         const char *full) {
    size_t size = 0;
    if (s->cl->clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, NULL) ||
        !size)
        return;
    uint64_t source_len = strlen(full);
    size_t header = 4 + sizeof source_len + source_len;
    unsigned char *entry = malloc(header + size);
    if (!entry) return;
    memcpy(entry, entry_magic, 4);
    memcpy(entry + 4, &source_len, sizeof source_len);
    memcpy(entry + 4 + sizeof source_len, full, source_len);
    unsigned char *binaries[1] = {entry + header};
    if (!s->cl->clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof binaries, binaries, NULL))
        porta_status_free(porta_kernel_cache_write(dir, name, entry, header + size));
    free(entry);
}

/* The program of `source` (prelude prepended): memory, disk, then a build. */
static porta_status *find_program(porta_device *device, const char *source,
                                  cl_program_entry **out) {
    cl_state *s = cl_of(device);
    uint64_t hash = porta_hash_text(PORTA_HASH_SEED, source);
    for (cl_program_entry *e = s->programs; e; e = e->next)
        if (e->hash == hash && strcmp(e->source, source) == 0) {
            *out = e;
            return NULL;
        }
    const char *prelude = cl_prelude();
    if (!prelude) return porta_error(PORTA_ERR_OUT_OF_MEMORY, "OpenCL: no memory for a program");
    size_t prelude_len = strlen(prelude), len = strlen(source);
    char *full = malloc(prelude_len + len + 1);
    cl_program_entry *entry = calloc(1, sizeof *entry);
    char *copy = strdup(source);
    if (!full || !entry || !copy) {
        free(full);
        free(entry);
        free(copy);
        return porta_error(PORTA_ERR_OUT_OF_MEMORY, "OpenCL: no memory for a program");
    }
    memcpy(full, prelude, prelude_len);
    memcpy(full + prelude_len, source, len + 1);
    char dir[768], name[64];
    entry_name(s, full, name, sizeof name);
    porta_status *dir_status = porta_kernel_cache_dir("opencl", dir, sizeof dir);
    cl_program program = dir_status ? NULL : load_from_disk(s, dir, name, full);
    porta_status *status = NULL;
    if (program) {
        compiler_count(COUNTER_KERNEL_DISK_HITS, 1);
    } else {
        cl_int err;
        const char *text = full;
        program = s->cl->clCreateProgramWithSource(s->context, 1, &text, NULL, &err);
        if (!program) status = cl_error(err, "clCreateProgramWithSource");
        double start = seconds_now();
        uint64_t begin = prof_begin();
        if (!status) status = build(s, program, "a kernel");
        prof_end(PROF_COMPILE, device, "OpenCL program build", name, -1, begin);
        compiler_count_compile_seconds(seconds_now() - start);
        compiler_count(COUNTER_KERNELS_COMPILED, 1);
        if (!status && !dir_status) save_to_disk(s, program, dir, name, full);
    }
    porta_status_free(dir_status);
    free(full);
    if (status) {
        if (program) s->cl->clReleaseProgram(program);
        free(entry);
        free(copy);
        return status;
    }
    entry->hash = hash;
    entry->source = copy;
    entry->program = program;
    entry->next = s->programs;
    s->programs = entry;
    *out = entry;
    return NULL;
}

porta_status *cl_kernel_get(porta_device *device, const char *source, const char *name,
                            cl_kernel *out) {
    cl_state *s = cl_of(device);
    cl_program_entry *e;
    PORTA_TRY(find_program(device, source, &e));
    for (int i = 0; i < e->kernel_count; i++)
        if (strcmp(e->kernel_names[i], name) == 0) {
            *out = e->kernels[i];
            return NULL;
        }
    if (e->kernel_count == 16)
        return porta_error(PORTA_ERR_INTERNAL, "OpenCL: more than 16 kernels in one program");
    cl_int err;
    char *copy = strdup(name);
    cl_kernel kernel = copy ? s->cl->clCreateKernel(e->program, name, &err) : NULL;
    if (!kernel) {
        free(copy);
        return copy ? cl_error(err, "clCreateKernel")
                    : porta_error(PORTA_ERR_OUT_OF_MEMORY, "OpenCL: no memory");
    }
    e->kernel_names[e->kernel_count] = copy;
    e->kernels[e->kernel_count++] = kernel;
    *out = kernel;
    return NULL;
}

void cl_arg(cl_args *args, size_t size, const void *value) {
    if (args->error) return;
    args->error = args->state->cl->clSetKernelArg(args->kernel, args->next++, size, value);
}

void cl_arg_long(cl_args *args, int64_t value) { cl_arg(args, sizeof value, &value); }

void cl_arg_mem(cl_args *args, const porta_tensor *tensor) {
    cl_mem mem = cl_mem_of(tensor);
    cl_arg(args, sizeof mem, &mem);
    cl_arg_long(args, tensor->offset);
}

#define GROUP_SIZE 64

porta_status *cl_launch(cl_args *args, int64_t work) {
    if (args->error) return cl_error(args->error, "clSetKernelArg");
    if (work <= 0) return NULL;
    size_t local = GROUP_SIZE < args->state->max_work_group ? GROUP_SIZE
                                                            : args->state->max_work_group;
    size_t global = ((size_t)work + local - 1) / local * local;
    cl_int err = args->state->cl->clEnqueueNDRangeKernel(args->state->queue, args->kernel, 1,
                                                         NULL, &global, &local, 0, NULL, NULL);
    return err ? cl_error(err, "clEnqueueNDRangeKernel") : NULL;
}

porta_status *cl_launch_2d(cl_args *args, const size_t global[2], const size_t local[2]) {
    if (args->error) return cl_error(args->error, "clSetKernelArg");
    if (!global[0] || !global[1]) return NULL;
    cl_int err = args->state->cl->clEnqueueNDRangeKernel(args->state->queue, args->kernel, 2,
                                                         NULL, global, local, 0, NULL, NULL);
    return err ? cl_error(err, "clEnqueueNDRangeKernel") : NULL;
}
